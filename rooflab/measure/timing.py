"""Timing GPU work honestly: CUDA events, warm-up, the L2 flushed before every repeat, the median.

The method (the Empirical Roofline Toolkit's, and common GPU benchmarking practice): device work is
asynchronous, so each repeat is bracketed by CUDA events on the stream; the first calls
(module load, compilation, handle creation) are warm-up and not timed; a buffer twice
the L2 is read before every repeat so no input is served from a warm cache; the
median of the repeats is the figure, with the 10th and 90th percentiles for spread.

The one home of rooflab's timing loops, for CuPy and torch work, eager and as CUDA-graph replays:

    time_gpu          CuPy, eager: events around each call on the current stream, the L2 flushed between calls
    time_cupy_graph   CuPy, `calls` calls captured in one graph, replayed: per-call seconds, launch cost left out
    time_torch        torch, eager (a no-argument fn), the same protocol as time_gpu
    time_torch_calls  torch, eager, fn(i); host clocks on CPU; `line_up` runs before the timed calls (a barrier)
    time_torch_graph  torch, fn(0..calls-1) captured in one torch.cuda graph, replayed; `line_up` before each
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from .device import require_cupy


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the spread of `repeats` timed calls, and how they were taken
    ('eager': events around each call; 'graph': replays of a captured CUDA graph, per call)."""

    median_s: float
    p10_s: float
    p90_s: float
    repeats: int
    timing: str = "eager"

    @classmethod
    def of(cls, seconds: Sequence[float], timing: str = "eager") -> "Timing":
        arr = np.asarray(seconds, dtype=float)
        return cls(float(np.median(arr)), float(np.percentile(arr, 10)), float(np.percentile(arr, 90)),
                   int(arr.size), timing)


#: The flush buffer is at least this large: besides evicting L2, its ~0.1 ms of GPU work keeps the
#: host ahead of the GPU, so a launcher's tens of microseconds of Python never show in the events.
MIN_FLUSH_BYTES = 512 << 20

#: Reads a buffer with 16-byte loads and writes nothing (the guarded store never runs on a buffer of zeros):
#: the L2 flush between repeats, and calibrate's per-SM read bandwidth (one block an SM).
READ_KERNEL = r"""
extern "C" __global__ void read_buffer(const uint4* __restrict__ p, unsigned long long n, unsigned* sink) {
    unsigned acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9E3779B9u) *sink = acc;
}
"""


def read_kernel():
    """READ_KERNEL compiled by CuPy: kernel(grid, block, (buffer, n 16-byte words as uint64, uint32 sink))."""
    return require_cupy().RawKernel(READ_KERNEL, "read_buffer")


class L2Flusher:
    """Reads a buffer of twice the L2 size (at least MIN_FLUSH_BYTES); call it between timed repeats."""

    def __init__(self, l2_bytes: int | None = None):
        cupy = require_cupy()
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        if l2_bytes is None:
            l2_bytes = props["l2CacheSize"]
        self.nbytes = max(2 * int(l2_bytes), MIN_FLUSH_BYTES)
        self._buf = cupy.zeros(self.nbytes // 16 * 16, dtype=cupy.uint8)
        self._sink = cupy.zeros(1, dtype=cupy.uint32)
        self._kernel = read_kernel()
        self._grid = (props["multiProcessorCount"] * 8,)
        self._n = np.uint64(self._buf.size // 16)

    def __call__(self) -> None:
        self._kernel(self._grid, (256,), (self._buf, self._n, self._sink))


def time_gpu(fn: Callable[[], object], warmup: int = 3, repeats: int = 20,
             flush: L2Flusher | None = None) -> Timing:
    """Event-time `fn` (which launches GPU work on the current stream) after `warmup` untimed calls.

    All repeats are enqueued before the one synchronisation at the end, so the host runs ahead of
    the GPU and the events bracket GPU time only (given a flush, whose GPU time exceeds the host's).
    """
    cupy = require_cupy()
    for _ in range(warmup):
        fn()
    stream = cupy.cuda.get_current_stream()
    starts = [cupy.cuda.Event() for _ in range(repeats)]
    ends = [cupy.cuda.Event() for _ in range(repeats)]
    for start, end in zip(starts, ends):
        if flush is not None:
            flush()
        start.record(stream)
        fn()
        end.record(stream)
    ends[-1].synchronize()
    return Timing.of([cupy.cuda.get_elapsed_time(s, e) * 1e-3 for s, e in zip(starts, ends)])


def time_cupy_graph(fn: Callable[[int], object], calls: int = 20, replays: int = 10) -> Timing:
    """Per-call seconds of fn(i), timed as replays of one captured CUDA graph of `calls` calls (3 warm-up calls).

    Takes the launchers' Python overhead (tens of microseconds a call) out of the timing of
    microsecond-scale kernels. fn must not allocate while captured: pass out= buffers.
    """
    cupy = require_cupy()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for i in range(3):
            fn(i)
        stream.synchronize()
        stream.begin_capture()
        for i in range(calls):
            fn(i)
        graph = stream.end_capture()
        graph.launch(stream)                         # the first launch uploads the graph
        stream.synchronize()
        seconds = []
        for _ in range(replays):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
            end.synchronize()
            seconds.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3 / calls)
    return Timing.of(seconds, "graph")


def time_torch(fn: Callable[[], object], warmup: int = 3, repeats: int = 20, flush_bytes: int = 0) -> Timing:
    """The same protocol as time_gpu, for PyTorch work (torch's events on torch's current stream)."""
    return time_torch_calls(lambda i: fn(), repeats, warmup, flush_bytes=flush_bytes)


def time_torch_calls(fn: Callable[[int], object], repeats: int, warmup: int = 3, *, device=None,
                     line_up: Optional[Callable[[], None]] = None, flush_bytes: int = 0) -> Timing:
    """fn(i) called `repeats` times back to back after `warmup` calls: per-call seconds from torch's CUDA events
    (host launches included where they are slower than the GPU), or host clocks where `device` is a CPU.
    `line_up` runs after the warm-up (the ranks of a distributed run meet at a barrier); `flush_bytes` > 0 reads
    a buffer that large before every call (a read-only pass, like L2Flusher)."""
    import time

    import torch

    cuda = device is None or torch.device(device).type == "cuda"
    flush = torch.zeros(flush_bytes // 4, dtype=torch.int32, device=device or "cuda") if flush_bytes and cuda else None
    for i in range(warmup):
        fn(i)
    _sync(cuda, device)
    if line_up is not None:
        line_up()
    if not cuda:
        seconds = []
        for i in range(repeats):
            t0 = time.perf_counter()
            fn(i)
            seconds.append(time.perf_counter() - t0)
        return Timing.of(seconds)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        if flush is not None:
            flush.max()
        starts[i].record()
        fn(i)
        ends[i].record()
    _sync(cuda, device)
    return Timing.of([s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends)])


def time_torch_graph(fn: Callable[[int], object], calls: int, replays: int, *, device=None,
                     line_up: Optional[Callable[[], None]] = None) -> Timing:
    """fn(0..calls-1) captured in one torch CUDA graph (two warm-up calls on a side stream first, so inputs and
    workspaces exist before capture), replayed `replays` times: per-call seconds = replay time / calls.
    `line_up` runs before each replay (so a replay's time holds a distributed run's collectives and what is
    left of the rank skew)."""
    import torch

    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for i in range(2):
            fn(i)
    torch.cuda.current_stream(device).wait_stream(side)
    _sync(True, device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
        for i in range(calls):
            fn(i)
    _sync(True, device)
    graph.replay()                                   # the first replay uploads the graph
    _sync(True, device)
    seconds = []
    for _ in range(replays):
        if line_up is not None:
            line_up()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        seconds.append(start.elapsed_time(end) * 1e-3 / calls)
    del graph
    return Timing.of(seconds, "graph")


def _sync(cuda: bool, device) -> None:
    if cuda:
        import torch

        torch.cuda.synchronize(device)

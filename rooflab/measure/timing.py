"""Timing GPU work honestly: CUDA events, warm-up, the L2 flushed before every repeat, the median.

The method (the Empirical Roofline Toolkit's, and common GPU benchmarking practice): device work is
asynchronous, so each repeat is bracketed by CUDA events on the stream; the first calls
(module load, compilation, handle creation) are warm-up and not timed; a buffer twice
the L2 is read before every repeat so no input is served from a warm cache; the
median of the repeats is the figure, with the 10th and 90th percentiles for spread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .device import require_cupy


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the spread of `repeats` event-timed calls."""

    median_s: float
    p10_s: float
    p90_s: float
    repeats: int


#: The flush buffer is at least this large: besides evicting L2, its ~0.1 ms of GPU work keeps the
#: host ahead of the GPU, so a launcher's tens of microseconds of Python never show in the events.
MIN_FLUSH_BYTES = 512 << 20

# Reads the buffer and writes nothing (the buffer is zeros, so the guarded store never runs): the
# L2 is left holding clean lines, and the timed kernel pays no write-back of a flush's dirty data.
_FLUSH_KERNEL = r"""
extern "C" __global__ void read_flush(const uint4* __restrict__ p, unsigned long long n, unsigned* sink) {
    unsigned acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9E3779B9u) *sink = acc;
}
"""


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
        self._kernel = cupy.RawKernel(_FLUSH_KERNEL, "read_flush")
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
    times = np.array([cupy.cuda.get_elapsed_time(s, e) * 1e-3 for s, e in zip(starts, ends)])
    return Timing(float(np.median(times)), float(np.percentile(times, 10)), float(np.percentile(times, 90)),
                  repeats)


def time_torch(fn: Callable[[], object], warmup: int = 3, repeats: int = 20, flush_bytes: int = 0) -> Timing:
    """The same protocol as time_gpu, for PyTorch work (torch's events on torch's current stream)."""
    import torch

    flush = torch.zeros(flush_bytes // 4, dtype=torch.int32, device="cuda") if flush_bytes else None
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for start, end in zip(starts, ends):
        if flush is not None:
            flush.max()                          # a read-only pass, like L2Flusher
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    times = np.array([s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends)])
    return Timing(float(np.median(times)), float(np.percentile(times, 10)), float(np.percentile(times, 90)),
                  repeats)

"""One rank of `rooflab bench --distributed`: torchrun starts one of these per GPU (or per CPU process, with gloo).

    torchrun --standalone --nproc-per-node N -m rooflab.bench.dist_worker --out DIR [--section S ...] [--scale tiny]

Each rank appends its measurements to DIR/rank<r>.jsonl (one Measurement per line, and `note` lines) and logs
to DIR/rank<r>.log; the launcher (bench/distributed.py) assembles the measurement files from them. Sections,
in this order, each one's failure logged without stopping the others:

    check        NCCL between the ranks: an all-reduce and an all-gather give the right values
    collectives  all-reduce, all-gather, reduce-scatter, all-to-all, send/recv, 64 KiB .. 1 GiB per rank,
                 timed eagerly and as CUDA-graph replays
    dcp          decode context parallelism against one GPU on the same total KV (dist_attention.py)
    gemm, step   one GPU each, run side by side: the GEMM family on the last rank (gemm.py), the
                 Llama-3-8B decode step on rank 0 (step_bench.py)
    tp           a tensor-parallel attention layer with its all-reduce (dist_attention.py)
    ring         ring-attention prefill, pass-KV (dist_attention.py)

On a GPU the attention work runs rooflab's CuPy kernels on torch's stream and is captured with the NCCL
collectives in CUDA graphs; on CPU (gloo, `--scale tiny`) the same code paths run with torch reference
ops and host timers, which is how the CPU tests exercise them. Every rank decides together whether to go
on (an all-reduce of "within the deadline"), so a rank never waits in a collective the others skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..vocab import Kernel
from .records import Measurement

SECTIONS = ("check", "collectives", "dcp", "gemm", "step", "tp", "ring")
COLLECTIVES = (Kernel.all_reduce, Kernel.all_gather, Kernel.reduce_scatter, Kernel.all_to_all, Kernel.send_recv)
#: Message sizes per rank: 64 KiB to 1 GiB in factors of 2 (the issue's range), or tiny ones on CPU.
FULL_SIZES = tuple(1 << p for p in range(16, 31))
TINY_SIZES = (1 << 12, 1 << 14, 1 << 16)
#: Seconds a rank waits in init_process_group or a collective before it gives up (no hang without peers).
PG_TIMEOUT_S = 120


@dataclass
class Ctx:
    """What every section needs: the rank, its device, the timers, the deadline and where rows go."""

    rank: int
    world: int
    local_rank: int
    cuda: bool
    out: Path
    deadline: float
    tiny: bool
    log_file: Any = None
    rows: list = field(default_factory=list)

    @property
    def device(self):
        import torch

        return torch.device("cuda", self.local_rank) if self.cuda else torch.device("cpu")

    def log(self, *parts: object) -> None:
        line = f"[rank {self.rank} {time.strftime('%H:%M:%S')}] " + " ".join(str(p) for p in parts)
        print(line, file=self.log_file, flush=True)
        if self.rank == 0:
            print(line, file=sys.stderr, flush=True)

    def sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize(self.device)

    def barrier(self) -> None:
        import torch.distributed as dist

        if self.world > 1:
            dist.barrier(device_ids=[self.local_rank]) if self.cuda else dist.barrier()

    def agree(self, seconds_needed: float = 0.0) -> bool:
        """True on every rank if every rank has `seconds_needed` left before the deadline (one tiny all-reduce)."""
        import torch
        import torch.distributed as dist

        flag = torch.tensor([1 if time.time() + seconds_needed < self.deadline else 0], device=self.device)
        if self.world > 1:
            dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        return bool(flag.item())

    def alone_in_time(self, seconds_needed: float = 0.0, grace_s: float = 60.0) -> bool:
        """For work one rank does alone (no collective to agree through): within the deadline plus `grace_s`."""
        return time.time() + seconds_needed < self.deadline + grace_s

    def emit(self, m: Measurement) -> None:
        record = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in dataclasses.asdict(m).items()}
        record["kernel"] = m.kernel.value
        self._write({"measurement": record})
        self.rows.append(m)

    def note(self, key: str, value: object) -> None:
        """A fact for the file's metadata or the log (a check's result, a skipped case, a small-op timing)."""
        self._write({"note": key, "value": value})

    def _write(self, obj: dict) -> None:
        with open(self.out / f"rank{self.rank}.jsonl", "a") as f:
            f.write(json.dumps(obj) + "\n")


# ------------------------------------------------------------------ timing

@dataclass(frozen=True)
class Times:
    """Per-call seconds of one timed configuration and how they were taken."""

    median_s: float
    p10_s: float
    p90_s: float
    repeats: int
    timing: str          # 'graph' or 'eager'

    @classmethod
    def of(cls, seconds: list[float], timing: str) -> "Times":
        import numpy as np

        arr = np.asarray(seconds, dtype=float)
        return cls(float(np.median(arr)), float(np.percentile(arr, 10)), float(np.percentile(arr, 90)), arr.size,
                   timing)


def time_eager(ctx: Ctx, fn: Callable[[int], object], repeats: int, warmup: int = 2, together: bool = True) -> Times:
    """fn(i) called `repeats` times back to back after `warmup` calls; per-call times from CUDA events (host
    launches included where they are slower than the GPU), or host clocks on CPU. `together`: every rank
    runs it (the ranks line up at a barrier first)."""
    import torch

    for i in range(warmup):
        fn(i)
    ctx.sync()
    if together:
        ctx.barrier()
        ctx.sync()
    if not ctx.cuda:
        times = []
        for i in range(repeats):
            t0 = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t0)
        return Times.of(times, "eager")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        starts[i].record()
        fn(i)
        ends[i].record()
    ctx.sync()
    return Times.of([s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends)], "eager")


def time_graph(ctx: Ctx, fn: Callable[[int], object], calls: int, replays: int, together: bool = True) -> Times:
    """fn(0..calls-1) captured in one CUDA graph (inputs complete before capture), replayed `replays` times;
    per-call seconds = replay time / calls. `together`: the ranks line up at a barrier before each replay,
    so a replay's time holds the collectives and what is left of the rank skew. On CPU: eager timing."""
    import torch

    if not ctx.cuda:
        return time_eager(ctx, fn, replays, together=together)
    side = torch.cuda.Stream(device=ctx.device)
    side.wait_stream(torch.cuda.current_stream(ctx.device))
    with torch.cuda.stream(side):
        for i in range(2):
            fn(i)
    torch.cuda.current_stream(ctx.device).wait_stream(side)
    ctx.sync()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
        for i in range(calls):
            fn(i)
    ctx.sync()
    graph.replay()                                   # the first replay uploads the graph
    ctx.sync()
    times = []
    for _ in range(replays):
        if together:
            ctx.barrier()
            ctx.sync()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / calls)
    del graph
    return Times.of(times, "graph")


def time_best(ctx: Ctx, fn: Callable[[int], object], calls: int, replays: int, together: bool = True) -> Times:
    """time_graph, or eager timing (logged) where the work cannot be captured here."""
    try:
        return time_graph(ctx, fn, calls, replays, together)
    except Exception as exc:
        ctx.log(f"graph capture failed ({type(exc).__name__}: {str(exc)[:300]}); timing eagerly")
        ctx.note("failed", f"graph capture: {type(exc).__name__}: {str(exc)[:300]}")
        return time_eager(ctx, fn, max(3, replays * calls), together=together)


@contextlib.contextmanager
def on_torch_stream(ctx: Ctx):
    """CuPy launches go to torch's current stream (the capture stream inside torch.cuda.graph)."""
    if not ctx.cuda:
        yield
        return
    import cupy
    import torch

    with cupy.cuda.ExternalStream(torch.cuda.current_stream(ctx.device).cuda_stream):
        yield


_VIEWS: dict = {}


def as_cupy_cached(t):
    """A CuPy view of a torch CUDA tensor (zero copy), remembered by pointer, shape, strides and dtype: the
    views are made in the warm-up calls, so inside a graph capture no CuPy array is built."""
    key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype))
    view = _VIEWS.get(key)
    if view is None:
        import cupy
        import torch

        if t.dtype == torch.bfloat16:           # torch's CUDA array interface has no bf16: its bits, as CuPy's bf16
            from ..kernels.testing import resolve_dtype

            view = _VIEWS[key] = cupy.asarray(t.view(torch.int16)).view(resolve_dtype("bf16"))
        else:
            view = _VIEWS[key] = cupy.asarray(t)
    return view


def forget_views() -> None:
    """Drop the cached views (before freeing the tensors they point into)."""
    _VIEWS.clear()


def free_memory(ctx: Ctx) -> None:
    import gc

    forget_views()
    gc.collect()
    if ctx.cuda:
        import torch

        torch.cuda.empty_cache()


# ------------------------------------------------------------------ sections: check and collectives

def section_check(ctx: Ctx) -> None:
    """An all-reduce and an all-gather across the ranks give the right values (NCCL works between the GPUs)."""
    import torch
    import torch.distributed as dist

    x = torch.full((1024,), float(ctx.rank + 1), device=ctx.device)
    dist.all_reduce(x)
    expected = ctx.world * (ctx.world + 1) / 2
    gathered = torch.empty(ctx.world * 4, device=ctx.device)
    dist.all_gather_into_tensor(gathered, torch.full((4,), float(ctx.rank), device=ctx.device))
    ok = bool(torch.all(x == expected)) and gathered.view(ctx.world, 4)[:, 0].tolist() == list(map(float, range(ctx.world)))
    ctx.note("check", {"all_reduce_sum_ok": bool(torch.all(x == expected)), "all_gather_ok": ok,
                       "backend": dist.get_backend()})
    ctx.log(f"check: all-reduce sum {x[0].item():g} (expected {expected:g}), all-gather "
            f"{gathered.view(ctx.world, 4)[:, 0].tolist()} -> {'ok' if ok else 'WRONG'}")
    if not ok:
        raise RuntimeError("collectives give wrong values between the ranks")


def _collective(kernel: Kernel, ctx: Ctx, nbytes: int):
    """fn(i) running one `kernel` of `nbytes` per rank on preallocated buffers (see comm.py for what
    bytes_per_rank means for each collective)."""
    import torch
    import torch.distributed as dist

    n, dev, world = nbytes // 2, ctx.device, ctx.world
    dtype = torch.bfloat16 if ctx.cuda else torch.float32
    if not ctx.cuda:
        n = nbytes // 4
    inp = torch.ones(n, dtype=dtype, device=dev)
    if kernel is Kernel.all_reduce:
        return lambda i: dist.all_reduce(inp)
    if kernel is Kernel.all_gather:
        out = torch.empty(n * world, dtype=dtype, device=dev)
        return lambda i: dist.all_gather_into_tensor(out, inp)
    if kernel is Kernel.reduce_scatter:                      # bytes_per_rank is each rank's output share
        big = torch.ones(n * world, dtype=dtype, device=dev)
        return lambda i: dist.reduce_scatter_tensor(inp, big)
    if kernel is Kernel.all_to_all:
        n -= n % world
        inp = inp[:n]
        out = torch.empty_like(inp)
        return lambda i: dist.all_to_all_single(out, inp)
    recv = torch.empty_like(inp)                             # send_recv: a ring shift, rank r -> r + 1
    nxt, prv = (ctx.rank + 1) % world, (ctx.rank - 1) % world

    def shift(i: int) -> None:
        ops = [dist.P2POp(dist.isend, inp, nxt), dist.P2POp(dist.irecv, recv, prv)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    return shift


def section_collectives(ctx: Ctx, sizes: tuple[int, ...]) -> None:
    """Each collective at each size, eager and (on GPU) in a CUDA graph; one row per (collective, size, timing)."""
    for kernel in COLLECTIVES:
        graphs = True
        for nbytes in sizes:
            if not ctx.agree(5.0):
                ctx.note("skipped", f"{kernel.value} from {nbytes} bytes on: deadline")
                return
            fn = None
            big = nbytes >= (64 << 20)
            try:
                fn = _collective(kernel, ctx, nbytes)
                _emit_collective(ctx, kernel, nbytes, time_eager(ctx, fn, repeats=10 if big else 30, warmup=3))
            except Exception as exc:                     # a collective the backend lacks: the others go on
                _failed(ctx, f"{kernel.value} {nbytes} B eager", exc)
                break
            if ctx.cuda and graphs:
                try:
                    _emit_collective(ctx, kernel, nbytes, time_graph(ctx, fn, calls=3 if big else 20,
                                                                     replays=5 if big else 10))
                except Exception as exc:                 # not capturable here: eager timings go on
                    _failed(ctx, f"{kernel.value} {nbytes} B graph", exc)
                    graphs = False
            fn = None
            free_memory(ctx)


def _failed(ctx: Ctx, what: str, exc: Exception) -> None:
    ctx.log(f"{what} failed: {type(exc).__name__}: {str(exc)[:300]}")
    ctx.note("failed", f"{what}: {type(exc).__name__}: {str(exc)[:300]}")


def _emit_collective(ctx: Ctx, kernel: Kernel, nbytes: int, t: Times) -> None:
    if ctx.rank != 0:
        return
    ctx.emit(Measurement(kernel=kernel, impl="nccl" if ctx.cuda else "gloo", dtype="bf16" if ctx.cuda else "fp32",
                         time_s=t.median_s, time_p10_s=t.p10_s, time_p90_s=t.p90_s, repeats=t.repeats,
                         bytes_per_rank=nbytes, world_size=ctx.world, timing=t.timing))
    ctx.log(f"{kernel.value:15s} {nbytes:>12,d} B/rank {t.timing:5s} {t.median_s * 1e6:10.1f} us")


# ------------------------------------------------------------------ driver

#: The kernel instantiations the sections launch (fp16, d 128, group 4 or 2 -> one row tile), compiled in parallel
#: up front so no section pays NVRTC inside its timing warm-up.
KERNELS = (("paged_decode.cu", "paged_decode<__half, __half, 128, 1, 4, 3, false, 0>"),
           ("paged_decode.cu", "paged_decode<__half, __half, 128, 1, 4, 3, true, 0>"),
           ("merge_partials.cu", "merge_partials<__half, 8>"), ("merge_partials.cu", "merge_partials<float, 8>"),
           ("merge_states.cu", "merge_states<__half, 8, 1>"),
           ("flash_fwd_hopper_ws.cu", "flash_fwd_hopper_ws<__half, 128, 2, false, 0>"))


def precompile(ctx: Ctx) -> None:
    from ..kernels._runtime import compile_all, compute_capability, cupy_module

    hopper = compute_capability(cupy_module()) == 90
    items = [k for k in KERNELS if hopper or "hopper" not in k[0]]
    t0 = time.time()
    compile_all(items, workers=len(items))
    ctx.log(f"compiled {len(items)} kernels in {time.time() - t0:.1f} s")


def run(ctx: Ctx, sections: tuple[str, ...]) -> None:
    from . import dist_attention, gemm, step_bench

    together = {
        "check": lambda: section_check(ctx),
        "collectives": lambda: section_collectives(ctx, TINY_SIZES if ctx.tiny else FULL_SIZES),
        "dcp": lambda: dist_attention.section_dcp(ctx),
        "tp": lambda: dist_attention.section_tp(ctx),
        "ring": lambda: dist_attention.section_ring(ctx),
    }
    done_single = False
    for name in [s for s in SECTIONS if s in sections]:
        if name in together:
            _guarded(ctx, name, together[name])
        elif not done_single:                     # gemm and step: one GPU each, side by side
            done_single = True
            if "step" in sections and ctx.rank == 0:
                _guarded(ctx, "step", lambda: step_bench.section_step(ctx), together=False)
            if "gemm" in sections and ctx.rank == ctx.world - 1:
                _guarded(ctx, "gemm", lambda: gemm.section_gemm(ctx), together=False)
            ctx.barrier()
    ctx.barrier()


def _guarded(ctx: Ctx, name: str, fn: Callable[[], None], together: bool = True) -> None:
    t0 = time.time()
    ctx.log(f"section {name}: start")
    try:
        fn()
        ctx.log(f"section {name}: done in {time.time() - t0:.1f} s")
    except Exception as exc:
        ctx.log(f"section {name}: FAILED after {time.time() - t0:.1f} s: {type(exc).__name__}: {exc}")
        ctx.log(traceback.format_exc())
        ctx.note("section_failed", f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
    free_memory(ctx)
    if together:
        ctx.barrier()


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="one rank of rooflab bench --distributed (started by torchrun)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--section", action="append", choices=SECTIONS, default=None)
    ap.add_argument("--scale", choices=("full", "tiny"), default="full")
    ap.add_argument("--deadline-s", type=float, default=300.0, help="seconds from start after which no case starts")
    args = ap.parse_args(argv)

    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    cuda = torch.cuda.is_available() and args.scale == "full"
    if cuda:
        if torch.cuda.device_count() <= local:
            raise SystemExit(f"rank {rank}: local rank {local} but only {torch.cuda.device_count()} GPU(s)")
        torch.cuda.set_device(local)
        import cupy

        cupy.cuda.Device(local).use()
    args.out.mkdir(parents=True, exist_ok=True)
    log_file = open(args.out / f"rank{rank}.log", "a")
    ctx = Ctx(rank, world, local, cuda, args.out, time.time() + args.deadline_s, args.scale == "tiny", log_file)
    timeout = datetime.timedelta(seconds=PG_TIMEOUT_S)
    if cuda:
        dist.init_process_group("nccl", timeout=timeout, device_id=ctx.device)
    else:
        dist.init_process_group("gloo", timeout=timeout)
    ctx.log(f"world {world}, backend {dist.get_backend()}, device {ctx.device}, torch {torch.__version__}, "
            f"NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}")
    try:
        if cuda:
            _guarded(ctx, "precompile", lambda: precompile(ctx), together=False)
        run(ctx, tuple(args.section or SECTIONS))
    finally:
        dist.destroy_process_group()
        log_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

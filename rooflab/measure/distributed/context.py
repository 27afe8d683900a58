"""What every section of the multi-GPU bench shares: the rank context (Ctx), the timers (thin wrappers over
rooflab.measure.timing that line the ranks up), CuPy on torch's stream, and freeing memory between cases.

The ranks are started by torchrun (worker.py); a section module imports this one and nothing imports a section
back but the worker.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from ...fit.records import Measurement
from ...load import load_gpu
from ...specs import GpuSpec
from ..timing import Timing, time_torch_calls, time_torch_graph

#: The timing of one configuration (rooflab.measure.timing.Timing; the name the sections used before).
Times = Timing


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
    gpu_spec: str = "h200-sxm"    # the bundled spec (or YAML) of the GPUs: their decode units per SM

    @cached_property
    def gpu(self) -> GpuSpec:
        return load_gpu(self.gpu_spec)

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

    def line_up(self) -> None:
        """Every rank at a barrier, its GPU idle: what a timing that runs `together` does first."""
        self.barrier()
        self.sync()

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

def time_eager(ctx: Ctx, fn: Callable[[int], object], repeats: int, warmup: int = 2, together: bool = True) -> Timing:
    """fn(i) called `repeats` times back to back after `warmup` calls (measure.timing.time_torch_calls: CUDA events,
    or host clocks on CPU). `together`: every rank runs it (the ranks line up at a barrier first)."""
    return time_torch_calls(fn, repeats, warmup, device=ctx.device, line_up=ctx.line_up if together else None)


def time_graph(ctx: Ctx, fn: Callable[[int], object], calls: int, replays: int, together: bool = True) -> Timing:
    """fn(0..calls-1) captured in one CUDA graph, replayed `replays` times (measure.timing.time_torch_graph).
    `together`: the ranks line up at a barrier before each replay, so a replay's time holds the collectives and
    what is left of the rank skew. On CPU: eager timing."""
    if not ctx.cuda:
        return time_eager(ctx, fn, replays, together=together)
    return time_torch_graph(fn, calls, replays, device=ctx.device, line_up=ctx.line_up if together else None)


def time_best(ctx: Ctx, fn: Callable[[int], object], calls: int, replays: int, together: bool = True) -> Timing:
    """time_graph, or eager timing (logged) where the work cannot be captured here."""
    try:
        return time_graph(ctx, fn, calls, replays, together)
    except Exception as exc:
        ctx.log(f"graph capture failed ({type(exc).__name__}: {str(exc)[:300]}); timing eagerly")
        ctx.note("failed", f"graph capture: {type(exc).__name__}: {str(exc)[:300]}")
        return time_eager(ctx, fn, max(3, replays * calls), together=together)


def failed(ctx: Ctx, what: str, exc: Exception) -> None:
    """Log and note a case that failed (the section goes on with the next)."""
    ctx.log(f"{what} failed: {type(exc).__name__}: {str(exc)[:300]}")
    ctx.note("failed", f"{what}: {type(exc).__name__}: {str(exc)[:300]}")


# ------------------------------------------------------------------ CuPy on torch's stream, memory

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
            from ...kernels.testing import resolve_dtype

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


__all__ = ["Ctx", "Times", "as_cupy_cached", "failed", "forget_views", "free_memory", "on_torch_stream", "time_best",
           "time_eager", "time_graph"]

"""`rooflab bench`: check, then time, every case of the sweep for rooflab's kernels and PyTorch's.

For each configuration and implementation: build fresh random inputs, check the output
against the fp64 oracle on a slice (a failure is reported and the case is not timed),
then time it (CUDA events, warm-up, the L2 flushed before every repeat, the median).
One row per (configuration, implementation) goes to the CSV, with the metadata header.
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

import numpy as np

from ..progress import Progress
from ..vocab import Kernel
from .cases import Case
from ..fit.records import Measurement, write_measurements
from .timing import L2Flusher, time_gpu, time_torch


@dataclass
class BenchResult:
    rows: list[Measurement] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


#: The tolerance class (rooflab.kernels.testing.TOLERANCES) of each kernel's output.
_KIND = {Kernel.naive: "naive", Kernel.naive_softmax: "rowwise", Kernel.merge: "rowwise", Kernel.flash: "attention",
         Kernel.paged: "attention", Kernel.split_kv: "attention", Kernel.flash_window: "attention",
         Kernel.paged_window: "attention", Kernel.paged_multi: "attention", Kernel.mla_decode: "attention"}


def tolerance(case: Case) -> float:
    """Largest accepted norm-wise relative error against the fp64 oracle: the GPU tests' table
    (rooflab.kernels.testing.TOLERANCES, each entry with its reason)."""
    from ..kernels.testing import tolerance as table

    return table(case.dtype.array_name, _KIND[case.kernel]).rel_l2


def run(cases: list[Case], l2_bytes: int, with_torch: bool = True, repeats: int = 20,
        progress: TextIO | None = sys.stderr, seed: int = 0,
        after_case: Callable[[BenchResult], None] | None = None) -> BenchResult:
    """Check and time every case; rooflab's kernels first, then the PyTorch peers of the same case.

    `after_case` sees the results so far after every case (the CLI saves them, so a run cut
    short still leaves its measurements).
    """
    from . import ours, torch_peers

    result = BenchResult()
    flush = L2Flusher(l2_bytes)
    bar = Progress(len(cases), progress)
    for i, case in enumerate(cases, 1):
        rng = np.random.default_rng(seed + i)
        runners = []
        for impl, framework, build in (("rooflab", "cupy", lambda: [(ours.impl_name(case), *ours.runner(case, rng))]),
                                       ("torch", "torch", lambda: list(torch_peers.peers(case, rng)))):
            if framework == "torch" and not with_torch:
                continue
            try:
                runners += [(name, launch, check, framework) for name, launch, check in build()]
            except Exception as exc:  # inputs that cannot be built (out of memory, a refused shape)
                result.failures.append(f"{case.label()} {impl}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        for j, (impl, launch, check, framework) in enumerate(runners, 1):
            line = _measure(case, impl, launch, check, framework, flush, l2_bytes, repeats, result)
            bar.step(f"{case.label():60s} {impl:22s} {line}", finished=j == len(runners))
        if not runners:
            bar.step(f"{case.label():60s} nothing to run")
        _release()
        if after_case is not None:
            after_case(result)
    return result


def _measure(case: Case, impl: str, launch: Callable, check: Callable, framework: str, flush: L2Flusher,
             l2_bytes: int, repeats: int, result: BenchResult) -> str:
    try:
        err = float(check())
    except Exception as exc:  # a peer backend that refuses this shape, or a kernel that fails
        result.failures.append(f"{case.label()} {impl}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        return f"skipped ({type(exc).__name__})"
    if not np.isfinite(err) or err > tolerance(case):
        result.failures.append(f"{case.label()} {impl}: relative error {err:.3g} > {tolerance(case):g}")
        return f"WRONG: relative error {err:.3g}"
    if framework == "torch":
        timing = time_torch(launch, repeats=repeats, flush_bytes=flush.nbytes)
    else:
        timing = time_gpu(launch, repeats=repeats, flush=flush)
    result.rows.append(case.measurement(impl, timing.median_s, timing.p10_s, timing.p90_s, timing.repeats, err))
    return f"{timing.median_s * 1e6:10.1f} us  err {err:.1e}"


def _release() -> None:
    """Return the device memory of the last case before the next one allocates."""
    gc.collect()
    try:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
    except Exception:
        pass
    try:
        import torch

        torch.cuda.empty_cache()
    except Exception:
        pass


def save(result: BenchResult, path: Path, meta: dict[str, str], checkpoint: bool = False) -> None:
    write_measurements(path, result.rows, meta, checkpoint=checkpoint)


def run_to_file(cases: list[Case], spec_name: str, path: Path, command: str, with_torch: bool = True,
                repeats: int = 20) -> BenchResult:
    """run() on this GPU, writing the measurements and their metadata to `path` after every case
    (a run cut short keeps what it measured) and at the end."""
    from ..load import load_gpu
    from .device import metadata

    meta = metadata(command, spec_name)
    result = run(cases, load_gpu(spec_name).l2_bytes, with_torch=with_torch, repeats=repeats,
                 after_case=lambda partial: save(partial, path, meta, checkpoint=True))
    save(result, path, meta)
    return result

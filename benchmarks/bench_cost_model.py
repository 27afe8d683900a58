"""Speed of the cost model and of `rooflab report` (a benchmark, not a test).

Targets (issue 2): both prefill variants over 10^6 (seq_len, batch) points in under 1 s on a
2-core machine; `rooflab report` under 0.5 s wall. Prints one line per figure; record them,
with date, machine and command, in RESULTS.md.

    python benchmarks/bench_cost_model.py
"""

from __future__ import annotations

import platform
import shutil
import statistics
import subprocess
import time

import numpy as np

from rooflab import DType, load_gpu, load_model
from rooflab.cost.flash import flash_prefill
from rooflab.cost.naive import naive_prefill
from rooflab.roofline import Ceilings, predict


def time_grid(repeats: int = 5) -> float:
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    roofs = Ceilings.of(gpu, DType.fp16)
    seq = np.linspace(1, 131072, 1000).round()[:, None]   # 1000 x 1000 = 10^6 points
    batch = np.arange(1, 1001)[None, :]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for cost in (naive_prefill(model, seq, batch), flash_prefill(model, seq, batch, gpu=gpu)):
            p = predict(cost, roofs)
            assert p.t_floor_s.shape == (1000, 1000)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_cli(repeats: int = 7) -> float:
    exe = shutil.which("rooflab")
    if exe is None:
        raise SystemExit("rooflab is not on PATH: pip install . first")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([exe, "report"], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:])  # the first run compiles .pyc files


if __name__ == "__main__":
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}")
    print(f"naive + flash + roofline over 10^6 (seq_len, batch) points: {time_grid():.3f} s (target < 1 s)")
    print(f"`rooflab report` wall time, median of 6: {time_cli():.3f} s (target < 0.5 s)")

"""Speed of the cost model and of `rooflab report` (a benchmark, not a test).

Targets: both prefill variants over 10^6 (seq_len, batch) points in under 1 s on a 2-core machine,
and the same for a hybrid model (every layer type of Gemma-3-27B and gpt-oss-120b); `rooflab report`
within 2.5x the time of `python -c "import numpy, yaml"` measured in the same run. Prints one line per figure; record them, with date, machine and
command, in RESULTS.md.

    python benchmarks/bench_cost_model.py
"""

from __future__ import annotations

import compileall
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import rooflab
from rooflab import DType, load_gpu, load_model
from rooflab.cost.flash import flash_prefill
from rooflab.cost.layers import model_prefill
from rooflab.cost.naive import naive_prefill
from rooflab.floors import Ceilings, floor


def time_grid(repeats: int = 5) -> float:
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    roofs = Ceilings.of(gpu, DType.fp16)
    seq = np.linspace(1, 131072, 1000).round()[:, None]   # 1000 x 1000 = 10^6 points
    batch = np.arange(1, 1001)[None, :]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for cost in (naive_prefill(model.heads, seq, batch), flash_prefill(model.heads, seq, batch, gpu=gpu)):
            p = floor(cost, roofs)
            assert p.t_floor_s.shape == (1000, 1000)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_hybrid_grid(name: str, repeats: int = 5) -> float:
    """Every layer type of a hybrid model (windows, sinks, full), naive and flash, over 10^6 points."""
    model, gpu = load_model(name), load_gpu("h100-sxm")
    roofs = Ceilings.of(gpu, DType.bf16)
    seq = np.linspace(1, 131072, 1000).round()[:, None]
    batch = np.arange(1, 1001)[None, :]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for naive in (True, False):
            for layer in model_prefill(model, seq, batch, DType.bf16, causal=True, naive=naive, gpu=gpu):
                p = floor(layer.cost, roofs)
                assert p.t_floor_s.shape == (1000, 1000)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _wall(argv: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:])  # the first run warms the file cache


def time_cli(repeats: int = 11) -> tuple[float, float]:
    """`rooflab report` and `python -c "import numpy, yaml"`, interleaved in the same run."""
    exe = shutil.which("rooflab")
    if exe is None:
        raise SystemExit("rooflab is not on PATH: pip install . first")
    # pip compiles an installed package's bytecode; an editable install under PYTHONDONTWRITEBYTECODE=1
    # would otherwise recompile every rooflab module on every start (about 40 ms here), which no user pays
    compileall.compile_dir(Path(rooflab.__file__).parent, quiet=1)
    report, baseline = [], []
    for _ in range(repeats):
        report.append(_wall([exe, "report"], 2))
        baseline.append(_wall([sys.executable, "-c", "import numpy, yaml"], 2))
    return statistics.median(report), statistics.median(baseline)


if __name__ == "__main__":
    print(f"machine: {platform.node()} {platform.machine()} python {platform.python_version()}")
    print(f"naive + flash + roofline over 10^6 (seq_len, batch) points: {time_grid():.3f} s (target < 1 s)")
    for name in ("gemma-3-27b", "gpt-oss-120b"):
        print(f"{name}: every layer type, naive + flash + roofline over 10^6 points: {time_hybrid_grid(name):.3f} s "
              "(target < 1 s)")
    report, baseline = time_cli()
    print(f"`rooflab report` wall {report:.3f} s; `python -c 'import numpy, yaml'` {baseline:.3f} s: "
          f"{report / baseline:.2f}x (target <= 2.5x)")

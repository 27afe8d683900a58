"""Collectives and DCP / TP layers measured on N GPUs against what other GPU counts' fits predict, and refitted.

    python benchmarks/distributed_scaling.py measurements/h200x4-collectives.csv measurements/h200x4-distributed.csv

For each collectives file (one GPU count N):
  extrapolated  the GPU YAML's collective fits of the other GPU counts only, scaled to N by rooflab.comm's
                stated assumptions (an extra ring step adds HOP_LATENCY_S to alpha; the fitted bus bandwidth)
  refitted      the file's own alpha-beta bands, fitted on alternate message sizes and held out on the others
                (what `rooflab validate FILE` reports)
For each distributed file: the DCP decode and TP layer speedups over one GPU, composed from the GPU YAML's kernel
and collective fits (nothing fitted on these rows), measured against predicted, and the absolute times.
A benchmark, not a test: the figures go to RESULTS.md with the machine and date of the measurement files.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflab.bench.dist_validate import validate_any  # noqa: E402
from rooflab.fit.records import read_measurements  # noqa: E402
from rooflab.comm import collective_time, interconnect_of  # noqa: E402
from rooflab.load import load_gpu  # noqa: E402
from rooflab.vocab import Kernel, KernelFamily  # noqa: E402


def _spread(errors: list[float]) -> str:
    e = np.abs(np.asarray(errors))
    return f"median {np.median(e):.1%}, worst {np.max(e):.1%} ({e.size} rows)"


def collectives(path: Path, gpu_name: str) -> None:
    meta, rows = read_measurements(path)
    rows = [m for m in rows if m.kernel.family is KernelFamily.collective]
    n = {m.world_size for m in rows}
    if len(n) != 1:
        raise SystemExit(f"{path}: expected one GPU count, found {sorted(n)}")
    n = n.pop()
    gpu = load_gpu(gpu_name)
    link = interconnect_of(gpu)
    others = dataclasses.replace(link, collectives=tuple(c for c in link.collectives if c.world_size != n))
    print(f"{path.name}: {len(rows)} rows on {n} GPUs, {meta.get('date')}; fits of other counts: "
          f"{sorted({c.world_size for c in others.collectives})}")
    by_timing: dict[str, list[float]] = {}
    for kernel in sorted({m.kernel for m in rows}, key=lambda k: k.value):
        for timing in ("graph", "eager"):
            errs = []
            for m in (m for m in rows if m.kernel is kernel and (m.timing or "eager") == timing):
                p = collective_time(others, kernel, m.bytes_per_rank, n, timing).t_predicted_s
                errs.append(p / m.time_s - 1)
            if errs:
                by_timing.setdefault(timing, []).extend(errs)
                print(f"  extrapolated {kernel.value:15s} {timing:5s} {_spread(errs)}")
    for timing, errs in by_timing.items():
        print(f"  extrapolated, every {timing} row: {_spread(errs)}")
    v = validate_any(path, gpu_name)
    held = [r.error for r in v.rows if r.held_out and r.error is not None]
    graph = [r.error for r in v.rows if r.held_out and r.error is not None and "graph" in r.impl]
    print(f"  refitted at {n} GPUs (held out): every row {_spread(held)}; graph rows {_spread(graph)}")
    for g in v.groups:
        print(f"    {g.kernel.value:15s} {g.impl:28s} median {g.median_error:.1%} worst {g.worst_error:.1%}")


def speedups(path: Path, gpu_name: str) -> None:
    v = validate_any(path, gpu_name)
    for kernel in (Kernel.dcp_decode, Kernel.tp_attention):
        rows = [r for r in v.rows if r.kernel is kernel and r.predicted_s is not None]
        one = {r.shape: r for r in rows if r.measurement.world_size == 1}
        many = [r for r in rows if r.measurement.world_size > 1]
        if not many:
            continue
        errs, times = [], []
        print(f"{path.name}: {kernel.value}, speedup over one GPU (measured / predicted)")
        for r in many:
            base = one.get(r.shape)
            if base is None:
                continue
            measured, predicted = base.measured_s / r.measured_s, base.predicted_s / r.predicted_s
            errs.append(predicted / measured - 1)
            times += [base.error, r.error]
            print(f"  {r.shape:>12s} x {r.measurement.world_size} GPUs: {measured:.3f}x / {predicted:.3f}x "
                  f"({predicted / measured - 1:+.1%})")
        print(f"  speedup {_spread(errs)}; absolute times {_spread(times)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--gpu", default="h200-sxm")
    args = ap.parse_args()
    for path in args.files:
        _, rows = read_measurements(path)
        if any(m.kernel.family is KernelFamily.collective for m in rows):
            collectives(path, args.gpu)
        else:
            speedups(path, args.gpu)


if __name__ == "__main__":
    main()

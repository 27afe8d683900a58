"""Two runs of the same sweep on the same GPU: how much do timings move, and does the model fitted
on one run predict the other? (A difference between versions smaller than the run-to-run spread is
noise; METHOD.md.)

    python benchmarks/run_to_run.py measurements/h200-sweep-mma-flash.csv measurements/h200-sweep-repeat.csv
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from rooflab.fit.records import read_measurements
from rooflab.bench.validate import predict_measurement, validate
from rooflab.load import load_gpu
from rooflab.vocab import CeilingSource


def key(m):
    return (m.kernel, m.impl, m.dtype, m.batch, m.num_qo_heads, m.num_kv_heads, m.head_dim, m.seq_len,
            m.context_lens, m.causal, m.page_size, m.splits, m.tokens)


def main(first: Path, second: Path) -> None:
    _, rows_a = read_measurements(first)
    meta_b, rows_b = read_measurements(second)
    times_b = {key(m): m for m in rows_b}
    fits = {(g.kernel, g.impl): g.fit for g in validate(first).groups}
    gpu = load_gpu(meta_b["gpu_spec"])
    spread, cross = defaultdict(list), defaultdict(list)
    for m in rows_a:
        other = times_b.get(key(m))
        if other is None:
            continue
        spread[(m.kernel, m.impl)].append(abs(other.time_s - m.time_s) / m.time_s)
        fit = fits.get((m.kernel, m.impl))
        if fit is not None:
            floor = float(predict_measurement(other, gpu, CeilingSource.calibrated, fit.units_per_sm).t_floor_s)
            cross[(m.kernel, m.impl)].append(abs(fit(floor) - other.time_s) / other.time_s)
    print(f"{'kernel':14s} {'impl':18s} {'rows':>4s}  run-to-run median / worst   model from run 1 on run 2: median / worst")
    for group in spread:
        s, c = np.array(spread[group]), np.array(cross.get(group, [np.nan]))
        print(f"{group[0]:14s} {group[1]:18s} {len(s):4d}  {np.median(s):8.1%} / {s.max():6.1%}"
              f"              {np.median(c):8.1%} / {np.max(c):6.1%}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

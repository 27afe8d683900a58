"""Does recommend_splits pick a good split count? Time split-KV decode over a grid of counts.

Run on a GPU machine from the repository root (ROOFLAB_GIT_COMMIT names the commit when the
tree is not a git checkout):

    python3 benchmarks/split_recommendation.py -o split-sweep.csv

For each decode workload (Llama-3-8B heads, fp16, 16-token pages) it checks and times rooflab's
split-KV kernel (attention plus merge) at every split count of the grid, with the same machinery
as `rooflab bench` (oracle check first, L2 flushed before each repeat, median of the repeats), and
writes the rows as a measurement CSV with its metadata. The table printed last compares the
count recommend_splits picks with units_per_sm = 1 (the plain parallelism model) and with the
value `rooflab validate` fitted for the decode kernels, against the fastest measured count.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflab.measure.cases import LLAMA3_8B, Case  # noqa: E402
from rooflab.measure.device import default_spec, device_name  # noqa: E402
from rooflab.measure.run import run_to_file  # noqa: E402
from rooflab.cost.paged import recommend_splits  # noqa: E402
from rooflab.load import load_gpu  # noqa: E402
from rooflab.units import DType  # noqa: E402

#: (context length, batch) of the decode workloads.
WORKLOADS = ((8192, 1), (32768, 1), (131072, 1), (65536, 2), (16384, 4), (32768, 4), (8192, 8))
GRID = (1, 2, 4, 8, 12, 16, 17, 20, 24, 25, 28, 32, 40, 48, 64)
FITTED_UNITS_PER_SM = 1.5   # `rooflab validate measurements/h200-sweep.csv`: paged and split_kv fits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=Path("split-sweep.csv"))
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    spec = default_spec()
    gpu = load_gpu(spec)
    picks = {}
    cases = []
    for ctx, batch in WORKLOADS:
        lens = [ctx] * batch
        plain = recommend_splits(LLAMA3_8B, lens, gpu.num_sms)
        fitted = recommend_splits(LLAMA3_8B, lens, gpu.num_sms, units_per_sm=FITTED_UNITS_PER_SM)
        picks[(ctx, batch)] = (plain, fitted)
        for s in sorted(set(GRID) | {plain, fitted}):
            if s <= ctx // 16:
                cases.append(Case("split_kv", DType.fp16, batch=batch, context_lens=tuple(lens), page_size=16,
                                  splits=s))
    print(f"{len(cases)} split-KV configurations on {device_name()}", file=sys.stderr)
    result = run_to_file(cases, spec, args.output, " ".join(["python3", *sys.argv]), False, args.repeats)
    for failure in result.failures:
        print(f"not timed: {failure}", file=sys.stderr)

    times = {(m.lengths()[0], m.batch, m.splits): m.time_s for m in result.rows}
    print(f"{'workload':>12s} {'best':>12s} {'units/SM 1':>16s} {'units/SM %g' % FITTED_UNITS_PER_SM:>16s}")
    for ctx, batch in WORKLOADS:
        measured = {s: t for (c, b, s), t in times.items() if (c, b) == (ctx, batch)}
        if not measured:
            continue
        best = min(measured, key=measured.get)
        plain, fitted = picks[(ctx, batch)]
        cells = [f"{s:3d} {measured[s] * 1e6:7.1f}us" if s in measured else f"{s:3d}     n/a" for s in (plain, fitted)]
        print(f"{ctx:>7d} x {batch:<2d} {best:3d} {measured[best] * 1e6:7.1f}us {cells[0]:>16s} {cells[1]:>16s}")


if __name__ == "__main__":
    main()

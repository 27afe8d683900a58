"""Reproduces RESULTS.md "Session 7: serving": every published serving row (measurements/published/serving/)
beside rooflab.serve's floor and prediction (fitted on none of them), the floor check, and the H200 medians.
Run: python benchmarks/serve_published.py [source-id ...] (minutes: the request-rate rows are simulated).
"""

import sys

import numpy as np

from rooflab.published import load_published
from rooflab.serve.published import compare, to_frame


def main() -> None:
    rows = [r for r in load_published().serving if len(sys.argv) < 2 or r.source in sys.argv[1:]]
    frame = to_frame(compare(rows))
    done = frame[frame.skipped == ""]
    print(done[["source", "gpu", "model", "tp", "input_len", "output_len", "concurrency", "request_rate", "metric",
                "statistic", "measured", "floor", "predicted", "ratio", "beats_floor"]].to_string())
    print(f"\nskipped: {len(frame) - len(done)}")
    for reason, n in frame[frame.skipped != ""].skipped.value_counts().items():
        print(f"  {n:3d}  {reason}")
    print(f"rows beating the floor: {int(done.beats_floor.sum())} of {len(done)}")
    by = done[done.predicted.notna()].assign(err=lambda f: (f.ratio - 1).abs())
    print("\nmedian |predicted/measured - 1| (and ratio range) by source, GPU and metric:")
    for (source, gpu, metric), part in by.groupby(["source", "gpu", "metric"]):
        print(f"  {source:34s} {gpu:9s} {metric:28s} {len(part):3d} rows  {np.median(part.err):6.1%}  "
              f"{part.ratio.min():.2f}-{part.ratio.max():.2f}")
    h200 = done[(done.gpu == "h200-sxm") & done.predicted.notna()]
    for name, metrics in (("TPOT (tpot_s, itl_s)", ("tpot_s", "itl_s")),
                          ("throughput per GPU", ("output_tokens_per_s", "output_tokens_per_s_per_gpu"))):
        part = h200[h200.metric.isin(metrics)]
        if len(part):
            err = np.abs(part.ratio - 1)
            print(f"H200 {name}: {len(part)} rows, median |predicted/measured - 1| {np.median(err):.1%}, "
                  f"median ratio {np.median(part.ratio):.3f}")


if __name__ == "__main__":
    main()

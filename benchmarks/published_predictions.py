"""Issue 27's every-GPU check: the published kernel rows against rooflab's floors and the H200 fits transferred.

    python benchmarks/published_predictions.py            (the same text as `rooflab validate --published`)
    python benchmarks/published_predictions.py --binds    (each predicted row beside the H200 run of its shape)
    python benchmarks/published_predictions.py --campaigns    (the campaigns' fits alone, as before the shapes models)

Reads measurements/published/ (rooflab.published), fits nothing on it, and prints the floors beaten, the errors per
source / GPU / family and per family off the H200 against the 12% / 30% target (RESULTS.md, "Session 7: every-GPU
predictions", and Session 8's issue 27 sections). cuDNN rows and the FlashAttention benchmark's eager rows are
predicted by the models rooflab.fit.shapes_fit fits on our own H200 runs at these shapes (measurements/shapes/);
`--campaigns` prints the same check with the campaigns' fits alone (the ones `rooflab report` uses).

--binds splits each predicted row's error where the H200 ran the same shape with the same code
(measurements/shapes/h200-published-shapes.csv, benchmarks/h200_published_shapes.py: SDPA's cuDNN and flash back ends,
the FlashAttention benchmark's attention_pytorch): predicted / published = (predicted / H200 model) x (H200 model /
H200 measured) x (H200 measured / published). The middle factor is the model's own error on the H200 at that shape;
the last is what the published GPU and its software version did differently from today's H200 run (the transfer
can only account for the hardware part of it). Nothing is fitted on the published rows. cuDNN's H200 model column is
at the shapes runs' own timing (each call synchronised, so the host's dispatch is in it: rooflab.fit.cudnn_fit's
call_s), its prediction at the back-to-back timing of the published benchmarks (the campaigns' c0), so for cuDNN the
first factor carries that difference too.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rooflab.fit.published_check import Family, check_rows, predict_row, published_text  # noqa: E402
from rooflab.fit.cudnn_fit import cudnn_fit  # noqa: E402
from rooflab.load import load_gpu  # noqa: E402

H200_SHAPES = ROOT / "measurements" / "shapes" / "h200-published-shapes.csv"
#: The H200 run's implementation for each family (benchmarks/h200_published_shapes.py).
H200_IMPL = {Family.cudnn: "sdpa_cudnn", Family.fa2: "sdpa_flash", Family.eager: "fa_bench_eager"}


def h200_runs(path: Path = H200_SHAPES) -> dict[tuple, float]:
    """(impl, d, heads, T, batch, causal) -> the H200's median time in seconds."""
    with open(path, newline="") as f:
        return {(r["impl"], int(r["d"]), int(r["h"]), int(r["t"]), int(r["b"]), bool(int(r["causal"]))):
                float(r["time_s"]) for r in csv.DictReader(f)}


def binds_text() -> str:
    """Each predicted row off the H200 whose shape the H200 ran: the three factors of its error, then per family
    the medians and worst of each factor."""
    runs = h200_runs()
    h200 = load_gpu("h200-sxm")
    lines = ["row | published us | predicted us | H200 model us | H200 measured us | pred/pub-1 | model/H200-1 | "
             "H200/pub-1", "--- | --- | --- | --- | --- | --- | --- | ---"]
    factors: dict[Family, list[tuple[float, float, float]]] = {}
    for c in check_rows():
        r = c.row
        if c.family not in H200_IMPL or c.prediction is None or r.gpu == "h200-sxm" or r.num_kv_heads != r.num_qo_heads:
            continue
        key = (H200_IMPL[c.family], r.head_dim, r.num_qo_heads, r.seq_len_q, r.batch, r.causal)
        if key not in runs:
            continue
        measured = runs[key]
        model, _ = predict_row(r, h200, c.family)
        if model is None:
            continue
        t_model = model.t_predicted_s
        if c.family is Family.cudnn:      # at the shapes runs' own timing: each call synchronised, dispatch included
            fit = cudnn_fit()
            t_model += fit.call_s - fit.model.overhead_s
        f = (c.error, t_model / measured - 1, measured / c.published_s - 1)
        factors.setdefault(c.family, []).append(f)
        lines.append(f"{c.label} | {c.published_s * 1e6:.1f} | {c.prediction.t_predicted_s * 1e6:.1f} | "
                     f"{t_model * 1e6:.1f} | {measured * 1e6:.1f} | {f[0]:+.1%} | {f[1]:+.1%} | {f[2]:+.1%}")
    lines += ["", "family | rows | pred/pub-1 median abs / worst | model/H200-1 median abs / worst | "
                  "H200/pub-1 median abs / worst", "--- | --- | --- | --- | ---"]
    for family, fs in sorted(factors.items(), key=lambda kv: kv[0].value):
        a = np.abs(np.array(fs))
        lines.append(f"{family.value} | {len(fs)} | " + " | ".join(
            f"{np.median(a[:, i]):.1%} / {a[:, i].max():.1%}" for i in range(3)))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if "--binds" in sys.argv[1:]:
        sys.stdout.write(binds_text())
    elif "--campaigns" in sys.argv[1:]:
        from rooflab.fit.published_check import render_check

        sys.stdout.write(render_check(check_rows(shapes=False)) + "\n")
    else:
        sys.stdout.write(published_text())

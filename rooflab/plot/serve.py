"""The throughput-interactivity chart: output tokens/s per GPU (y) against tokens/s per user (x, 1 / TPOT), one
curve per replica (GPU, deployment), the floors' curve dashed beside the prediction's; each point a concurrency.

`serve_chart(sweeps)` takes rooflab.serve.ConcurrencySweep values and returns a Figure (never shown or saved
here); `sweeps_frame(sweeps)` is exactly what it draws (the sweeps' to_frame() rows).
"""

from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from .style import GPU_COLORS, chart, new_figure, plain_log_formatter


def sweeps_frame(sweeps: Sequence):
    import pandas as pd

    return pd.concat([s.to_frame() for s in sweeps], ignore_index=True)


#: How many of the kernels without a prediction a legend entry names before it counts the rest.
MAX_NAMED = 3
_NONE = "no prediction for "


def _why_none(provenance: str) -> str:
    """A legend's short reason that a replica has no prediction: the distinct kernels without one, read from the
    step report's notes that serve.steptime joins into the provenance ('no prediction for all_gather (interconnect
    collectives): ...; no prediction for all_reduce (...): ...' -> 'no prediction for all_gather, all_reduce'),
    past MAX_NAMED counted ('and 2 more'); the whole reasons are rooflab serve's, under its table."""
    names: list[str] = []
    for part in provenance.split("; "):
        if part.startswith(_NONE):
            name = part.removeprefix(_NONE).split(": ", 1)[0].split(" (", 1)[0]
            names += [] if name in names else [name]
    if not names:
        return provenance.split(": ", 1)[0] if provenance else "no prediction"
    more = len(names) - MAX_NAMED
    return _NONE + ", ".join(names[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "")


@chart
def serve_chart(sweeps: Sequence, title: str | None = None) -> Figure:
    """One curve per sweep: solid the prediction, dashed the floor; concurrencies labelled on the prediction."""
    fig, ax = new_figure()
    for k, sweep in enumerate(sweeps):
        color = GPU_COLORS[k % len(GPU_COLORS)]
        name = sweep.label.split(";")[0]
        for estimate, style in (("floor", "--"), ("predicted", "-")):
            points = sweep.series(estimate)
            if not points:
                if estimate == "predicted":              # said in the legend, as the CLI says it under its table
                    why = _why_none(sweep.provenance)
                    ax.plot([], [], style, color=color, alpha=0.4, label=f"{name}: {why} (see rooflab serve)")
                continue
            xs = [p.output_tokens_per_s_per_user for p in points]
            ys = [p.output_tokens_per_s_per_gpu for p in points]
            ax.plot(xs, ys, style, marker="o" if estimate == "predicted" else ".", color=color,
                    label=f"{name}: {estimate}")
            if estimate == "predicted" or len(sweep.series("predicted")) == 0:
                for p, x, y in zip(points, xs, ys):
                    ax.annotate(f"{p.concurrency}", (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7,
                                color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):               # 30, 200, 10,000: numbers, not 3 x 10^1
        axis.set_major_formatter(plain_log_formatter())
        axis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
    ax.set_xlabel("interactivity: output tokens/s per user (1 / TPOT)")
    ax.set_ylabel("throughput: output tokens/s per GPU")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if sweeps:
        workload = sweeps[0].label.split(";")[-1].strip()
        ax.set_title(title or f"Throughput against interactivity ({workload}); labels: concurrency")
    return fig

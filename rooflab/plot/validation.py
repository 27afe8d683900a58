"""Predicted against measured: one point per measured configuration, the calibrated model's error at a glance."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from .style import chart, IMPL_MARKERS, KERNEL_COLORS, OTHER_MARKER, new_figure, seconds_formatter, title

if TYPE_CHECKING:
    from ..fit.validate import Validation

#: The model's claimed bounds, drawn as bands around y = x.
ERROR_BANDS = (0.10, 0.25)


@chart
def validation_chart(v: "Validation", impls: tuple[str, ...] | None = None) -> Figure:
    """Measured time against the calibrated model's prediction, log-log, per kernel.

    Colour by kernel, marker by implementation; held-out rows are filled, rows the model was fitted
    on hollow; the bands mark 10% and 25%.
    """
    fig, ax = new_figure((8.4, 7.0))
    if impls is None:  # rooflab's own implementations
        impls = tuple(sorted({r.impl for r in v.rows if r.impl.startswith("rooflab")}))
    rows = [r for r in v.rows if r.impl in impls and r.predicted_s is not None]
    if not rows:
        raise ValueError(f"no fitted rows for implementations {', '.join(impls)}")
    values = np.array([[r.predicted_s, r.measured_s] for r in rows])
    lo, hi = values.min() / 1.6, values.max() * 1.6
    line = np.geomspace(lo, hi, 50)
    ax.plot(line, line, color="#222222", lw=1.2, label="measured = predicted", gid="identity")
    for band, alpha in zip(ERROR_BANDS, (0.16, 0.08)):
        ax.fill_between(line, line / (1 + band), line * (1 + band), color="#555555", alpha=alpha, lw=0,
                        label=f"within {band:.0%}")
    for kernel, color in KERNEL_COLORS.items():
        for impl in impls:
            for held in (True, False):
                pts = [(r.predicted_s, r.measured_s) for r in rows
                       if r.kernel == kernel and r.impl == impl and r.held_out == held]
                if not pts:
                    continue
                x, y = zip(*pts)
                group = next(g for g in v.groups if g.kernel == kernel and g.impl == impl)
                label = (f"{kernel} ({impl}): held-out median {group.median_error:.1%}, worst {group.worst_error:.1%}"
                         if held else None)
                ax.scatter(x, y, s=42, marker=IMPL_MARKERS.get(impl, OTHER_MARKER), color=color if held else "none",
                           edgecolors=color, lw=1.4, zorder=3, label=label,
                           gid=f"points:{kernel}:{impl}:{'held' if held else 'fit'}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.xaxis.set_major_formatter(seconds_formatter())
    ax.yaxis.set_major_formatter(seconds_formatter())
    ax.set_xlabel("predicted time (s): c0 + t_floor / eta, calibrated ceilings")
    ax.set_ylabel("measured time (s): median of CUDA-event timings")
    device = v.meta.get("device_name", v.gpu)
    title(ax, f"rooflab's model against measured kernels on {device}",
          "filled: held-out rows (the error reported); hollow: rows the model was fitted on")
    ax.legend(loc="upper left", fontsize=8.5, framealpha=0.92)
    return fig

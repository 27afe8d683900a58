"""The roofline chart: roofs of one or more GPUs, the ridge point, attention kernels as points.

Log-log: arithmetic intensity (FLOP/byte) across, FLOP/s up. The memory roof is the diagonal
beta * I, the compute roof the flat pi of the chosen dtype; they meet at the ridge I* = pi / beta.
FLOPs of the softmax and the merge run on the fp32 vector units, so those points sit under
the (dashed) vector roof. A GPU whose YAML has a measured: section also gets its calibrated
roofs (dotted). Measured kernels are small markers, one style and one legend entry per
(kernel, implementation): colour by kernel, filled for rooflab's own, hollow for PyTorch's.
Roofs are listed under the chart, the model's points in the lower right, the one corner a
roofline leaves empty, measured groups to the right. A measured row faster than its physical floor
(MeasuredPoint.beats_floor) is ringed, labelled and listed by name: a defect to explain, never a point
among others. Artists carry gids ("roof:<gpu>",
"vector_roof:<gpu>", "ridge:<gpu>[:measured]", "point:<label>", "measured:<label>",
"beats_floor:<row>") so tests
and notebooks can find them.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Annotation
from matplotlib.patheffects import withStroke
from matplotlib.ticker import EngFormatter, LogLocator, NullFormatter

from ..floors import Ceilings
from ..units import fmt_rate, ridge_text
from ..sweeps.points import GpuRoofs, MeasuredPoint, RooflineData, RooflinePoint, floor_beaters
from .style import (chart, FIGSIZE_IN, GPU_COLORS, IMPL_MARKERS, KERNEL_COLORS, OTHER_MARKER, VARIANT_COLORS,
                    intensity_text, new_figure, plain_log_formatter, title)

#: kind -> (colour, marker, filled, size)
_POINT_STYLE = {
    "naive": (VARIANT_COLORS["naive"], "o", True, 10),
    "naive_kernel": (VARIANT_COLORS["naive"], "s", True, 7),
    "naive_softmax": (VARIANT_COLORS["naive"], "^", True, 8),
    "flash": (VARIANT_COLORS["flash"], "o", True, 10),
    "flash_tiled": (VARIANT_COLORS["flash"], "o", False, 9),
    "paged": (VARIANT_COLORS["paged"], "o", True, 9),
    "paged_launched": (VARIANT_COLORS["paged"], "o", False, 8),
    "merge": (VARIANT_COLORS["merge"], "^", True, 8),
}

#: Points whose label also says how far they sit from the ridge: the chapter's 4.7x left and 22x right.
_RIDGE_RATIO_SHOWN = ("naive", "flash")

#: Measured points: the implementation picks the marker (rooflab's own filled, PyTorch's hollow), the kernel the colour.
_OURS = "rooflab"
#: The ring and label of a measured row faster than its floor.
_BEATEN_COLOR = "#D55E00"
#: A measured point that names neither kernel nor implementation: an orange star.
_UNNAMED_COLOR, _UNNAMED_MARKER = "#E69F00", "*"
#: Extra figure width (inches) for the legend of measured groups, right of the chart, and its title.
_MEASURED_LEGEND_IN = 2.6
_MEASURED_TITLE = ("measured kernels: runs\n(every shape and dtype timed)\n"
                   "filled: rooflab's own\nhollow: PyTorch's backends")


def _merge_coincident(points: Sequence[RooflinePoint]) -> list[tuple[str, RooflinePoint]]:
    """Points at the same spot (naive QK^T and PV always are) drawn once, their labels joined."""
    out: list[tuple[str, RooflinePoint]] = []
    for p in points:
        for i, (label, q) in enumerate(out):
            if q.kind == p.kind and np.isclose(q.intensity_flop_per_byte, p.intensity_flop_per_byte) \
                    and np.isclose(q.flop_per_s, p.flop_per_s):
                out[i] = (_join(label, p.label), q)
                break
        else:
            out.append((p.label, p))
    return out


def _join(a: str, b: str) -> str:
    """'naive QK^T kernel' + 'naive PV kernel' -> 'naive QK^T and PV kernels (each)'."""
    wa, wb = a.split(), b.split()
    if len(wa) == len(wb) == 3 and wa[0] == wb[0] and wa[2] == wb[2]:
        return f"{wa[0]} {wa[1]} and {wb[1]} {wa[2]}s (each)"
    return f"{a}; {b}"


def _limits(data: RooflineData, measured: Sequence[MeasuredPoint],
            exp_roof: bool = False) -> tuple[tuple[float, float], tuple[float, float]]:
    xs = [p.intensity_flop_per_byte for p in data.points] + [m.intensity_flop_per_byte for m in measured]
    ys = [p.flop_per_s for p in data.points] + [m.achieved_flop_per_s for m in measured]
    if exp_roof and data.exp_roof_flop_per_s:
        ys += [data.exp_roof_flop_per_s, data.exp_units_flop_per_s]
    for r in data.roofs:
        for c in (r.datasheet, r.measured):
            if c is not None:
                xs += [c.ridge_flop_per_byte, c.vector_flop_per_s / c.bandwidth_bytes_per_s]
                ys += [c.matmul_flop_per_s]
    return (min(xs) / 3, max(xs) * 4), (min(ys) / 4, max(ys) * 3)


def _draw_roofs(ax, r: GpuRoofs, c: Ceilings, color: str, x: np.ndarray, measured: bool, primary: bool,
                several: bool) -> Annotation:
    """One set of roofs; the primary one (the points' GPU, datasheet) also gets its vector roof and a full label.
    Returns the ridge's label."""
    name = f"{r.display_name}: " if several else ""
    source = f"measured {r.measured_date}" if measured else "datasheet"
    ridge = c.ridge_flop_per_byte
    tag = ":measured" if measured else ""
    ax.plot(x, np.minimum(c.matmul_flop_per_s, c.bandwidth_bytes_per_s * x), ":" if measured else "-", color=color,
            lw=2.2, gid=f"roof:{r.name}{tag}", zorder=2,
            label=f"{name}roof, {source} ({_rate(c.matmul_flop_per_s)} tensor, "
                  f"{_rate(c.bandwidth_bytes_per_s, 'B/s')} HBM), ridge {ridge:.0f} FLOP/B")
    ax.plot([ridge], [c.matmul_flop_per_s], "D", color=color, ms=8, mec="white", zorder=5, gid=f"ridge:{r.name}{tag}")
    if primary and not measured:
        ax.plot(x, np.minimum(c.vector_flop_per_s, c.bandwidth_bytes_per_s * x), "--", color=color, lw=1.1,
                alpha=0.7, gid=f"vector_roof:{r.name}", zorder=2,
                label=f"{name}fp32 vector roof ({_rate(c.vector_flop_per_s)}; softmax, merge)")
        ax.axvline(ridge, color=color, lw=0.8, ls=":", alpha=0.6, zorder=1)
        return ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, c.matmul_flop_per_s), xytext=(-8, 10),
                           textcoords="offset points", ha="right", va="baseline", fontsize=9, color=color,
                           fontweight="bold")
    # just under the flat roof, right of the corner: no point sits there
    return ax.annotate(f"{ridge:.0f}", (ridge, c.matmul_flop_per_s), xytext=(16, -4), textcoords="offset points",
                       ha="left", va="top", fontsize=9, color=color, fontweight="bold", zorder=8,
                       path_effects=[withStroke(linewidth=3, foreground="white")])


def _rate(value: float, unit: str = "FLOP/s") -> str:
    """fmt_rate without trailing zeros: 989.4 TFLOP/s, 3.35 TB/s."""
    number, rest = fmt_rate(value, unit).split(" ", 1)
    return f"{float(number):g} {rest}"


def _label_offset(p: RooflinePoint, roofs: Ceilings, filled: bool,
                  crowded: bool) -> tuple[tuple[float, float], str, str]:
    """Text right of a point on the sloped roof (the space below the diagonal is empty), under one on a flat roof,
    or above it when measured points crowd the space under the roof (nothing sits above it)."""
    flat_from = roofs.rate(p.pipe) / roofs.bandwidth_bytes_per_s
    if p.intensity_flop_per_byte >= flat_from and p.flop_per_s >= 0.99 * roofs.rate(p.pipe):
        return ((0, 12), "center", "bottom") if crowded else ((0, -16), "center", "top")
    return (8, -2 if filled else -10), "left", "top"


def _groups(measured: Sequence[MeasuredPoint]) -> dict[str, list[MeasuredPoint]]:
    """Measured points by label, in the order the labels first appear."""
    out: dict[str, list[MeasuredPoint]] = {}
    for m in measured:
        out.setdefault(m.label, []).append(m)
    return out


def _measured_style(m: MeasuredPoint) -> tuple[str, str, bool]:
    """(colour, marker, filled) of a measured group: colour by kernel, marker by implementation."""
    if not m.kernel and not m.impl:
        return _UNNAMED_COLOR, _UNNAMED_MARKER, True
    return KERNEL_COLORS.get(m.kernel, _UNNAMED_COLOR), IMPL_MARKERS.get(m.impl, OTHER_MARKER), m.impl.startswith(_OURS) or not m.impl


def _draw_measured(ax, measured: Sequence[MeasuredPoint]) -> list[Annotation]:
    """One line of markers per group (gid "measured:<label>"), named once in the legend with its count; every row
    faster than its floor ringed in red and named (gid "beats_floor:<row>", a legend entry and a label each).
    Returns the beaten rows' labels (placed clear of lines with the points')."""
    for label, members in _groups(measured).items():
        color, marker, filled = _measured_style(members[0])
        ax.plot([m.intensity_flop_per_byte for m in members], [m.achieved_flop_per_s for m in members], marker,
                ms=11 if marker == _UNNAMED_MARKER else 6, color=color, mfc=color if filled else "none", mew=1.3,
                alpha=0.85, ls="none", zorder=4, label=f"{label}: {len(members)}", gid=f"measured:{label}")
    labels = []
    for m in floor_beaters(measured):
        xy = (m.intensity_flop_per_byte, m.achieved_flop_per_s)
        ax.plot([xy[0]], [xy[1]], "o", ms=14, mfc="none", mec=_BEATEN_COLOR, mew=2.0, ls="none", zorder=9,
                gid=f"beats_floor:{m.row or m.label}",
                label=f"BEATS ITS FLOOR ({m.floor_s / m.measured_s:.2f}x):\n{m.row or m.label}")
        labels.append(ax.annotate(f"beats its floor: {m.row or m.label}", xy, xytext=(10, 8), textcoords="offset points",
                                  ha="left", va="bottom", fontsize=8, color=_BEATEN_COLOR, fontweight="bold", zorder=9,
                                  path_effects=[withStroke(linewidth=3, foreground="white")]))
    return labels


@chart
def roofline_chart(data: RooflineData, measured: Sequence[MeasuredPoint] = (), exp_roof: bool = False) -> Figure:
    """The roofline of `data` (see roofline_data), with optional measured kernel points, grouped by label.

    `exp_roof` also draws the first GPU's exp roof for this attention: no attention kernel of this head dim
    can run faster than the exp units (with FMA emulation) allow, whatever its intensity."""
    fig, ax = new_figure()
    (x_lo, x_hi), (y_lo, y_hi) = _limits(data, measured, exp_roof)
    x = np.geomspace(x_lo, x_hi, 400)
    several = len(data.roofs) > 1
    ridges = []
    for i, r in enumerate(data.roofs):
        color = GPU_COLORS[i % len(GPU_COLORS)]
        ridges.append(_draw_roofs(ax, r, r.datasheet, color, x, False, i == 0, several))
        if r.measured is not None:
            ridges.append(_draw_roofs(ax, r, r.measured, color, x, True, i == 0, several))
    if exp_roof and data.exp_roof_flop_per_s:
        name, per = data.roofs[0].name, f"{data.flop_per_exp:.0f} FLOP an exp"
        for value, style, gid, what in (
                (data.exp_roof_flop_per_s, "-.", "exp_roof", "exp roof, FMA emulation included"),
                (data.exp_units_flop_per_s, (0, (1, 2, 4, 2)), "exp_units", "exp units alone")):
            ax.axhline(value, color=GPU_COLORS[0], lw=1.2, ls=style, alpha=0.8, zorder=2, gid=f"{gid}:{name}",
                       label=f"{what}: {_rate(value)} ({per})")
    halo = [withStroke(linewidth=3, foreground="white")] if measured else None   # labels legible over markers
    labels = []
    for label, p in _merge_coincident(data.points):
        color, marker, filled, size = _POINT_STYLE.get(p.kind, ("black", "o", True, 8))
        ax.plot([p.intensity_flop_per_byte], [p.flop_per_s], marker, ms=size, color=color,
                mfc=color if filled else "white", mew=1.8, ls="none", zorder=6,
                label=label, gid=f"point:{label}")
        offset, ha, va = _label_offset(p, data.roofs[0].datasheet, filled, bool(measured))
        text = intensity_text(p.intensity_flop_per_byte)
        if p.kind in _RIDGE_RATIO_SHOWN:
            text += f"\n{ridge_text(p.ridge_ratio)} of the ridge"
        labels.append(ax.annotate(text, (p.intensity_flop_per_byte, p.flop_per_s),
                                  xytext=offset, textcoords="offset points", ha=ha, va=va, fontsize=9, color=color,
                                  fontweight="bold", zorder=7, path_effects=halo))
    beaten = _draw_measured(ax, measured)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.xaxis.set_major_formatter(plain_log_formatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(EngFormatter(unit="FLOP/s", places=0, sep=" "))
    ridge = data.roofs[0].datasheet.ridge_flop_per_byte
    for text, ha, shift in (("\u2190 memory-bound", "right", -6), ("compute-bound \u2192", "left", 6)):
        ax.annotate(text, (ridge, y_hi), xytext=(shift, -6), textcoords="offset points", ha=ha, va="top",
                    fontsize=9, color="#555555")
    ax.set_xlabel("arithmetic intensity (FLOP/byte of HBM traffic)")
    ax.set_ylabel("attainable performance (FLOP/s)")
    gpus = f"{len(data.roofs)} GPUs" if several else data.roofs[0].display_name
    where = f"; points on the {data.roofs[0].display_name}" if several else ""
    title(ax, f"Roofline of attention: {data.model} on {gpus}",
          f"{data.dtype.value}, T = {data.seq_len:,} tokens, batch {data.batch}"
          f"{', causal' if data.causal else ''}, one layer; labels give FLOP/byte{where}"
          + (f"; {len(beaten)} measured row(s) beat their floor (ringed, named)" if beaten else ""))
    _legends(fig, ax)
    _clear_of_lines(fig, ax, beaten + labels + ridges)     # a row beating its floor first, then the points' labels
    return fig


#: Where a point's label may go, tried in order after its first place: (offset in points, ha, va).
_OTHER_PLACES = (((-8, 4), "right", "bottom"), ((8, -2), "left", "top"), ((12, 0), "left", "center"),
                 ((0, -16), "center", "top"), ((0, 12), "center", "bottom"), ((8, 10), "left", "bottom"),
                 ((-8, -4), "right", "top"), ((10, -30), "left", "top"), ((-10, 30), "right", "bottom"))


def _clear_of_lines(fig: Figure, ax, labels: list[Annotation]) -> None:
    """Move each label (points', then ridges') to the first of its places that crosses no drawn line (roofs,
    the ridge), no marker and no label placed before it; a label with no free place takes the one that
    crosses fewest.

    Placement needs the text's drawn size, so the figure is laid out once (constrained layout) first: the layout
    alone (the same positions as a draw without rendering gives, without drawing every artist once more).
    """
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.get_layout_engine().execute(fig)
    paths = [line.get_transform().transform_path(line.get_path()) for line in ax.lines
             if line.get_linestyle() not in ("None", "none", "") and len(line.get_xdata()) > 1]
    markers = [(line, ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()])),
                line.get_markersize() * fig.dpi / 72 / 2)
               for line in ax.lines if line.get_marker() not in (None, "None", "none", "")]
    placed = []
    for label in labels:
        first = (label.xyann, label.get_ha(), label.get_va())
        own = ax.transData.transform([label.xy])[0]
        best = None
        for place in (first, *(p for p in _OTHER_PLACES if p != first)):
            label.xyann = place[0]
            label.set(ha=place[1], va=place[2])
            box = label.get_window_extent(renderer).padded(2)
            hits = (sum(path.intersects_bbox(box, filled=False) for path in paths)
                    + sum(_marker_in(box, xy, r, own) for _, xy, r in markers)
                    + sum(box.overlaps(other) for other in placed)
                    + (not ax.bbox.contains(box.x0, box.y0) or not ax.bbox.contains(box.x1, box.y1)))
            if best is None or hits < best[0]:
                best = (hits, place)
            if hits == 0:
                break
        label.xyann = best[1][0]
        label.set(ha=best[1][1], va=best[1][2])
        placed.append(label.get_window_extent(renderer))


def _marker_in(box, centres: np.ndarray, radius: float, own: np.ndarray) -> bool:
    """Whether a marker (not the label's own point) of `radius` pixels at any of `centres` touches `box`."""
    for x, y in centres:
        if np.hypot(x - own[0], y - own[1]) < 1e-6:
            continue
        if box.x0 - radius <= x <= box.x1 + radius and box.y0 - radius <= y <= box.y1 + radius:
            return True
    return False


def _legends(fig: Figure, ax) -> None:
    """Roofs listed under the chart; the model's points in the corner a roofline leaves empty (right of the
    ridge, low down); measured groups, if any, right of the chart."""
    roofs, points, measured = [], [], []
    for handle, label in zip(*ax.get_legend_handles_labels()):
        kind = str(handle.get_gid()).split(":")[0]
        group = roofs if kind in ("roof", "vector_roof") else measured if kind in ("measured", "beats_floor") \
            else points
        group.append((handle, label))
    fig.set_size_inches(FIGSIZE_IN[0] + (_MEASURED_LEGEND_IN if measured else 0.0), FIGSIZE_IN[1] + 0.2 * len(roofs))
    fig.legend(*_unzip(roofs), loc="outside lower left", fontsize=8, frameon=False)
    if measured:
        fig.legend(*_unzip(measured), loc="outside right upper", fontsize=8, frameon=False, alignment="left",
                   title=_MEASURED_TITLE, title_fontsize=8)
    ax.legend(*_unzip(points), loc="lower right", fontsize=8, framealpha=0.92)


def _unzip(entries: list[tuple]) -> tuple[list, list[str]]:
    return [handle for handle, _ in entries], [label for _, label in entries]

"""Shared look of rooflab's charts: a Figure without pyplot, log axes with readable ticks, colours.

Figures are built as RooflabFigure (a matplotlib.figure.Figure) directly, so no chart touches pyplot's
global state; a notebook can restyle the returned Figure (fig.axes[0], set_size_inches, ...) and shows it
as a PNG without %matplotlib inline.
"""

from __future__ import annotations

import functools
import io
from typing import Any, Callable

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator, NullFormatter

from ..units import KiB, fmt_bytes

FIGSIZE_IN = (10.0, 6.4)

#: One colour per variant (Okabe-Ito, readable by colour-blind readers).
VARIANT_COLORS = {
    "naive": "#D55E00",
    "flash": "#009E73",
    "paged": "#0072B2",
    "merge": "#CC79A7",
    "capacity": "#555555",
}
#: One colour per measured kernel (Okabe-Ito): the variants' colours, and lighter ones for the softmax and split-KV.
KERNEL_COLORS = {"naive": "#D55E00", "naive_softmax": "#E69F00", "flash": "#009E73", "paged": "#0072B2",
                 "split_kv": "#56B4E9", "merge": "#CC79A7"}
#: GPU roofs and capacity lines: colours none of the variants use.
GPU_COLORS = ("#222222", "#8C564B", "#7F7F7F", "#9467BD", "#BCBD22", "#17BECF")
#: Marker per implementation: rooflab's own kernels and each PyTorch backend.
IMPL_MARKERS = {"rooflab": "o", "rooflab_hopper": "p", "torch_eager": "s", "torch_flash": "D", "torch_flash_dense": "D",
                "torch_cudnn": "^", "torch_cudnn_dense": "^", "torch_efficient": "v"}
OTHER_MARKER = "P"


def chart(fn: Callable[..., Figure]) -> Callable[..., Figure]:
    """Decorate a chart function: every text it creates is plain (no mathtext), so a '$' in a GPU, model or
    implementation name is drawn as written instead of failing when the figure is drawn."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with mpl.rc_context({"text.parse_math": False}):
            return fn(*args, **kwargs)

    return wrapper


class RooflabFigure(Figure):
    """A matplotlib Figure that a notebook shows as an image when it is the last expression of a cell.

    IPython's display formatter asks an object for `_repr_png_`; a plain Figure built without pyplot
    has none (pyplot's inline backend registers a printer for figures only once pyplot is imported),
    so a fresh kernel would print "<Figure size ...>". Everything else is matplotlib's Figure.
    """

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png")
        return buf.getvalue()

    def __repr__(self) -> str:   # the text form notebooks have always shown: "<Figure size 1000x640 with 1 Axes>"
        return super().__repr__().replace(type(self).__name__, "Figure", 1)


def _grid_lines(ax: Axes) -> None:
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.08)


#: Layout of a chart: matplotlib's constrained layout (re-fitted at every draw), or None for margins fitted once by
#: fit_layout when the chart is drawn (a constrained layout costs about a quarter of a second at every savefig).
CONSTRAINED = "constrained"


def new_figure(size_in: tuple[float, float] = FIGSIZE_IN, layout: str | None = CONSTRAINED) -> tuple[Figure, Axes]:
    fig = RooflabFigure(figsize=size_in, layout=layout)
    ax = fig.add_subplot()
    _grid_lines(ax)
    return fig, ax


#: Width of one panel when a chart draws one panel per GPU, inches.
PANEL_WIDTH_IN = 5.6


def new_panels(count: int, height_in: float = FIGSIZE_IN[1],
               layout: str | None = CONSTRAINED) -> tuple[Figure, list[Axes]]:
    """One figure, `count` panels side by side sharing both axes (one GPU each); one panel is new_figure()."""
    if count == 1:
        fig, ax = new_figure(layout=layout)
        return fig, [ax]
    fig = RooflabFigure(figsize=(PANEL_WIDTH_IN * count + 0.8, height_in), layout=layout)
    axes = list(fig.subplots(1, count, sharex=True, sharey=True, squeeze=False)[0])
    for ax in axes:
        _grid_lines(ax)
    for ax in axes[1:]:
        ax.tick_params(labelleft=False)
    return fig, axes


#: Space between a chart's outermost text and the figure's edge, and between two panels' texts (constrained
#: layout's default pad).
LAYOUT_PAD_IN = 3 / 72
#: Passes of fit_layout over the texts and legends, which move with the panels (a legend wider than its panel never
#: fits; the passes stop there).
TEXT_PASSES = 4

#: How far a panel's texts stick out of it, pixels: (left, right, bottom, top).
Overhang = tuple[float, float, float, float]


def _overhang(frame, boxes) -> Overhang:
    boxes = [b for b in boxes if b.width > 0 and b.height > 0]      # a hidden text's box is empty (or null)
    if not boxes:
        return (0.0, 0.0, 0.0, 0.0)
    return (max(0.0, frame.x0 - min(b.x0 for b in boxes)), max(0.0, max(b.x1 for b in boxes) - frame.x1),
            max(0.0, frame.y0 - min(b.y0 for b in boxes)), max(0.0, max(b.y1 for b in boxes) - frame.y1))


def _texts_overhang(ax: Axes, renderer) -> Overhang:
    """The panel's texts (annotations) and legend: they move and stretch with the panel."""
    artists = [a for a in (*ax.texts, ax.get_legend()) if a is not None and a.get_visible() and a.get_in_layout()]
    return _overhang(ax.bbox, [a.get_tightbbox(renderer) for a in artists])


def fit_layout(fig: Figure, axes: list[Axes], header: Text | None = None) -> None:
    """Margins that keep a row of panels' tick labels, axis labels, titles, texts and legends (and the figure's
    `header`, a suptitle, placed at the top) inside the figure, measured on the finished chart: what constrained
    layout does, without its cost at every draw. For a figure made with layout=None.

    The panels' ticks, tick labels, axis labels and titles stick out of a panel by the same amount wherever it sits,
    and are measured once (the costly part: it makes the ticks); texts and legends move with the panels and are
    measured again until they fit (TEXT_PASSES at most). A chart restyled afterwards (a longer title, bigger fonts)
    keeps these margins; fig.set_layout_engine("constrained") fits them anew at every draw.
    """
    renderer = FigureCanvasAgg(fig).get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    pad = LAYOUT_PAD_IN * fig.dpi
    frames = [_overhang(ax.bbox, [ax.get_tightbbox(renderer, for_layout_only=True, bbox_extra_artists=[])])
              for ax in axes]
    header_in = 0.0
    if header is not None:
        header.set_y(1 - pad / height)
        header.set_verticalalignment("top")
        header_in = header.get_window_extent(renderer).height + pad
    out = frames
    for _ in range(TEXT_PASSES):
        left, right = out[0][0] + pad, out[-1][1] + pad
        bottom, top = max(o[2] for o in out) + pad, max(o[3] for o in out) + pad + header_in
        gap = max((a[1] + b[0] + pad for a, b in zip(out, out[1:])), default=0.0)
        panel = (width - left - right - gap * (len(axes) - 1)) / len(axes)
        fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                            wspace=gap / panel if len(axes) > 1 else None)
        texts = [_texts_overhang(ax, renderer) for ax in axes]
        grown = [tuple(max(o, t) for o, t in zip(old, new)) for old, new in zip(out, texts)]
        if all(g[k] <= o[k] + 0.5 for g, o in zip(grown, out) for k in range(4)):
            break
        out = grown


def tokens_text(n: float) -> str:
    """512, 1k, 32k, 1M: binary multiples, as context lengths are usually quoted."""
    if n >= KiB * KiB and n % (KiB * KiB) == 0:
        return f"{n / (KiB * KiB):g}M"
    if n >= KiB and n % KiB == 0:
        return f"{n / KiB:g}k"
    return f"{n:,.0f}"


def token_axis(ax: Axes, label: str) -> None:
    """A log2 x axis of token counts, one tick per power of two (thinned when there are many)."""
    ax.set_xscale("log", base=2)
    lo, hi = ax.get_xlim()
    octaves = max(1, int(round(hi / lo)).bit_length())
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=min(octaves + 2, 14)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: tokens_text(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(f"{label} (tokens; 1k = 1024)")


def plain_log_formatter() -> FuncFormatter:
    """0.1, 1, 10, 1000, 10,000 rather than 10^k."""
    return FuncFormatter(lambda v, _: f"{v:,.10g}" if v >= 1 else f"{v:.10g}")


def seconds_formatter() -> EngFormatter:
    """1 ms, 10 us: SI prefixes on seconds."""
    return EngFormatter(unit="s", places=0, sep=" ")


def bytes_formatter() -> FuncFormatter:
    """4 GiB, 256 MiB: binary units, trailing zeros dropped."""
    def short(v: float, _pos: object = None) -> str:
        number, unit = fmt_bytes(v).split()
        return f"{float(number):g} {unit}"
    return FuncFormatter(short)


def intensity_text(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2g}"


#: Average glyph width of the titles' font (DejaVu Sans, digits and capitals included) in ems: how many characters
#: a title line holds.
TITLE_EM_PER_CHAR = 0.6


def wrap_title(fig: Figure, text: str, fontsize: float, share: float = 0.98) -> str:
    """`text` broken at '; ' or ', ' (else at spaces) into lines that fit `share` of the figure's width at
    `fontsize`, so a long title (a long model or GPU name, many formats) stays inside the chart."""
    width = max(20, int(share * fig.get_figwidth() * 72 / (fontsize * TITLE_EM_PER_CHAR)))
    lines = []
    for line in text.split("\n"):
        while len(line) > width:
            cut = max(line.rfind("; ", 0, width), line.rfind(", ", 0, width))
            cut = cut + 1 if cut > 0 else line.rfind(" ", 0, width)
            if cut <= 0:
                break
            lines.append(line[:cut].rstrip())
            line = line[cut:].lstrip()
        lines.append(line)
    return "\n".join(lines)


def title(ax: Axes, headline: str, details: str) -> None:
    """The panel's title at its left edge, wrapped to the width from there to the figure's right edge."""
    start = min(max(ax.get_position().x0, 0.0), 0.5)
    ax.set_title(wrap_title(ax.figure, f"{headline}\n{details}", 11, share=0.98 - start), fontsize=11, loc="left")

"""Charts of a quantity against a length: memory of S and P, prefill time floors, decode time, capacity.

time_chart, decode_chart and capacity_chart take one sweep, or one per GPU (series.time_sweeps, ...):
several are drawn as panels side by side sharing both axes, one GPU a panel, with the headline over
them all. One sweep draws exactly the single-panel chart.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patheffects import withStroke
from matplotlib.text import Text
from matplotlib.ticker import LogLocator, NullFormatter

from ..errors import InputError
from ..units import fmt_bytes, fmt_seconds
from ..sweeps.series import CapacitySweep, DecodeSweep, MemorySweep, TimeSweep
from .style import (chart, CONSTRAINED, GPU_COLORS, VARIANT_COLORS, bytes_formatter, fit_layout, new_figure, new_panels,
                    plain_log_formatter, seconds_formatter, title, token_axis, wrap_title)

#: A grid of at most this many lengths is drawn with a marker on each computed point (the user's own grid).
MARKED_POINTS = 24
#: Colours of the decode chart's batch lines, in batch order.
BATCH_COLORS = ("#0072B2", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#56B4E9", "#000000")

#: A white outline that keeps a label legible where a line crosses it.
HALO = [withStroke(linewidth=3, foreground="white")]

S = TypeVar("S", TimeSweep, DecodeSweep, CapacitySweep)


def _log_y(ax, formatter, base: int = 10) -> None:
    ax.set_yscale("log", base=base)
    ax.yaxis.set_major_locator(LogLocator(base=base ** 2 if base == 2 else base))
    ax.yaxis.set_major_formatter(formatter)
    ax.yaxis.set_minor_formatter(NullFormatter())


def _marker(xs: np.ndarray) -> dict:
    """A small marker on every point of a sparse grid, so it shows where the numbers were computed."""
    return {"marker": "o", "ms": 4} if len(xs) <= MARKED_POINTS else {}


def _x_range(ax: Axes, xs: np.ndarray) -> None:
    """The grid's extent; a sparse grid's end markers kept clear of the frame (one length: an octave either side)."""
    lo, hi = float(xs[0]), float(xs[-1])
    pad = 2.0 if lo == hi else 2 ** 0.2 if _marker(xs) else 1.0
    ax.set_xlim(lo / pad, hi * pad)


def _sweeps(sweeps: S | Sequence[S]) -> tuple[S, ...]:
    """One sweep or several of one model (one per GPU), as a tuple."""
    out = (sweeps,) if isinstance(sweeps, (TimeSweep, DecodeSweep, CapacitySweep)) else tuple(sweeps)
    if not out:
        raise InputError("give at least one sweep")
    if len({s.model for s in out}) > 1:
        raise InputError(f"one model a chart; the sweeps are of {', '.join(sorted({s.model for s in out}))}")
    return out


def _heading(fig: Figure, axes: list[Axes], headline: str, details: str, panel_titles: Sequence[str]) -> Text | None:
    """One panel: its title as ever. Several: the headline over the figure (returned), each panel titled with its
    GPU."""
    if len(axes) == 1:
        title(axes[0], headline, details)
        return None
    header = fig.suptitle(wrap_title(fig, f"{headline}\n{details}", 11), fontsize=11, x=0.01, ha="left")
    for ax, text in zip(axes, panel_titles):
        ax.set_title(text, fontsize=10, loc="left")
    return header


def _where(sweeps: Sequence) -> str:
    return sweeps[0].gpu if len(sweeps) == 1 else f"{len(sweeps)} GPUs"


@chart
def memory_chart(sweep: MemorySweep) -> Figure:
    """S + P of one layer against T, with each GPU's capacity minus weights: where naive prefill stops fitting."""
    fig, ax = new_figure(layout=None)
    ax.plot(sweep.seq_lens, sweep.sp_bytes, color=VARIANT_COLORS["naive"], lw=2.4, **_marker(sweep.seq_lens),
            label="S and P of one layer, alive together (naive prefill)", gid="series:sp_bytes")
    several = len(sweep.lines) > 1
    for i, line in enumerate(sweep.lines):
        color = GPU_COLORS[i % len(GPU_COLORS)]
        name = f"{line.gpu}: " if several else ""
        if line.free_bytes <= 0:
            ax.plot([], [], color=color, label=f"{name}the weights alone ({fmt_bytes(line.weights_bytes)}) "
                                               f"exceed {fmt_bytes(line.capacity_bytes)}")
            continue
        limit = f"; naive prefill fits up to T = {line.naive_max_seq_len:,}" if several else ""
        ax.axhline(line.free_bytes, color=color, lw=1.6, ls="--", gid=f"free:{line.gpu}",
                   label=f"{name}{fmt_bytes(line.capacity_bytes)} HBM - {fmt_bytes(line.weights_bytes)} weights "
                         f"= {fmt_bytes(line.free_bytes)} free{limit}")
        ax.axvline(line.naive_max_seq_len, color=color, lw=1, ls=":", gid=f"limit:{line.gpu}")
        ax.plot([line.naive_max_seq_len], [line.free_bytes], "o", color=color, ms=7, zorder=5)
        if not several:
            ax.annotate(f"naive prefill stops fitting\nat T = {line.naive_max_seq_len:,}",
                        (line.naive_max_seq_len, line.free_bytes), xytext=(-10, 12), textcoords="offset points",
                        ha="right", fontsize=9, color=color)
    _x_range(ax, sweep.seq_lens)
    token_axis(ax, "sequence length T")
    _log_y(ax, bytes_formatter(), base=2)
    ax.set_ylabel("device memory (bytes; 1 GiB = 2^30 B)")
    where = f"{len(sweep.lines)} GPUs" if several else sweep.lines[0].gpu
    title(ax, f"Naive prefill memory: {sweep.model}, {sweep.dtype.value}, batch {sweep.batch}, on {where}",
          "S = P = B h T\u00b2 b bytes per layer; the limit also counts that layer's Q, K, V and O")
    ax.legend(loc="upper left", fontsize=9, framealpha=0.92)
    fit_layout(fig, [ax])
    return fig


def _draw_time(ax: Axes, sweep: TimeSweep) -> None:
    fits = sweep.seq_lens <= sweep.naive_max_seq_len
    naive, flash = VARIANT_COLORS["naive"], VARIANT_COLORS["flash"]
    dots = _marker(sweep.seq_lens)
    ax.plot(sweep.seq_lens[fits], sweep.naive_s[fits], color=naive, lw=2.4, gid="series:naive", **dots,
            label="naive attention (S and P through HBM)")
    if not fits.all():
        start = max(0, int(np.argmin(fits)) - 1)
        why = (f"naive past T = {sweep.naive_max_seq_len:,}: does not fit in memory" if sweep.naive_max_seq_len
               else "naive: does not fit at any T (the weights alone fill the GPU)")
        ax.plot(sweep.seq_lens[start:], sweep.naive_s[start:], color=naive, lw=1.6, ls="--", gid="series:naive_oom",
                label=why, **dots)
    ax.plot(sweep.seq_lens, sweep.flash_s, color=flash, lw=2.4, gid="series:flash", **dots,
            label="flash attention (S stays on chip)")
    _x_range(ax, sweep.seq_lens)
    at = np.flatnonzero(sweep.seq_lens == sweep.marked_seq_len) if sweep.marked_seq_len is not None else []
    if len(at):
        t, n_t, f_t = sweep.marked_seq_len, float(sweep.naive_s[at[0]]), float(sweep.flash_s[at[0]])
        ax.axvline(t, color="#777777", lw=0.8, ls=":")
        ax.plot([t, t], [n_t, f_t], "o", color="#444444", ms=5, zorder=5, gid="marked")
        ax.annotate(f"T = {t:,}\nnaive {fmt_seconds(n_t)}\nflash {fmt_seconds(f_t)}\nratio {n_t / f_t:.1f}x",
                    (t, n_t), xytext=(-12, 0), textcoords="offset points", ha="right", va="bottom", fontsize=9)
    token_axis(ax, "sequence length T")
    _log_y(ax, seconds_formatter())
    ax.legend(loc="upper left", fontsize=9, framealpha=0.92)


@chart
def time_chart(sweeps: TimeSweep | Sequence[TimeSweep]) -> Figure:
    """Naive and flash time floors of all layers against T; naive past its memory limit drawn dashed.

    Several sweeps (time_sweeps, one per GPU) are drawn one panel a GPU, sharing both axes."""
    sweeps = _sweeps(sweeps)
    fig, axes = new_panels(len(sweeps), layout=None)
    for ax, sweep in zip(axes, sweeps):
        _draw_time(ax, sweep)
    first = sweeps[0]
    axes[0].set_ylabel(f"time floor, all {first.num_layers} layers (s)")
    header = _heading(fig, axes, f"Prefill attention time floors: {first.model} on {_where(sweeps)}",
                      f"{first.dtype.value}, batch {first.batch}, {'causal' if first.causal else 'non-causal'}; "
                      f"roofline floors (compulsory bytes at full HBM bandwidth, FLOPs at the dense tensor rate)",
                      [s.gpu for s in sweeps])
    fit_layout(fig, axes, header)
    return fig


def _same_as(sweep: DecodeSweep) -> dict[int, int]:
    """{batch: the first smaller batch whose as-launched line it equals} (fewer work units than SMs)."""
    out = {}
    for i, (b, launched) in enumerate(zip(sweep.batches, sweep.launched_s)):
        same = [a for a, other in zip(sweep.batches[:i], sweep.launched_s[:i]) if np.allclose(other, launched)]
        if same:
            out[b] = same[0]
    return out


def _draw_decode(ax: Axes, sweep: DecodeSweep, notes_in_legend: bool) -> None:
    """The batches' lines; their coincidences named in the legend (one panel) or in a note (several)."""
    same = _same_as(sweep)
    dots = _marker(sweep.context_lens)
    for i, (b, launched, floor) in enumerate(zip(sweep.batches, sweep.launched_s, sweep.floor_s)):
        color = BATCH_COLORS[i % len(BATCH_COLORS)]
        covered = any(np.allclose(other, launched) for other in sweep.launched_s[i + 1:])
        note = f" (as launched, same as batch {same[b]}: fewer work units than SMs)" if b in same and notes_in_legend \
            else ""
        # a line that a later, equal one covers is drawn wide, so it shows as a band around it
        ax.plot(sweep.context_lens, launched, color=color, lw=6 if covered else 2.2, **dots,
                gid=f"series:launched:{b}", label=f"batch {b}{note}", zorder=2 + i)
        if not np.allclose(launched, floor):
            ax.plot(sweep.context_lens, floor, color=color, lw=1.2, ls="--", gid=f"series:floor:{b}", **dots)
        if sweep.predicted_s is not None:
            ax.plot(sweep.context_lens, sweep.predicted_s[i], color=color, lw=1.4, ls=":", gid=f"series:predicted:{b}",
                    **dots)
    if same and not notes_in_legend:
        pairs = ", ".join(f"{b} = {a}" for b, a in same.items())
        ax.annotate(f"as launched, batch {pairs}:\nfewer work units than {sweep.num_sms} SMs", (1, 0),
                    xycoords="axes fraction", xytext=(-6, 6), textcoords="offset points", ha="right", va="bottom",
                    fontsize=8, color="#444444")
    ax.axhline(sweep.weights_s, color="#444444", lw=1, ls=":", gid="weights")
    ax.annotate(f"reading the weights once: {fmt_seconds(sweep.weights_s)} per step (any batch)",
                (0, sweep.weights_s), xycoords=("axes fraction", "data"), xytext=(4, 4), textcoords="offset points",
                fontsize=9, color="#444444", path_effects=HALO, zorder=10)
    _x_range(ax, sweep.context_lens)
    token_axis(ax, "context length per sequence")
    _log_y(ax, seconds_formatter())


@chart
def decode_chart(sweeps: DecodeSweep | Sequence[DecodeSweep]) -> Figure:
    """Attention time of one decode step (all layers) against context, per batch: the floor, the parallelism model
    as launched and, where the GPU has fitted models, the prediction.

    Several sweeps (decode_sweeps, one per GPU) are drawn one panel a GPU, sharing both axes; a batch has
    the same colour in every panel and one legend under the panels names them."""
    sweeps = _sweeps(sweeps)
    one = len(sweeps) == 1      # several: one legend under the panels, placed by constrained layout ("outside")
    fig, axes = new_panels(len(sweeps), layout=None if one else CONSTRAINED)
    for ax, sweep in zip(axes, sweeps):
        _draw_decode(ax, sweep, notes_in_legend=len(sweeps) == 1)
    first = sweeps[0]
    styles = [("as launched: the parallelism model (a prediction, not a floor; one block per sequence x KV head)",
               "-", 2.2),
              ("floor: a launch that fills all SMs (what split-KV approaches)", "--", 1.2)]
    if first.predicted_s is not None:
        styles.append(("predicted: the GPU's fitted kernel models (a prediction)", ":", 1.4))
    for label, ls, lw in styles:
        axes[0].plot([], [], color="#444444", lw=lw, ls=ls, label=label)
    axes[0].set_ylabel(f"attention time per decode step, all {first.num_layers} layers (s)")
    kv = f", KV cache {first.kv_dtype.value}" if first.kv_dtype != first.dtype else ""
    _heading(fig, axes, f"Decode attention time, floors and predictions: {first.model} on {_where(sweeps)}",
             f"{first.dtype.value}{kv}, page size {first.page_size}; every layer type priced as itself (the decode "
             f"report's paged totals)", [f"{s.gpu} ({s.num_sms} SMs)" for s in sweeps])
    if one:
        axes[0].legend(loc="upper left", fontsize=9, framealpha=0.92)
        fit_layout(fig, axes)
    else:
        handles, labels = axes[0].get_legend_handles_labels()   # two rows: the batches, then the two styles
        fig.legend(handles, labels, loc="outside lower center", fontsize=9, ncols=-(-len(labels) // 2), frameon=False)
    return fig


def _draw_capacity(ax: Axes, sweep: CapacitySweep, legend: bool) -> None:
    paged_ok, contig_ok = sweep.paged > 0, sweep.contiguous > 0
    dots = _marker(sweep.context_lens)
    steps = {} if dots else {"drawstyle": "steps-post"}   # a dense grid shows the counts' steps
    ax.plot(sweep.context_lens[contig_ok], sweep.contiguous[contig_ok], color=VARIANT_COLORS["naive"], lw=5,
            alpha=0.55, gid="series:contiguous", **steps, **dots,
            label=f"contiguous, reserving max(context, {sweep.max_model_len:,}) tokens per sequence"
                  + ("" if contig_ok.any() else ": none fits"))
    ax.plot(sweep.context_lens[paged_ok], sweep.paged[paged_ok], color=VARIANT_COLORS["paged"], lw=2.0,
            gid="series:paged", label=f"paged KV cache ({sweep.page_size}-token blocks)", **steps, **dots)
    _x_range(ax, sweep.context_lens)
    lo, hi = ax.get_xlim()

    def right_half(x: float) -> bool:            # a label past the middle of the (log) axis goes left of its point
        return np.log(x / lo) / np.log(hi / lo) > 0.5

    # one worked example, at the power of two a quarter of the way to the max model length
    example = 2 ** int(np.floor(np.log2(max(sweep.max_model_len / 4, 1))))
    at = np.flatnonzero((sweep.context_lens == example) & paged_ok & contig_ok)
    if at.size:
        i = int(at[0])
        x, gain = sweep.context_lens[i], sweep.paged[i] / sweep.contiguous[i]
        left = right_half(x)                     # below-left of the point: under the falling paged line
        ax.annotate(f"at {x:,.0f} tokens: {sweep.paged[i]:,.0f} sequences paged,\n"
                    f"{sweep.contiguous[i]:,.0f} contiguous ({gain:.1f}x)", (x, sweep.paged[i]),
                    xytext=(-10, -12) if left else (10, 12), textcoords="offset points", fontsize=9,
                    ha="right" if left else "left", va="top" if left else "baseline")
    ax.axvline(sweep.max_model_len, color="#777777", lw=0.8, ls=":")
    ax.axvline(sweep.longest_context, color=VARIANT_COLORS["paged"], lw=0.8, ls=":")
    ax.annotate(f"longest single context\n{sweep.longest_context:,} tokens", (sweep.longest_context, 1),
                xycoords=("data", "axes fraction"), xytext=(-6, -40), textcoords="offset points", ha="right",
                va="top", fontsize=9, color=VARIANT_COLORS["paged"], annotation_clip=True)
    left = right_half(sweep.max_model_len)
    ax.annotate(f"max model length {sweep.max_model_len:,}", (sweep.max_model_len, 0), xycoords=("data", "axes fraction"),
                xytext=(-4 if left else 4, 4), textcoords="offset points", ha="right" if left else "left",
                fontsize=9, color="#555555", annotation_clip=True)
    token_axis(ax, "context length per sequence")
    _log_y(ax, plain_log_formatter())
    if legend:
        ax.legend(loc="upper right", fontsize=9, framealpha=0.92)


@chart
def capacity_chart(sweeps: CapacitySweep | Sequence[CapacitySweep]) -> Figure:
    """Concurrent sequences against context length: paged blocks against a contiguous max-length reservation.

    Several sweeps (capacity_sweeps, one per GPU) are drawn one panel a GPU, sharing both axes, each
    panel titled with its GPU's KV budget."""
    sweeps = _sweeps(sweeps)
    fig, axes = new_panels(len(sweeps), layout=None)     # margins fitted once (fit_layout): `plot capacity` is quick
    for ax, sweep in zip(axes, sweeps):
        _draw_capacity(ax, sweep, legend=ax is axes[0])
    top = max(max(float(s.paged.max()), float(s.contiguous.max())) for s in sweeps)
    axes[0].set_ylim(0.7, max(top, 1.0) * 2)
    axes[0].set_ylabel("concurrent sequences (count)")
    first = sweeps[0]
    kv = f", KV cache {first.kv_dtype}" if first.kv_dtype != first.weight_dtype else ""
    tp = first.tensor_parallel
    where, per_gpu = _where(sweeps), f" per GPU, weights split {tp} ways" if tp > 1 else ""
    if tp > 1:
        where = f"{tp} x {where}" if len(sweeps) == 1 else f"{where}, tensor parallel {tp}"
    budget = f"KV budget {fmt_bytes(first.kv_budget_bytes)}{per_gpu}: " if len(sweeps) == 1 else \
        f"KV budget{per_gpu} (in each panel's title) = "
    header = _heading(fig, axes, f"Sequences that fit: {first.model} on {where}",
                      f"weights {first.weight_dtype}{kv}; {budget}{first.gpu_memory_utilization:.0%} of HBM less the "
                      "weights", [f"{s.gpu}: KV budget {fmt_bytes(s.kv_budget_bytes)}" for s in sweeps])
    fit_layout(fig, axes, header)
    return fig

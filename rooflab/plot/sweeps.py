"""Charts of a quantity against a length: memory of S and P, prefill time floors, decode time, capacity."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, NullFormatter

from ..capacity import CapacityPlan
from ..units import GiB, fmt_bytes, fmt_seconds
from .series import CapacitySweep, DecodeSweep, MemorySweep, TimeSweep
from .style import (chart, GPU_COLORS, VARIANT_COLORS, bytes_formatter, new_figure, plain_log_formatter,
                    seconds_formatter, title, token_axis)


def _log_y(ax, formatter, base: int = 10) -> None:
    ax.set_yscale("log", base=base)
    ax.yaxis.set_major_locator(LogLocator(base=base ** 2 if base == 2 else base))
    ax.yaxis.set_major_formatter(formatter)
    ax.yaxis.set_minor_formatter(NullFormatter())


@chart
def memory_chart(sweep: MemorySweep) -> Figure:
    """S + P of one layer against T, with each GPU's capacity minus weights: where naive prefill stops fitting."""
    fig, ax = new_figure()
    ax.plot(sweep.seq_lens, sweep.sp_bytes, color=VARIANT_COLORS["naive"], lw=2.4,
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
    ax.set_xlim(sweep.seq_lens[0], sweep.seq_lens[-1])
    token_axis(ax, "sequence length T")
    _log_y(ax, bytes_formatter(), base=2)
    ax.set_ylabel("device memory (bytes; 1 GiB = 2^30 B)")
    where = f"{len(sweep.lines)} GPUs" if several else sweep.lines[0].gpu
    title(ax, f"Naive prefill memory: {sweep.model}, {sweep.dtype.value}, batch {sweep.batch}, on {where}",
          "S = P = B h T\u00b2 b bytes per layer; the limit also counts that layer's Q, K, V and O")
    ax.legend(loc="upper left", fontsize=9, framealpha=0.92)
    return fig


@chart
def time_chart(sweep: TimeSweep) -> Figure:
    """Naive and flash time floors of all layers against T; naive past its memory limit drawn dashed."""
    fig, ax = new_figure()
    fits = sweep.seq_lens <= sweep.naive_max_seq_len
    naive, flash = VARIANT_COLORS["naive"], VARIANT_COLORS["flash"]
    ax.plot(sweep.seq_lens[fits], sweep.naive_s[fits], color=naive, lw=2.4, gid="series:naive",
            label="naive attention (S and P through HBM)")
    if not fits.all():
        start = max(0, int(np.argmin(fits)) - 1)
        why = (f"naive past T = {sweep.naive_max_seq_len:,}: does not fit in memory" if sweep.naive_max_seq_len
               else "naive: does not fit at any T (the weights alone fill the GPU)")
        ax.plot(sweep.seq_lens[start:], sweep.naive_s[start:], color=naive, lw=1.6, ls="--", gid="series:naive_oom",
                label=why)
    ax.plot(sweep.seq_lens, sweep.flash_s, color=flash, lw=2.4, gid="series:flash",
            label="flash attention (S stays on chip)")
    ax.set_xlim(sweep.seq_lens[0], sweep.seq_lens[-1])
    t = sweep.marked_seq_len
    if t is not None and sweep.seq_lens[0] <= t <= sweep.seq_lens[-1]:
        n_t = float(np.interp(np.log(t), np.log(sweep.seq_lens), sweep.naive_s))
        f_t = float(np.interp(np.log(t), np.log(sweep.seq_lens), sweep.flash_s))
        ax.axvline(t, color="#777777", lw=0.8, ls=":")
        ax.plot([t, t], [n_t, f_t], "o", color="#444444", ms=5, zorder=5, gid="marked")
        ax.annotate(f"T = {t:,}\nnaive {fmt_seconds(n_t)}\nflash {fmt_seconds(f_t)}\nratio {n_t / f_t:.1f}x",
                    (t, n_t), xytext=(-12, 0), textcoords="offset points", ha="right", va="bottom", fontsize=9)
    token_axis(ax, "sequence length T")
    _log_y(ax, seconds_formatter())
    ax.set_ylabel(f"time floor, all {sweep.num_layers} layers (s)")
    title(ax, f"Prefill attention time floors: {sweep.model} on {sweep.gpu}",
          f"{sweep.dtype.value}, batch {sweep.batch}, {'causal' if sweep.causal else 'non-causal'}; "
          f"roofline floors (compulsory bytes at full HBM bandwidth, FLOPs at the dense tensor rate)")
    ax.legend(loc="upper left", fontsize=9, framealpha=0.92)
    return fig


@chart
def decode_chart(sweep: DecodeSweep) -> Figure:
    """Attention time of one decode step (all layers) against context, per batch, as launched and ideal."""
    fig, ax = new_figure()
    cmap = ("#0072B2", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
    lines = sweep.launched_s
    for i, (b, launched, ideal) in enumerate(zip(sweep.batches, lines, sweep.ideal_s)):
        color = cmap[i % len(cmap)]
        same = [a for a, other in zip(sweep.batches[:i], lines[:i]) if np.allclose(other, launched)]
        covered = any(np.allclose(other, launched) for other in lines[i + 1:])
        note = f" (as launched, same as batch {same[0]}: fewer work units than SMs)" if same else ""
        # a line that a later, equal one covers is drawn wide, so it shows as a band around it
        ax.plot(sweep.context_lens, launched, color=color, lw=6 if covered else 2.2,
                gid=f"series:launched:{b}", label=f"batch {b}{note}", zorder=2 + i)
        if not np.allclose(launched, ideal):
            ax.plot(sweep.context_lens, ideal, color=color, lw=1.2, ls="--", gid=f"series:ideal:{b}")
    ax.plot([], [], color="#444444", lw=2.2, label="paged decode as launched (one block per sequence x KV head)")
    ax.plot([], [], color="#444444", lw=1.2, ls="--", label="a launch that fills all SMs (what split-KV approaches)")
    ax.axhline(sweep.weights_s, color="#444444", lw=1, ls=":", gid="weights")
    ax.annotate(f"reading the weights once: {fmt_seconds(sweep.weights_s)} per step (any batch)",
                (sweep.context_lens[0], sweep.weights_s), xytext=(4, 4), textcoords="offset points", fontsize=9,
                color="#444444")
    ax.set_xlim(sweep.context_lens[0], sweep.context_lens[-1])
    token_axis(ax, "context length per sequence")
    _log_y(ax, seconds_formatter())
    ax.set_ylabel(f"attention time per decode step, all {sweep.num_layers} layers (s)")
    kv = f", KV cache {sweep.kv_dtype.value}" if sweep.kv_dtype != sweep.dtype else ""
    title(ax, f"Decode attention time floor: {sweep.model} on {sweep.gpu}",
          f"{sweep.dtype.value}{kv}, page size {sweep.page_size}; decode intensity is 2h/(b h_kv) FLOP/byte at "
          f"any context and batch: all memory time")
    ax.legend(loc="upper left", fontsize=9, framealpha=0.92)
    return fig


@chart
def capacity_chart(sweep: CapacitySweep) -> Figure:
    """Concurrent sequences against context length: paged blocks against a contiguous max-length reservation."""
    fig, ax = new_figure()
    paged_ok, contig_ok = sweep.paged > 0, sweep.contiguous > 0
    ax.plot(sweep.context_lens[contig_ok], sweep.contiguous[contig_ok], color=VARIANT_COLORS["naive"], lw=5,
            alpha=0.55, drawstyle="steps-post", gid="series:contiguous",
            label=f"contiguous, reserving max(context, {sweep.max_model_len:,}) tokens per sequence")
    ax.plot(sweep.context_lens[paged_ok], sweep.paged[paged_ok], color=VARIANT_COLORS["paged"], lw=2.0,
            drawstyle="steps-post", gid="series:paged", label=f"paged KV cache ({sweep.page_size}-token blocks)")
    # one worked example, at the power of two a quarter of the way to the max model length
    example = 2 ** int(np.floor(np.log2(max(sweep.max_model_len / 4, 1))))
    at = np.flatnonzero((sweep.context_lens == example) & paged_ok & contig_ok)
    if at.size:
        i = int(at[0])
        x, gain = sweep.context_lens[i], sweep.paged[i] / sweep.contiguous[i]
        ax.annotate(f"at {x:,.0f} tokens: {sweep.paged[i]:,.0f} sequences paged,\n"
                    f"{sweep.contiguous[i]:,.0f} contiguous ({gain:.1f}x)", (x, sweep.paged[i]), xytext=(10, 12),
                    textcoords="offset points", fontsize=9)
    ax.axvline(sweep.max_model_len, color="#777777", lw=0.8, ls=":")
    ax.annotate(f"max model length {sweep.max_model_len:,}", (sweep.max_model_len, 1), xytext=(4, 4),
                textcoords="offset points", fontsize=9, color="#555555")
    top = max(float(sweep.paged.max()), float(sweep.contiguous.max()), 1.0)
    ax.set_ylim(0.7, top * 2)
    ax.axvline(sweep.longest_context, color=VARIANT_COLORS["paged"], lw=0.8, ls=":")
    ax.annotate(f"longest single context\n{sweep.longest_context:,} tokens", (sweep.longest_context, top * 2),
                xytext=(-6, -40), textcoords="offset points", ha="right", va="top", fontsize=9,
                color=VARIANT_COLORS["paged"])
    ax.set_xlim(sweep.context_lens[0], sweep.context_lens[-1])
    token_axis(ax, "context length per sequence")
    _log_y(ax, plain_log_formatter())
    ax.set_ylabel("concurrent sequences (count)")
    kv = f", KV cache {sweep.kv_dtype}" if sweep.kv_dtype != sweep.weight_dtype else ""
    where, per_gpu = sweep.gpu, ""
    if sweep.tensor_parallel > 1:
        where, per_gpu = f"{sweep.tensor_parallel} x {sweep.gpu}", f" per GPU, weights split {sweep.tensor_parallel} ways"
    title(ax, f"Sequences that fit: {sweep.model} on {where}",
          f"weights {sweep.weight_dtype}{kv}; KV budget {fmt_bytes(sweep.kv_budget_bytes)}{per_gpu}: "
          f"{sweep.gpu_memory_utilization:.0%} of HBM less the weights")
    ax.legend(loc="upper right", fontsize=9, framealpha=0.92)
    return fig


#: Colours of the parts of one GPU's memory in budget_chart.
BUDGET_COLORS = {"weights": "#7F7F7F", "activation reserve": "#E69F00", "KV budget": VARIANT_COLORS["paged"],
                 "kept free": "#DDDDDD"}


@chart
def budget_chart(plans: Sequence[CapacityPlan]) -> Figure:
    """One bar per deployment: a GPU's memory split into weights, activation reserve, KV budget and the rest.

    Each bar is one GPU of the deployment (plans with tensor_parallel > 1 hold 1/tp of the weights);
    the label gives the concurrent sequences the KV budget holds at the plan's context length.
    """
    if not plans:
        raise ValueError("budget_chart needs at least one capacity plan")
    fig, ax = new_figure((10.0, 1.4 + 0.62 * len(plans)))
    labels, drawn = [], set()
    for i, plan in enumerate(plans):
        where = f"{plan.tensor_parallel} x {plan.gpu}" if plan.tensor_parallel > 1 else plan.gpu
        labels.append(f"{plan.model} on {where}")
        parts = {"weights": plan.weights_bytes, "activation reserve": plan.activation_reserve_bytes,
                 "KV budget": plan.kv_budget_bytes, "kept free": max(0, plan.hbm_bytes - plan.usable_bytes)}
        left = 0.0
        for name, size in parts.items():
            if size <= 0:
                continue
            ax.barh(i, size / GiB, left=left / GiB, color=BUDGET_COLORS[name], edgecolor="white",
                    label=None if name in drawn else name, gid=f"bar:{i}:{name}")
            drawn.add(name)
            left += size
        ax.annotate(f"{plan.max_sequences_paged:,} x {plan.context_len:,} tokens", (left / GiB, i),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=9)
    ax.set_yticks(range(len(plans)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(p.hbm_bytes for p in plans) / GiB * 1.32)
    ax.set_xlabel("memory of one GPU (GiB)")
    ax.grid(False, axis="y")
    title(ax, "Where each GPU's memory goes", "weights per GPU, then the KV cache; the label counts the "
              "sequences the KV budget holds (paged)")
    fig.legend(loc="outside lower center", fontsize=9, ncols=4, frameon=False)
    return fig

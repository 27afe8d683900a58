"""Rows -> text: aligned tables, markdown, CSV and JSON. No arithmetic beyond unit conversion."""

from __future__ import annotations

import csv
import enum
import io
import json
from typing import TYPE_CHECKING, Sequence

from .rows import Report, Row
from .units import fmt_bytes, fmt_flops, fmt_rate, fmt_seconds

if TYPE_CHECKING:
    from .capacity import CapacityPlan


class Format(str, enum.Enum):
    table = "table"
    markdown = "markdown"
    csv = "csv"
    json = "json"

    def __str__(self) -> str:
        return self.value


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool = False) -> str:
    """Align columns (numbers right, text left); a GitHub table when `markdown`."""
    cells = [list(map(str, headers))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_numeric(r[i]) for r in cells[1:] if r[i]) for i in range(len(headers))]

    def line(r: list[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric)]
        return ("| " + " | ".join(parts) + " |") if markdown else "  ".join(parts).rstrip()

    out = [line(cells[0])]
    if markdown:
        out.append("|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2))
                                  for w, num in zip(widths, numeric)) + "|")
    else:
        out.append("  ".join("-" * w for w in widths))
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def _numeric(text: str) -> bool:
    head = text.split(" ")[0].replace(",", "").rstrip("x")
    try:
        float(head)
    except ValueError:
        return False
    return True


def ridge_text(ratio: float) -> str:
    """'22.1x right' of the ridge, or '4.7x left' of it."""
    return f"{ratio:.1f}x right" if ratio >= 1 else f"{1 / ratio:.1f}x left"


_HEADERS = ["variant", "FLOPs", "HBM bytes", "FLOP/byte", "vs ridge", "t_compute", "t_memory",
            "t_floor", "bound", "model t_floor"]


def _row_cells(row: Row, layers: int, name: str | None = None) -> list[str]:
    return [name or row.label or row.variant, fmt_flops(row.flops), fmt_bytes(row.hbm_bytes),
            f"{row.intensity_flop_per_byte:.1f}", ridge_text(row.ridge_ratio), fmt_seconds(row.t_compute_s),
            fmt_seconds(row.t_memory_s), fmt_seconds(row.t_floor_s), row.bound,
            fmt_seconds(row.t_floor_s * layers)]


def _kernel_cells(row: Row, layers: int) -> list[list[str]]:
    out = []
    for k in row.kernels:
        out.append([f"  {k.kernel}", fmt_flops(k.flops) + ("" if k.pipe == "tensor" else " (vec)"),
                    fmt_bytes(k.hbm_bytes), f"{k.intensity_flop_per_byte:.1f}", "",
                    fmt_seconds(k.t_compute_s), fmt_seconds(k.t_memory_s), fmt_seconds(k.t_floor_s),
                    k.bound, fmt_seconds(k.t_floor_s * layers)])
    return out


def _title(r: Report) -> str:
    if r.phase == "prefill":
        work = f"T={r.seq_len}, batch {r.batch}, {r.dtype}, {'causal' if r.causal else 'non-causal'}"
    else:
        kv = f", KV cache {r.kv_dtype}" if r.kv_dtype != r.dtype else ""
        work = (f"decode step, context {_lens(r.context_lens)}, batch {r.batch}, {r.dtype}{kv}, "
                f"page size {r.page_size}")
    return f"{r.model_display_name or r.model} on {r.gpu_display_name or r.gpu}: {work}, {r.ceilings} ceilings"


def _lens(lens: tuple[int, ...] | None) -> str:
    if not lens:
        return "-"
    return ", ".join(map(str, lens[:6])) + (f", ... ({len(lens)} sequences)" if len(lens) > 6 else "")


def _details(r: Report) -> list[str]:
    lines = []
    for row in r.rows:
        bits = []
        if row.s_bytes is not None:
            bits.append(f"S = {fmt_bytes(row.s_bytes)}, P = {fmt_bytes(row.p_bytes)}, "
                        f"S and P alive together = {fmt_bytes(row.peak_extra_bytes)}")
        if row.intensity_compulsory_flop_per_byte is not None:
            bits.append(f"with S kept on chip the same arithmetic has intensity "
                        f"{row.intensity_compulsory_flop_per_byte:.1f} FLOP/byte")
        if row.hbm_bytes_tiled is not None:
            bits.append(f"tiled estimate (B_r={row.tile[0]}, B_c={row.tile[1]}, K/V re-read per query tile, "
                        f"no L2 reuse): {fmt_bytes(row.hbm_bytes_tiled)}, "
                        f"{row.intensity_tiled_flop_per_byte:.1f} FLOP/byte; "
                        f"online-softmax rescale overhead 1/B_c = {row.rescale_overhead:.1%}")
        if row.kv_bytes is not None:
            bits.append(f"KV bytes read {fmt_bytes(row.kv_bytes)}")
        if row.parallel_fraction is not None:
            bits.append(f"{row.splits} split(s): the launch keeps {row.parallel_fraction:.0%} of the GPU busy "
                        f"(t_floor includes this; t_memory does not)")
        if bits:
            lines.append(f"{row.label or row.variant}: " + "; ".join(bits))
    return lines


def render_report(r: Report, fmt: Format = Format.table) -> str:
    if fmt is Format.json:
        return json.dumps(r.to_dict(), indent=2)
    if fmt is Format.csv:
        return _report_csv(r)
    md = fmt is Format.markdown
    cells = []
    for row in r.rows:
        cells.append(_row_cells(row, r.num_layers))
        cells += _kernel_cells(row, r.num_layers)
    head = _title(r)
    roof = (f"ridge point {r.ridge_flop_per_byte:.1f} FLOP/byte = {fmt_rate(r.matmul_flop_per_s, 'FLOP/s')} "
            f"{r.dtype} / {fmt_rate(r.bandwidth_bytes_per_s, 'B/s')}; figures per layer, "
            f"'model t_floor' for all {r.num_layers} layers")
    parts = [f"## {head}" if md else head, roof, "", table(_HEADERS, cells, markdown=md), ""]
    detail = _details(r) + _facts(r) + list(r.notes)
    parts += [("- " if md else "") + d for d in detail]
    return "\n".join(parts).rstrip() + "\n"


def _facts(r: Report) -> list[str]:
    f = r.facts
    out = []
    if "naive_max_seq_len" in f:
        verdict = "fits" if f["naive_fits"] else "does NOT fit"
        out.append(f"naive prefill at T={r.seq_len} {verdict}: working set {fmt_bytes(f['naive_working_set_bytes'])} "
                   f"next to {fmt_bytes(f['weights_bytes'])} of weights in {fmt_bytes(f['hbm_capacity_bytes'])}; "
                   f"longest T that fits: {f['naive_max_seq_len']:,}")
    if "naive_over_flash_intensity" in f:
        out.append(f"materialising S costs a factor of {f['naive_over_flash_intensity']:.0f} in arithmetic intensity")
    if "recommended_splits" in f:
        out.append(f"decode intensity 2h/(b h_kv) = {f['decode_intensity_flop_per_byte']:.1f} FLOP/byte whatever the "
                   f"context or batch; {f['work_units_unsplit']} work units (sequences x KV heads) for "
                   f"{f['num_sms']} SMs; recommended split count: {f['recommended_splits']}")
        out.append(f"whole model per step: {fmt_flops(f['flops_per_token'])} per token, attention "
                   f"{f['attention_flop_share']:.1%} of it; reads {fmt_bytes(f['weight_bytes_per_step'])} of weights "
                   f"and {fmt_bytes(f['kv_bytes_per_step'])} of KV cache")
    return out


def _report_csv(r: Report) -> str:
    buf = io.StringIO()
    fields = ["variant", "kernel", "flops", "hbm_bytes", "intensity_flop_per_byte", "t_compute_s",
              "t_memory_s", "t_floor_s", "bound"]
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["model", "gpu", "phase", "seq_len", "batch", "dtype", "causal"] + fields)
    base = [r.model, r.gpu, r.phase, r.seq_len if r.seq_len is not None else "", r.batch, r.dtype, r.causal]
    for row in r.rows:
        w.writerow(base + [row.label or row.variant, "", row.flops, row.hbm_bytes, row.intensity_flop_per_byte,
                           row.t_compute_s, row.t_memory_s, row.t_floor_s, row.bound])
        for k in row.kernels:
            w.writerow(base + [row.label or row.variant, k.kernel, k.flops, k.hbm_bytes,
                               k.intensity_flop_per_byte, k.t_compute_s, k.t_memory_s, k.t_floor_s, k.bound])
    return buf.getvalue()


def render_capacity(plan: "CapacityPlan", fmt: Format = Format.table) -> str:
    """The capacity plan as a two-column table, markdown, CSV (one row) or JSON."""
    record = plan.to_dict()
    if fmt is Format.json:
        return json.dumps(record, indent=2) + "\n"
    if fmt is Format.csv:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(record), lineterminator="\n")
        w.writeheader()
        w.writerow(record)
        return buf.getvalue()
    lines = [
        ("usable memory", f"{fmt_bytes(plan.usable_bytes)} ({plan.gpu_memory_utilization:.0%} of the device)"),
        ("weights", f"{fmt_bytes(plan.weights_bytes)} ({plan.weight_dtype})"),
        ("activation reserve", fmt_bytes(plan.activation_reserve_bytes)),
        ("KV budget", fmt_bytes(plan.kv_budget_bytes)),
        ("KV per token", f"{fmt_bytes(plan.kv_bytes_per_token)} ({plan.kv_dtype})"),
        ("blocks", f"{plan.num_blocks:,} of {plan.page_size} tokens ({fmt_bytes(plan.block_bytes)} each)"),
        ("sequences, paged", f"{plan.max_sequences_paged:,} ({plan.blocks_per_sequence:,} blocks each)"),
        ("sequences, contiguous", f"{plan.max_sequences_contiguous:,} (reserving {plan.max_model_len:,} tokens each)"),
        ("longest single context", f"{plan.max_context_len:,} tokens"),
        ("naive prefill ceiling", f"{plan.naive_prefill_max_seq_len:,} tokens (S and P of one layer beside the weights)"),
    ]
    if plan.shared_prefix_len:
        lines.insert(7, ("sequences, shared prefix", f"{plan.max_sequences_shared_prefix:,} (the first "
                                                     f"{plan.shared_prefix_len:,} tokens stored once)"))
    where = plan.gpu
    if plan.tensor_parallel > 1:
        where = f"{plan.tensor_parallel} x {plan.gpu}"
        lines.insert(0, ("tensor parallel", f"{plan.tensor_parallel} GPUs, {plan.kv_heads_per_gpu} KV head(s) each; "
                                            "memory figures are per GPU"))
    title = f"{plan.model} on {where}: sequences of {plan.context_len:,} tokens, page size {plan.page_size}"
    tail = [f"answer: {plan.reason}"] if plan.reason else []
    if fmt is Format.markdown:
        body = "\n".join(["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in lines])
        return "\n".join([f"## {title}", "", body, "", *tail]) + "\n"
    width = max(len(k) for k, _ in lines)
    body = "\n".join(f"  {k.ljust(width)}  {v}" for k, v in lines)
    return "\n".join([title, body, *tail]) + "\n"

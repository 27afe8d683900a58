"""Reports and capacity plans -> Frames (output.py renders them). No arithmetic beyond unit conversion."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .output import Column, Format, Table, render
from .units import fmt_bytes, fmt_flops, fmt_rate, fmt_seconds, ridge_text
from .vocab import Phase

if TYPE_CHECKING:
    from .capacity import CapacityPlan
    from .report import Report


def _title(r: Report) -> str:
    if r.phase is Phase.prefill:
        work = f"T={r.seq_len}, batch {r.batch}, {r.dtype}, {'causal' if r.causal else 'non-causal'}"
    else:
        kv = f", KV cache {r.kv_dtype}" if r.kv_dtype != r.dtype else ""
        work = (f"decode step, context {_lens(r)}, batch {r.batch:,}, {r.dtype}{kv}, "
                f"page size {r.page_size}")
    return f"{r.model_display_name or r.model} on {r.gpu_display_name or r.gpu}: {work}, {r.ceilings} ceilings"


def _lens(r: Report) -> str:
    lens = r.context_lens
    if not lens:
        runs = r.context_len_counts or ()
        return ", ".join(f"{n:,} x {c:,}" for n, c in runs[:6]) + (", ..." if len(runs) > 6 else "")
    if len(set(lens)) == 1:
        return f"{lens[0]:,} x {len(lens):,}" if len(lens) > 1 else f"{lens[0]:,}"
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
                        f"(a model: t_predicted includes it; the physical t_floor does not)")
        if bits:
            lines.append(f"{row.label or row.variant}: " + "; ".join(bits))
    return lines


def report_table(r: Report) -> Table:
    """The report as a Table: a row per variant (and per kernel launch), the title, the details and facts."""
    records = []
    for row in r.rows:
        layers = row.num_layers or r.num_layers
        records.append(_record(r, row.label or row.variant, "", row, ridge_text(row.ridge_ratio), row.layer_type, layers))
        records += [_record(r, row.label or row.variant, k.kernel, k, "", row.layer_type, layers) for k in row.kernels]
    if r.exp_per_s is None:                      # no exp rate in the spec: that roof's time is unknown, not zero
        records = [dict(rec, t_exp_s=None) for rec in records]
    hybrid = len({row.layer_type for row in r.rows}) > 1
    floor = (f"t_floor: the physical bound ({r.ceilings} roofs, ideal overlap)" if r.ceilings != "calibrated" else
             "t_floor: the roofline at measured ceilings, a model, not a physical bound")
    roof = (f"ridge point {r.ridge_flop_per_byte:.1f} FLOP/byte = {fmt_rate(r.matmul_flop_per_s, 'FLOP/s')} "
            f"{r.dtype} / {fmt_rate(r.bandwidth_bytes_per_s, 'B/s')}; "
            + ("figures for the one attention layer of the shape; " if r.bare_shape else
               f"figures per layer, 'model t_floor' for all {r.num_layers} layers; ") + floor)
    columns = (
        Column("variant", "variant", lambda x: f"  {x['kernel']}" if x["kernel"] else x["variant"]),
        Column("flops", "FLOPs", lambda x: fmt_flops(x["flops"]) + ("" if x["pipe"] == "tensor" else " (vec)")),
        Column("hbm_bytes", "HBM bytes", lambda x: fmt_bytes(x["hbm_bytes"])),
        Column("intensity_flop_per_byte", "FLOP/byte", lambda x: f"{x['intensity_flop_per_byte']:.1f}"),
        Column("ridge", "vs ridge", lambda x: x["ridge"]),
        Column("t_compute_s", "t_compute", lambda x: fmt_seconds(x["t_compute_s"])),
        Column("t_exp_s", "t_exp", lambda x: fmt_seconds(x["t_exp_s"]) if r.exp_per_s is not None else "-"),
        Column("t_memory_s", "t_memory", lambda x: fmt_seconds(x["t_memory_s"])),
        Column("t_floor_s", "t_floor", lambda x: fmt_seconds(x["t_floor_s"])),
        Column("bound", "bound"),
        Column("model_t_floor_s", "model t_floor", lambda x: fmt_seconds(x["model_t_floor_s"])),
    )
    if any(row.t_predicted_s is not None for row in r.rows):
        columns += (Column("t_predicted_s", "t_predicted",
                           lambda x: fmt_seconds(x["t_predicted_s"]) if x.get("t_predicted_s") is not None else ""),
                    Column("predicted_impl", "impl", lambda x: x.get("predicted_impl") or ""),
                    Column("predicted_from", "fitted on", lambda x: _fitted_on(x.get("predicted_from"))))
    totals = [f"whole model, {t.variant} for the softmax layers: {fmt_flops(t.flops)}, {fmt_bytes(t.hbm_bytes)}, "
              f"t_floor {fmt_seconds(t.t_floor_s)} over {t.num_layers} layers" for t in r.totals] if hybrid else []
    return Table(columns, tuple(records), doc=r.to_dict(), title=f"{_title(r)}\n{roof}",
                 notes=tuple(_warnings(r) + totals + _details(r) + _facts(r) + _fitting(r) + _predictions(r)
                             + list(r.notes) + _no_exp_roof(r)),
                 csv_keys=_CSV_KEYS)


def _fitted_on(provenance: str | None) -> str:
    """The 'fitted on' cell: 'this GPU' or the GPU a transferred fit was measured on."""
    if not provenance:
        return ""
    return provenance.removeprefix("transferred from ") if provenance.startswith("transferred") else "this GPU"


def _predictions(r: Report) -> list[str]:
    """One note a distinct prediction provenance: its error band and assumptions, or why a row has no t_predicted."""
    lines: dict[str, list[str]] = {}
    for row in r.rows:
        if row.predicted_note:
            head = (f"t_predicted {row.predicted_impl} {row.predicted_from}" if row.t_predicted_s is not None
                    else "t_predicted blank")
            lines.setdefault(f"{head}: {row.predicted_note}", []).append(row.label or row.variant)
    return [f"{text} [{', '.join(dict.fromkeys(labels))}]" for text, labels in lines.items()]


_CSV_KEYS = ("model", "gpu", "phase", "seq_len", "batch", "dtype", "causal", "variant", "kernel", "flops",
             "hbm_bytes", "intensity_flop_per_byte", "t_compute_s", "t_exp_s", "t_memory_s", "t_floor_s", "bound",
             "layer_type", "num_layers", "t_predicted_s", "predicted_impl", "predicted_from")


def _record(r: Report, variant: str, kernel: str, figures, ridge: str, layer_type: str | None, layers: int) -> dict:
    """One line of the report: the workload, the variant (and kernel), its figures; `ridge` as shown."""
    return {"model": r.model, "gpu": r.gpu, "phase": r.phase.value, "seq_len": r.seq_len, "batch": r.batch,
            "dtype": r.dtype, "causal": r.causal, "variant": variant, "kernel": kernel,
            "pipe": getattr(figures, "pipe", "tensor"), "flops": figures.flops, "hbm_bytes": figures.hbm_bytes,
            "intensity_flop_per_byte": figures.intensity_flop_per_byte, "t_compute_s": figures.t_compute_s,
            "t_memory_s": figures.t_memory_s, "t_floor_s": figures.t_floor_s, "bound": figures.bound,
            "t_exp_s": figures.t_exp_s,
            "ridge": ridge, "model_t_floor_s": figures.t_floor_s * layers,
            "t_predicted_s": getattr(figures, "t_predicted_s", None), "predicted_impl": getattr(figures, "predicted_impl", None),
            "predicted_from": getattr(figures, "predicted_from", None),
            "layer_type": layer_type, "num_layers": layers}


def _no_exp_roof(r: Report) -> list[str]:
    """Where the GPU's spec gives no exp rate: say so, rather than show its roof as a time of zero."""
    if r.exp_per_s is not None:
        return []
    return [f"t_exp -: {r.gpu_display_name or r.gpu}'s spec gives no exp (special-function) rate, so the floors "
            "leave the exp roof out"]


def render_report(r: Report, fmt: Format = Format.table) -> str:
    return render(report_table(r), fmt)


def _warnings(r: Report) -> list[str]:
    """Decode: a batch that does not fit, first among the notes; a --published-tflops rate set against the floor."""
    return (_memory(r) if r.memory is not None and not r.memory.fits else []) + _published(r)


#: How each FLOP convention counts, for the published line (rooflab.published.Convention cites each).
_CONVENTION_TEXT = {"fa": "2 B H T_q T_kv (d + d_v) (4 B H T^2 d at d_v = d), halved when causal",
                    "fa_no_half": "2 B H T_q T_kv (d + d_v), never halved"}


def _published(r: Report) -> list[str]:
    """--published-tflops: the rate as time under its convention, where it sits against the floor and prediction."""
    p = r.published
    if p is None:
        return []
    line = (f"published {p.tflops:g} TFLOP/s under the {p.convention} convention ({_CONVENTION_TEXT[p.convention]}: "
            f"{fmt_flops(p.flops)}) = {fmt_seconds(p.t_published_s)} a launch; {p.floor_row} t_floor "
            f"{fmt_seconds(p.t_floor_s)} is {p.floor_over_published:.0%} of it")
    if p.t_predicted_s is not None:
        line += f"; t_predicted {fmt_seconds(p.t_predicted_s)} ({p.predicted_impl}) is " \
                f"{p.t_predicted_s / p.t_published_s:.0%} of it"
    if p.beats_floor:
        line = ("BEATS THE FLOOR: " + line + ". No run is faster than its floor: either the spec's roofs are too low "
                "(a spec defect: check the GPU YAML's clock and accumulate mode, --ceilings physical) or the "
                "measurement is (an overclocked card, another FLOP count or convention, a timing bug)")
    return [line]


def _fitting(r: Report) -> list[str]:
    """Decode: the memory line of a batch that fits, with the facts."""
    return _memory(r) if r.memory is not None and r.memory.fits else []


def _memory(r: Report) -> list[str]:
    m = r.memory
    seqs = f"{r.batch:,} sequence" + ("s" if r.batch != 1 else "")
    sums = f"weights {fmt_bytes(m.weights_bytes)} + KV cache {fmt_bytes(m.kv_bytes)} of {seqs} = {fmt_bytes(m.needed_bytes)}"
    if m.fits:
        return [f"memory: {sums} of {fmt_bytes(m.hbm_bytes)} on the GPU (fits; a bound without activations)"]
    return [f"WARNING: the batch does not fit: {sums} > {fmt_bytes(m.hbm_bytes)} on {r.gpu}; the times are for "
            f"a GPU that could hold it (--must-fit makes this an error)"]


def _facts(r: Report) -> list[str]:
    f = r.facts
    if r.phase is Phase.prefill:          # PrefillFacts (report.Report's facts follow its phase)
        verdict = "fits" if f.naive_fits else "does NOT fit"
        return [f"naive prefill at T={r.seq_len} {verdict}: working set {fmt_bytes(f.naive_working_set_bytes)} "
                f"next to {fmt_bytes(f.weights_bytes)} of weights in {fmt_bytes(f.hbm_capacity_bytes)}; "
                f"longest T that fits: {f.naive_max_seq_len:,}",
                f"materialising S costs a factor of {f.flash_over_naive_intensity:.0f} in arithmetic intensity"]
    formula, units = (("2h (d_qk + d_v) / (b d_latent)", "sequences x query-row tiles") if f.layer_kind == "mla"
                      else ("2h/(b h_kv)", "sequences x KV heads"))
    return [f"decode intensity {formula} = {f.decode_intensity_flop_per_byte:.1f} FLOP/byte whatever the "
            f"context or batch; {f.work_units_unsplit} work units ({units}) for "
            f"{f.num_sms if f.num_sms is not None else 'an unknown number of'} SMs; "
            f"recommended split count: {f.recommended_splits}",
            f"whole model per step: {fmt_flops(f.flops_per_token)} per token, attention "
            f"{f.attention_flop_share:.1%} of it; reads {fmt_bytes(f.weight_bytes_per_step)} of weights "
            f"and {fmt_bytes(f.kv_bytes_per_step)} of KV cache"]


def capacity_table(plan: "CapacityPlan") -> Table:
    """The capacity plan as a vertical Table: label and value lines; CSV one row and JSON one object of every field."""
    lines = [
        ("usable memory", f"{fmt_bytes(plan.usable_bytes)} ({plan.gpu_memory_utilization:.0%} of the device)"),
        ("weights", f"{fmt_bytes(plan.weights_bytes)} ({plan.weight_dtype})"),
        ("activation reserve", fmt_bytes(plan.activation_reserve_bytes)),
        ("KV budget", fmt_bytes(plan.kv_budget_bytes)),
        ("KV per token", f"{fmt_bytes(plan.kv_bytes_per_token)} ({plan.kv_dtype})"),
        ("blocks", f"{plan.num_blocks:,} of {plan.page_size} tokens ({fmt_bytes(plan.block_bytes)} each)"),
        ("sequences, paged", f"{plan.max_sequences_paged:,} ({plan.blocks_per_sequence:,} blocks each)"),
        ("sequences, contiguous", f"{plan.max_sequences_contiguous:,} (reserving "
                                  f"{max(plan.max_model_len, plan.context_len):,} tokens each)"),
        ("longest single context", f"{plan.max_context_len:,} tokens"),
        ("naive prefill ceiling", f"{plan.naive_prefill_max_seq_len:,} tokens (S and P of one layer beside the weights)"),
    ]
    if plan.shared_prefix_len:
        lines.insert(7, ("sequences, shared prefix", f"{plan.max_sequences_shared_prefix:,} (the first "
                                                     f"{plan.shared_prefix_len:,} tokens stored once)"))
    if len(plan.layers) > 1 or any(k.kind != "full" for k in plan.layers):
        at = next(i for i, (k, _) in enumerate(lines) if k == "blocks")
        per_type = [(f"  {k.layer_type} x {k.num_layers}", _layer_line(k, plan.page_size)) for k in plan.layers]
        windowed = any(k.kind in ("sliding", "chunked") for k in plan.layers)
        how = f" ({plan.window_allocation} allocation of windowed layers)" if windowed else ""
        lines[at:at + 2] = [("KV per sequence", f"{fmt_bytes(plan.kv_bytes_per_sequence)}{how}"),
                            *per_type,
                            ("sequences, paged", f"{plan.max_sequences_paged:,} "
                                                 f"({fmt_bytes(plan.kv_bytes_per_sequence)} each)")]
    split = [f"experts split {plan.expert_parallel} ways"] if plan.expert_parallel > 1 else []
    if plan.dp_attention:
        split.append("data-parallel attention: each attention rank (TP / DP GPUs) holds its own sequences, whole, "
                     "over its GPUs' KV heads")
    if plan.decode_context_parallel > 1:
        split.append(f"decode context parallel {plan.decode_context_parallel}: each sequence's KV split by position "
                     f"over {plan.decode_context_parallel} GPUs of the TP group")
    if plan.kv_parallel > 1:
        split.append(f"KV parallel {plan.kv_parallel}: each sequence's KV split by position over {plan.kv_parallel} "
                     f"groups of {plan.tensor_parallel} GPU(s), weights on every one")
    if split:
        lines.insert(0, ("parallelism", "; ".join(split)))
    where = plan.gpu
    if plan.num_gpus > 1 or plan.tensor_parallel > 1:
        where = f"{max(plan.num_gpus, plan.tensor_parallel)} x {plan.gpu}"
    if plan.tensor_parallel > 1:
        lines.insert(0, ("tensor parallel", f"{plan.tensor_parallel} GPUs, {plan.kv_heads_per_gpu} KV head(s) each; "
                                            "memory figures are per GPU"))
    if plan.num_gpus > plan.tensor_parallel:
        lines.insert(0, ("GPUs", f"{plan.num_gpus} in all; sequences are those the group serves, memory figures "
                                 "per GPU"))
    title = f"{plan.model} on {where}: sequences of {plan.context_len:,} tokens, page size {plan.page_size}"
    record = plan.to_dict()
    columns = tuple(Column(label, label, lambda _, text=text: text) for label, text in lines)
    notes = ((f"answer: {plan.reason}",) if plan.reason else ()) + (BOUND_NOTE,)
    return Table(columns, (record,), doc=record, title=title, notes=notes, vertical=True,
                 csv_keys=tuple(k for k in record if k != "layers"))


#: What the default `capacity` is, said under its table: a bound, not what an engine allocates.
BOUND_NOTE = ("a bound: utilisation x the nvidia-smi total, less the weights and the activation reserve; an engine "
              "keeps less (--engine vllm|sglang follows its own accounting, --engine-log explains a start-up log)")


def _layer_line(k, page_size: int) -> str:
    """One layer type's share of a sequence: 'sliding (window 1,024): 65 pages of 16 tokens x 8.000 KiB ...'."""
    if k.kind == "linear":
        return f"{k.kind}: a state of {fmt_bytes(k.state_bytes)} per layer; {fmt_bytes(k.bytes_per_sequence)} in all"
    return (f"{k.kind}: {k.pages_per_sequence:,} pages of {page_size} tokens x {fmt_bytes(k.bytes_per_token)} per "
            f"token per layer; {fmt_bytes(k.bytes_per_sequence)} in all")


def render_capacity(plan: "CapacityPlan", fmt: Format = Format.table) -> str:
    """The capacity plan as label / value lines, markdown, CSV (one row) or JSON."""
    return render(capacity_table(plan), fmt)


#: The old names (they returned a text Table, not a pandas frame), kept for one release.
report_frame = report_table
capacity_frame = capacity_table

"""A whole-model step report (rooflab.step) -> a Table: one line per component, the step's floor and prediction."""

from __future__ import annotations

from .output import Column, Format, Table, render
from .predict import MEASURED_HERE
from .step import StepReport
from .units import fmt_bytes, fmt_flops, fmt_seconds


def _t(x) -> str:
    return "-" if x is None else fmt_seconds(x)


def _fitted_on(provenance) -> str:
    """'this GPU', the GPU a transferred prediction was fitted on, or '-' (the notes say why)."""
    if not provenance:
        return "-"
    return ", ".join("this GPU" if p.strip() == MEASURED_HERE else p.strip().removeprefix("transferred from ")
                     for p in provenance.split(","))


def step_report_table(r: StepReport) -> Table:
    """Rows per component for the whole step on one GPU; title with the deployment, notes with the totals."""
    split = "".join(text for n, text in ((r.decode_context_parallel, f", DCP {r.decode_context_parallel} (inside TP)"),
                                         (r.dcp, f", KVP {r.dcp}"), (r.cp, f", PCP {r.cp} (ring)")) if n > 1)
    what = (f"decode step (time per output token), batch {r.batch:,} x context {r.context_len:,}" if r.step == "decode"
            else f"prefill (time to first token), batch {r.batch:,} x prompt {r.context_len:,}")
    if r.prefill_tokens:
        what += f" + a prefill chunk of {r.prefill_tokens:,}"
    if r.q_len > 1:
        what += f", {r.q_len} query tokens a sequence (drafts verified)"
    where = f"TP {r.tp}{split}"
    if r.deployment:
        from .deployment import Deployment, Speculative

        fields = {k: v for k, v in r.deployment.items() if k in Deployment.__dataclass_fields__
                  and k not in ("speculative", "kv_cache_dtype", "dtype", "weight_format", "gemm_dtype",
                                "window_allocation")}
        where = Deployment(**fields).describe().rsplit(" (", 1)[0]
        if not r.deployment.get("cuda_graphs", True):
            where += ", eager"
        elif not r.cuda_graph:
            where += ", the model eager this step"
    kv = f", KV {r.kv_dtype}" if r.kv_dtype and r.kv_dtype != r.dtype else ""
    title = (f"{r.model_display_name or r.model} on {r.gpus} x {r.gpu_display_name or r.gpu} ({where}): "
             f"{what}, {r.dtype}{kv}; figures for one GPU, whole step (all layers)"
             + ("; rows: one pipeline stage, one micro-batch" if r.pipeline_parallel > 1 else ""))
    records = []
    for row in r.rows:
        rec = row.to_dict()
        rec.update(model=r.model, gpu=r.gpu, step=r.step, batch=r.batch, context_len=r.context_len, tp=r.tp,
                   decode_context_parallel=r.decode_context_parallel, kv_parallel=r.dcp,
                   prefill_context_parallel=r.cp)
        records.append(rec)
    columns = (
        Column("label", "component"),
        Column("calls", "launches", lambda x: f"{x['calls']:,}"),
        Column("flops", "FLOPs", lambda x: fmt_flops(x["flops"]) if x["flops"] else "-"),
        Column("hbm_bytes", "HBM bytes", lambda x: fmt_bytes(x["hbm_bytes"]) if x["hbm_bytes"] else "-"),
        Column("comm_bytes", "link bytes", lambda x: fmt_bytes(x["comm_bytes"]) if x["comm_bytes"] else "-"),
        Column("intensity_flop_per_byte", "FLOP/byte",
               lambda x: "-" if x["intensity_flop_per_byte"] is None else f"{x['intensity_flop_per_byte']:.1f}"),
        Column("t_floor_s", "t_floor", lambda x: _t(x["t_floor_s"])),
        Column("bound", "bound"),
        Column("t_predicted_s", "t_predicted", lambda x: _t(x["t_predicted_s"])),
        Column("predicted_from", "fitted on", lambda x: _fitted_on(x.get("predicted_from"))),
    )
    pred = r.t_predicted_s
    notes = [f"step: t_floor {fmt_seconds(r.t_floor_s)} (compute, memory and communication overlapped; "
             f"{fmt_seconds(r.t_floor_serial_s)} one component after another), t_predicted "
             f"{_t(pred)}" + (f" = {r.batch * r.tokens_per_step / pred:,.0f} tokens/s for the deployment"
                              + (f", {_t(r.t_per_output_token_s)} a token" if r.tokens_per_step != 1 else "")
                              if pred and r.step == "decode" else ""),
             f"memory per GPU: weights {fmt_bytes(r.weight_bytes_per_gpu)} + KV cache {fmt_bytes(r.kv_bytes_per_gpu)} "
             f"of {fmt_bytes(r.usable_bytes_per_gpu)} usable", *r.notes]
    return Table(columns, tuple(records), doc=r.to_dict(), title=title, notes=tuple(notes),
                 csv_keys=("model", "gpu", "step", "batch", "context_len", "tp", "decode_context_parallel",
                           "kv_parallel", "prefill_context_parallel", "variant", "label",
                           "layer_type", "num_layers", "calls", "flops", "hbm_bytes", "comm_bytes", "weight_bytes",
                           "intensity_flop_per_byte", "t_compute_s", "t_memory_s", "t_floor_s", "bound",
                           "t_predicted_s", "predicted_from"))


def render_step(r: StepReport, fmt: Format = Format.table) -> str:
    return render(step_report_table(r), fmt)


#: The old names (they returned a text Table, not a pandas frame), kept for one release.
step_frame = step_report_table

__all__ = ["render_step", "step_report_table"]

"""The bundled specs as Frames, for `rooflab list gpus` and `rooflab list models`."""

from __future__ import annotations

from .load import available, load_gpu, load_model
from .output import Column, Format, Table, render
from .units import DType, fmt_bytes, fmt_params, fmt_rate


def gpus_table() -> Table:
    """One record per bundled GPU: headline ceilings, capacity, the fp16 ridge and on-chip sizes."""
    records = []
    for name in available("hardware"):
        g = load_gpu(name)
        records.append({"name": name, "display_name": g.display_name,
                        "fp16_flop_per_s": g.dense_tensor_flop_per_s["fp16"],
                        "hbm_bandwidth_bytes_per_s": g.hbm_bandwidth_bytes_per_s,
                        "hbm_capacity_bytes": g.hbm_capacity_bytes,
                        "ridge_fp16_flop_per_byte": g.ridge_flop_per_byte(DType.fp16),
                        "num_sms": g.num_sms, "smem_per_sm_bytes": g.smem_per_sm_bytes,
                        "measured": g.measured is not None})
    columns = (
        Column("name", "name"), Column("display_name", "GPU"),
        Column("fp16_flop_per_s", "fp16 dense", lambda r: fmt_rate(r["fp16_flop_per_s"], "FLOP/s")),
        Column("hbm_bandwidth_bytes_per_s", "HBM bandwidth", lambda r: fmt_rate(r["hbm_bandwidth_bytes_per_s"], "B/s")),
        Column("hbm_capacity_bytes", "capacity", lambda r: fmt_bytes(r["hbm_capacity_bytes"])),
        Column("ridge_fp16_flop_per_byte", "ridge fp16", lambda r: f"{r['ridge_fp16_flop_per_byte']:.0f} FLOP/B"),
        Column("num_sms", "SMs", lambda r: "-" if r["num_sms"] is None else str(r["num_sms"])),
        Column("smem_per_sm_bytes", "smem/SM",
               lambda r: "-" if r["smem_per_sm_bytes"] is None else fmt_bytes(r["smem_per_sm_bytes"])),
    )
    return Table(columns, tuple(records))


def models_table() -> Table:
    """One record per bundled model: parameters, layers, attention shape, KV bytes per token, max context."""
    records = []
    for name in available("models"):
        m = load_model(name)
        records.append({"name": name, "display_name": m.display_name, "num_parameters": m.total_parameters,
                        "num_layers": m.num_layers, "num_qo_heads": m.num_qo_heads,
                        "num_kv_heads": m.num_kv_heads, "head_dim": m.head_dim,
                        "kv_bytes_per_token_fp16": m.kv_bytes_per_token(DType.fp16),
                        "max_context_len": m.max_context_len, "num_experts": m.num_experts,
                        "num_experts_per_token": m.num_experts_per_token})
    columns = (
        Column("name", "name"),
        Column("display_name", "model", lambda r: r["display_name"] + (
            f" ({r['num_experts']} experts, {r['num_experts_per_token']} active)" if r["num_experts"] > 1 else "")),
        Column("num_parameters", "params", lambda r: fmt_params(r["num_parameters"])),
        Column("num_layers", "layers"),
        Column("num_qo_heads", "heads q/kv", lambda r: f"{r['num_qo_heads']}/{r['num_kv_heads']}"),
        Column("head_dim", "head dim"),
        Column("kv_bytes_per_token_fp16", "KV per token fp16", lambda r: fmt_bytes(r["kv_bytes_per_token_fp16"])),
        Column("max_context_len", "max context", lambda r: f"{r['max_context_len']:,}"),
    )
    return Table(columns, tuple(records))


def render_gpus(fmt: Format = Format.table) -> str:
    return render(gpus_table(), fmt)


def render_models(fmt: Format = Format.table) -> str:
    return render(models_table(), fmt)


#: The old names (the *_frame builders returned a text Table, not a pandas frame; gpu_table and model_table
#: the rendered text, as render_* does elsewhere), kept for one release.
gpu_frame = gpus_table
model_frame = models_table
gpu_table = render_gpus
model_table = render_models

"""The bundled specs as tables, for `rooflab list gpus` and `rooflab list models`."""

from __future__ import annotations

import csv
import io
import json

from .load import available, load_gpu, load_model
from .render import Format, table
from .units import DType, fmt_bytes, fmt_params, fmt_rate


def _emit(headers: list[str], rows: list[list], records: list[dict], fmt: Format) -> str:
    if fmt is Format.json:
        return json.dumps(records, indent=2) + "\n"
    if fmt is Format.csv:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(records[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(records)
        return buf.getvalue()
    return table(headers, rows, markdown=fmt is Format.markdown) + "\n"


def gpu_table(fmt: Format = Format.table) -> str:
    headers = ["name", "GPU", "fp16 dense", "HBM bandwidth", "capacity", "ridge fp16", "SMs", "smem/SM"]
    rows, records = [], []
    for name in available("hardware"):
        g = load_gpu(name)
        ridge = g.ridge_flop_per_byte(DType.fp16)
        rows.append([name, g.display_name, fmt_rate(g.dense_tensor_flop_per_s["fp16"], "FLOP/s"),
                     fmt_rate(g.hbm_bandwidth_bytes_per_s, "B/s"), fmt_bytes(g.hbm_capacity_bytes),
                     f"{ridge:.0f} FLOP/B", str(g.num_sms), fmt_bytes(g.smem_per_sm_bytes)])
        records.append({"name": name, "display_name": g.display_name,
                        "fp16_flop_per_s": g.dense_tensor_flop_per_s["fp16"],
                        "hbm_bandwidth_bytes_per_s": g.hbm_bandwidth_bytes_per_s,
                        "hbm_capacity_bytes": g.hbm_capacity_bytes, "ridge_fp16_flop_per_byte": ridge,
                        "num_sms": g.num_sms, "smem_per_sm_bytes": g.smem_per_sm_bytes,
                        "measured": g.measured is not None})
    return _emit(headers, rows, records, fmt)


def model_table(fmt: Format = Format.table) -> str:
    headers = ["name", "model", "params", "layers", "heads q/kv", "head dim", "KV per token fp16", "max context"]
    rows, records = [], []
    for name in available("models"):
        m = load_model(name)
        kv = m.kv_bytes_per_token(DType.fp16)
        experts = f" ({m.num_experts} experts, {m.num_experts_per_token} active)" if m.num_experts > 1 else ""
        rows.append([name, m.display_name + experts, fmt_params(m.total_parameters), str(m.num_layers),
                     f"{m.num_qo_heads}/{m.num_kv_heads}", str(m.head_dim), fmt_bytes(kv),
                     f"{m.max_context_len:,}"])
        records.append({"name": name, "display_name": m.display_name, "num_parameters": m.total_parameters,
                        "num_layers": m.num_layers, "num_qo_heads": m.num_qo_heads,
                        "num_kv_heads": m.num_kv_heads, "head_dim": m.head_dim,
                        "kv_bytes_per_token_fp16": kv, "max_context_len": m.max_context_len})
    return _emit(headers, rows, records, fmt)

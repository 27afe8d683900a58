"""The absorbed MLA decode step (cost/mla.py): one latent per cached token, read once for every query head.

Source: DeepSeek-V3 technical report, section 2.1.1; FlashMLA's README (its FLOP count, 2 (576 + 512)
per (head, key), and its cache formats). The latent's bytes, the queries and outputs, the FLOPs, the
intensity and which roof binds, and the work units of 64-row tiles, each checked against the
MlaDecodeCost that layer_decode returns.
"""

from __future__ import annotations

import numpy as np

from ..cost.batch import DecodeBatch
from ..cost.layers import layer_decode, layer_splits
from ..cost.mla import MLA_ROWS_PER_UNIT, mla_latent_bytes
from ..floors import Ceilings, floor, floor_kernel
from ..specs import GpuSpec
from ..units import FP32_BYTES, INT32_BYTES, DType, fmt_seconds
from .derivation import Unit, _Derivation, floor_formula, merge_floor, roof_symbols
from .layer import Layer


def mla_symbols(d: _Derivation, layer: Layer, gpu: GpuSpec, roofs: Ceilings, dtype: DType) -> None:
    """h, d_c, d_R: what the absorbed form computes with (no h_kv: one latent serves every head)."""
    d.given("h", layer.heads.num_qo_heads, f"query heads ({layer.model.display_name}); in the absorbed form all "
                                           "attend over one shared latent")
    d.given("d_c", layer.spec.kv_lora_rank, "the latent's width (kv_lora_rank): every head's values")
    d.given("d_R", layer.spec.qk_rope_head_dim, "the shared rope key's width (qk_rope_head_dim)")
    d.given("b", dtype.bytes, f"bytes per element ({dtype.value})")
    d.given("L", layer.count, layer.layers_meaning())
    roof_symbols(d, gpu, roofs, dtype)


def explain_mla_decode(d: _Derivation, layer: Layer, gpu: GpuSpec, roofs: Ceilings, lens: DecodeBatch,
                       page_size: int, dtype: DType, kv_dtype: DType, splits: int, q_len: int,
                       sparse_fp8: bool) -> tuple[str, ...]:
    model, name = layer.model, layer.name
    cost = layer_decode(model, name, lens, page_size, dtype, kv_dtype, splits, q_len, gpu.num_sms, gpu.units_per_sm,
                        tensor_parallel=layer.tensor_parallel, mla_sparse_fp8=sparse_fp8)
    pred = floor(cost, roofs)
    attn = floor_kernel(cost.attention, roofs)
    h = layer.heads.num_qo_heads
    d.given("B", lens.size, "sequences in the batch")
    d.given("q", q_len, "new tokens per sequence, causal among themselves (1: plain decode)")
    d.given("sum_ctx", lens.total_tokens, "context tokens, summed over the batch")
    d.given("max_ctx", lens.max_len, "the longest context")
    d.given("page", page_size, "tokens per latent page")
    d.given("n_pages", float((np.ceil(lens.lengths / page_size) * lens.counts).sum()),
            "pages: sum of ceil(context / page) over the batch")
    d.given("b_kv", kv_dtype.bytes, f"bytes per cached latent element ({kv_dtype.value})")
    if gpu.num_sms is not None:   # the GPU YAML may leave it out: no parallelism model
        d.given("n_sms", gpu.num_sms, "SMs")
        d.given("units_per_sm", gpu.units_per_sm, "work units one SM runs at once (the GPU YAML's units_per_sm)")
    d.given("n_split", splits, "KV splits per sequence" + (" (1: one launch, no merge)" if splits == 1 else ""))
    d.given("tiles", float(np.ceil(q_len * h / MLA_ROWS_PER_UNIT)),
            f"query tiles per sequence: ceil(q h / {MLA_ROWS_PER_UNIT}), {MLA_ROWS_PER_UNIT} rows "
            "(head x new token) each, as FlashMLA tiles them")

    d.section("The latent cache (one layer)")
    if sparse_fp8:
        d.step("lat", f"512 + 4 * {FP32_BYTES} + 64 * {DType.bf16.bytes}", mla_latent_bytes(layer.spec, kv_dtype, True),
               Unit.bytes, "DeepSeek-V3.2's sparse fp8 layout: 512 e4m3 latent values, 4 fp32 scales (one per 128), "
                           "64 rope dims in bf16")
    else:
        d.step("lat", "(d_c + d_R) * b_kv", mla_latent_bytes(layer.spec, kv_dtype), Unit.bytes,
               "one latent per cached token, shared by all h heads")
    d.step("Q_latent", "lat * sum_ctx", cost.kv_bytes, Unit.bytes,
           "the latent of every cached token, read once for every head and new token")

    d.section("HBM traffic of the attention launch (one layer)")
    rows = "B * h" if q_len == 1 else "B * q * h"
    out = f"{rows} * (d_c * b + {FP32_BYTES})" if splits == 1 else f"n_split * {rows} * (d_c + 1) * {FP32_BYTES}"
    d.step("Q_attention", f"Q_latent + {INT32_BYTES} * (n_pages + B) + {rows} * (d_c + d_R) * b + {out}",
           cost.attention.hbm_bytes, Unit.bytes,
           "plus the int32 block table and lengths, the queries projected into the latent space (d_c + d_R each) "
           "and " + ("O (d_c each) with its fp32 LSE" if splits == 1 else "the fp32 partial outputs and LSEs"))
    if cost.merge is not None:
        d.step("Q_merge", f"n_split * {rows} * (d_c + 1) * {FP32_BYTES} + {rows} * (d_c * b + {FP32_BYTES})",
               cost.merge.hbm_bytes, Unit.bytes, "the S-way merge reads the partials back, writes O and its LSE")
        d.step("Q_total", "Q_attention + Q_merge", cost.hbm_bytes, Unit.bytes)
    else:
        d.step("Q_total", "Q_attention", cost.hbm_bytes, Unit.bytes)

    d.section("FLOPs and intensity")
    pairs = "sum_ctx" if q_len == 1 else "(q * sum_ctx - B * q * (q - 1) / 2)"
    d.step("F", f"2 * (d_c + d_R + d_c) * h * {pairs}", cost.flops, Unit.flop,
           "FlashMLA's count: q.k over d_c + d_R and PV over d_c, per (head, visible key)"
           + (", the new tokens causal among themselves" if q_len > 1 else ""))
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity)
    if q_len == 1 and not sparse_fp8:
        d.step("I_kv", "2 * (d_c + d_R + d_c) * h / ((d_c + d_R) * b_kv)", cost.intensity_kv, Unit.intensity,
               "F over the latent bytes alone: grows with the heads, unlike GQA's 2 h / (b h_kv)")
    else:
        d.step("I_kv", "F / Q_latent", cost.intensity_kv, Unit.intensity,
               "F over the latent bytes alone: grows with the heads" + (" and with q" if q_len > 1 else ""))
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity)
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge)

    d.section("Work units and time floors (one layer)")
    d.step("units", f"{_busy(d, lens, page_size, splits)} * tiles", cost.work_units, Unit.count,
           "work units: (sequence, split, query tile); each reads its split's latent pages once", "units")
    d.step("longest", "min(ceil(ceil(max_ctx / page) / n_split) * page, max_ctx)", cost.longest_unit_tokens,
           Unit.count, "tokens of the longest work unit", "tokens")
    if gpu.num_sms is not None:
        d.step("f", "min(1, tiles * sum_ctx / (longest * n_sms * units_per_sm))", cost.parallel_fraction, Unit.fraction,
               "share of the GPU the launch keeps busy: one work unit streams at most beta / (n_sms * units_per_sm); "
               "the parallelism model's term, in t_predicted, not in the physical floor")
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds, "at full bandwidth")
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    d.step("E", f"h * {pairs}", cost.attention.exp_ops, Unit.count, "exps, one per (query head, visible key)", "exps")
    t_attn = d.step("t_attention", floor_formula("F", "pi", "E", "Q_attention", roofs), attn.t_floor_s,
                    Unit.seconds)
    merge_floor(d, cost, roofs, pred, rows, "d_c")

    d.section(layer.whole_model_title())
    d.step("t_model", "L * t_floor", layer.count * pred.t_floor_s, Unit.seconds, "attention of one decode step")
    best = layer_splits(model, name, lens, gpu.num_sms, page_size, dtype, kv_dtype, gpu.units_per_sm, q_len=q_len,
                        tensor_parallel=layer.tensor_parallel)
    intensity, ridge = float(pred.intensity_flop_per_byte), roofs.ridge_flop_per_byte
    bound = str(np.asarray(pred.bound).reshape(()))
    relation = ">" if intensity > ridge else ("=" if intensity == ridge else "<")
    return (f"absorbed MLA decode is {bound}-bound on this GPU: I = {intensity:.1f} {relation} ridge {ridge:.1f} FLOP/byte "
            f"(the latent alone: I_kv = {float(cost.intensity_kv):.1f})",
            f"{int(cost.work_units)} work units of {MLA_ROWS_PER_UNIT}-row tiles for {gpu.sms_text} keep "
            f"{float(cost.parallel_fraction):.0%} of the GPU busy; rooflab recommends {best} split(s) here "
            f"(attention {fmt_seconds(t_attn)} per layer)")


def _busy(d: _Derivation, lens: DecodeBatch, page_size: int, splits: int) -> str:
    """(sequence, split) pairs that hold keys: B unsplit; with splits, each sequence's non-empty splits."""
    if splits == 1:
        return "B"
    per_split = "ceil(ceil(max_ctx / page) / n_split) * page"
    if lens.is_uniform:
        return f"B * min(n_split, ceil(max_ctx / ({per_split})))"
    span = np.ceil(np.ceil(lens.lengths / page_size) / splits) * page_size
    d.given("n_busy", float((np.minimum(splits, np.ceil(lens.lengths / span)) * lens.counts).sum()),
            "(sequence, split) pairs holding keys: sum of min(n_split, ceil(ctx / split span)) over the batch")
    return "n_busy"

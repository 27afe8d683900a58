"""The decode derivations: one paged-attention step (optionally split-KV with its merge), and the merge alone."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..vocab import Variant
from ..cost.merge import merge_pair
from ..cost.paged import DecodeBatch, check_splits, decode_batch, default_splits, paged_decode, recommend_splits
from ..errors import InputError
from ..roofline import Ceilings, predict, predict_kernel
from ..specs import GpuSpec, ModelSpec
from ..units import FP32_BYTES, INT32_BYTES, DType, fmt_seconds
from .derivation import Unit, _Derivation, floor_formula, number


def explain_decode_step(d: _Derivation, variant: Variant, model: ModelSpec, gpu: GpuSpec, roofs: Ceilings,
                        context_lens: Sequence[int] | DecodeBatch, batch: int, page_size: int, dtype: DType,
                        kv_dtype: DType,
                        splits: Optional[int]) -> tuple[tuple[str, ...], str]:
    """Paged (one launch) or split-KV decode: the split count, the derivation, and the workload for the title."""
    lens = decode_batch(context_lens) if isinstance(context_lens, DecodeBatch) or len(context_lens) else \
        DecodeBatch.uniform(8192, batch)
    if variant is Variant.paged:
        if splits not in (None, 1):
            raise InputError("--splits applies to --variant split_kv; paged decode is one launch")
        chosen = 1
    else:
        chosen = check_splits(splits) if splits is not None else \
            default_splits(model, lens, gpu.num_sms, page_size, dtype, kv_dtype, gpu.units_per_sm)
    tail = explain_decode(d, model, gpu, roofs, lens, page_size, dtype, kv_dtype, chosen)
    kv = f", KV cache {kv_dtype.value}" if kv_dtype != dtype else ""
    workload = (f"decode step, {lens.size:,} sequence{'s' if lens.size > 1 else ''}, context {int(lens.max_len):,}"
                f"{'' if lens.is_uniform else ' (longest)'}, {dtype.value}{kv}, page size {page_size}"
                + (f", {chosen} splits" if chosen > 1 else ""))
    return tail, workload


def explain_decode(d: _Derivation, model: ModelSpec, gpu: GpuSpec, roofs: Ceilings, lens: DecodeBatch,
                   page_size: int, dtype: DType, kv_dtype: DType, splits: int) -> tuple[str, ...]:
    cost = paged_decode(model, lens, page_size, dtype, kv_dtype, splits, gpu.num_sms, gpu.units_per_sm)
    pred = predict(cost, roofs)
    attn = predict_kernel(cost.attention, roofs)
    d.given("B", lens.size, "sequences in the batch")
    d.given("sum_ctx", lens.total_tokens, "context tokens, summed over the batch")
    d.given("max_ctx", lens.max_len, "the longest context")
    d.given("page", page_size, "tokens per KV page")
    d.given("n_pages", float((np.ceil(lens.lengths / page_size) * lens.counts).sum()),
            "pages: sum of ceil(context / page) over the batch")
    d.given("b_kv", kv_dtype.bytes, f"bytes per KV-cache element ({kv_dtype.value})")
    d.given("n_sms", gpu.num_sms, "SMs")
    d.given("units_per_sm", gpu.units_per_sm, "decode work units one SM runs at once (the GPU YAML's units_per_sm, "
            "fitted by rooflab validate; 1 where none is fitted)")
    d.given("n_split", splits, "KV splits per sequence" + (" (1: one launch, no merge)" if splits == 1 else ""))

    d.section("HBM traffic of the attention launch (one layer)")
    d.step("Q_kv", "2 * h_kv * d * b_kv * sum_ctx", cost.kv_bytes, Unit.bytes,
           "K and V of every cached token, once per KV head (GQA)")
    d.step("Q_table", f"{INT32_BYTES} * (n_pages + B)", cost.block_table_bytes, Unit.bytes,
           "int32 block table and context lengths")
    out = "B * h * d * b" if splits == 1 else f"n_split * B * h * (d + 1) * {FP32_BYTES}"
    d.step("Q_attention", f"Q_kv + Q_table + B * h * d * b + {out}", cost.attention.hbm_bytes, Unit.bytes,
           "plus the query token and " + ("O" if splits == 1 else "the fp32 partial outputs and LSEs"))
    if cost.merge is not None:
        d.step("Q_merge", f"n_split * B * h * (d + 1) * {FP32_BYTES} + B * h * d * b", cost.merge.hbm_bytes, Unit.bytes,
               "the S-way merge reads the partials back and writes O")
        d.step("Q_total", "Q_attention + Q_merge", cost.hbm_bytes, Unit.bytes)
    else:
        d.step("Q_total", "Q_attention", cost.hbm_bytes, Unit.bytes)

    d.section("FLOPs and intensity")
    d.step("F", "4 * h * d * sum_ctx", cost.flops, Unit.flop, "QK^T and PV for one query token per sequence")
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity)
    d.step("I_kv", "2 * h / (b_kv * h_kv)", cost.intensity_kv, Unit.intensity,
           "F over the KV bytes alone: fixed whatever the context or batch")
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity)
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge)

    d.section("Time floors (one layer)")
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds, "at full bandwidth")
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    d.step("longest", "min(ceil(ceil(max_ctx / page) / n_split) * page, max_ctx)", cost.longest_unit_tokens, Unit.count,
           "tokens of the longest work unit (one sequence x KV head x split)", "tokens")
    d.step("f", "min(1, h_kv * sum_ctx / (longest * n_sms * units_per_sm))", cost.parallel_fraction, Unit.fraction,
           "share of the GPU the launch keeps busy: one work unit streams at most beta / (n_sms * units_per_sm)")
    d.given("E", float(cost.attention.exp_ops), "exps, one per (query head, cached token)",
            number(cost.attention.exp_ops))
    t_attn = d.step("t_attention", floor_formula("F", "pi", "E", "Q_attention", roofs, "f"), attn.t_floor_s,
                    Unit.seconds)
    if cost.merge is not None:
        merge = predict_kernel(cost.merge.kernel, roofs)
        d.given("pi_vec", roofs.vector_flop_per_s, "FLOP/s, fp32 vector rate: the merge's FLOPs run there")
        d.step("F_merge", "B * h * (n_split * (2 * d + 3) + d)", cost.merge.flops, Unit.flop,
               "on the fp32 vector units")
        d.given("E_merge", float(cost.merge.kernel.exp_ops), "exps of the merge, one per (row, split)")
        d.step("t_merge", floor_formula("F_merge", "pi_vec", "E_merge", "Q_merge", roofs), merge.t_floor_s,
               Unit.seconds)
        d.step("t_floor", "t_attention + t_merge", pred.t_floor_s, Unit.seconds)
    else:
        d.step("t_floor", "t_attention", pred.t_floor_s, Unit.seconds)

    d.section(f"The whole model ({model.num_layers} layers)")
    d.step("t_model", "L * t_floor", model.num_layers * pred.t_floor_s, Unit.seconds, "attention of one decode step")
    best = recommend_splits(model, lens, gpu.num_sms, page_size, dtype, kv_dtype, gpu.units_per_sm)
    return (f"{int(cost.work_units)} work units for {gpu.num_sms} SMs keep {float(cost.parallel_fraction):.0%} of "
            f"the GPU busy; rooflab recommends {best} split(s) here (attention {fmt_seconds(t_attn)} per layer)",)


def explain_merge(d: _Derivation, model: ModelSpec, roofs: Ceilings, tokens: int, dtype: DType) -> tuple[str, ...]:
    cost = merge_pair(tokens, model.num_qo_heads, model.head_dim, dtype)
    kernel = predict_kernel(cost.kernel, roofs)
    d.given("N_tok", tokens, "tokens whose two partial states (O, LSE) are merged")

    d.section("HBM traffic (per (token, head) row, then in all)")
    d.step("row_bytes", f"2 * d * b + 2 * {FP32_BYTES} + d * b", float(cost.hbm_bytes) / (tokens * model.num_qo_heads),
           Unit.bytes, "read O_a, O_b and two fp32 LSEs, write O")
    d.step("Q_total", "N_tok * h * row_bytes", cost.hbm_bytes, Unit.bytes)

    d.section("FLOPs and intensity")
    d.step("row_flops", "3 * d + 6", float(cost.flops) / (tokens * model.num_qo_heads), Unit.flop,
           "two scales times two vectors and an add; max, two subtracts, a sum, two divides")
    d.step("F", "N_tok * h * row_flops", cost.flops, Unit.flop)
    d.step("I", "F / Q_total", kernel.intensity_flop_per_byte, Unit.intensity)
    d.step("I_star_vec", "pi_vec / beta", roofs.vector_flop_per_s / roofs.bandwidth_bytes_per_s, Unit.intensity,
           "the ridge of the vector roof")
    d.step("ratio", "I / I_star_vec", kernel.intensity_flop_per_byte * roofs.bandwidth_bytes_per_s
           / roofs.vector_flop_per_s, Unit.ridge)

    d.section("Time floors")
    d.given("E", float(cost.kernel.exp_ops), "exps, two per row")
    d.step("t_memory", "Q_total / beta", kernel.t_memory_s, Unit.seconds)
    d.step("t_floor", floor_formula("F", "pi_vec", "E", "Q_total", roofs), kernel.t_floor_s, Unit.seconds)
    return ("the merge is about as memory-bound as a kernel can be; it pays because it runs once per split, "
            "not once per key",)

"""The decode derivations: one paged-attention step (optionally split-KV with its merge), and the merge alone.

A step prices one layer of the chosen layer type through rooflab.cost.layers.layer_decode, as the
report does: q_len new tokens per sequence share every page they read (FLOPs grow with q, KV bytes
do not), a window or chunk reads only the keys its new tokens see (spans.py), and an MLA layer is
derived in its absorbed form (mla.py). Plain decode (full attention, one new token) reads as before.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..cost.batch import DecodeBatch, decode_batch
from ..cost.layers import layer_decode, layer_splits
from ..cost.merge import merge_pair
from ..cost.paged import check_splits
from ..predict import decode_kernel
from ..errors import InputError
from ..floors import Ceilings, floor, floor_kernel
from ..specs import GpuSpec
from ..units import FP32_BYTES, INT32_BYTES, DType, fmt_seconds
from ..vocab import Kernel, Variant
from .derivation import Unit, _Derivation, floor_formula, merge_floor, number, vector_floor
from .layer import Layer
from .predicted import explain_prediction
from .mla import explain_mla_decode
from .spans import decode_reads


def decode_lens(context_lens: Sequence[int] | DecodeBatch, batch: int) -> DecodeBatch:
    """The decode batch: the lengths given, or `batch` sequences of 8192 tokens."""
    if isinstance(context_lens, DecodeBatch) or len(context_lens):
        return decode_batch(context_lens)
    return DecodeBatch.uniform(8192, batch)


def decode_workload(lens: DecodeBatch, q_len: int, dtype: DType, kv_dtype: DType, page_size: int,
                    splits: int = 1) -> str:
    kv = f", KV cache {kv_dtype.value}" if kv_dtype != dtype else ""
    return (f"decode step, {lens.size:,} sequence{'s' if lens.size > 1 else ''}, context {int(lens.max_len):,}"
            f"{'' if lens.is_uniform else ' (longest)'}" + (f", {q_len} new tokens each" if q_len > 1 else "")
            + f", {dtype.value}{kv}, page size {page_size}"
            + (f", {splits} splits" if splits > 1 else ""))


def explain_decode_step(d: _Derivation, variant: Variant, layer: Layer, gpu: GpuSpec, roofs: Ceilings,
                        context_lens: Sequence[int] | DecodeBatch, batch: int, page_size: int, dtype: DType,
                        kv_dtype: DType, splits: Optional[int], q_len: int = 1,
                        mla_sparse_fp8: bool = False, impl: Optional[str] = None) -> tuple[tuple[str, ...], str]:
    """Paged (one launch) or split-KV decode: the split count, the derivation, and the workload for the title."""
    lens = decode_lens(context_lens, batch)
    if variant is Variant.paged:
        if splits not in (None, 1):
            raise InputError("--splits applies to --variant split_kv; paged decode is one launch")
        chosen = 1
    else:
        chosen = check_splits(splits) if splits is not None else \
            layer_splits(layer.model, layer.name, lens, gpu.num_sms, page_size, dtype, kv_dtype, gpu.units_per_sm,
                         recommended=False, q_len=q_len, tensor_parallel=layer.tensor_parallel)
    if layer.spec.is_latent:
        tail = explain_mla_decode(d, layer, gpu, roofs, lens, page_size, dtype, kv_dtype, chosen, q_len,
                                  mla_sparse_fp8)
    else:
        tail = explain_decode(d, layer, gpu, roofs, lens, page_size, dtype, kv_dtype, chosen, q_len)
    tail += explain_prediction(d, gpu, decode_kernel(layer.spec, chosen, q_len), lambda n, k: layer_decode(
        layer.model, layer.name, lens, page_size, dtype, kv_dtype, chosen, q_len, n, k,
        tensor_parallel=layer.tensor_parallel, mla_sparse_fp8=mla_sparse_fp8), dtype, impl)
    return tail, decode_workload(lens, q_len, dtype, kv_dtype, page_size, chosen)


def explain_decode(d: _Derivation, layer: Layer, gpu: GpuSpec, roofs: Ceilings, lens: DecodeBatch,
                   page_size: int, dtype: DType, kv_dtype: DType, splits: int, q_len: int = 1) -> tuple[str, ...]:
    model, name = layer.model, layer.name
    cost = layer_decode(model, name, lens, page_size, dtype, kv_dtype, splits, q_len, gpu.num_sms, gpu.units_per_sm,
                        tensor_parallel=layer.tensor_parallel)
    pred = floor(cost, roofs)
    attn = floor_kernel(cost.attention, roofs)
    plain = q_len == 1 and not layer.windowed and not layer.spec.sinks
    d.given("B", lens.size, "sequences in the batch")
    d.given("sum_ctx", lens.total_tokens, "context tokens, summed over the batch")
    d.given("max_ctx", lens.max_len, "the longest context")
    d.given("page", page_size, "tokens per KV page")
    if not layer.windowed:
        d.given("n_pages", float((np.ceil(lens.lengths / page_size) * lens.counts).sum()),
                "pages: sum of ceil(context / page) over the batch")
    d.given("b_kv", kv_dtype.bytes, f"bytes per KV-cache element ({kv_dtype.value})")
    if gpu.num_sms is not None:   # the GPU YAML may leave it out: no parallelism model
        d.given("n_sms", gpu.num_sms, "SMs")
        d.given("units_per_sm", gpu.units_per_sm, "decode work units one SM runs at once (the GPU YAML's "
                "units_per_sm, fitted by rooflab validate; 1 where none is fitted)")
    d.given("n_split", splits, "KV splits per sequence" + (" (1: one launch, no merge)" if splits == 1 else ""))
    if q_len > 1 or layer.windowed:
        d.given("q", q_len, "new tokens per sequence, causal among themselves (speculative verification, "
                            "multi-token prediction; 1: plain decode)")

    if layer.windowed:
        d.section("The keys the new tokens see (one layer)")
        reads, pairs, read_max = decode_reads(d, layer, lens, q_len, page_size)
    else:
        reads, read_max = "sum_ctx", "max_ctx"
        pairs = "sum_ctx" if q_len == 1 else "(q * sum_ctx - B * q * (q - 1) / 2)"

    d.section("HBM traffic of the attention launch (one layer)")
    dv = layer.dv
    per_token = "h_kv * (d + d_v) * b_kv" if layer.separate_values else "2 * h_kv * d * b_kv"
    d.step("Q_kv", f"{per_token} * {reads}", cost.kv_bytes, Unit.bytes,
           "K and V of every cached token, once per KV head (GQA)" if not layer.windowed else
           "K and V of the keys read, once per KV head (GQA)" + (", shared by the q new tokens" if q_len > 1 else ""))
    d.step("Q_table", f"{INT32_BYTES} * (n_pages + B)", cost.block_table_bytes, Unit.bytes,
           "int32 block table and context lengths")
    rows = "B * h" if q_len == 1 else "B * q * h"
    out = f"{rows} * {dv} * b" if splits == 1 else f"n_split * {rows} * ({dv} + 1) * {FP32_BYTES}"
    tokens = "the query token" if q_len == 1 else "the q query tokens"
    d.step("Q_attention", f"Q_kv + Q_table + {rows} * d * b + {out}", cost.attention.hbm_bytes, Unit.bytes,
           f"plus {tokens} and " + ("O" if splits == 1 else "the fp32 partial outputs and LSEs"))
    if cost.merge is not None:
        d.step("Q_merge", f"n_split * {rows} * ({dv} + 1) * {FP32_BYTES} + {rows} * {dv} * b", cost.merge.hbm_bytes,
               Unit.bytes, "the S-way merge reads the partials back and writes O")
        d.step("Q_total", "Q_attention + Q_merge", cost.hbm_bytes, Unit.bytes)
    else:
        d.step("Q_total", "Q_attention", cost.hbm_bytes, Unit.bytes)

    d.section("FLOPs and intensity")
    flops = f"2 * h * (d + d_v) * {pairs}" if layer.separate_values else f"4 * h * d * {pairs}"
    if q_len > 1:
        flop_note = "QK^T and PV for every visible (new token, key) pair: FLOPs grow with q, the KV bytes do not"
    elif layer.windowed:
        flop_note = "QK^T and PV over the keys the new token sees"
    else:
        flop_note = "QK^T and PV for one query token per sequence"
    d.step("F", flops, cost.flops, Unit.flop, flop_note)
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity)
    if q_len == 1 and not layer.separate_values:
        d.step("I_kv", "2 * h / (b_kv * h_kv)", cost.intensity_kv, Unit.intensity,
               "F over the KV bytes alone: fixed whatever the context or batch")
    else:
        d.step("I_kv", "F / Q_kv", cost.intensity_kv, Unit.intensity, "F over the KV bytes alone"
               + (", the q new tokens sharing every key read" if q_len > 1 else ""))
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity)
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge)

    d.section("Time floors (one layer)")
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds, "at full bandwidth")
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    d.step("longest", f"min(ceil(ceil({read_max} / page) / n_split) * page, {read_max})", cost.longest_unit_tokens,
           Unit.count, "tokens of the longest work unit (one sequence x KV head x split)", "tokens")
    if gpu.num_sms is not None:
        d.step("f", f"min(1, h_kv * {reads} / (longest * n_sms * units_per_sm))", cost.parallel_fraction, Unit.fraction,
               "share of the GPU the launch keeps busy: one work unit streams at most beta / (n_sms * units_per_sm); "
               "the parallelism model's term, in t_predicted, not in the physical floor")
    if plain:
        d.given("E", float(cost.attention.exp_ops), "exps, one per (query head, cached token)",
                number(cost.attention.exp_ops))
    else:
        sinks = f" + {rows}" if layer.spec.sinks else ""
        d.step("E", f"h * {pairs}{sinks}", cost.attention.exp_ops, Unit.count,
               "exps, one per (query head, visible key)" + (", plus one per row for the sink logit" if sinks else ""),
               "exps")
    t_attn = d.step("t_attention", floor_formula("F", "pi", "E", "Q_attention", roofs), attn.t_floor_s,
                    Unit.seconds)
    merge_floor(d, cost, roofs, pred, rows, dv)

    d.section(layer.whole_model_title())
    d.step("t_model", "L * t_floor", layer.count * pred.t_floor_s, Unit.seconds, "attention of one decode step")
    best = layer_splits(model, name, lens, gpu.num_sms, page_size, dtype, kv_dtype, gpu.units_per_sm, q_len=q_len,
                        tensor_parallel=layer.tensor_parallel)
    return (f"{int(cost.work_units)} work units for {gpu.sms_text} keep {float(cost.parallel_fraction):.0%} of "
            f"the GPU busy; rooflab recommends {best} split(s) here (attention {fmt_seconds(t_attn)} per layer)",)


def explain_merge(d: _Derivation, layer: Layer, roofs: Ceilings, tokens: int, dtype: DType,
                  gpu: Optional[GpuSpec] = None, impl: Optional[str] = None) -> tuple[str, ...]:
    heads = layer.heads
    cost = merge_pair(tokens, heads.num_qo_heads, heads.value_dim, dtype)
    kernel = floor_kernel(cost.kernel, roofs)
    dv = layer.dv
    d.given("N_tok", tokens, "tokens whose two partial states (O, LSE) are merged")

    d.section("HBM traffic (per (token, head) row, then in all)")
    d.step("row_bytes", f"2 * {dv} * b + 2 * {FP32_BYTES} + {dv} * b",
           float(cost.hbm_bytes) / (tokens * heads.num_qo_heads), Unit.bytes, "read O_a, O_b and two fp32 LSEs, write O")
    d.step("Q_total", "N_tok * h * row_bytes", cost.hbm_bytes, Unit.bytes)

    d.section("FLOPs and intensity")
    d.step("row_flops", f"3 * {dv} + 6", float(cost.flops) / (tokens * heads.num_qo_heads), Unit.flop,
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
    vector_floor(d, "t_floor", "F", "E", "Q_total", cost.kernel, roofs, kernel.t_floor_s)
    tail = ("the merge is about as memory-bound as a kernel can be; it pays because it runs once per split, "
            "not once per key",)
    if gpu is None:
        return tail
    return tail + explain_prediction(d, gpu, Kernel.merge, lambda n, k: cost, dtype, impl)

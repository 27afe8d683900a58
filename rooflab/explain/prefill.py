"""The prefill derivations: naive attention (S and P through HBM) and flash attention (tiled, S on chip).

Naive follows the chapter "Naive attention and the online softmax" section by
section, and ends with whether S and P fit next to the weights. Both price one layer of the chosen
layer type through rooflab.cost.layers.layer_prefill, as the report does: a sliding window or a
chunk shows its visible pairs (spans.py), separate value dims carry d_v, sinks add their exps, and
an MLA layer is derived in its un-absorbed prefill form (h_kv = h, d = d_nope + d_R, values of d_v).
Plain full attention reads exactly as the chapter writes it.
"""

from __future__ import annotations

import numpy as np

from ..capacity import describe_weights
from ..cost.flash import KV_STAGES
from ..cost.layers import layer_prefill
from ..cost.naive import NaiveCeiling, naive_ceiling, naive_prefill
from ..floors import Ceilings, floor, floor_kernel
from ..specs import GpuSpec, ModelSpec
from ..units import FP32_BYTES, DType, fmt_bytes, ridge_text
from .derivation import ExplainMismatch, Unit, _Derivation, floor_formula, number, vector_floor
from .layer import Layer
from .spans import pairs_note, prefill_pairs, tiled_rows


def flop_formula(layer: Layer, pairs: str, batch: str = "B * ") -> str:
    """F = 2 FLOP per multiply-add over d (QK^T) and d_v (PV) for every visible pair: 4 B h pairs d when d_v = d."""
    if layer.separate_values:
        return f"2 * {batch}h * {pairs} * (d + d_v)"
    return f"4 * {batch}h * {pairs} * d"


def qkvo_formula(layer: Layer) -> str:
    """Q, K, V, O once each."""
    if layer.separate_values:
        return "B * (h + h_kv) * T * (d + d_v) * b"
    return "2 * B * h * T * d * b + 2 * B * h_kv * T * d * b"


def explain_naive(d: _Derivation, layer: Layer, gpu: GpuSpec, roofs: Ceilings, seq_len: int, batch: int,
                  dtype: DType, causal: bool) -> tuple[str, ...]:
    cost = layer_prefill(layer.model, layer.name, seq_len, batch, dtype, causal, naive=True)
    causal = causal or layer.windowed
    pred = floor(cost, roofs)
    qk, sm, pv = (floor_kernel(k, roofs) for k in cost.kernels)
    dv = layer.dv

    d.section("The intermediates S and P (one layer)")
    d.step("S", "B * h * T^2 * b", cost.s_bytes, Unit.bytes, "the scores [B, h, T, T]: quadratic in T, free of d")
    d.step("P", "B * h * T^2 * b", cost.p_bytes, Unit.bytes, "the softmax output, a second allocation alive with S")

    d.section("HBM traffic per kernel (compulsory: each byte once per kernel that touches it)")
    d.step("Q_qk", "B * h * T * d * b + B * h_kv * T * d * b + S", cost.qk.hbm_bytes, Unit.bytes,
           "QK^T reads Q and K (once per KV head), writes S")
    d.step("Q_softmax", "S + P", cost.softmax.hbm_bytes, Unit.bytes, "softmax reads S, writes P")
    d.step("Q_pv", f"P + B * h_kv * T * {dv} * b + B * h * T * {dv} * b", cost.pv.hbm_bytes, Unit.bytes,
           "PV reads P and V, writes O")
    d.step("Q_total", "Q_qk + Q_softmax + Q_pv", cost.hbm_bytes, Unit.bytes)
    d.step("share_SP", "(2 * S + 2 * P) / Q_total", (cost.hbm_bytes - cost.qkvo_bytes) / cost.hbm_bytes,
           Unit.fraction, "of the bytes are S and P written and read back")

    d.section("FLOPs")
    pairs = prefill_pairs(d, layer, seq_len, causal)
    d.step("F", flop_formula(layer, pairs), cost.flops, Unit.flop,
           "QK^T plus PV, 2 FLOP per multiply-add" + pairs_note(layer, causal))
    d.step("F_softmax", "4 * B * h * T^2", cost.softmax.flops, Unit.flop,
           "max, subtract, sum, normalise per element of S, on the fp32 vector units (not in F)"
           + ("; masked elements too" if layer.windowed else ""))
    half = "F / 2"
    if layer.separate_values:
        d.step("F_qk", f"2 * B * h * {pairs} * d", cost.qk.flops, Unit.flop, "QK^T: q.k over d")
        d.step("F_pv", f"2 * B * h * {pairs} * d_v", cost.pv.flops, Unit.flop, "PV: values of d_v")

    d.section("Arithmetic intensity")
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity, "with S and P through HBM")
    d.step("Q_qkvo", qkvo_formula(layer), cost.qkvo_bytes, Unit.bytes,
           "Q, K, V, O once each: the compulsory bytes of attention itself")
    closed = "F / Q_qkvo" if causal or layer.separate_values else "2 * h * T / (b * (h + h_kv))"
    d.step("I_compulsory", closed, cost.intensity_compulsory, Unit.intensity,
           "the same arithmetic with S kept on chip")

    d.section("The ridge")
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity, "where the two roofs meet")
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge, "naive attention: memory-bound")
    d.step("ratio_compulsory", "I_compulsory / I_star", cost.intensity_compulsory / roofs.ridge_flop_per_byte,
           Unit.ridge, "the same arithmetic with S on chip: " + (
               "compute-bound" if cost.intensity_compulsory >= roofs.ridge_flop_per_byte else "memory-bound even so"))
    d.step("loss", "I_compulsory / I", cost.intensity_compulsory / pred.intensity_flop_per_byte, Unit.factor,
           "the factor in intensity that materialising S costs")

    d.section("Time floors (one layer)")
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds)
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    d.given("E", float(cost.softmax.exp_ops), "exps of the softmax, one per element of S", number(cost.softmax.exp_ops))
    d.step("t_qk", floor_formula("F_qk" if layer.separate_values else half, "pi", None, "Q_qk", roofs), qk.t_floor_s,
           Unit.seconds)
    vector_floor(d, "t_softmax", "F_softmax", "E", "Q_softmax", cost.softmax, roofs, sm.t_floor_s)
    d.step("t_pv", floor_formula("F_pv" if layer.separate_values else half, "pi", None, "Q_pv", roofs), pv.t_floor_s,
           Unit.seconds)
    d.step("t_floor", "t_qk + t_softmax + t_pv", pred.t_floor_s, Unit.seconds, "the kernels run one after another")

    d.section(layer.whole_model_title())
    d.step("t_model", "L * t_floor", layer.count * pred.t_floor_s, Unit.seconds,
           "naive attention, all layers" if not layer.model.is_hybrid else "naive attention, these layers")
    d.step("t_model_compute", "L * F / pi", layer.count * pred.t_compute_s, Unit.seconds,
           "the compute floor: what the same arithmetic could take")
    d.step("slowdown", "t_model / t_model_compute", pred.t_floor_s / pred.t_compute_s, Unit.factor)
    return _fits(d, layer, gpu, cost, seq_len, batch, dtype)


def _fits(d: _Derivation, layer: Layer, gpu: GpuSpec, cost, seq_len: int, batch: int,
          dtype: DType) -> tuple[str, ...]:
    model = layer.model
    ceiling = naive_ceiling(model, gpu, batch, dtype)
    d.section("Does it fit?")
    cap = "C_hbm" if layer.spec.chunk is not None else "C"       # C is the chunk on a chunked layer
    d.given(cap, gpu.hbm_capacity_bytes, f"bytes of HBM ({fmt_bytes(gpu.hbm_capacity_bytes)})")
    formats = {model.weight_format(c) for c in model.parameters.by_component()}
    if len(formats) == 1:
        fmt = formats.pop()
        d.given("N", model.total_parameters, "parameters")
        d.given("b_w", fmt.bits_per_weight / 8, f"bytes per weight ({fmt.value}, as the checkpoint ships them)")
        d.step("W_bytes" if layer.spec.window is not None else "W", "ceil(N * b_w)", ceiling.weights_bytes,
               Unit.bytes, "the weights")
    else:
        d.given("W_bytes" if layer.spec.window is not None else "W", ceiling.weights_bytes,
                f"bytes of weights, each component in its format ({describe_weights(model, None)})",
                fmt_bytes(ceiling.weights_bytes))
    weights = "W_bytes" if layer.spec.window is not None else "W"   # W is the window on a sliding layer
    d.step("working_set", "S + P + Q_qkvo", cost.working_set_bytes, Unit.bytes,
           "one layer at its peak: S and P together, with Q, K, V, O")
    free = d.step("free", f"{cap} - {weights}", ceiling.free_bytes, Unit.bytes)
    limit = ceiling.max_seq_len
    if free <= 0:
        return (f"the weights alone ({fmt_bytes(ceiling.weights_bytes)}) do not fit in "
                f"{fmt_bytes(gpu.hbm_capacity_bytes)}: naive prefill cannot run at any T",)
    verdict = "fits" if float(cost.working_set_bytes) <= free else "does NOT fit"
    fits = (f"naive prefill at T = {seq_len:,} {verdict}: working set {fmt_bytes(float(cost.working_set_bytes))} "
            f"against {fmt_bytes(free)} free")
    if layer.heads != model.heads or layer.separate_values:
        # naive_ceiling solves for the model's heads with d_v = d; this layer's working set is another quadratic
        return (fits + f"; the longest T that fits is not derived for '{layer.name}' layers (rooflab's naive "
                       "ceiling covers the model's own heads with equal q.k and value widths)",)
    _check_limit(ceiling, model, dtype, batch)
    d.step("a", "2 * B * h * b", ceiling.quadratic_bytes, Unit.count,
           "working set = a T^2 + l T: the T^2 term (S and P)", "bytes per token^2")
    d.step("l", "B * (2 * h + 2 * h_kv) * d * b", ceiling.linear_bytes, Unit.count,
           "the linear term (Q, K, V, O)", "bytes per token")
    d.step("T_max", "floor((sqrt(l^2 + 4 * a * free) - l) / (2 * a))", limit, Unit.count,
           "the longest T whose working set fits next to the weights", "tokens")
    if ceiling.fits(seq_len) != (verdict == "fits"):
        raise ExplainMismatch(f"the naive ceiling says T = {seq_len} {'fits' if ceiling.fits(seq_len) else 'does not'}"
                              f", but the working set is {float(cost.working_set_bytes)} against {free} free")
    return (f"{fits}; the longest T that fits is {limit:,}",)


def _check_limit(ceiling: NaiveCeiling, model: ModelSpec, dtype: DType, batch: int) -> None:
    """T_max is the last T whose working set fits: check it at T_max and T_max + 1 with naive_prefill itself."""
    limit, free = ceiling.max_seq_len, ceiling.free_bytes
    if limit < 1:
        return
    at = float(naive_prefill(model.heads, limit, batch, dtype).working_set_bytes)   # the ceiling's heads
    past = float(naive_prefill(model.heads, limit + 1, batch, dtype).working_set_bytes)
    if not at <= free < past:
        raise ExplainMismatch(f"naive_max_seq_len gives {limit}, but the working set there is {at} and at "
                              f"{limit + 1} is {past} against {free} free")


def explain_flash(d: _Derivation, layer: Layer, gpu: GpuSpec, roofs: Ceilings, seq_len: int, batch: int,
                  dtype: DType, causal: bool) -> tuple[str, ...]:
    model, name = layer.model, layer.name
    cost = layer_prefill(model, name, seq_len, batch, dtype, causal, gpu=gpu, tensor_parallel=layer.tensor_parallel)
    causal = causal or layer.windowed
    pred = floor(cost, roofs)
    tile = cost.tile
    d.given("B_r", tile.block_q, "query rows per tile (choose_tile)")
    d.given("B_c", tile.block_kv, "key columns per tile")
    d.given("stages", KV_STAGES, "K/V buffers in flight (double buffering)")
    d.given("smem", gpu.smem_per_sm_bytes, "bytes of shared memory per SM")

    d.section("The tile on chip")
    d.step("tile_bytes", "(B_r + 2 * stages * B_c) * d * b", tile.smem_bytes(layer.heads.head_dim, dtype), Unit.bytes,
           "Q tile and double-buffered K, V tiles; the largest tile that fits smem")

    d.section("HBM traffic (compulsory)")
    qkvo = layer_prefill(model, name, seq_len, batch, dtype, causal, gpu=gpu, write_lse=False,
                         tensor_parallel=layer.tensor_parallel).hbm_bytes
    d.step("Q_qkvo", qkvo_formula(layer), qkvo, Unit.bytes,
           "Q, K, V, O once each" + ("; every key is seen by some query, so a window reads them all" if
                                     layer.windowed else ""))
    d.step("Q_lse", f"B * h * T * {FP32_BYTES}", cost.hbm_bytes - qkvo, Unit.bytes,
           "the fp32 log-sum-exp kept for the backward pass or a merge")
    d.step("Q_total", "Q_qkvo + Q_lse", cost.hbm_bytes, Unit.bytes, "S and P never reach HBM")

    d.section("FLOPs and intensity")
    pairs = prefill_pairs(d, layer, seq_len, causal)
    d.step("F", flop_formula(layer, pairs), cost.flops, Unit.flop,
           "unchanged by tiling" + (pairs_note(layer, causal) if layer.windowed else ""))
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity)
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity)
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge)
    rows, note = tiled_rows(d, layer, seq_len, tile.block_q, causal)
    if layer.separate_values:
        tiled = f"B * h * T * (d + d_v) * b + Q_lse + B * h * ({rows}) * (d + d_v) * b"
    else:
        tiled = f"2 * B * h * T * d * b + Q_lse + 2 * B * h * ({rows}) * d * b"
    d.step("Q_tiled", tiled, cost.hbm_bytes_tiled, Unit.bytes, note)
    d.step("I_tiled", "F / Q_tiled", cost.intensity_tiled, Unit.intensity)
    d.step("rescale", "1 / B_c", cost.rescale_overhead, Unit.fraction,
           "extra arithmetic of the online softmax against the PV accumulation")

    d.section("Time floors (one layer)")
    if layer.windowed or layer.spec.sinks:
        sinks = " + B * h * T" if layer.spec.sinks else ""
        d.step("E", f"B * h * {pairs}{sinks}", cost.kernel.exp_ops, Unit.count,
               "exps, one per visible (query, key) pair" + (", plus one per (head, query) for the sink logit"
                                                           if sinks else ""), "exps")
    else:
        d.given("E", float(cost.kernel.exp_ops), "exps, one per visible (query, key) pair", number(cost.kernel.exp_ops))
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds)
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    if roofs.exp_per_s:
        d.step("t_exp", "E / eps", pred.t_exp_s, Unit.seconds, "the exp roof, FMA emulation included")
        d.step("t_exp_sfu", "E / eps_sfu", cost.kernel.exp_ops / roofs.exp_per_s, Unit.seconds,
               "the exp units alone, as a kernel that does not emulate sees them")
        d.step("exp_over_tensor", "t_exp_sfu / t_compute", cost.kernel.exp_ops / roofs.exp_per_s / pred.t_compute_s,
               Unit.factor, "near 1, the exp units tie the tensor cores (FlashAttention-4's premise on Blackwell)")
    d.step("t_floor", floor_formula("F", "pi", "E", "Q_total", roofs), pred.t_floor_s, Unit.seconds)

    d.section(layer.whole_model_title())
    d.step("t_model", "L * t_floor", layer.count * pred.t_floor_s, Unit.seconds)
    bound = str(np.asarray(pred.bound).reshape(()))
    return (f"flash attention is {bound}-bound here, {ridge_text(float(pred.ridge_ratio))} of the ridge",)

"""The prefill derivations: naive attention (S and P through HBM) and flash attention (tiled, S on chip).

Naive follows the chapter (../shared/seeds/naive-attention-and-online-softmax.txt) section by
section, and ends with whether S and P fit next to the weights.
"""

from __future__ import annotations

import numpy as np

from ..cost.flash import KV_STAGES, flash_prefill
from ..capacity import describe_weights
from ..cost.naive import NaiveCeiling, naive_ceiling, naive_prefill
from ..render import ridge_text
from ..roofline import Ceilings, predict, predict_kernel
from ..specs import GpuSpec, ModelSpec
from ..units import FP32_BYTES, DType, fmt_bytes
from .derivation import ExplainMismatch, Unit, _Derivation, floor_formula, number


def explain_naive(d: _Derivation, model: ModelSpec, gpu: GpuSpec, roofs: Ceilings, seq_len: int, batch: int,
                  dtype: DType, causal: bool) -> tuple[str, ...]:
    cost = naive_prefill(model, seq_len, batch, dtype, causal)
    pred = predict(cost, roofs)
    qk, sm, pv = (predict_kernel(k, roofs) for k in cost.kernels)
    pairs = "T * (T + 1) / 2" if causal else "T^2"

    d.section("The intermediates S and P (one layer)")
    d.step("S", "B * h * T^2 * b", cost.s_bytes, Unit.bytes, "the scores [B, h, T, T]: quadratic in T, free of d")
    d.step("P", "B * h * T^2 * b", cost.p_bytes, Unit.bytes, "the softmax output, a second allocation alive with S")

    d.section("HBM traffic per kernel (compulsory: each byte once per kernel that touches it)")
    d.step("Q_qk", "B * h * T * d * b + B * h_kv * T * d * b + S", cost.qk.hbm_bytes, Unit.bytes,
           "QK^T reads Q and K (once per KV head), writes S")
    d.step("Q_softmax", "S + P", cost.softmax.hbm_bytes, Unit.bytes, "softmax reads S, writes P")
    d.step("Q_pv", "P + B * h_kv * T * d * b + B * h * T * d * b", cost.pv.hbm_bytes, Unit.bytes,
           "PV reads P and V, writes O")
    d.step("Q_total", "Q_qk + Q_softmax + Q_pv", cost.hbm_bytes, Unit.bytes)
    d.step("share_SP", "(2 * S + 2 * P) / Q_total", (cost.hbm_bytes - cost.qkvo_bytes) / cost.hbm_bytes,
           Unit.fraction, "of the bytes are S and P written and read back")

    d.section("FLOPs")
    d.step("F", f"4 * B * h * {pairs} * d", cost.flops, Unit.flop,
           "QK^T plus PV, 2 FLOP per multiply-add" + (", visible (causal) pairs only" if causal else ""))
    d.step("F_softmax", "4 * B * h * T^2", cost.softmax.flops, Unit.flop,
           "max, subtract, sum, normalise per element of S, on the fp32 vector units (not in F)")

    d.section("Arithmetic intensity")
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity, "with S and P through HBM")
    d.step("Q_qkvo", "2 * B * h * T * d * b + 2 * B * h_kv * T * d * b", cost.qkvo_bytes, Unit.bytes,
           "Q, K, V, O once each: the compulsory bytes of attention itself")
    closed = "F / Q_qkvo" if causal else "2 * h * T / (b * (h + h_kv))"
    d.step("I_compulsory", closed, cost.intensity_compulsory, Unit.intensity,
           "the same arithmetic with S kept on chip")

    d.section("The ridge")
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity, "where the two roofs meet")
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge, "naive attention: memory-bound")
    d.step("ratio_compulsory", "I_compulsory / I_star", cost.intensity_compulsory / roofs.ridge_flop_per_byte,
           Unit.ridge, "the same arithmetic with S on chip: compute-bound")
    d.step("loss", "I_compulsory / I", cost.intensity_compulsory / pred.intensity_flop_per_byte, Unit.factor,
           "the factor in intensity that materialising S costs")

    d.section("Time floors (one layer)")
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds)
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    d.given("E", float(cost.softmax.exp_ops), "exps of the softmax, one per element of S", number(cost.softmax.exp_ops))
    d.step("t_qk", floor_formula("F / 2", "pi", None, "Q_qk", roofs), qk.t_floor_s, Unit.seconds)
    d.step("t_softmax", floor_formula("F_softmax", "pi_vec", "E", "Q_softmax", roofs), sm.t_floor_s, Unit.seconds)
    d.step("t_pv", floor_formula("F / 2", "pi", None, "Q_pv", roofs), pv.t_floor_s, Unit.seconds)
    d.step("t_floor", "t_qk + t_softmax + t_pv", pred.t_floor_s, Unit.seconds, "the kernels run one after another")

    d.section(f"The whole model ({model.num_layers} layers)")
    d.step("t_model", "L * t_floor", model.num_layers * pred.t_floor_s, Unit.seconds, "naive attention, all layers")
    d.step("t_model_compute", "L * F / pi", model.num_layers * pred.t_compute_s, Unit.seconds,
           "the compute floor: what the same arithmetic could take")
    d.step("slowdown", "t_model / t_model_compute", pred.t_floor_s / pred.t_compute_s, Unit.factor)
    return _fits(d, model, gpu, cost, seq_len, batch, dtype)


def _fits(d: _Derivation, model: ModelSpec, gpu: GpuSpec, cost, seq_len: int, batch: int,
          dtype: DType) -> tuple[str, ...]:
    ceiling = naive_ceiling(model, gpu, batch, dtype)
    d.section("Does it fit?")
    d.given("C", gpu.hbm_capacity_bytes, f"bytes of HBM ({fmt_bytes(gpu.hbm_capacity_bytes)})")
    formats = {model.weight_format(c) for c in model.parameters.by_component()}
    if len(formats) == 1:
        fmt = formats.pop()
        d.given("N", model.total_parameters, "parameters")
        d.given("b_w", fmt.bits_per_weight / 8, f"bytes per weight ({fmt.value}, as the checkpoint ships them)")
        d.step("W", "ceil(N * b_w)", ceiling.weights_bytes, Unit.bytes, "the weights")
    else:
        d.given("W", ceiling.weights_bytes, f"bytes of weights, each component in its format "
                                            f"({describe_weights(model, None)})", fmt_bytes(ceiling.weights_bytes))
    d.step("working_set", "S + P + Q_qkvo", cost.working_set_bytes, Unit.bytes,
           "one layer at its peak: S and P together, with Q, K, V, O")
    free = d.step("free", "C - W", ceiling.free_bytes, Unit.bytes)
    limit = ceiling.max_seq_len
    if free <= 0:
        return (f"the weights alone ({fmt_bytes(ceiling.weights_bytes)}) do not fit in "
                f"{fmt_bytes(gpu.hbm_capacity_bytes)}: naive prefill cannot run at any T",)
    _check_limit(ceiling, model, dtype, batch)
    d.step("a", "2 * B * h * b", ceiling.quadratic_bytes, Unit.count,
           "working set = a T^2 + l T: the T^2 term (S and P)", "bytes per token^2")
    d.step("l", "B * (2 * h + 2 * h_kv) * d * b", ceiling.linear_bytes, Unit.count,
           "the linear term (Q, K, V, O)", "bytes per token")
    d.step("T_max", "floor((sqrt(l^2 + 4 * a * free) - l) / (2 * a))", limit, Unit.count,
           "the longest T whose working set fits next to the weights", "tokens")
    verdict = "fits" if ceiling.fits(seq_len) else "does NOT fit"
    return (f"naive prefill at T = {seq_len:,} {verdict}: working set {fmt_bytes(float(cost.working_set_bytes))} "
            f"against {fmt_bytes(free)} free; the longest T that fits is {limit:,}",)


def _check_limit(ceiling: NaiveCeiling, model: ModelSpec, dtype: DType, batch: int) -> None:
    """T_max is the last T whose working set fits: check it at T_max and T_max + 1 with naive_prefill itself."""
    limit, free = ceiling.max_seq_len, ceiling.free_bytes
    if limit < 1:
        return
    at = float(naive_prefill(model, limit, batch, dtype).working_set_bytes)
    past = float(naive_prefill(model, limit + 1, batch, dtype).working_set_bytes)
    if not at <= free < past:
        raise ExplainMismatch(f"naive_max_seq_len gives {limit}, but the working set there is {at} and at "
                              f"{limit + 1} is {past} against {free} free")


def explain_flash(d: _Derivation, model: ModelSpec, gpu: GpuSpec, roofs: Ceilings, seq_len: int, batch: int,
                  dtype: DType, causal: bool) -> tuple[str, ...]:
    cost = flash_prefill(model, seq_len, batch, dtype, causal, gpu=gpu)
    pred = predict(cost, roofs)
    tile = cost.tile
    pairs = "T * (T + 1) / 2" if causal else "T^2"
    d.given("B_r", tile.block_q, "query rows per tile (choose_tile)")
    d.given("B_c", tile.block_kv, "key columns per tile")
    d.given("stages", KV_STAGES, "K/V buffers in flight (double buffering)")
    d.given("smem", gpu.smem_per_sm_bytes, "bytes of shared memory per SM")

    d.section("The tile on chip")
    d.step("tile_bytes", "(B_r + 2 * stages * B_c) * d * b", tile.smem_bytes(model.head_dim, dtype), Unit.bytes,
           "Q tile and double-buffered K, V tiles; the largest tile that fits smem")

    d.section("HBM traffic (compulsory)")
    qkvo = flash_prefill(model, seq_len, batch, dtype, causal, gpu=gpu, write_lse=False).hbm_bytes
    d.step("Q_qkvo", "2 * B * h * T * d * b + 2 * B * h_kv * T * d * b", qkvo, Unit.bytes, "Q, K, V, O once each")
    d.step("Q_lse", f"B * h * T * {FP32_BYTES}", cost.hbm_bytes - qkvo, Unit.bytes,
           "the fp32 log-sum-exp kept for the backward pass or a merge")
    d.step("Q_total", "Q_qkvo + Q_lse", cost.hbm_bytes, Unit.bytes, "S and P never reach HBM")

    d.section("FLOPs and intensity")
    d.step("F", f"4 * B * h * {pairs} * d", cost.flops, Unit.flop, "unchanged by tiling")
    d.step("I", "F / Q_total", pred.intensity_flop_per_byte, Unit.intensity)
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity)
    d.step("ratio", "I / I_star", pred.ridge_ratio, Unit.ridge)
    rows = "B_r * ceil(T / B_r) * (ceil(T / B_r) + 1) / 2 - (ceil(T / B_r) * B_r - T)" if causal else \
        "ceil(T / B_r) * T"
    d.step("Q_tiled", f"2 * B * h * T * d * b + Q_lse + 2 * B * h * ({rows}) * d * b", cost.hbm_bytes_tiled,
           Unit.bytes, "upper bound: K and V re-read for every query tile of every query head, no L2 reuse")
    d.step("I_tiled", "F / Q_tiled", cost.intensity_tiled, Unit.intensity)
    d.step("rescale", "1 / B_c", cost.rescale_overhead, Unit.fraction,
           "extra arithmetic of the online softmax against the PV accumulation")

    d.section("Time floors (one layer)")
    d.given("E", float(cost.kernel.exp_ops), "exps, one per visible (query, key) pair", number(cost.kernel.exp_ops))
    d.step("t_memory", "Q_total / beta", pred.t_memory_s, Unit.seconds)
    d.step("t_compute", "F / pi", pred.t_compute_s, Unit.seconds)
    d.step("t_floor", floor_formula("F", "pi", "E", "Q_total", roofs), pred.t_floor_s, Unit.seconds)

    d.section(f"The whole model ({model.num_layers} layers)")
    d.step("t_model", "L * t_floor", model.num_layers * pred.t_floor_s, Unit.seconds)
    bound = str(np.asarray(pred.bound).reshape(()))
    return (f"flash attention is {bound}-bound here, {ridge_text(float(pred.ridge_ratio))} of the ridge",)

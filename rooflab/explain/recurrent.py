"""A linear-attention layer (Gated DeltaNet, cost/linear.py): a fixed state per sequence instead of a KV cache.

The state of one sequence, a decode step (the state read and written, q, k, v in and o out), and a
prefill (inputs and outputs once, the one final state written), each checked against the LinearCost
that rooflab.cost.layers returns. Source: Yang et al., "Gated Delta Networks" (section 3, the
recurrent form); the Qwen3-Next model card and config.
"""

from __future__ import annotations

import numpy as np

from ..cost.batch import DecodeBatch
from ..cost.layers import layer_decode, layer_prefill
from ..cost.linear import RECURRENT_FLOPS_PER_KV
from ..floors import Ceilings, floor
from ..specs import GpuSpec
from ..units import DType, fmt_bytes, ridge_text
from .derivation import Unit, _Derivation, floor_formula, roof_symbols
from .layer import Layer

_IO = "(2 * h_k * d_k + 2 * h_v * d_v) * b"     # q and k (h_k d_k each), v and o (h_v d_v each), per token


def recurrent_symbols(d: _Derivation, layer: Layer, gpu: GpuSpec, roofs: Ceilings, dtype: DType,
                      kv_dtype: DType) -> None:
    spec = layer.spec
    state_dtype = spec.state_dtype or kv_dtype
    d.given("h_k", spec.linear_num_key_heads, f"key (and query) heads of the linear layer ({layer.model.display_name})")
    d.given("h_v", spec.linear_num_value_heads, "value heads: one d_k x d_v state each")
    d.given("d_k", spec.linear_key_head_dim, "key head dimension")
    d.given("d_v", spec.linear_value_head_dim, "value head dimension")
    d.given("K", spec.linear_conv_kernel, "the short convolution's width")
    d.given("b", dtype.bytes, f"bytes per element of q, k, v, o ({dtype.value})")
    d.given("b_s", state_dtype.bytes, f"bytes per state element ({state_dtype.value}"
                                      + (", the state's own type)" if spec.state_dtype else ", the KV cache's type)"))
    d.given("L", layer.count, layer.layers_meaning())
    roof_symbols(d, gpu, roofs, dtype)


def explain_recurrent(d: _Derivation, layer: Layer, gpu: GpuSpec, roofs: Ceilings, lens: DecodeBatch,
                      seq_len: int, batch: int, dtype: DType, kv_dtype: DType, q_len: int) -> tuple[str, ...]:
    model, name = layer.model, layer.name
    step = layer_decode(model, name, lens, dtype=dtype, kv_dtype=kv_dtype, q_len=q_len)
    fill = layer_prefill(model, name, seq_len, batch, dtype)
    fill_state = layer.spec.state_bytes_per_sequence(dtype)      # layer_prefill writes the state in the compute dtype
    step_pred, fill_pred = floor(step, roofs), floor(fill, roofs)
    d.given("B", lens.size, "sequences in the decode batch (their context lengths do not matter)")
    d.given("q", q_len, "new tokens per sequence in the decode step")
    d.given("T", seq_len, "tokens per sequence (prefill)")
    prefill_batch = "B"
    if batch != lens.size:
        d.given("B_p", batch, "sequences in the prefill")
        prefill_batch = "B_p"

    d.section("The state of one sequence (one layer)")
    d.step("state", "(h_v * d_k * d_v + (K - 1) * (2 * h_k * d_k + h_v * d_v)) * b_s",
           layer.spec.state_bytes_per_sequence(kv_dtype), Unit.bytes,
           "a d_k x d_v matrix per value head, and the last K - 1 inputs of q, k, v for the short convolution: "
           "the same at any context length")

    d.section("A decode step (one layer)")
    d.step("Q_state", "2 * B * state", step.state_bytes, Unit.bytes, "every sequence's state read and written once")
    d.step("Q_io", f"B * q * {_IO}", step.hbm_bytes - step.state_bytes, Unit.bytes, "q and k in, v in and o out")
    d.step("Q_total", "Q_state + Q_io", step.hbm_bytes, Unit.bytes)
    flops = f"{RECURRENT_FLOPS_PER_KV} * h_v * d_k * d_v"
    d.step("F", f"{flops} * B * q", step.flops, Unit.flop,
           f"{RECURRENT_FLOPS_PER_KV} d_k d_v per (token, value head): decay, delta-rule update and readout, three "
           "d_k x d_v matrix-vector products (the recurrent form, a lower bound on any implementation's)")
    d.step("I", "F / Q_total", step_pred.intensity_flop_per_byte, Unit.intensity)
    d.step("I_star", "pi / beta", roofs.ridge_flop_per_byte, Unit.intensity)
    d.step("ratio", "I / I_star", step_pred.ridge_ratio, Unit.ridge)
    d.step("t_memory", "Q_total / beta", step_pred.t_memory_s, Unit.seconds)
    d.step("t_compute", "F / pi", step_pred.t_compute_s, Unit.seconds)
    d.step("t_floor", floor_formula("F", "pi", None, "Q_total", roofs), step_pred.t_floor_s, Unit.seconds)

    d.section("A prefill of T tokens (one layer)")
    bp = prefill_batch
    if fill_state == d.symbols["state"]:
        d.step("Q_state_pre", f"{bp} * state", fill.state_bytes, Unit.bytes,
               "the final state, written once; between chunks it stays on chip")
    else:
        d.step("state_out", "(h_v * d_k * d_v + (K - 1) * (2 * h_k * d_k + h_v * d_v)) * b", fill_state, Unit.bytes,
               "the final state as the prefill writes it, in the compute dtype")
        d.step("Q_state_pre", f"{bp} * state_out", fill.state_bytes, Unit.bytes,
               "written once; between chunks it stays on chip")
    d.step("Q_io_pre", f"{bp} * T * {_IO}", fill.hbm_bytes - fill.state_bytes, Unit.bytes,
           "q, k, v in and o out, once each")
    d.step("Q_total_pre", "Q_state_pre + Q_io_pre", fill.hbm_bytes, Unit.bytes)
    d.step("F_pre", f"{flops} * {bp} * T", fill.flops, Unit.flop, "linear in T: no pairs of tokens")
    d.step("I_pre", "F_pre / Q_total_pre", fill_pred.intensity_flop_per_byte, Unit.intensity)
    d.step("t_floor_pre", floor_formula("F_pre", "pi", None, "Q_total_pre", roofs), fill_pred.t_floor_s, Unit.seconds)

    d.section(layer.whole_model_title())
    d.step("t_model", "L * t_floor", layer.count * step_pred.t_floor_s, Unit.seconds, "these layers, one decode step")
    d.step("t_model_pre", "L * t_floor_pre", layer.count * fill_pred.t_floor_s, Unit.seconds, "these layers, the prefill")
    step_bound = str(np.asarray(step_pred.bound).reshape(()))
    fill_bound = str(np.asarray(fill_pred.bound).reshape(()))
    return (f"a decode step reads and writes {fmt_bytes(float(d.symbols['state']))} of state per sequence whatever "
            f"the context: {step_bound}-bound, {ridge_text(float(step_pred.ridge_ratio))} of the ridge",
            f"the prefill is {fill_bound}-bound, {ridge_text(float(fill_pred.ridge_ratio))} of the ridge")

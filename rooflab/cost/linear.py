"""Linear-attention layers (Gated DeltaNet, as in Qwen3-Next): a fixed state per sequence instead of a KV cache.

Per value head the layer keeps a d_k x d_v matrix S. For each token it decays S, applies the
delta-rule update S += beta k (v - S^T k)^T and reads o = S^T q: three d_k x d_v matrix-vector
products, so

    FLOPs per token and value head    6 d_k d_v           (the recurrent form; a chunked prefill does more)
    decode step bytes                  2 x state           (S and the convolution state, read and written)
                                       + q, k, v in, o out
    prefill bytes                      q, k, v in, o out   (the state stays on chip between chunks) + one state written

Sources: Yang et al., "Gated Delta Networks: Improving Mamba2 with Delta Rule" (section 3, the
recurrent form); Qwen3-Next model card and config (Gated DeltaNet on three of every four layers).
The FLOPs are the recurrent form's, a lower bound on any implementation's; they go on the tensor pipe.
Mamba layers (mixer mamba1 / mamba2) are refused here: their scan's FLOPs and traffic are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..limits import MAX_BATCH, MAX_TOKENS
from ..specs import LayerType
from ..units import DType
from ..vocab import Variant
from .common import ArrayLike, KernelCost, SingleKernel, as_array, check_dtypes, check_layer, whole_number

#: FLOPs per token and value head, in units of d_k d_v: decay, delta-rule update and readout.
RECURRENT_FLOPS_PER_KV = 6


@dataclass(frozen=True)
class LinearCost(SingleKernel):
    """One linear-attention launch for one layer (a decode step or a prefill)."""

    kernel: KernelCost
    state_bytes: np.ndarray
    variant: Variant = Variant.recurrent


def _check(layer: LayerType) -> None:
    check_layer(layer)
    if layer.is_attention:
        raise InputError(f"a linear-attention cost needs a linear layer type, not {layer.kind.value}")
    if layer.linear_mixer.is_mamba:
        raise InputError(f"a {layer.linear_mixer.value} (Mamba) layer's prefill and decode cost is not modelled: "
                         "rooflab prices Gated DeltaNet's recurrence only (its state caches are in `rooflab "
                         "capacity`)")


def _io_bytes(layer: LayerType, tokens: np.ndarray, dtype: DType) -> np.ndarray:
    """q and k (h_k d_k each), v and o (h_v d_v each) of `tokens` tokens."""
    keys = layer.linear_num_key_heads * layer.linear_key_head_dim
    values = layer.linear_num_value_heads * layer.linear_value_head_dim
    return tokens * (2 * keys + 2 * values) * dtype.bytes


def _flops(layer: LayerType, tokens: np.ndarray) -> np.ndarray:
    return RECURRENT_FLOPS_PER_KV * layer.linear_num_value_heads * layer.linear_key_head_dim * \
        layer.linear_value_head_dim * tokens


def linear_decode(layer: LayerType, batch: ArrayLike = 1, q_len: int = 1, dtype: DType = DType.bf16,
                  kv_dtype: DType | None = None) -> LinearCost:
    """One decode step of `batch` sequences, `q_len` new tokens each: the state is read and written once."""
    _check(layer)
    b = as_array(batch, "batch", maximum=MAX_BATCH)
    q_len = whole_number(q_len, "q_len (new tokens per sequence)", maximum=MAX_TOKENS)
    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    state = b * layer.state_bytes_per_sequence(kv_dtype)
    tokens = b * q_len
    kernel = KernelCost("linear_decode", _flops(layer, tokens), 2 * state + _io_bytes(layer, tokens, dtype))
    return LinearCost(kernel, 2 * state)


def linear_prefill(layer: LayerType, seq_len: ArrayLike, batch: ArrayLike = 1, dtype: DType = DType.bf16,
                   kv_dtype: DType | None = None) -> LinearCost:
    """A prefill of `seq_len` tokens for `batch` sequences: inputs and outputs once, the final state written."""
    _check(layer)
    t = as_array(seq_len, "seq_len", maximum=MAX_TOKENS)
    b = as_array(batch, "batch", maximum=MAX_BATCH)
    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    state = b * layer.state_bytes_per_sequence(kv_dtype)
    tokens = b * t
    kernel = KernelCost("linear_prefill", _flops(layer, tokens), state + _io_bytes(layer, tokens, dtype))
    return LinearCost(kernel, state)


__all__ = ["RECURRENT_FLOPS_PER_KV", "LinearCost", "linear_decode", "linear_prefill"]

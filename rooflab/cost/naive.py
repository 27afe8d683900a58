"""Naive (textbook) attention: three kernels that materialise S and P in HBM.

Source: the chapter "Naive attention and the online softmax", the opening
sections (the S tensor, the three-kernel traffic count, and the intensity
reconciliation). Shapes for one layer, batch B, T query and key tokens:

    Q, O : [B, h, T, d]        K, V : [B, h_kv, T, d]   (each KV head serves h/h_kv query heads)
    S, P : [B, h, T, T]        (in the compute dtype; S does not depend on d)

    QK^T    : reads Q and K once, writes S           2 h T^2 d FLOP (tensor)
    softmax : reads S, writes P                      ~5 FLOP + 1 exp per element (vector)
    PV      : reads P and V once, writes O           2 h T^2 d FLOP (tensor)

K and V are counted once per KV head: the GQA-aware compulsory count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..specs import AttentionHeads, GpuSpec, ModelSpec
from ..units import DType, WeightFormat
from ..vocab import Pipe, Variant
from ..limits import MAX_BATCH, MAX_TOKENS
from .common import (FULL_VISIBILITY, ArrayLike, KernelCost, Visibility, as_array, check_flag, check_heads,
                     check_visibility, whole_number)

#: Vector FLOPs per element of S in a row softmax: max compare, subtract, sum add, normalising multiply.
SOFTMAX_FLOPS_PER_ELEMENT = 4


@dataclass(frozen=True)
class NaiveCost:
    """Cost of naive attention for one layer: three kernels and the two T x T intermediates."""

    qk: KernelCost
    softmax: KernelCost
    pv: KernelCost
    s_bytes: np.ndarray
    p_bytes: np.ndarray
    qkvo_bytes: np.ndarray
    variant: Variant = Variant.naive

    @property
    def kernels(self) -> tuple[KernelCost, ...]:
        return (self.qk, self.softmax, self.pv)

    @property
    def flops(self) -> np.ndarray:
        """F = FLOPs of QK^T plus PV, as the chapter counts them.

        The softmax's vector FLOPs sit under another roof; they are in its own kernel's cost, not in F.
        """
        return self.qk.flops + self.pv.flops

    @property
    def hbm_bytes(self) -> np.ndarray:
        return self.qk.hbm_bytes + self.softmax.hbm_bytes + self.pv.hbm_bytes

    @property
    def intensity_compulsory(self) -> np.ndarray:
        """F over Q, K, V and O once each: the same arithmetic with S and P kept on chip, 2hT / (b (h + h_kv))
        non-causal."""
        return self.flops / self.qkvo_bytes

    @property
    def peak_extra_bytes(self) -> np.ndarray:
        """S and P alive together (PyTorch's softmax is not in place)."""
        return self.s_bytes + self.p_bytes

    @property
    def working_set_bytes(self) -> np.ndarray:
        """Device memory the layer needs at its peak: S, P and the layer's Q, K, V, O."""
        return self.peak_extra_bytes + self.qkvo_bytes


def naive_prefill(heads: AttentionHeads, seq_len: ArrayLike, batch: ArrayLike = 1,
                  dtype: DType = DType.fp16, causal: bool = False,
                  visibility: Visibility = FULL_VISIBILITY) -> NaiveCost:
    """Naive attention over T tokens for one layer.

    FLOPs count the visible pairs (half of T^2, plus the diagonal, when causal; fewer under a
    window or chunk); the bytes of S and P are the full T x T either way, because the naive
    kernels materialise the whole matrix and mask it.
    """
    heads = check_heads(heads, "naive_prefill")
    visibility = check_visibility(visibility)
    causal = check_flag(causal, "causal") or not visibility.is_full
    t = as_array(seq_len, "seq_len", maximum=MAX_TOKENS)
    b = as_array(batch, "batch", maximum=MAX_BATCH)
    dtype = DType.of(dtype)
    h, h_kv, d, d_v, e = heads.num_qo_heads, heads.num_kv_heads, heads.head_dim, heads.value_dim, dtype.bytes

    q_bytes = b * h * t * d * e            # [B, h, T, d]
    k_bytes = b * h_kv * t * d * e         # [B, h_kv, T, d], read once per KV head
    v_bytes = b * h_kv * t * d_v * e       # [B, h_kv, T, d_v]
    o_bytes = b * h * t * d_v * e          # [B, h, T, d_v]
    s_bytes = b * h * t * t * e            # [B, h, T, T]
    p_bytes = s_bytes
    pairs = b * h * visibility.pairs(t, t, causal)
    elements = b * h * t * t               # the softmax touches every element of S, masked or not

    qk = KernelCost("qk", 2 * pairs * d, q_bytes + k_bytes + s_bytes)     # one multiply-add per (pair, d)
    softmax = KernelCost("softmax", SOFTMAX_FLOPS_PER_ELEMENT * elements, s_bytes + p_bytes,
                         pipe=Pipe.vector, exp_ops=elements)
    pv = KernelCost("pv", 2 * pairs * d_v, p_bytes + v_bytes + o_bytes)
    return NaiveCost(qk, softmax, pv, s_bytes, p_bytes, q_bytes + k_bytes + v_bytes + o_bytes)


@dataclass(frozen=True)
class NaiveCeiling:
    """Where naive prefill stops fitting: its working set a T^2 + l T against the memory the weights leave.

    a = 2 B h b            bytes per token^2: S and P of one layer alive together
    l = B (2h + 2h_kv) d b bytes per token: the layer's Q, K, V and O
    T_max = floor((sqrt(l^2 + 4 a free) - l) / (2 a)), 0 when the weights alone do not fit
    """

    capacity_bytes: int
    weights_bytes: int
    quadratic_bytes: float   # a, bytes per token^2
    linear_bytes: float      # l, bytes per token
    max_seq_len: int

    @property
    def free_bytes(self) -> int:
        return self.capacity_bytes - self.weights_bytes

    def working_set_bytes(self, seq_len: ArrayLike) -> np.ndarray:
        """a T^2 + l T: what naive_prefill's working_set_bytes gives for this batch and heads."""
        t = as_array(seq_len, "seq_len")
        return self.quadratic_bytes * t * t + self.linear_bytes * t

    def fits(self, seq_len: int) -> bool:
        return seq_len <= self.max_seq_len


def naive_ceiling(model: ModelSpec, gpu: GpuSpec, batch: int = 1, dtype: DType = DType.fp16,
                  weight_dtype: DType | WeightFormat | None = None, tensor_parallel: int = 1) -> NaiveCeiling:
    """The longest T whose naive prefill fits in device memory next to the model's weights (as the checkpoint
    ships them, unless `weight_dtype` overrides: ModelSpec.weight_bytes).

    Solves B (2 h T^2 b + (2h + 2h_kv) T d b) <= capacity - weights for T: the working set of one
    layer (S and P alive together, with Q, K, V, O). With tensor parallelism each GPU holds
    weights / tp and the heads of AttentionHeads.shard(tp).
    """
    batch = whole_number(batch, "batch", maximum=MAX_BATCH)
    dtype = DType.of(dtype)
    heads = model.heads.shard(tensor_parallel)
    weights = model.weight_bytes(weight_dtype, tensor_parallel)
    free = gpu.hbm_capacity_bytes - weights
    e, d = dtype.bytes, heads.head_dim
    a = batch * 2 * heads.num_qo_heads * e
    lin = batch * (2 * heads.num_qo_heads + 2 * heads.num_kv_heads) * d * e
    t = 0
    if free > 0:
        # the positive root, in exact integers: floor((isqrt(D) - l) / 2a) = floor((sqrt(D) - l) / 2a)
        t = (math.isqrt(lin * lin + 4 * a * free) - lin) // (2 * a)
        while t > 0 and float(naive_prefill(heads, t, batch, dtype).working_set_bytes) > free:
            t -= 1  # guard naive_prefill's float64 rounding of the working set
    return NaiveCeiling(gpu.hbm_capacity_bytes, weights, float(a), float(lin), t)


def naive_max_seq_len(model: ModelSpec, gpu: GpuSpec, batch: int = 1, dtype: DType = DType.fp16,
                      weight_dtype: DType | WeightFormat | None = None, tensor_parallel: int = 1) -> int:
    """naive_ceiling(...).max_seq_len: the longest naive prefill that fits; 0 when the weights alone do not."""
    return naive_ceiling(model, gpu, batch, dtype, weight_dtype, tensor_parallel).max_seq_len

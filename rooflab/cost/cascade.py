"""Cascade attention: requests sharing a long prefix read its KV once, then merge.

Source: the chapter "Naive attention and the online softmax", the vLLM cascade
walk-through (two partial attentions, each returning (O, LSE), then
merge_attn_states). For N decoding requests that share a prefix of P tokens and
have private suffixes s_i, per layer:

    plain     each request reads its own P + s_i tokens of KV             (paged decode)
    cascade   prefix pass: the N query rows read the prefix KV once,      writes O_p, LSE_p
              suffix pass: each request reads its s_i tokens,             writes O_s, LSE_s
              merge: N x h (token, head) rows                              writes O

The saving is (N - 1) P tokens of KV per layer, less the extra partial outputs, their
LSEs and the merge: cascade pays off once P exceeds `breakeven_prefix_len`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..limits import MAX_RAGGED, MAX_TOKENS
from ..specs import AttentionHeads
from ..units import FP32_BYTES, DType
from ..vocab import Variant
from .common import ArrayLike, KernelCost, as_array, check_dtypes, check_heads, whole_number
from .merge import merge_pair
from .paged import paged_decode


@dataclass(frozen=True)
class CascadeCost:
    """Cascade decode step (prefix pass, suffix pass, merge) beside the plain paged step it replaces."""

    prefix: KernelCost
    suffix: KernelCost
    merge: KernelCost
    plain_bytes: np.ndarray
    variant: Variant = Variant.cascade

    @property
    def kernels(self) -> tuple[KernelCost, ...]:
        return (self.prefix, self.suffix, self.merge)

    @property
    def flops(self) -> np.ndarray:
        return self.prefix.flops + self.suffix.flops

    @property
    def hbm_bytes(self) -> np.ndarray:
        return self.prefix.hbm_bytes + self.suffix.hbm_bytes + self.merge.hbm_bytes

    @property
    def saved_bytes(self) -> np.ndarray:
        """Plain paged bytes minus cascade bytes: positive when cascade pays."""
        return self.plain_bytes - self.hbm_bytes


def cascade_decode(heads: AttentionHeads, prefix_len: int, suffix_lens: ArrayLike,
                   page_size: int = 16, dtype: DType = DType.fp16,
                   kv_dtype: DType | None = None) -> CascadeCost:
    """Cascade against plain paged decode for len(suffix_lens) requests sharing `prefix_len` tokens.

    A suffix of length 0 is allowed (a request that has produced no private tokens yet).
    """
    heads = check_heads(heads, "cascade_decode")
    prefix_len = whole_number(prefix_len, "shared prefix length", maximum=MAX_TOKENS)
    suffixes = as_array(suffix_lens, "suffix lengths", minimum=0, maximum=MAX_TOKENS - prefix_len).reshape(-1)
    if suffixes.size > MAX_RAGGED:
        raise InputError(f"{suffixes.size:,} suffix lengths given one by one; the limit is {MAX_RAGGED:,}")
    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    n = suffixes.size
    h, d, e = heads.num_qo_heads, heads.head_dim, dtype.bytes
    partial_out = n * h * (d * e + FP32_BYTES)                 # O [N, h, d] and LSE [N, h] of one pass

    plain = paged_decode(heads, prefix_len + suffixes, page_size, dtype, kv_dtype)
    shared = paged_decode(heads, [prefix_len], page_size, dtype, kv_dtype)   # the prefix, read once
    q_extra = (n - 1) * h * d * e                               # the prefix pass reads all N queries
    prefix = KernelCost("prefix", shared.flops * n, shared.hbm_bytes + q_extra - h * d * e + partial_out,
                        exp_ops=shared.attention.exp_ops * n)
    private = suffixes[suffixes > 0]
    if private.size:
        tail = paged_decode(heads, private, page_size, dtype, kv_dtype)
        suffix_bytes = tail.hbm_bytes - private.size * h * d * e + partial_out
        suffix = KernelCost("suffix", tail.flops, suffix_bytes, exp_ops=tail.attention.exp_ops)
    else:
        suffix = KernelCost("suffix", np.float64(0.0), np.float64(0.0))
    merge = merge_pair(n, h, d, dtype).kernel
    return CascadeCost(prefix, suffix, merge, plain.hbm_bytes)


def breakeven_prefix_len(heads: AttentionHeads, num_requests: int, page_size: int = 16,
                         dtype: DType = DType.fp16, kv_dtype: DType | None = None) -> int:
    """Shortest shared prefix for which cascade moves fewer bytes than plain paged decode.

    The saving grows by (N - 1) kv_token bytes per prefix token against a fixed overhead (two
    partial outputs, their LSEs and the merge): P* = floor(overhead / ((N - 1) kv_token)) + 1,
    up to the block-table bytes. Returns 0 when no prefix pays (N = 1).
    """
    heads = check_heads(heads, "breakeven_prefix_len")
    num_requests = whole_number(num_requests, "number of requests", maximum=MAX_RAGGED)
    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    if num_requests < 2:
        return 0
    kv_token = heads.kv_bytes_per_token(kv_dtype)
    gain_per_token = (num_requests - 1) * kv_token
    overhead = gain_per_token - float(cascade_decode(heads, 1, [1] * num_requests, page_size, dtype,
                                                     kv_dtype).saved_bytes)
    return int(overhead // gain_per_token) + 1

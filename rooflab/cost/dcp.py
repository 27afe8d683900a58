"""Decode context parallelism (DCP): the KV cache split by position over N GPUs, the partial states merged.

Each of the N ranks holds every query head and 1/N of each sequence's pages (the largest share: ceil(pages / N)
pages). A decode step on a rank: paged decode over its share (split-KV inside, at the count that fills the
rank's GPU, merged into one fp32 state per row), then the N states are all-gathered and merged:

    local       paged decode of B sequences over L_r = min(L, ceil(ceil(L / P) / N) P) tokens, writing an
                fp32 state (o, lse) per (sequence, query head): B h (d_v + 1) 4 bytes
    all-gather  those B h (d_v + 1) 4 bytes per rank over N ranks (rooflab.comm: (N - 1) x that on each link)
    unpack      the gathered buffer into o [N, B, h, d_v] and lse [N, B, h] (two copies: read and write it once)
    merge       the N-way LSE merge (merge_splits with S = N) into O in the model's dtype

With N = 1 it is single-GPU decode (paged_decode_uniform, its own split count), nothing else. The time
model (dcp_time) prices each piece with the GPU's fitted models: the paged or split-KV fit for the local
decode, the all-gather's graph-timed fit, the merge fit for the unpack and the merge; the floor is
physical (every piece at its roof, perfectly overlapped: the larger of the summed memory time and the
all-gather's link floor). DCP pays where the local KV time it saves exceeds the all-gather and the merge:
dcp_threshold finds the context below which it does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import InputError
from ..limits import MAX_BATCH, MAX_GPUS, MAX_TOKENS
from ..specs import AttentionHeads
from ..units import FP32_BYTES, DType
from ..vocab import Pipe, Variant
from .common import KernelCost, LaunchCost, check_dtypes, whole_number
from .merge import MergeCost, merge_splits
from .paged import DecodeCost, check_page_size, paged_decode_uniform, recommend_splits
from .batch import DecodeBatch


def check_dcp(world_size: int, context_len: int, page_size: int, option: str = "--dcp") -> int:
    """N as a whole number in [1, pages of the context]: a rank with no page of a sequence would idle."""
    n = whole_number(world_size, f"{option} (GPUs the KV is split over)", maximum=MAX_GPUS)
    pages = math.ceil(context_len / check_page_size(page_size))
    if n > pages:
        raise InputError(f"{option} {n} is larger than the context in pages ({context_len:,} tokens = {pages:,} "
                         f"pages of {page_size}): some GPU would hold none of a sequence's KV")
    return n


def shard_tokens(context_len: int, world_size: int, page_size: int = 16) -> int:
    """Tokens of one sequence the fullest rank holds: whole pages dealt out, ceil(pages / N) of them."""
    context_len = whole_number(context_len, "context length", minimum=0, maximum=MAX_TOKENS)
    world_size = whole_number(world_size, "world_size (GPUs the KV is split over)", maximum=MAX_GPUS)
    page_size = check_page_size(page_size)
    pages = math.ceil(context_len / page_size)
    return int(min(context_len, math.ceil(pages / world_size) * page_size))


@dataclass(frozen=True)
class DcpDecode:
    """One layer's decode step under DCP over `world_size` ranks (one rank's work, and what they exchange)."""

    world_size: int
    local: DecodeCost                 # the rank's paged decode over its share, with its split merge
    local_out_bytes: float            # the fp32 state it writes instead of O (0 when N = 1)
    gather_bytes_per_rank: float      # B h (d_v + 1) 4
    unpack: Optional[LaunchCost]
    merge: Optional[MergeCost]
    shard_tokens: int

    @property
    def kernels(self) -> tuple[KernelCost, ...]:
        out = self.local.kernels
        if self.unpack is not None:
            out += (self.unpack.kernel, self.merge.kernel)
        return out

    @property
    def flops(self) -> float:
        return float(self.local.flops)

    @property
    def hbm_bytes(self) -> float:
        return float(sum(k.hbm_bytes for k in self.kernels))

    @property
    def variant(self) -> Variant:
        return self.local.variant


def dcp_decode(heads: AttentionHeads, context_len: int, batch: int, world_size: int, page_size: int = 16,
               dtype: DType = DType.fp16, kv_dtype: DType | None = None, num_splits: int | None = None,
               num_sms: int | None = None, units_per_sm: float = 1.0) -> DcpDecode:
    """The DCP decode of B sequences of `context_len` tokens over `world_size` ranks (module docstring).

    `num_splits` None: the count rooflab recommends for the rank's share on `num_sms` SMs (1 without).
    """
    n = check_dcp(world_size, context_len, page_size)
    batch = whole_number(batch, "batch", maximum=MAX_BATCH)
    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    share = shard_tokens(context_len, n, page_size)
    if num_splits is None:
        num_splits = 1 if num_sms is None else recommend_splits(heads, DecodeBatch.uniform(share, batch), num_sms,
                                                                 page_size, dtype, kv_dtype, units_per_sm)
    local = paged_decode_uniform(heads, share, batch, page_size, dtype, kv_dtype, num_splits, num_sms, units_per_sm)
    if n == 1:
        return DcpDecode(1, local, 0.0, 0.0, None, None, share)
    rows = batch * heads.num_qo_heads
    d_v = heads.value_dim
    state = rows * (d_v + 1) * FP32_BYTES                                  # [B, h, d_v] + [B, h] fp32
    if num_splits == 1:                                                    # the split kernel writes it directly
        attention = local.attention
        extra = state - rows * d_v * dtype.bytes
        local = DecodeCost(KernelCost(attention.name, attention.flops, attention.hbm_bytes + extra, attention.pipe,
                                      attention.exp_ops, attention.parallel_fraction), None, local.kv_bytes,
                           local.block_table_bytes, local.partial_bytes, 1, local.work_units,
                           local.longest_unit_tokens)
    else:                                                                  # the split merge writes it in fp32
        local = DecodeCost(local.attention, merge_splits(rows, num_splits, d_v, DType.fp32, write_lse=True),
                           local.kv_bytes, local.block_table_bytes, local.partial_bytes, num_splits,
                           local.work_units, local.longest_unit_tokens)
    unpack, merge = merge_pieces(rows, d_v, n, dtype)
    return DcpDecode(n, local, state - rows * d_v * dtype.bytes, state, unpack, merge, share)


def merge_pieces(rows: float, d_v: int, world_size: int, dtype: DType) -> tuple[LaunchCost, MergeCost]:
    """What follows the all-gather of `rows` fp32 states (o of d_v, lse): the unpack (read and write the N
    gathered states once) and the N-way merge into O in `dtype`."""
    state = rows * (d_v + 1) * FP32_BYTES
    unpack = LaunchCost(KernelCost("unpack", np.float64(0.0), np.float64(2 * world_size * state), Pipe.vector),
                        Variant.merge)
    return unpack, merge_splits(rows, world_size, d_v, dtype)


__all__ = ["DcpDecode", "check_dcp", "dcp_decode", "merge_pieces", "shard_tokens"]

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
from ..limits import MAX_BATCH, MAX_GPUS
from ..specs import AttentionHeads, GpuSpec
from ..units import FP32_BYTES, DType
from ..vocab import Kernel, Pipe, Variant
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




# ------------------------------------------------------------------ time: floor and prediction

@dataclass(frozen=True)
class DcpTime:
    """One layer's DCP decode step: each piece's predicted time (None where the GPU has no fit) and the floor."""

    cost: DcpDecode
    t_local_s: Optional[float]
    t_gather_s: Optional[float]
    t_merge_s: Optional[float]             # unpack and merge together (0 when N = 1)
    t_floor_s: float

    @property
    def t_predicted_s(self) -> Optional[float]:
        parts = (self.t_local_s, self.t_gather_s, self.t_merge_s)
        return None if any(p is None for p in parts) else float(sum(parts))


def _fitted(gpu: GpuSpec, kernel: Kernel, cost_of, dtype: DType) -> Optional[float]:
    from ..predict import predict_time

    p = predict_time(gpu, kernel, cost_of, dtype, "rooflab", optional=True) if gpu.fitted_for(kernel) else None
    return None if p is None else p.t_predicted_s


def dcp_time(gpu: GpuSpec, heads: AttentionHeads, context_len: int, batch: int, world_size: int,
             page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
             timing: str = "graph") -> DcpTime:
    """Predicted and floor time of one layer's DCP decode step on `gpu` (the module docstring's pieces).

    The local decode uses rooflab's fitted paged (one split) or split-KV model with its units per SM; the
    split count is the one rooflab recommends for the share on this GPU. The floor: every launch at the
    datasheet roofs and the all-gather at the link's datasheet bandwidth, all overlapped.
    """
    from ..comm import collective_time
    from ..roofline import Ceilings, predict_kernel

    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    n_sms, units = gpu.num_sms, gpu.units_per_sm
    cost = dcp_decode(heads, context_len, batch, world_size, page_size, dtype, kv_dtype, None, n_sms, units)
    splits = cost.local.num_splits

    def local(num_sms, units_per_sm):
        return dcp_decode(heads, context_len, batch, world_size, page_size, dtype, kv_dtype, splits, num_sms,
                          units_per_sm).local

    t_local = _fitted(gpu, Kernel.paged if splits == 1 else Kernel.split_kv, local, dtype)
    t_gather, t_merge, comm_floor = 0.0, 0.0, 0.0
    if cost.world_size > 1:
        comm = collective_time(gpu, Kernel.all_gather, cost.gather_bytes_per_rank, cost.world_size, timing)
        t_gather, comm_floor = comm.t_predicted_s, comm.t_floor_s
        unpack = _fitted(gpu, Kernel.merge, lambda n, u: cost.unpack, dtype)
        merge = _fitted(gpu, Kernel.merge, lambda n, u: cost.merge, dtype)
        t_merge = None if unpack is None or merge is None else unpack + merge
    roofs = Ceilings.of(gpu, dtype)
    parts = [predict_kernel(k, roofs) for k in cost.kernels]
    floor = max(sum(float(p.t_memory_s) for p in parts), sum(float(np.maximum(p.t_compute_s, p.t_exp_s))
                                                              for p in parts), comm_floor)
    return DcpTime(cost, t_local, t_gather, t_merge, floor)


def dcp_speedup(gpu: GpuSpec, heads: AttentionHeads, context_len: int, batch: int, world_size: int,
                page_size: int = 16, dtype: DType = DType.fp16) -> Optional[float]:
    """Predicted time on one GPU over predicted time with DCP over `world_size` (None without the fits)."""
    one = dcp_time(gpu, heads, context_len, batch, 1, page_size, dtype).t_predicted_s
    many = dcp_time(gpu, heads, context_len, batch, world_size, page_size, dtype).t_predicted_s
    return None if one is None or many is None else one / many


def dcp_threshold(gpu: GpuSpec, heads: AttentionHeads, batch: int, world_size: int, page_size: int = 16,
                  dtype: DType = DType.fp16, limit: int = 1 << 24) -> Optional[int]:
    """The context (tokens, a whole number of pages) below which DCP over `world_size` does not pay at `batch`:
    the smallest context whose predicted speedup exceeds 1. None without the fits or if it never pays up to
    `limit` tokens. Found by doubling, then bisection (the speedup grows with the context)."""
    def pays(tokens: int) -> bool:
        s = dcp_speedup(gpu, heads, tokens, batch, world_size, page_size, dtype)
        if s is None:
            raise LookupError
        return s > 1.0

    try:
        hi = page_size * world_size
        while not pays(hi):
            hi *= 2
            if hi > limit:
                return None
        lo = max(page_size * world_size, hi // 2)
        if lo == hi or pays(lo):
            return lo
        while hi - lo > page_size:
            mid = (lo + hi) // 2 // page_size * page_size
            lo, hi = (lo, mid) if pays(mid) else (mid, hi)
        return hi
    except LookupError:
        return None




# ------------------------------------------------------------------ capacity: the KV split by position

def dcp_capacity(plan, model, context_len: int, dcp: int, page_size: int, kv_dtype: DType, tensor_parallel: int = 1):
    """A capacity plan (rooflab.capacity.CapacityPlan) with each sequence's KV split by position over `dcp` GPUs.

    Every GPU of the group holds the same weights (the plan's, per GPU) and 1/dcp of every sequence's pages
    of the layers that keep every token or a window (ceil(pages / dcp) on the fullest GPU); linear layers'
    fixed states stay whole on each. Sequences are those the group serves together: the KV budget of one GPU
    over one sequence's share. The longest context grows about dcp-fold.
    """
    import dataclasses

    from ..kvcache import kv_layout

    n = check_dcp(dcp, context_len, page_size)
    if n == 1:
        return plan
    if plan.shared_prefix_len or plan.dp_attention:
        raise InputError("--dcp does not combine with --shared-prefix or --dp-attention (not modelled)")

    def share(tokens: int) -> int:
        layout = kv_layout(model, tokens, kv_dtype, page_size, tensor_parallel)
        return sum(k.num_layers * ((k.pages_per_sequence if k.kind.value == "linear" else
                                    math.ceil(k.pages_per_sequence / n)) * page_size * k.bytes_per_token
                                   + k.state_bytes) for k in layout.layers)

    budget = plan.kv_budget_bytes
    per_seq = share(context_len)
    paged = budget // per_seq if per_seq else 0
    reserve = max(plan.max_model_len, context_len)
    contiguous = budget // share(reserve) if per_seq else paged
    lo, hi = 0, 1 << 31
    while hi - lo > 1:                                   # the longest context whose share fits the budget
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if share(mid) <= budget else (lo, mid)
    reason = None
    if budget == 0:
        reason = plan.reason
    elif paged == 0:
        reason = (f"one sequence of {context_len:,} tokens needs {per_seq:,} bytes of KV cache per GPU even split "
                  f"{n} ways; the longest that fits is {lo:,} tokens")
    layers = tuple(dataclasses.replace(k, pages_per_sequence=k.pages_per_sequence if k.kind == "linear" else
                                       math.ceil(k.pages_per_sequence / n),
                                       bytes_per_sequence=k.num_layers * ((k.pages_per_sequence if k.kind == "linear"
                                                                           else math.ceil(k.pages_per_sequence / n))
                                                                          * page_size * k.bytes_per_token
                                                                          + k.state_bytes))
                   for k in plan.layers)
    return dataclasses.replace(plan, blocks_per_sequence=math.ceil(plan.blocks_per_sequence / n),
                               max_sequences_paged=int(paged), max_sequences_contiguous=int(contiguous),
                               max_context_len=int(lo), reason=reason, kv_bytes_per_sequence=int(per_seq),
                               layers=layers)


__all__ = ["DcpDecode", "DcpTime", "check_dcp", "dcp_capacity", "dcp_decode", "dcp_speedup", "dcp_threshold", "dcp_time",
           "merge_pieces", "shard_tokens"]

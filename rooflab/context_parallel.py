"""Time and capacity of context parallelism: decode context parallelism (DCP) and ring prefill, priced.

The costs (what each rank moves and computes) live in cost/dcp.py and cost/ring.py; this module puts
them against a GPU: each piece's predicted time from the GPU's fitted models (rooflab.predict) and its
collectives' fits (rooflab.comm), beside the physical floor (rooflab.floors), where DCP stops paying,
and what a DCP group holds (rooflab.kvcache). It sits above the cost layer, beside predict.py and step.py.
What a DCP group holds in memory is capacity/position_split.py's dcp_capacity (re-exported here for one release).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .capacity.position_split import dcp_capacity   # moved to capacity/; this name kept for one release
from .comm import collective_time
from .cost.common import check_dtypes, whole_number
from .cost.dcp import DcpDecode, dcp_decode
from .cost.flash import flash_prefill
from .cost.ring import RingPrefill
from .errors import InputError, shown
from .limits import MAX_GPUS, MAX_TOKENS
from .cost.paged import check_page_size
from .predict import predict_time
from .floors import Ceilings, floor_kernel
from .specs import AttentionHeads, GpuSpec, ModelSpec
from .units import DType
from .vocab import Kernel


# ------------------------------------------------------------------ DCP: time, floor and where it pays

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
    p = predict_time(gpu, kernel, cost_of, dtype, "rooflab", optional=True) if gpu.fitted_for(kernel) else None
    return None if p is None else p.t_predicted_s


def _specs(gpu: object, heads: object) -> tuple[GpuSpec, AttentionHeads]:
    """The GPU and the heads (a ModelSpec's heads too), or InputError naming the argument of the wrong kind."""
    if not isinstance(gpu, GpuSpec):
        raise InputError(f"gpu must be a GpuSpec (rooflab.load_gpu), got {shown(gpu)}")
    if isinstance(heads, ModelSpec):
        heads = heads.heads
    if not isinstance(heads, AttentionHeads):
        raise InputError(f"heads must be an AttentionHeads or a ModelSpec, got {shown(heads)}")
    return gpu, heads


def dcp_time(gpu: GpuSpec, heads: AttentionHeads, context_len: int, batch: int, world_size: int,
             page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
             timing: str = "graph") -> DcpTime:
    """Predicted and floor time of one layer's DCP decode step on `gpu` (the module docstring's pieces).

    The local decode uses rooflab's fitted paged (one split) or split-KV model with its units per SM; the
    split count is the one rooflab recommends for the share on this GPU. The floor: every launch at the
    datasheet roofs and the all-gather at the link's datasheet bandwidth, all overlapped.
    """

    gpu, heads = _specs(gpu, heads)
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
    parts = [floor_kernel(k, roofs) for k in cost.kernels]
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
    gpu, heads = _specs(gpu, heads)
    limit = whole_number(limit, "limit (tokens)", maximum=MAX_TOKENS)
    page_size = check_page_size(page_size)
    world_size = whole_number(world_size, "world_size (GPUs the KV is split over)", maximum=MAX_GPUS)

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




# ------------------------------------------------------------------ ring prefill: time and floor

@dataclass(frozen=True)
class RingTime:
    """One layer's ring prefill on one rank: per-step times (None without a fit), the total and the floor."""

    ring: RingPrefill
    t_attention_step_s: float | None
    t_transfer_step_s: float | None
    t_merge_step_s: float | None
    t_floor_s: float

    @property
    def overlapped(self) -> bool | None:
        """Whether the transfer hides under the attention (predicted)."""
        if self.t_attention_step_s is None or self.t_transfer_step_s is None:
            return None
        return self.t_attention_step_s >= self.t_transfer_step_s

    @property
    def t_predicted_s(self) -> float | None:
        a, x, m = self.t_attention_step_s, self.t_transfer_step_s, self.t_merge_step_s
        if a is None or m is None or (x is None and self.ring.world_size > 1):
            return None
        n = self.ring.world_size
        return (n - 1) * max(a, x or 0.0) + a + (n - 1) * m


def ring_time(gpu: GpuSpec, ring: RingPrefill, dtype: DType = DType.fp16, impl: str | None = None,
              timing: str = "graph") -> RingTime:
    """Predicted and floor time of `ring` on `gpu`: the attention of a step from the fitted flash model (the
    fastest fitted implementation, or `impl`; a causal step as half a block), the transfer from the fitted
    send/recv, the merge from the merge fit. Floor: the rank's FLOPs and bytes at the datasheet roofs and its
    N - 1 transfers at the link's datasheet bandwidth, all overlapped."""

    if not isinstance(gpu, GpuSpec):
        raise InputError(f"gpu must be a GpuSpec (rooflab.load_gpu), got {shown(gpu)}")
    if not isinstance(ring, RingPrefill):
        raise InputError(f"ring must be a RingPrefill (rooflab.cost.ring.ring_prefill), got {shown(ring)}")
    dtype = DType.of(dtype)
    n, c, local = ring.world_size, ring.step_pair_share, ring.tokens_per_gpu

    def block(num_sms, units_per_sm):
        return flash_prefill(ring.heads, local, ring.batch, dtype, False, gpu=gpu, num_sms=num_sms,
                             units_per_sm=units_per_sm)

    att = predict_time(gpu, Kernel.flash, block, dtype, impl, optional=True)
    merge = predict_time(gpu, Kernel.merge, lambda num_sms, u: ring.merge, dtype, "rooflab", optional=True) \
        if gpu.fitted_for(Kernel.merge) else None
    transfer, link_floor = 0.0, 0.0
    if n > 1:
        comm = collective_time(gpu, Kernel.send_recv, ring.kv_bytes_per_step, n, timing)
        transfer, link_floor = comm.t_predicted_s, comm.t_floor_s
    roofs = Ceilings.of(gpu, dtype)
    step = floor_kernel(ring.step.kernel, roofs)
    merge_floor = floor_kernel(ring.merge.kernel, roofs)
    compute = n * c * float(max(step.t_compute_s, step.t_exp_s))
    memory = n * float(step.t_memory_s) + (n - 1) * float(merge_floor.t_memory_s)
    floor = max(compute, memory, (n - 1) * link_floor)
    return RingTime(ring, None if att is None else att.t_predicted_s * c, transfer,
                    None if merge is None else merge.t_predicted_s, floor)


__all__ = ["DcpTime", "RingTime", "dcp_capacity", "dcp_speedup", "dcp_threshold", "dcp_time", "ring_time"]

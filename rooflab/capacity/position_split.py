"""A capacity plan with each sequence's KV split by position: decode context parallelism (DCP, inside the TP
group) or KV parallelism (KVP, extra groups): what a DCP group holds (moved here from context_parallel.py)."""

from __future__ import annotations

import dataclasses
import math

from ..cost.dcp import check_dcp
from ..errors import InputError, shown
from ..kvcache import kv_layout
from ..units import DType
from .result import CapacityPlan


def dcp_capacity(plan, model, context_len: int, dcp: int, page_size: int, kv_dtype: DType, tensor_parallel: int = 1):
    """A capacity plan (rooflab.capacity.CapacityPlan) with each sequence's KV split by position over `dcp` GPUs.

    Every GPU of the group holds the same weights (the plan's, per GPU) and 1/dcp of every sequence's pages
    of the layers that keep every token or a window (ceil(pages / dcp) on the fullest GPU); linear layers'
    fixed states stay whole on each. Sequences are those the group serves together: the KV budget of one GPU
    over one sequence's share. The longest context grows about dcp-fold.
    """
    if not isinstance(plan, CapacityPlan):
        raise InputError(f"plan must be a CapacityPlan (rooflab.capacity.plan_capacity), got {shown(plan)}")
    n = check_dcp(dcp, context_len, page_size)
    if n == 1:
        return plan
    if plan.shared_prefix_len or plan.dp_attention:
        raise InputError("--dcp does not combine with " + ("a shared prefix (--shared-prefix)" if plan.shared_prefix_len
                         else "data-parallel attention (--enable-dp-attention)") + " (not modelled)")

    def share(tokens: int) -> int:
        layout = kv_layout(model, tokens, kv_dtype, page_size, tensor_parallel)
        return sum(k.num_layers * ((k.pages_per_sequence if not k.kind.splits_by_position else
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

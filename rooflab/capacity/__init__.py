"""What fits: the KV budget, concurrent sequences (paged and contiguous), the longest context.

For a GPU of capacity C, a memory-utilisation fraction u, an activation reserve A and
weights W (all parameters, every expert, in the weight dtype), with the model split
`tp` ways by head (tensor parallelism; every figure below is per GPU):

    KV budget      = u C - W / tp - A
    KV per token   = 2 L (h_kv / tp) d b_kv     (128 KiB for Llama-3-8B in fp16, tp = 1;
                                                 h_kv / tp is 1 once tp > h_kv: KV heads are replicated)
    paged          sequences = floor(budget / (page x KV per token)) // ceil(context / page)
    contiguous     sequences = floor(budget / (max_len x KV per token)), max_len reserved per request
    shared prefix  sequences = (blocks - floor(P / page)) // ceil((context - floor(P / page) page) / page)
                   when every request starts with the same P-token prefix, stored once in whole blocks
    longest        one sequence using every block: floor(budget / block) x page

Sources: the chapter "FlashAttention and PagedAttention: what does each save?" (paging avoids reserving a
contiguous maximum-length region per request) and the foundation's naive-prefill ceiling.

    result.py          CapacityPlan, LayerCapacity (the typed results)
    plan.py            plan_capacity, smallest_deployment, tensor_parallel_sizes, describe_weights
    curve.py           capacity_curve: the two counts over a grid of lengths, in closed form
    position_split.py  dcp_capacity: the plan with each sequence's KV split by position (DCP, KVP)

Every name is importable from rooflab.capacity, as when this package was one module.
"""

from __future__ import annotations

from .curve import CapacityCurve, capacity_curve
from .plan import (busiest_expert_split, describe_weights, gpu_weight_bytes, plan_capacity, smallest_deployment,
                   tensor_parallel_sizes)
from .position_split import dcp_capacity
from .result import CapacityPlan, LayerCapacity

__all__ = ["CapacityCurve", "CapacityPlan", "LayerCapacity", "busiest_expert_split", "capacity_curve", "dcp_capacity",
           "describe_weights", "gpu_weight_bytes", "plan_capacity", "smallest_deployment", "tensor_parallel_sizes"]

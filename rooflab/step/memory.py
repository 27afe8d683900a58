"""A step's memory per GPU (weights, KV cache, usable) and the one check that the batch fits.

rooflab.capacity.plan_capacity's accounting at the deployment's utilisation where it models the deployment (the
batch against its paged sequences); else the weights over PP and the rank's KV (kvcache.sequence_bytes, the
capacity plan's count) against the usable memory.
"""

from __future__ import annotations

from ..capacity import plan_capacity
from ..deployment import Deployment
from ..errors import InputError
from ..kvcache import kv_layout, sequence_bytes
from ..specs import ModelSpec
from ..units import DType, fmt_bytes
from .pricing import StepContext


def capacity_models(dep: Deployment) -> bool:
    """Whether rooflab.capacity plans this deployment (one replica's TP group, attention DP over all of it)."""
    return (dep.pipeline_parallel == 1 and dep.prefill_context_parallel == 1 and dep.data_parallel == 1
            and dep.attention_data_parallel in (1, dep.tensor_parallel))


def step_memory(ctx: StepContext, batch: int, context_len: int, per_rank: int, check: bool,
                decode: bool) -> tuple[float, float, float]:
    """(weights, KV, usable) bytes per GPU, and the one memory check (the module docstring): an InputError saying
    what does not fit where `check`."""
    model, gpu, dep = ctx.model, ctx.gpu, ctx.dep
    split = dep.position_split if decode else dep.prefill_context_parallel
    kv = kv_bytes(model, per_rank, context_len, ctx.kv_dtype, dep.page_size, ctx.attn_tp, split)
    where = f"{dep.num_gpus} x {gpu.name}" if dep.num_gpus > 1 else gpu.name
    if capacity_models(dep) and decode:
        plan_dep = dep.replace(weight_format=ctx.weights_as, kv_cache_dtype=ctx.kv_dtype, speculative=None)
        try:
            plan = plan_capacity(model, gpu, context_len, deployment=plan_dep)
        except InputError as exc:
            if not check:
                plan = None
            else:
                raise InputError(f"does not fit: {exc}") from None
        if plan is not None:
            if check and batch > plan.max_sequences_paged:
                raise InputError(
                    f"does not fit: {model.name} on {where} holds {plan.max_sequences_paged:,} sequences of "
                    f"{context_len:,} tokens (rooflab capacity: weights {fmt_bytes(plan.weights_bytes)}, KV budget "
                    f"{fmt_bytes(plan.kv_budget_bytes)} a GPU of {fmt_bytes(plan.usable_bytes)} usable at "
                    f"{dep.gpu_memory_utilization:g}), not {batch:,}; add GPUs (--tp, --dcp, --kv-parallel) or "
                    f"shorten the batch or context")
            return plan.weights_bytes, kv, plan.usable_bytes
    ep = dep.expert_parallel if model.is_moe else 1
    weights = model.weight_bytes(ctx.weights_as, dep.tensor_parallel, ep, dep.dp_attention) / dep.pipeline_parallel
    kv /= dep.pipeline_parallel
    usable = dep.gpu_memory_utilization * (gpu.cuda_visible_bytes or gpu.hbm_capacity_bytes)
    if check and weights + kv > usable:
        raise InputError(f"does not fit: {model.name} on {where} needs {fmt_bytes(weights)} of weights and "
                         f"{fmt_bytes(kv)} of KV cache per GPU ({batch} x {context_len:,} tokens), "
                         f"{fmt_bytes(weights + kv)} > {fmt_bytes(usable)} usable; add GPUs (--tp, --kv-parallel) or "
                         f"shorten the batch or context")
    return weights, kv, usable


def kv_bytes(model: ModelSpec, batch: int, context_len: int, dtype: DType, page_size: int, tp: int,
             split: int) -> float:
    """KV cache one GPU holds: each layer type's pages for the batch, a 1 / split share of every sequence's
    (kvcache.sequence_bytes, the capacity plan's count)."""
    layout = kv_layout(model, context_len, dtype, page_size, tp)
    return batch * float(sequence_bytes(layout, model, [context_len], position_split=split)[0])


__all__ = ["capacity_models", "kv_bytes", "step_memory"]

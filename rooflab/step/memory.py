"""A step's memory on the GPU that holds most (weights, KV cache, usable) and the one check that the batch fits.

rooflab.capacity.plan_capacity's accounting at the deployment's utilisation where it models the deployment (one
replica's TP group, pipeline stages included: the binding stage's weights and KV, as `rooflab capacity` prints;
under data-parallel attention the weights as SGLang lays them at the step's release, StepContext.
dp_attention_release, the one weight_split rule capacity --engine sglang --engine-version uses);
else the same two functions capacity counts with, over the pipeline stages (capacity.stages), on the stage that
holds most: capacity.gpu_weight_bytes (the stage's share of each component) and the stage's layers' KV
(kvcache.sequence_bytes), against the usable memory.

A draft model (speculative method draft_model) is loaded beside the target on every GPU, split over the target's
TP as vLLM does by default (vllm/config/speculative.py, _verify_and_get_draft_tp at v0.11.2:
draft_tensor_parallel_size = the target's tensor_parallel_size), with a KV cache of its own for every sequence in
the KV cache's dtype: its weights (capacity.gpu_weight_bytes, as shipped) and its KV join the target's, in the
check and in the figures (StepMemory names them).

An MTP / EAGLE head (speculative method mtp, eagle, eagle3) is one decoder layer of the target's shape
(step.draft.head_share, the share its cost is priced at), and vLLM keeps its pages in the target's one KV pool: the
drafter's attention layers join the static forward context when it is loaded (v0.11.0 vllm/v1/spec_decode/
eagle.py:813-831) and get_kv_cache_spec gives every Attention layer there its KV spec
(v1/worker/gpu_model_runner.py:4051-4052). So the head holds that share of the target's layer weights (in the
target's format) and of each sequence's KV (Llama-3-8B's EAGLE head 1/32 of the target's, 1/33 of the pool), its
input projection (step.draft.HEAD_FC_INPUTS) and, DeepSeek's MTP only, an lm_head of its own (step.draft.
OWN_LM_HEAD); the embeddings are the target's.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

from ..capacity import gpu_weight_bytes, plan_capacity
from ..capacity.result import CapacityPlan
from ..capacity.stages import LayerPartition, pipeline_stages
from ..deployment import Deployment, SpecMethod
from ..errors import InputError
from ..kvcache import kv_layout, sequence_bytes
from ..load import load_model
from ..specs import ModelSpec
from ..specs.weights import VISION, WeightComponent
from ..units import DType, fmt_bytes
from .draft import HEAD_FC_INPUTS, OWN_LM_HEAD, head_share
from .pricing import StepContext, step_dtypes, weights_as_of


@dataclass(frozen=True)
class StepMemory:
    """Bytes on the GPU that holds most: weights and KV (the draft model's included), the usable memory, and the
    draft's share of each (0 without one)."""

    weights_bytes: float
    kv_bytes: float
    usable_bytes: float
    draft_weights_bytes: float = 0.0
    draft_kv_bytes: float = 0.0
    draft_model: str = ""

    @property
    def note(self) -> Optional[str]:
        """What the figures hold besides the target's: the draft's (a draft model's, an MTP / EAGLE head's) weights
        and KV cache; None without one."""
        if not self.draft_model:
            return None
        return (f"memory: the {self.draft_model}'s weights {fmt_bytes(self.draft_weights_bytes)} and KV "
                f"cache {fmt_bytes(self.draft_kv_bytes)} a GPU are counted in the weights and KV cache above")


def capacity_models(dep: Deployment) -> bool:
    """Whether rooflab.capacity plans this deployment (one replica's TP group, with or without attention DP;
    pipeline stages without a position split)."""
    return (dep.prefill_context_parallel == 1 and dep.data_parallel == 1
            and (dep.pipeline_parallel == 1 or dep.position_split == 1))


def step_memory(ctx: StepContext, batch: int, context_len: int, per_rank: int, check: bool,
                decode: bool) -> StepMemory:
    """The step's bytes a GPU and the one memory check (the module docstring): an InputError saying what does not
    fit where `check`."""
    model, gpu, dep = ctx.model, ctx.gpu, ctx.dep
    split = dep.position_split if decode else dep.prefill_context_parallel
    draft_name, draft_weights, draft_sequence = _draft(ctx, context_len, split) if decode else ("", 0, 0.0)
    draft_kv = per_rank * draft_sequence
    where = f"{dep.num_gpus} x {gpu.name}" if dep.num_gpus > 1 else gpu.name
    plan = _plan(ctx, context_len, check) if capacity_models(dep) and decode else None
    if plan is not None:
        if dep.pipeline_parallel > 1:                  # the binding stage's layers
            kv = per_rank * float(plan.kv_bytes_per_sequence)
        else:
            kv = kv_bytes(model, per_rank, context_len, ctx.kv_dtype, dep.page_size, ctx.attn_tp, split,
                          dep.mla_sparse_fp8)
        weights, usable = plan.weights_bytes + draft_weights, plan.usable_bytes
        fits = _sequences(plan, draft_weights, draft_sequence, per_rank)
        if check and batch > fits:
            draft = f" and a draft model's {fmt_bytes(draft_weights)} with its KV cache" if draft_weights else ""
            raise InputError(
                f"does not fit: {model.name} on {where} holds {fits:,} sequences of {context_len:,} tokens (rooflab "
                f"capacity: weights {fmt_bytes(plan.weights_bytes)}, KV budget {fmt_bytes(plan.kv_budget_bytes)} "
                f"a GPU of {fmt_bytes(plan.usable_bytes)} usable at {dep.gpu_memory_utilization:g}{draft}), not "
                f"{batch:,}; add GPUs (--tp, --dcp, --kv-parallel) or shorten the batch or context")
        return StepMemory(weights, kv + draft_kv, usable, draft_weights, draft_kv, draft_name)
    target_weights, kv = _busiest_stage(ctx, per_rank, context_len, split)
    weights = target_weights + draft_weights
    usable = dep.gpu_memory_utilization * (gpu.cuda_visible_bytes or gpu.hbm_capacity_bytes)
    total = weights + kv + draft_kv
    if check and total > usable:
        raise InputError(f"does not fit: {model.name} on {where} needs {fmt_bytes(weights)} of weights and "
                         f"{fmt_bytes(kv + draft_kv)} of KV cache per GPU ({batch} x {context_len:,} tokens"
                         + (", a draft model's included" if draft_weights else "") + f"), {fmt_bytes(total)} > "
                         f"{fmt_bytes(usable)} usable; add GPUs (--tp, --kv-parallel) or shorten the batch or context")
    return StepMemory(weights, kv + draft_kv, usable, draft_weights, draft_kv, draft_name)


def _plan(ctx: StepContext, context_len: int, check: bool) -> Optional[CapacityPlan]:
    """rooflab capacity's plan for the step's deployment (speculation aside: the draft is counted here); None
    where its weights alone do not fit and `check` is off."""
    plan_dep = ctx.dep.replace(weight_format=ctx.weights_as, kv_cache_dtype=ctx.kv_dtype, speculative=None)
    try:
        return plan_capacity(ctx.model, ctx.gpu, context_len, deployment=plan_dep,
                             dp_attention_release=ctx.dp_attention_release)
    except InputError as exc:
        if not check:
            return None
        raise InputError(f"does not fit: {exc}") from None


def _sequences(plan: CapacityPlan, draft_weights: int, draft_sequence: float, per_rank: int) -> int:
    """Sequences the plan's GPU holds: capacity's paged count, or with a draft model the KV budget less the draft's
    weights over each sequence's target and draft KV (whole pages of both)."""
    if not draft_weights:
        return plan.max_sequences_paged
    per_sequence = plan.kv_bytes_per_sequence + draft_sequence
    return max(0, int((plan.kv_budget_bytes - draft_weights) // per_sequence)) if per_sequence else per_rank


def _busiest_stage(ctx: StepContext, per_rank: int, context_len: int, split: int) -> tuple[int, float]:
    """(weights, KV) of the pipeline stage that holds most (one stage without PP): capacity's weight count for the
    stage's share of each component and the KV of its layers."""
    model, dep = ctx.model, ctx.dep
    ep = dep.expert_parallel if model.is_moe else 1
    stages = pipeline_stages(model, dep.pipeline_parallel, LayerPartition.vllm)
    best = None
    for stage in stages:
        part = stage if len(stages) > 1 else None
        weights = gpu_weight_bytes(model, ctx.weights_as, dep.tensor_parallel, ep, dep.attention_data_parallel, part,
                                   release=ctx.dp_attention_release)
        kv = kv_bytes(stage.layers_model(model), per_rank, context_len, ctx.kv_dtype, dep.page_size, ctx.attn_tp,
                      split, dep.mla_sparse_fp8)
        if best is None or weights + kv > best[0] + best[1]:
            best = (weights, kv)
    return best


def _draft(ctx: StepContext, context_len: int, split: int) -> tuple[str, int, float]:
    """(what drafts, its weights a GPU, its KV a sequence): ('', 0, 0) without a draft that holds memory (module
    docstring)."""
    return draft_memory(ctx.dep, ctx.kv_dtype, context_len, split, ctx.dp_attention_release, model=ctx.model)


def draft_memory(dep: Deployment, kv_dtype: DType, context_len: int, split: int = 1,
                 release: Optional[tuple] = None, model: Optional[ModelSpec] = None) -> tuple[str, int, float]:
    """(what drafts: 'draft model llama-3.2-1b', 'eagle head of llama-3-8b'; its weights a GPU; its KV a sequence
    of `context_len` tokens in `kv_dtype`) of the deployment's draft model, split over the target's TP, or of its
    MTP / EAGLE head, a share of the target `model` (module docstring); ('', 0, 0) for n-gram drafting or none.
    A head needs the target `model` (None: the head is not counted). The step's memory check and the serving
    replica's KV pages (rooflab.serve.Replica) both count the draft here."""
    spec = dep.speculative
    if spec is None or spec.method is SpecMethod.ngram:
        return "", 0, 0.0
    if spec.method is not SpecMethod.draft_model:
        return ("", 0, 0.0) if model is None else _head_memory(model, dep, kv_dtype, context_len, split, release)
    draft: ModelSpec = load_model(spec.draft_model)
    weights = gpu_weight_bytes(draft, None, dep.tensor_parallel, 1, dep.attention_data_parallel, release=release)
    sequence = kv_bytes(draft, 1, context_len, kv_dtype, dep.page_size, dep.attention_tensor_parallel, split)
    return f"draft model {draft.name}", weights, sequence


def _head_memory(model: ModelSpec, dep: Deployment, kv_dtype: DType, context_len: int, split: int,
                 release: Optional[tuple]) -> tuple[str, int, float]:
    """draft_memory for an MTP / EAGLE head of `model`: head_share of the target's layer weights (its format, split
    as the target's: TP, EP, DP attention at `release`) and of a sequence's KV pages, the input projection whole on
    every rank in the model's dtype, and the lm_head where the method holds its own (module docstring)."""
    method, share = dep.speculative.method, head_share(model)
    c = WeightComponent
    shares = {k: share for k in (c.attention, c.dense_mlp, c.experts, c.shared_experts, c.router, c.norms)}
    own_head = method in OWN_LM_HEAD
    shares.update({c.embeddings: Fraction(int(own_head and model.tie_word_embeddings)),
                   c.lm_head: Fraction(int(own_head)), VISION: Fraction(0)})
    ep = dep.expert_parallel if model.is_moe else 1
    layer = gpu_weight_bytes(model, weights_as_of(dep), dep.tensor_parallel, ep, dep.attention_data_parallel,
                             release=release, shares=shares)
    fc = HEAD_FC_INPUTS[method] * model.hidden_size ** 2 * step_dtypes(model, dep)[0].bytes
    sequence = kv_bytes(model, 1, context_len, kv_dtype, dep.page_size, dep.attention_tensor_parallel, split,
                        dep.mla_sparse_fp8) * float(share)
    return f"{method.value} head of {model.name}", layer + fc, sequence


def kv_bytes(model: ModelSpec, batch: int, context_len: int, dtype: DType, page_size: int, tp: int,
             split: int, mla_sparse_fp8: bool = False) -> float:
    """KV cache one GPU holds: each layer type's pages for the batch, a 1 / split share of every sequence's
    (kvcache.sequence_bytes, the capacity plan's count); `mla_sparse_fp8` is vLLM's fp8_ds_mla layout."""
    layout = kv_layout(model, context_len, dtype, page_size, tp, mla_sparse_fp8=mla_sparse_fp8)
    return batch * float(sequence_bytes(layout, model, [context_len], position_split=split)[0])


__all__ = ["StepMemory", "capacity_models", "draft_memory", "kv_bytes", "step_memory"]

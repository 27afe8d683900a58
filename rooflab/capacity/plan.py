"""plan_capacity: what fits on a GPU (or a TP group) serving a model; smallest_deployment, the fewest GPUs that serve
one sequence. The formulas are the package docstring's (rooflab.capacity)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ..cost.common import check_flag, check_spec, real_number, whole_number
from ..cost.naive import naive_max_seq_len
from ..deployment import Deployment
from ..errors import InputError, shown
from ..kvcache import KvLayout, kv_layout, longest_context
from ..limits import MAX_GPUS, MAX_PAGE_SIZE, MAX_TOKENS
from ..paging import pages_for
from ..specs import GpuSpec, ModelSpec
from ..units import DType, WeightFormat, fmt_bytes
from ..vocab import WindowAllocation
from ..specs.weights import WeightComponent, weight_bytes
from .position_split import dcp_capacity
from .result import CapacityPlan, LayerCapacity
from .stages import LayerPartition, Stage, check_partition, pipeline_stages
from .weight_split import check_attention_ranks, dp_attention_splits


def plan_capacity(model: ModelSpec, gpu: GpuSpec, context_len: int,
                  weight_dtype: DType | WeightFormat | None = None, kv_dtype: DType | None = None,
                  gpu_memory_utilization: float = 0.9, activation_reserve_bytes: int = 0, page_size: int = 16,
                  max_model_len: int | None = None, tensor_parallel: int = 1, shared_prefix_len: int = 0,
                  expert_parallel: int = 1, dp_attention: bool = False,
                  window_allocation: WindowAllocation = WindowAllocation.hybrid,
                  mla_sparse_fp8: bool = False, deployment: Deployment | None = None,
                  pp_layer_partition: tuple[int, ...] | None = None,
                  dp_attention_release: tuple[int, ...] | None = None) -> CapacityPlan:
    """How many sequences of `context_len` tokens fit on `gpu` serving `model`.

    With `tensor_parallel` > 1 the model is split by head over that many GPUs of the same
    kind; bytes are per GPU and sequences are those the whole group serves. `expert_parallel`
    divides the routed experts' weights; `dp_attention` gives each GPU its own sequences with all
    attention heads (SGLang's data-parallel attention over the whole group: weights as weight_split lays them,
    the group serves tp times the per-GPU count); a Deployment's attention_data_parallel N below TP gives each
    N-th of the group its own sequences over TP / N GPUs' heads.
    `weight_dtype` None means the formats the checkpoint ships (bf16 where the spec names none).
    Windowed layers keep only their window's pages under `window_allocation` hybrid (kvcache.py).
    `shared_prefix_len` is a prefix (a system prompt) every request starts with, shared by the layers
    that keep every token. A workload that does not fit is an answer (0 sequences and the reason);
    inputs out of range and weights that do not fit at all are errors.

    `deployment` (rooflab.Deployment) gives the parallelism, formats, page size, utilisation and window
    allocation in one value and replaces those keyword arguments (which build one when it is None). Its
    decode context parallelism (inside TP) or KV parallelism (extra GPUs) splits each sequence's KV by
    position (position_split.dcp_capacity); `num_gpus` in the plan counts the GPUs as the engines do.

    Its pipeline parallelism splits the layers over stages (stages.py: vLLM's split, or `pp_layer_partition`'s
    counts); each stage holds its layers' weights and KV cache (the embedding on the first, the LM head on the
    last) and serves every sequence, so the plan is the stage with the fewest sequences, its `stage_notes` naming
    every stage.

    `dp_attention_release` is the SGLang release whose data-parallel attention layout the weights follow
    (weight_split.dp_attention_splits; None: the newest read), as `report --phase step --engine sglang
    --engine-version V` gives it.
    """
    check_spec(model, ModelSpec, "model")
    check_spec(gpu, GpuSpec, "gpu")
    if deployment is None:
        if kv_dtype is not None:
            kv_dtype = DType.of(kv_dtype, "kv_dtype")
        deployment = Deployment(tensor_parallel=tensor_parallel, expert_parallel=expert_parallel,
                                attention_data_parallel=tensor_parallel if check_flag(dp_attention, "dp_attention")
                                else 1, page_size=page_size, kv_cache_dtype=kv_dtype, weight_format=weight_dtype,
                                gpu_memory_utilization=gpu_memory_utilization, window_allocation=window_allocation,
                                mla_sparse_fp8=check_flag(mla_sparse_fp8, "mla_sparse_fp8"))
    elif not isinstance(deployment, Deployment):
        raise InputError(f"deployment must be a rooflab.Deployment, got {shown(deployment)}")
    else:
        given = [name for name, value, default in (
            ("weight_dtype", weight_dtype, None), ("kv_dtype", kv_dtype, None),
            ("gpu_memory_utilization", gpu_memory_utilization, 0.9), ("page_size", page_size, 16),
            ("tensor_parallel", tensor_parallel, 1), ("expert_parallel", expert_parallel, 1),
            ("dp_attention", dp_attention, False), ("window_allocation", window_allocation, WindowAllocation.hybrid))
            if value is not default and value != default]
        if given:
            raise InputError(f"give {', '.join(given)} in the Deployment, not beside it (the deployment holds them)")
    deployment.check_model(model)
    model = model.as_loaded(gpu.compute_capability_version, deployment.dtype)   # --dtype, else the engines' auto
    if deployment.prefill_context_parallel > 1 or deployment.data_parallel > 1:
        raise InputError(f"capacity with prefill-context or data parallelism is not modelled yet "
                         f"({deployment.describe()}): plan one replica's TP group (data-parallel attention with "
                         f"expert parallelism: --dp-attention)")
    if pp_layer_partition is not None:
        pp_layer_partition = check_partition(pp_layer_partition)
        if deployment.pipeline_parallel == 1:
            raise InputError("--pp-layer-partition applies with --pp 2 or more")
    if deployment.pipeline_parallel > 1 and deployment.position_split > 1:
        raise InputError(f"capacity with pipeline parallelism and a position split ({deployment.describe()}) is "
                         "not modelled")
    stages = pipeline_stages(model, deployment.pipeline_parallel, LayerPartition.vllm, pp_layer_partition)
    plans = [_plan(model, gpu, context_len, deployment.weight_format, deployment.kv_cache_dtype,
                   deployment.gpu_memory_utilization, activation_reserve_bytes, deployment.page_size, max_model_len,
                   deployment.tensor_parallel, shared_prefix_len, deployment.expert_parallel,
                   deployment.attention_data_parallel,
                   deployment.window_allocation, mla_sparse_fp8 if mla_sparse_fp8 is not False else deployment.mla_sparse_fp8,
                   stage if len(stages) > 1 else None, dp_attention_release)
             for stage in stages]
    plan = _binding(plans, stages)
    plan = dataclasses.replace(plan, num_gpus=deployment.num_gpus,
                               decode_context_parallel=deployment.decode_context_parallel,
                               kv_parallel=deployment.kv_parallel)
    if deployment.position_split > 1:
        plan = dcp_capacity(plan, model, context_len, deployment.position_split, deployment.page_size,
                            DType(plan.kv_dtype), deployment.tensor_parallel)
    return plan


def _plan(model: ModelSpec, gpu: GpuSpec, context_len: int, weight_dtype: DType | WeightFormat | None,
          kv_dtype: DType | None, gpu_memory_utilization: float, activation_reserve_bytes: int, page_size: int,
          max_model_len: int | None, tensor_parallel: int, shared_prefix_len: int, expert_parallel: int,
          attention_data_parallel: int, window_allocation: WindowAllocation, mla_sparse_fp8: bool,
          stage: Stage | None = None, release: tuple[int, ...] | None = None) -> CapacityPlan:
    """plan_capacity for one TP group without a position split: the arguments as a Deployment gives them; with
    `stage`, that pipeline stage's layers and weights (stages.py); `release` SGLang's, for DP attention's layout."""
    if isinstance(weight_dtype, str) and weight_dtype in DType._value2member_map_:
        weight_dtype = DType(weight_dtype)
    elif weight_dtype is not None and not isinstance(weight_dtype, DType):
        weight_dtype = WeightFormat.of(weight_dtype)
    window_allocation = WindowAllocation.of(window_allocation, "window_allocation")
    kv_dtype = DType.of(kv_dtype, "kv_dtype") if kv_dtype is not None else _kv_default(model, weight_dtype)
    context_len, gpu_memory_utilization, activation_reserve_bytes, page_size, max_model_len = _check(
        context_len, gpu_memory_utilization, activation_reserve_bytes, page_size, max_model_len)
    tensor_parallel = whole_number(tensor_parallel, "tensor parallel size (--tp)", maximum=MAX_GPUS)
    expert_parallel = whole_number(expert_parallel, "expert parallel size (--ep)", maximum=MAX_GPUS)
    if expert_parallel > 1 and not model.is_moe:
        raise InputError(f"expert parallel size (--ep) {expert_parallel}: {model.name} has no routed experts to split")
    if expert_parallel > model.num_experts:
        raise InputError(f"expert parallel size (--ep) {expert_parallel} exceeds the {model.num_experts} routed "
                         f"experts of {model.name}: a GPU would hold none")
    if not isinstance(mla_sparse_fp8, bool):
        raise InputError(f"mla_sparse_fp8 must be True or False, got {shown(mla_sparse_fp8)}")
    dp_attention, attention_tp = attention_data_parallel > 1, tensor_parallel // attention_data_parallel
    shared_prefix_len = whole_number(shared_prefix_len, "shared prefix length", minimum=0, maximum=MAX_TOKENS)
    if shared_prefix_len >= context_len:
        raise InputError(f"shared prefix length ({shared_prefix_len:,}) must be shorter than the context length "
                         f"({context_len:,}): each request needs tokens of its own")
    heads = model.heads.shard(attention_tp)
    max_len = model.max_context_len if max_model_len is None else max_model_len
    usable = int(gpu.hbm_capacity_bytes * gpu_memory_utilization)
    weights = gpu_weight_bytes(model, weight_dtype, tensor_parallel, expert_parallel, attention_data_parallel, stage,
                               release=release)
    shipped = describe_weights(model, weight_dtype)
    full, model = model, (stage.layers_model(model) if stage else model)
    if weights >= usable:
        split = f" split {tensor_parallel} ways" if tensor_parallel > 1 else ""
        split += f" on pipeline {stage.describe()}" if stage else ""
        raise InputError(f"{model.name} weights ({fmt_bytes(weights)} per GPU in {shipped}{split}) do not fit "
                         f"in {fmt_bytes(usable)} usable on {gpu.name} (utilisation {gpu_memory_utilization:g})")
    budget = max(0, usable - weights - activation_reserve_bytes)
    layout = kv_layout(model, context_len, kv_dtype, page_size, attention_tp, window_allocation, mla_sparse_fp8)
    per_token = layout.bytes_per_token_full
    block = page_size * per_token
    blocks = budget // block if block else 0
    group = attention_data_parallel              # each data-parallel attention rank holds its own sequences
    paged = group * (budget // layout.bytes_per_sequence) if layout.bytes_per_sequence else 0
    with_prefix = group * _with_prefix(layout, budget, shared_prefix_len)
    reserve = max(max_len, context_len)
    contiguous = group * (budget // (reserve * per_token)) if per_token else paged
    longest = longest_context(model, budget, kv_dtype, page_size, attention_tp, window_allocation,
                              mla_sparse_fp8)
    reason = _reason(budget, activation_reserve_bytes, paged, context_len, longest, max_len)
    return CapacityPlan(
        model=full.name, gpu=gpu.name, weight_dtype=shipped, kv_dtype=kv_dtype.value,
        gpu_memory_utilization=gpu_memory_utilization, activation_reserve_bytes=activation_reserve_bytes,
        page_size=page_size, context_len=context_len, max_model_len=max_len, usable_bytes=usable,
        weights_bytes=weights, kv_bytes_per_token=per_token, kv_budget_bytes=budget, block_bytes=block,
        num_blocks=blocks, blocks_per_sequence=pages_for(context_len, page_size), max_sequences_paged=paged,
        max_sequences_contiguous=contiguous, max_context_len=longest,
        naive_prefill_max_seq_len=_naive_ceiling(full, gpu, weight_dtype, tensor_parallel),
        tensor_parallel=tensor_parallel, kv_heads_per_gpu=heads.num_kv_heads, hbm_bytes=gpu.hbm_capacity_bytes,
        shared_prefix_len=shared_prefix_len, max_sequences_shared_prefix=with_prefix, reason=reason,
        expert_parallel=expert_parallel, dp_attention=dp_attention, window_allocation=window_allocation.value,
        kv_bytes_per_sequence=layout.bytes_per_sequence,
        layers=tuple(LayerCapacity(k.name, k.kind.value, k.num_layers, k.bytes_per_token, k.pages_per_sequence,
                                   k.state_bytes, k.bytes_per_sequence) for k in layout.layers),
    )


def _binding(plans: list[CapacityPlan], stages: tuple[Stage, ...]) -> CapacityPlan:
    """The one plan, or under pipeline parallelism the stage serving the fewest sequences (of equals, the fewest
    blocks, then the most weights: the GPU that holds most), with every stage noted."""
    if len(plans) == 1:
        return plans[0]
    index = min(range(len(plans)), key=lambda i: (plans[i].max_sequences_paged, plans[i].num_blocks,
                                                  -plans[i].weights_bytes))
    notes = tuple(f"pipeline {st.describe()}: weights {fmt_bytes(p.weights_bytes)}, KV budget "
                  f"{fmt_bytes(p.kv_budget_bytes)}, {p.kv_bytes_per_token:,} KV bytes a token, "
                  f"{p.max_sequences_paged:,} sequences paged" for st, p in zip(stages, plans))
    notes += (f"pipeline {stages[index].describe()} binds: every stage holds every sequence's KV for its layers, "
              f"so the group serves its {plans[index].max_sequences_paged:,}; the figures above are its",)
    return dataclasses.replace(plans[index], pipeline_parallel=len(stages), stage_notes=notes)


def gpu_weight_bytes(model: ModelSpec, weight_format: DType | WeightFormat | None, tensor_parallel: int,
                     expert_parallel: int = 1, attention_data_parallel: int = 1, stage: Stage | None = None,
                     splits: dict[str, int] | None = None, release: tuple[int, ...] | None = None,
                     shares: dict[str, Fraction] | None = None) -> int:
    """Bytes of weights the busiest GPU holds: specs.weights.weight_bytes split `tensor_parallel` ways, the routed
    experts dealt whole over `expert_parallel` GPUs (busiest_expert_split), under SGLang's data-parallel attention
    (`attention_data_parallel` N > 1) each component over what weight_split.dp_attention_splits says at SGLang's
    `release` (None: the newest read: attention over TP / N, embeddings over TP / N, lm_head over TP), or over
    `splits` where given (engines.memory's, with its fused copies), and under pipeline parallelism `stage`'s share of each component
    (stages.Stage.shares; or `shares` given, {component: fraction}, where no stage is: an MTP / EAGLE head's one
    decoder layer, rooflab.step.memory.draft_memory). The capacity plan, the step (rooflab.step.memory) and the engine models all count
    weights with it. `attention_data_parallel` is a number of ranks dividing `tensor_parallel` (the dp_attention
    flag it replaced, a bool, is refused: check_attention_ranks)."""
    tensor_parallel = whole_number(tensor_parallel, "tensor_parallel", maximum=MAX_GPUS)
    attention_data_parallel = check_attention_ranks(attention_data_parallel, tensor_parallel)
    if splits is None:
        splits = dp_attention_splits(tensor_parallel, attention_data_parallel, release)
    return weight_bytes(model, weight_format, tensor_parallel,
                        busiest_expert_split(model, expert_parallel, tensor_parallel),
                        splits=splits, shares=stage.shares(model) if stage else shares)


def busiest_expert_split(model: ModelSpec, expert_parallel: int, tensor_parallel: int) -> Fraction:
    """What ModelSpec.weight_bytes divides the routed experts' bytes by (besides `tensor_parallel`, which it
    applies to every component) to leave the busiest GPU's experts: E / (ceil(E / EP) x TP) under EP, 1 without.

    Under expert parallelism the experts are dealt whole over the EP GPUs and not split again by TP, so the
    busiest GPU holds ceil(E / EP) of the E experts (8 experts over EP 3: 3, 3 and 2): what must fit is its
    memory, not the average GPU's E / EP.
    """
    if expert_parallel <= 1:
        return Fraction(1)
    experts = model.num_experts
    return Fraction(experts, -(-experts // expert_parallel) * tensor_parallel)


def describe_weights(model: ModelSpec, override: DType | WeightFormat | None) -> str:
    """'bf16', or 'bf16, experts mxfp4': the formats the weights are counted in."""
    c = WeightComponent
    base = model.weight_format(c.embeddings, override).value
    special = sorted({(k.value, model.weight_format(k, override).value)
                      for k in (c.attention, c.dense_mlp, c.experts, c.shared_experts)
                      if model.weight_format(k, override).value != base
                      and (k is not c.experts or model.is_moe)
                      and (k is not c.shared_experts or model.num_shared_experts)})
    return base + "".join(f", {k.replace('_', ' ')} {fmt}" for k, fmt in special)


def _kv_default(model: ModelSpec, weight_dtype: DType | WeightFormat | None) -> DType:
    """The KV cache's dtype when none is given: the checkpoint's dtype (engines' 'auto'), else fp16."""
    if isinstance(weight_dtype, DType):
        return weight_dtype
    return model.weight_dtype or DType.fp16


def _naive_ceiling(model: ModelSpec, gpu: GpuSpec, weight_dtype: DType | WeightFormat | None, tp: int) -> int:
    dtype = weight_dtype if isinstance(weight_dtype, DType) else (model.weight_dtype or DType.fp16)
    return naive_max_seq_len(model, gpu, 1, dtype, weight_dtype, tp)


def _with_prefix(layout: KvLayout, budget: int, prefix_len: int) -> int:
    """Sequences when each starts with the same `prefix_len` tokens, stored once in whole pages of the layers
    that keep every token (full, mla); windowed layers and states are per sequence as before."""
    shared_pages = prefix_len // layout.page_size
    shared = private = 0
    for k in layout.layers:
        per_page = k.num_layers * layout.page_size * k.bytes_per_token
        if k.kind.keeps_every_token and shared_pages:
            shared += shared_pages * per_page
            private += (k.pages_per_sequence - shared_pages) * per_page + k.num_layers * k.state_bytes
        else:
            private += k.bytes_per_sequence
    if budget <= shared or private == 0:
        return 0
    return (budget - shared) // private


def tensor_parallel_sizes(model: ModelSpec, limit: int = 8) -> list[int]:
    """The split sizes up to `limit` GPUs the model's heads allow (AttentionHeads.shard), smallest first."""
    limit = whole_number(limit, "limit (GPUs to split over)", maximum=MAX_GPUS)
    sizes = []
    for tp in range(1, limit + 1):
        try:
            model.heads.shard(tp)
        except InputError:
            continue
        sizes.append(tp)
    return sizes


def smallest_deployment(model: ModelSpec, gpu: GpuSpec, context_len: int, limit: int = 8,
                        **options) -> CapacityPlan:
    """The plan with the fewest GPUs (tensor parallel, up to `limit`) that serves one `context_len` sequence.

    `options` are plan_capacity's (weight_dtype, kv_dtype, page_size, ...). Raises InputError,
    naming the largest split tried, when no split up to `limit` fits.
    """
    sizes = tensor_parallel_sizes(model, limit)
    for tp in sizes:
        try:
            plan = plan_capacity(model, gpu, context_len, tensor_parallel=tp, **options)
        except InputError:
            continue
        if plan.max_sequences_paged > 0:
            return plan
    raise InputError(f"{model.name} does not serve one {context_len:,}-token sequence on up to "
                     f"{sizes[-1] if sizes else 1} x {gpu.name}")


def _check(context_len: int, utilization: float, reserve: int, page_size: int,
           max_len: int | None) -> tuple[int, float, int, int, int | None]:
    """The arguments checked and as plain Python numbers (an np.int32 page size would overflow in the products)."""
    utilization = real_number(utilization, "GPU memory utilisation", 0, 1, lo_open=True)
    page_size = whole_number(page_size, "page size", maximum=MAX_PAGE_SIZE)
    context_len = whole_number(context_len, "context length", maximum=MAX_TOKENS)
    reserve = whole_number(reserve, "activation reserve (bytes)", minimum=0, maximum=1 << 62)
    if max_len is not None:
        max_len = whole_number(max_len, "max model length", maximum=MAX_TOKENS)
    return context_len, utilization, reserve, page_size, max_len


def _reason(budget: int, reserve: int, paged: int, context_len: int, longest: int, max_len: int) -> str | None:
    if budget == 0:
        return f"no memory left for the KV cache after the weights and a {fmt_bytes(reserve)} activation reserve"
    if paged == 0:
        return (f"one sequence of {context_len:,} tokens needs more KV cache than the budget holds "
                f"(the longest that fits is {longest:,} tokens)")
    if context_len > max_len:
        return f"context length {context_len:,} exceeds the model's max_context_len {max_len:,}"
    return None

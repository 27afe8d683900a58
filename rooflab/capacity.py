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

Sources: ../shared/seeds/flash-and-paged-attention.txt (paging avoids reserving a
contiguous maximum-length region per request) and the foundation's naive-prefill ceiling.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from .cost.common import whole_number
from .cost.naive import naive_max_seq_len
from .errors import InputError
from .limits import MAX_PAGE_SIZE, MAX_TOKENS
from .paging import pages_for, shared_prefix_blocks
from .specs import GpuSpec, ModelSpec
from .units import DType, fmt_bytes


@dataclass(frozen=True)
class CapacityPlan:
    """The answers `rooflab capacity` prints; bytes in SI units (bytes), counts as integers."""

    model: str
    gpu: str
    weight_dtype: str
    kv_dtype: str
    gpu_memory_utilization: float
    activation_reserve_bytes: int
    page_size: int
    context_len: int
    max_model_len: int
    usable_bytes: int
    weights_bytes: int
    kv_bytes_per_token: int
    kv_budget_bytes: int
    block_bytes: int
    num_blocks: int
    blocks_per_sequence: int
    max_sequences_paged: int
    max_sequences_contiguous: int
    max_context_len: int
    naive_prefill_max_seq_len: int
    tensor_parallel: int = 1
    kv_heads_per_gpu: int = 0
    hbm_bytes: int = 0
    shared_prefix_len: int = 0
    max_sequences_shared_prefix: int = 0
    reason: Optional[str] = None

    @property
    def paging_gain(self) -> float:
        """Concurrent sequences with paging over those with contiguous reservation."""
        if self.max_sequences_contiguous == 0:
            return float("inf") if self.max_sequences_paged else 1.0
        return self.max_sequences_paged / self.max_sequences_contiguous

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def plan_capacity(model: ModelSpec, gpu: GpuSpec, context_len: int, weight_dtype: DType = DType.fp16,
                  kv_dtype: DType | None = None, gpu_memory_utilization: float = 0.9,
                  activation_reserve_bytes: int = 0, page_size: int = 16,
                  max_model_len: int | None = None, tensor_parallel: int = 1,
                  shared_prefix_len: int = 0) -> CapacityPlan:
    """How many sequences of `context_len` tokens fit on `gpu` serving `model`.

    With `tensor_parallel` > 1 the model is split by head over that many GPUs of the same
    kind; bytes are per GPU and sequences are those the whole group serves. `shared_prefix_len`
    is a prefix (a system prompt) every request starts with. A workload that does not fit is
    an answer (0 sequences and the reason); inputs out of range and weights that do not fit
    at all are errors.
    """
    kv_dtype = kv_dtype or weight_dtype
    _check(context_len, gpu_memory_utilization, activation_reserve_bytes, page_size, max_model_len)
    shared_prefix_len = whole_number(shared_prefix_len, "shared prefix length", minimum=0, maximum=MAX_TOKENS)
    if shared_prefix_len >= context_len:
        raise InputError(f"shared prefix length ({shared_prefix_len:,}) must be shorter than the context length "
                         f"({context_len:,}): each request needs tokens of its own")
    heads = model.heads.shard(tensor_parallel)
    max_len = model.max_context_len if max_model_len is None else max_model_len
    usable = int(gpu.hbm_capacity_bytes * gpu_memory_utilization)
    weights = model.weight_bytes(weight_dtype, tensor_parallel)
    if weights >= usable:
        split = f" split {tensor_parallel} ways" if tensor_parallel > 1 else ""
        raise InputError(f"{model.name} weights ({fmt_bytes(weights)} per GPU in {weight_dtype}{split}) do not fit "
                         f"in {fmt_bytes(usable)} usable on {gpu.name} (utilisation {gpu_memory_utilization:g})")
    budget = max(0, usable - weights - activation_reserve_bytes)
    per_token = model.kv_bytes_per_token(kv_dtype, tensor_parallel)
    block = page_size * per_token
    blocks = budget // block
    per_sequence = pages_for(context_len, page_size)
    paged = blocks // per_sequence
    one = shared_prefix_blocks(shared_prefix_len, [context_len - shared_prefix_len], page_size)
    with_prefix = (blocks - one.shared_blocks) // one.private_blocks if blocks > one.shared_blocks else 0
    reserve = max(max_len, context_len)
    contiguous = budget // (reserve * per_token)
    reason = _reason(budget, activation_reserve_bytes, paged, context_len, blocks * page_size, max_len)
    return CapacityPlan(
        model=model.name, gpu=gpu.name, weight_dtype=weight_dtype.value, kv_dtype=kv_dtype.value,
        gpu_memory_utilization=gpu_memory_utilization, activation_reserve_bytes=activation_reserve_bytes,
        page_size=page_size, context_len=context_len, max_model_len=max_len, usable_bytes=usable,
        weights_bytes=weights, kv_bytes_per_token=per_token, kv_budget_bytes=budget, block_bytes=block,
        num_blocks=blocks, blocks_per_sequence=per_sequence, max_sequences_paged=paged,
        max_sequences_contiguous=contiguous, max_context_len=blocks * page_size,
        naive_prefill_max_seq_len=naive_max_seq_len(model, gpu, 1, weight_dtype, weight_dtype, tensor_parallel),
        tensor_parallel=tensor_parallel, kv_heads_per_gpu=heads.num_kv_heads, hbm_bytes=gpu.hbm_capacity_bytes,
        shared_prefix_len=shared_prefix_len, max_sequences_shared_prefix=with_prefix, reason=reason,
    )


def tensor_parallel_sizes(model: ModelSpec, limit: int = 8) -> list[int]:
    """The split sizes up to `limit` GPUs the model's heads allow (AttentionHeads.shard), smallest first."""
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


def _check(context_len: int, utilization: float, reserve: int, page_size: int, max_len: int | None) -> None:
    if isinstance(utilization, bool) or not isinstance(utilization, (int, float)) or not 0 < utilization <= 1:
        raise InputError(f"GPU memory utilisation must be in (0, 1], got {utilization!r}")
    whole_number(page_size, "page size", maximum=MAX_PAGE_SIZE)
    whole_number(context_len, "context length", maximum=MAX_TOKENS)
    whole_number(reserve, "activation reserve (bytes)", minimum=0, maximum=1 << 62)
    if max_len is not None:
        whole_number(max_len, "max model length", maximum=MAX_TOKENS)


def _reason(budget: int, reserve: int, paged: int, context_len: int, longest: int, max_len: int) -> str | None:
    if budget == 0:
        return f"no memory left for the KV cache after the weights and a {fmt_bytes(reserve)} activation reserve"
    if paged == 0:
        return (f"one sequence of {context_len:,} tokens needs more KV cache than the budget holds "
                f"(the longest that fits is {longest:,} tokens)")
    if context_len > max_len:
        return f"context length {context_len:,} exceeds the model's max_context_len {max_len:,}"
    return None

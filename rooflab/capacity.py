"""What fits: the KV budget, concurrent sequences (paged and contiguous), the longest context.

For a GPU of capacity C, a memory-utilisation fraction u, an activation reserve A and
weights W (all parameters, every expert, in the weight dtype):

    KV budget      = u C - W - A
    KV per token   = 2 L h_kv d b_kv            (128 KiB for Llama-3-8B in fp16)
    paged          sequences = floor(budget / (page x KV per token)) // ceil(context / page)
    contiguous     sequences = floor(budget / (max_len x KV per token)), max_len reserved per request
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
                  max_model_len: int | None = None) -> CapacityPlan:
    """How many sequences of `context_len` tokens fit on `gpu` serving `model`.

    A workload that does not fit is an answer (0 sequences and the reason); inputs out of range
    and weights that do not fit at all are errors.
    """
    kv_dtype = kv_dtype or weight_dtype
    _check(context_len, gpu_memory_utilization, activation_reserve_bytes, page_size, max_model_len)
    max_len = max_model_len or model.max_context_len
    usable = int(gpu.hbm_capacity_bytes * gpu_memory_utilization)
    weights = model.total_parameters * weight_dtype.bytes
    if weights >= usable:
        raise InputError(f"{model.name} weights ({fmt_bytes(weights)} in {weight_dtype}) do not fit in "
                         f"{fmt_bytes(usable)} usable on {gpu.name} (utilisation {gpu_memory_utilization:g})")
    budget = max(0, usable - weights - activation_reserve_bytes)
    per_token = model.kv_bytes_per_token(kv_dtype)
    block = page_size * per_token
    blocks = budget // block
    per_sequence = -(-context_len // page_size)
    paged = blocks // per_sequence
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
        naive_prefill_max_seq_len=naive_max_seq_len(model, gpu, 1, weight_dtype, weight_dtype),
        reason=reason,
    )


def _check(context_len: int, utilization: float, reserve: int, page_size: int, max_len: int | None) -> None:
    if not 0 < utilization <= 1:
        raise InputError(f"GPU memory utilisation must be in (0, 1], got {utilization:g}")
    whole_number(page_size, "page size")
    if context_len < 1:
        raise InputError(f"context length must be >= 1, got {context_len}")
    if reserve < 0:
        raise InputError(f"activation reserve must be >= 0 bytes, got {reserve}")
    if max_len is not None and max_len < 1:
        raise InputError(f"max model length must be >= 1, got {max_len}")


def _reason(budget: int, reserve: int, paged: int, context_len: int, longest: int, max_len: int) -> str | None:
    if budget == 0:
        return f"no memory left for the KV cache after the weights and a {fmt_bytes(reserve)} activation reserve"
    if paged == 0:
        return (f"one sequence of {context_len:,} tokens needs more KV cache than the budget holds "
                f"(the longest that fits is {longest:,} tokens)")
    if context_len > max_len:
        return f"context length {context_len:,} exceeds the model's max_context_len {max_len:,}"
    return None

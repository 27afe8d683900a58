"""capacity_curve: plan_capacity's sequence counts over a grid of context lengths, in closed form."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..deployment import Deployment
from ..errors import InputError, shown
from ..kvcache import kv_layout, sequence_bytes
from ..limits import MAX_TOKENS
from ..specs import GpuSpec, ModelSpec
from ..units import DType
from .plan import plan_capacity
from .result import CapacityPlan


@dataclass(frozen=True)
class CapacityCurve:
    """Sequences that fit at each context length: plan_capacity's two counts over a grid, and the plan at the first."""

    plan: CapacityPlan               # at the first length: budget, formats, per-token bytes, longest context
    context_lens: np.ndarray         # tokens per sequence, int64
    paged: np.ndarray                # max_sequences_paged at each length
    contiguous: np.ndarray           # max_sequences_contiguous at each length


def capacity_curve(model: ModelSpec, gpu: GpuSpec, context_lens, deployment: Deployment | None = None,
                   activation_reserve_bytes: int = 0, max_model_len: int | None = None,
                   mla_sparse_fp8: bool = False) -> CapacityCurve:
    """plan_capacity's max_sequences_paged and max_sequences_contiguous at every length of `context_lens`, in closed
    form: the budget, the formats and each layer type's bytes per token do not depend on the length; only the pages
    each layer type keeps do (kvcache.sequence_bytes). Equal to plan_capacity point by point (a test holds them)."""
    lens = np.asarray(context_lens)
    if lens.ndim != 1 or lens.size == 0 or lens.dtype.kind not in "iu" and not (
            lens.dtype.kind == "f" and np.all(np.isfinite(lens)) and np.all(lens == np.round(lens))):
        raise InputError(f"context_lens must be a non-empty list of whole token counts, got {shown(context_lens)}")
    lens = lens.astype(np.int64)
    if lens.min() < 1 or lens.max() > MAX_TOKENS:
        raise InputError(f"context_lens must be whole numbers from 1 to {MAX_TOKENS:,}, got {int(lens.min()):,} to "
                         f"{int(lens.max()):,}")
    deployment = Deployment() if deployment is None else deployment
    plan = plan_capacity(model, gpu, int(lens[0]), activation_reserve_bytes=activation_reserve_bytes,
                         max_model_len=max_model_len, mla_sparse_fp8=mla_sparse_fp8, deployment=deployment)
    layout = kv_layout(model, 1, DType(plan.kv_dtype), deployment.page_size, deployment.attention_tensor_parallel,
                       deployment.window_allocation, mla_sparse_fp8)
    budget, split = plan.kv_budget_bytes, deployment.position_split
    per_sequence = sequence_bytes(layout, model, lens, deployment.window_allocation, split)
    reserve = np.maximum(plan.max_model_len, lens)
    group = deployment.attention_data_parallel
    paged = np.where(per_sequence > 0, group * (budget // np.maximum(per_sequence, 1)), 0)
    if split > 1:                                   # position_split.dcp_capacity's reservation: the split share
        contiguous = budget // np.maximum(sequence_bytes(layout, model, reserve, deployment.window_allocation, split), 1)
    elif layout.bytes_per_token_full:
        contiguous = group * (budget // (reserve * layout.bytes_per_token_full))
    else:
        contiguous = paged
    return CapacityCurve(plan, lens, paged.astype(np.int64), np.asarray(contiguous, dtype=np.int64))

"""The cost function each measured kernel is predicted with: a measurement row -> the Cost of its configuration.

One builder per Kernel in COST_OF; a kernel measured without an entry cannot be validated (an
InputError names it). Decode rows of other implementations (PyTorch's dense decode) are priced as
if they split the KV the way rooflab recommends, since those libraries choose their own split counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..cost.common import Cost, LaunchCost
from ..cost.flash import flash_prefill
from ..cost.merge import merge_pair
from ..cost.naive import naive_prefill
from ..cost.paged import paged_decode, recommend_splits
from ..errors import InputError
from ..specs import AttentionHeads, GpuSpec
from ..units import DType
from ..vocab import Kernel, Variant
from .records import Measurement


@dataclass(frozen=True)
class _Workload:
    """What every kernel's cost needs from a measurement row, checked once."""

    m: Measurement
    heads: AttentionHeads
    dtype: DType
    kv_dtype: DType
    gpu: GpuSpec
    num_sms: Optional[int]      # None: an ideal launch (no parallelism model)
    units_per_sm: float


def _naive(w: _Workload) -> Cost:
    return naive_prefill(w.heads, w.m.seq_len, w.m.batch, w.dtype, w.m.causal)


def _naive_softmax(w: _Workload) -> Cost:
    return LaunchCost(_naive(w).softmax, Variant.naive)


def _flash(w: _Workload) -> Cost:
    return flash_prefill(w.heads, w.m.seq_len, w.m.batch, w.dtype, w.m.causal, gpu=w.gpu, num_sms=w.num_sms,
                         units_per_sm=w.units_per_sm)


def _decode(w: _Workload) -> Cost:
    """rooflab's rows at their measured split count; other implementations (which choose their own) as if they
    split the way rooflab recommends."""
    lens, splits = w.m.lengths(), w.m.splits
    if not w.m.impl.startswith("rooflab") and w.num_sms is not None:
        splits = recommend_splits(w.heads, lens, w.num_sms, w.m.page_size, w.dtype, w.kv_dtype, w.units_per_sm)
    return paged_decode(w.heads, lens, w.m.page_size, w.dtype, w.kv_dtype, splits, w.num_sms, w.units_per_sm)


def _merge(w: _Workload) -> Cost:
    return merge_pair(w.m.tokens, w.m.num_qo_heads, w.m.head_dim, w.dtype)


#: The cost function each measured kernel is predicted with.
COST_OF: dict[Kernel, Callable[[_Workload], Cost]] = {
    Kernel.naive: _naive, Kernel.naive_softmax: _naive_softmax, Kernel.flash: _flash, Kernel.paged: _decode,
    Kernel.split_kv: _decode, Kernel.merge: _merge,
}


def measurement_cost(m: Measurement, gpu: GpuSpec, num_sms: int | None = None, units_per_sm: float = 1.0) -> Cost:
    """The cost of the configuration a measurement row describes; with `num_sms`, the parallelism model's
    busy share with `units_per_sm` (cost/parallel.py) is priced into its launches."""
    try:
        dtype = DType(m.dtype)
        kv_dtype = DType(m.kv_dtype) if m.kv_dtype else dtype
        heads = AttentionHeads(m.num_qo_heads, m.num_kv_heads or m.num_qo_heads, m.head_dim or 1,
                               m.v_head_dim or None)
    except Exception as exc:
        raise InputError(f"measurement '{m.describe()}': {exc}") from None
    if m.kernel not in COST_OF:
        raise InputError(f"measurement '{m.describe()}': rooflab has no cost model for kernel '{m.kernel.value}' yet")
    return COST_OF[m.kernel](_Workload(m, heads, dtype, kv_dtype, gpu, num_sms, units_per_sm))


__all__ = ["COST_OF", "measurement_cost"]

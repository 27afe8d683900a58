"""The cost function each measured kernel is predicted with: a measurement row -> the Cost of its configuration.

One builder per Kernel in COST_OF; a kernel measured without an entry cannot be validated (an
InputError names it). Decode rows of other implementations (PyTorch's dense decode) are priced as
if they split the KV the way rooflab recommends, since those libraries choose their own split counts.
A row's window, chunk and sinks reach the cost functions as a Visibility (cost/common.py), its q_len
as the new tokens a sequence; MLA rows are priced by cost/mla.py from head_dim (the latent, d_c + d_R)
and v_head_dim (d_c).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Callable, Optional

from ..cost.batch import DecodeBatch, decode_batch
from ..cost.common import Cost, LaunchCost, Visibility
from ..cost.flash import flash_prefill
from ..cost.merge import merge_pair
from ..cost.mla import mla_decode
from ..cost.naive import naive_prefill
from ..cost.paged import paged_decode, recommend_splits
from ..errors import InputError, shown
from ..specs import AttentionHeads, GpuSpec, LayerType
from ..units import DType
from ..vocab import Kernel, LayerKind, Variant
from .records import Measurement, parse_context_lens


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


def _visibility(m: Measurement) -> Visibility:
    """The keys each query of the row sees: its window and / or chunk (0 in the file: none)."""
    return Visibility(m.window or None, m.chunk or None)


def _flash(w: _Workload) -> Cost:
    """Flash prefill, full or (flash_window) windowed / chunked with sinks: FLOPs and exps of the visible pairs,
    compulsory bytes unchanged (every key is some query's)."""
    return flash_prefill(w.heads, w.m.seq_len, w.m.batch, w.dtype, w.m.causal, gpu=w.gpu, num_sms=w.num_sms,
                         units_per_sm=w.units_per_sm, visibility=_visibility(w.m), sinks=w.m.sinks)


def _decode(w: _Workload) -> Cost:
    """rooflab's rows at their measured split count; other implementations (which choose their own) as if they
    split the way rooflab recommends. q_len new tokens a sequence; a window or chunk reads only the pages it
    touches.

    paged_decode.cu reads keys from the first one any new token sees (Visibility.read_tokens: ctx - first, key
    by key) through the block-table entries of the pages holding them, which is what paged_decode counts: K/V
    bytes and pages agree exactly. Not counted: the sinks (4 h bytes, 128 B at 32 heads). A split's first
    page in the kernel starts at the first visible key's page while the model deals the `read` keys from a
    page boundary, so split lengths (the parallelism model's longest unit) may differ by under one page.
    """
    lens, splits, vis = _lengths(w.m), w.m.splits, _visibility(w.m)
    if _priced_impl(w.m) != "rooflab" and w.num_sms is not None:
        splits = recommend_splits(w.heads, lens, w.num_sms, w.m.page_size, w.dtype, w.kv_dtype, w.units_per_sm,
                                  w.m.q_len, vis)
    return paged_decode(w.heads, lens, w.m.page_size, w.dtype, w.kv_dtype, splits, w.num_sms, w.units_per_sm,
                        w.m.q_len, vis, w.m.sinks)


#: MLA's per-head non-rope q.k width (DeepSeek-V3's 128): a LayerType needs it, the absorbed decode's cost never
#: reads it (every head attends over the shared latent).
_MLA_NOPE_DIM = 128


def _mla(w: _Workload) -> Cost:
    """Absorbed MLA decode: head_dim is the latent (d_c + d_R = 576), v_head_dim its value part (d_c = 512).

    mla_decode.cu and mla_decode_hopper.cu read every key of the context ([0, ctx), no window) through
    ceil(ctx / 64) block-table entries, as cost/mla.py counts (latent bytes and pages agree). Where they
    differ: each CTA of a sequence reads the whole latent, and a sequence has ceil(q_len h / rows a CTA) of
    them (64 rows for the wgmma kernel and for the mma.sync kernel at MT 4): at h 128 two CTAs (q_len 1) or
    four (q_len 2), so 2x-4x the latent bytes cross L2 into the SMs, while the model counts them once per
    sequence (its MLA_ROWS_PER_UNIT tiles, the same 2 or 4, price only the parallelism). HBM sees them once
    when a sequence's CTAs run together (neighbours in blockIdx.x, so L2 serves all but the first); at h 16
    (one CTA) there is no difference.
    """
    d_c, d_lat = w.m.v_head_dim, w.m.head_dim
    if not 0 < d_c < d_lat:
        raise InputError(f"measurement '{w.m.describe()}': an mla_decode row's head_dim (the latent, {d_lat}) must "
                         f"exceed its v_head_dim (d_c, {d_c})")
    return mla_decode(_mla_layer(d_c, d_lat), w.m.num_qo_heads, _lengths(w.m), w.m.page_size, w.dtype, w.kv_dtype,
                      w.m.splits, w.m.q_len, w.num_sms, w.units_per_sm)


@functools.lru_cache(maxsize=64)
def _mla_layer(d_c: int, d_lat: int) -> LayerType:
    """The MLA layer type of a latent of d_lat = d_c + d_R (built once a shape: a LayerType checks its fields)."""
    return LayerType(kind=LayerKind.mla, kv_lora_rank=d_c, qk_rope_head_dim=d_lat - d_c,
                     qk_nope_head_dim=_MLA_NOPE_DIM)


def _lengths(m: Measurement) -> DecodeBatch | list[int]:
    """The row's context lengths as a DecodeBatch, built once a context_lens text (the fit prices each row at
    every units-per-SM value); the list itself where that is refused, for the cost function to say why."""
    try:
        return _decode_batch(m.context_lens)
    except InputError:
        return m.lengths()


@functools.lru_cache(maxsize=4096)
def _decode_batch(context_lens: str) -> DecodeBatch:
    batch = decode_batch(parse_context_lens(context_lens))
    batch.lengths.flags.writeable = batch.counts.flags.writeable = False     # shared by every cost priced from it
    return batch


@functools.lru_cache(maxsize=4096)
def _heads(num_qo_heads: int, num_kv_heads: int, head_dim: int, value_dim: Optional[int]) -> AttentionHeads:
    """AttentionHeads built once a shape (they check their fields)."""
    return AttentionHeads(num_qo_heads, num_kv_heads, head_dim, value_dim)


def _merge(w: _Workload) -> Cost:
    return merge_pair(w.m.tokens, w.m.num_qo_heads, w.m.head_dim, w.dtype)


#: The cost function each measured kernel is predicted with.
COST_OF: dict[Kernel, Callable[[_Workload], Cost]] = {
    Kernel.naive: _naive, Kernel.naive_softmax: _naive_softmax, Kernel.flash: _flash, Kernel.flash_window: _flash,
    Kernel.paged: _decode, Kernel.split_kv: _decode, Kernel.paged_window: _decode, Kernel.paged_multi: _decode,
    Kernel.mla_decode: _mla, Kernel.merge: _merge,
}


#: Workloads x GPU x units-per-SM values priced at most once a process: the fit's grid search prices each row at
#: each units-per-SM value, and peers timed on one shape (PyTorch's flash and cuDNN backends, rooflab's two flash
#: kernels) are one workload (the bundled dataset: 254 rows, 196 workloads).
COST_CACHE_SIZE = 1 << 15
#: A row's fields no cost reads: its timing, and its implementation (but for _priced_impl).
_NOT_PRICED = ("impl", "time_s", "time_p10_s", "time_p90_s", "repeats", "max_rel_err", "timing")
_PRICED = tuple(f.name for f in dataclasses.fields(Measurement) if f.name not in _NOT_PRICED)
_costs: dict[tuple, tuple[GpuSpec, Cost]] = {}


def _priced_impl(m: Measurement) -> str:
    """What of a row's implementation its cost reads: rooflab's own (its split count as measured) or another's."""
    return "rooflab" if m.impl.startswith("rooflab") else "other"


def measurement_cost(m: Measurement, gpu: GpuSpec, num_sms: int | None = None, units_per_sm: float = 1.0) -> Cost:
    """The cost of the configuration a measurement row describes; with `num_sms`, the parallelism model's
    busy share with `units_per_sm` (cost/parallel.py) is priced into its launches.

    Priced once for each (workload, GPU, num_sms, units_per_sm) and then shared: rows of one workload (every field
    but _NOT_PRICED, and _priced_impl) have one cost, and rows, GPU specs and costs are frozen (a caller that wants
    another cost builds one, as predict.priced_launches does with replace)."""
    if not isinstance(m, Measurement) or not isinstance(gpu, GpuSpec):
        raise InputError(f"measurement_cost takes a Measurement and a GpuSpec, got {shown(m)} and {shown(gpu)}")
    key = (tuple(getattr(m, name) for name in _PRICED), _priced_impl(m), id(gpu), num_sms, units_per_sm)
    try:
        held = _costs.get(key)
    except TypeError:                       # an argument that cannot be a key (a list): priced, and refused there
        return _cost(m, gpu, num_sms, units_per_sm)
    if held is not None and held[0] is gpu:     # the spec itself is held, so its id names no other while cached
        return held[1]
    cost = _cost(m, gpu, num_sms, units_per_sm)
    if len(_costs) >= COST_CACHE_SIZE:
        del _costs[next(iter(_costs))]          # the oldest
    _costs[key] = (gpu, cost)
    return cost


def _cost(m: Measurement, gpu: GpuSpec, num_sms: int | None, units_per_sm: float) -> Cost:
    try:
        dtype = DType(m.dtype)
        kv_dtype = DType(m.kv_dtype) if m.kv_dtype else dtype
        heads = _heads(m.num_qo_heads, m.num_kv_heads or m.num_qo_heads, m.head_dim or 1, m.v_head_dim or None)
    except Exception as exc:
        raise InputError(f"measurement '{m.describe()}': {exc}") from None
    if m.kernel not in COST_OF:
        raise InputError(f"measurement '{m.describe()}': rooflab has no cost model for kernel '{m.kernel.value}' yet")
    return COST_OF[m.kernel](_Workload(m, heads, dtype, kv_dtype, gpu, num_sms, units_per_sm))


__all__ = ["COST_OF", "measurement_cost"]

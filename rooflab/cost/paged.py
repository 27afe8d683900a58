"""Paged decode, with optional split-KV: one query token per sequence, K and V read through a block table.

Sources: ../shared/seeds/flash-and-paged-attention.txt (the block table, pages of
fixed size) and naive-attention-and-online-softmax.txt (decode attention's fixed
intensity 2h / (b h_kv), "4 FLOP/byte for Llama-3-8B in fp16"; split-KV partials
combined by the LSE merge). Per layer, for sequences of context lengths L_i in a batch of B:

    K, V         2 h_kv d b_kv sum(L_i)     each KV page read once for its whole query group (GQA)
    block table  4 sum(ceil(L_i / page))    int32 physical page ids, plus 4 B of int32 lengths
    Q, O         2 B h d b                  one token per sequence
    FLOPs        4 h d sum(L_i)             QK^T and PV, one multiply-add each per (key, d)

With S > 1 splits the attention kernel writes fp32 partial outputs and LSEs instead of O,
2 x S x B x h x (d + 1) x 4 bytes including the merge reading them back, and an S-way merge
writes O. Only the valid tokens of a sequence's last page are counted (a kernel masks the tail
rather than loading it); appending the new token's K/V to the cache is a separate kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..specs import AttentionHeads, ModelSpec
from ..units import FP32_BYTES, INT32_BYTES, DType
from ..vocab import Variant
from .common import ArrayLike, KernelCost, as_array, whole_number
from .merge import MergeCost, merge_splits
from .parallel import parallel_fraction

#: Largest split count rooflab considers when it recommends one.
MAX_SPLITS = 64


@dataclass(frozen=True)
class DecodeCost:
    """One decode step for one layer: the attention launch and, with splits, the merge."""

    attention: KernelCost
    merge: MergeCost | None
    kv_bytes: np.ndarray
    block_table_bytes: np.ndarray
    partial_bytes: np.ndarray
    num_splits: int
    work_units: np.ndarray
    longest_unit_tokens: np.ndarray   # tokens of the longest (sequence, KV head, split) unit: it bounds the launch

    @property
    def variant(self) -> Variant:
        return Variant.paged if self.num_splits == 1 else Variant.split_kv

    @property
    def kernels(self) -> tuple[KernelCost, ...]:
        return (self.attention,) if self.merge is None else (self.attention, self.merge.kernel)

    @property
    def flops(self) -> np.ndarray:
        """Attention FLOPs (the merge's vector FLOPs sit under another roof, in its own kernel)."""
        return self.attention.flops

    @property
    def hbm_bytes(self) -> np.ndarray:
        return sum(k.hbm_bytes for k in self.kernels)

    @property
    def parallel_fraction(self) -> np.ndarray:
        return self.attention.parallel_fraction

    @property
    def intensity_kv(self) -> np.ndarray:
        """F over the KV bytes alone: 2h / (b_kv h_kv), fixed by the heads whatever the context or batch."""
        return self.flops / self.kv_bytes


def context_lengths(context_lens: ArrayLike) -> np.ndarray:
    """A ragged batch's context lengths as a 1-D array of whole numbers >= 1."""
    lens = as_array(context_lens, "context lengths").reshape(-1)
    fractional = lens != np.floor(lens)
    if np.any(fractional):
        raise InputError(f"context lengths must be whole numbers, got {lens[fractional][0]:g}")
    return lens


def check_page_size(page_size: int) -> int:
    return whole_number(page_size, "page size")


def check_splits(num_splits: int) -> int:
    return whole_number(num_splits, "number of splits")


def _split_tokens(lens: np.ndarray, num_splits: int, page_size: int) -> np.ndarray:
    """Tokens of each (sequence, split), [B, S]: whole pages dealt out evenly, the last split shorter."""
    pages_per_split = np.ceil(np.ceil(lens / page_size) / num_splits)
    span = pages_per_split * page_size
    starts = np.arange(num_splits)[None, :] * span[:, None]
    return np.clip(lens[:, None] - starts, 0, span[:, None])


def _heads(heads: AttentionHeads | ModelSpec) -> AttentionHeads:
    return heads.heads if isinstance(heads, ModelSpec) else heads


def _decode(heads: AttentionHeads, tokens: np.ndarray, pages: np.ndarray, batch: np.ndarray,
            num_splits: int, units: np.ndarray, longest: np.ndarray, num_sms: int | None, units_per_sm: float,
            dtype: DType, kv_dtype: DType) -> DecodeCost:
    """The byte and FLOP count shared by the ragged and the uniform entry points."""
    h, d = heads.num_qo_heads, heads.head_dim
    fraction = parallel_fraction(heads.num_kv_heads * tokens, longest, num_sms, units_per_sm)
    kv_bytes = heads.kv_bytes_per_token(kv_dtype) * tokens     # K and V: [pages, h_kv, page, d] each
    table_bytes = INT32_BYTES * (pages + batch)                 # block table and context lengths
    q_bytes = batch * h * d * dtype.bytes                       # [B, h, d]
    flops = 4 * h * d * tokens
    split = num_splits > 1
    partial = batch * h * num_splits * (d + 1) * FP32_BYTES * split   # [S, B, h, d] + [S, B, h] fp32
    out_bytes = partial if split else q_bytes                   # partials, or O itself
    name = "split_decode" if split else "paged_decode"
    attention = KernelCost(name, flops, kv_bytes + table_bytes + q_bytes + out_bytes,
                           exp_ops=h * tokens, parallel_fraction=fraction)
    merge = merge_splits(batch * h, num_splits, d, dtype) if split else None
    return DecodeCost(attention, merge, kv_bytes, table_bytes, 2 * partial, num_splits, units, longest)


def paged_decode(heads: AttentionHeads | ModelSpec, context_lens: ArrayLike, page_size: int = 16,
                 dtype: DType = DType.fp16, kv_dtype: DType | None = None, num_splits: int = 1,
                 num_sms: int | None = None, units_per_sm: float = 1.0) -> DecodeCost:
    """One decode step over a ragged batch: `context_lens` holds one length per sequence.

    With `num_sms` the parallelism model limits the attention launch's bandwidth; without, the
    launch is ideal (the pure roofline).
    """
    heads = _heads(heads)
    page_size, num_splits = check_page_size(page_size), check_splits(num_splits)
    lens = context_lengths(context_lens)
    unit_tokens = _split_tokens(lens, num_splits, page_size)        # [B, S]; the same for every KV head
    busy = unit_tokens[unit_tokens > 0]
    units = np.float64(busy.size * heads.num_kv_heads)
    return _decode(heads, lens.sum(), np.ceil(lens / page_size).sum(), np.float64(lens.size), num_splits,
                   units, busy.max(), num_sms, units_per_sm, dtype, kv_dtype or dtype)


def paged_decode_uniform(heads: AttentionHeads | ModelSpec, context_len: ArrayLike, batch: ArrayLike = 1,
                         page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
                         num_splits: int = 1, num_sms: int | None = None,
                         units_per_sm: float = 1.0) -> DecodeCost:
    """A decode step for `batch` sequences of one length each, vectorised over both (for sweeps)."""
    heads = _heads(heads)
    page_size, num_splits = check_page_size(page_size), check_splits(num_splits)
    lens = as_array(context_len, "context length")
    b = as_array(batch, "batch")
    pages = np.ceil(lens / page_size)
    busy_splits = np.minimum(num_splits, np.ceil(pages / np.ceil(pages / num_splits)))
    units = b * heads.num_kv_heads * busy_splits
    longest = np.minimum(np.ceil(pages / num_splits) * page_size, lens)
    return _decode(heads, b * lens, b * pages, b, num_splits, units, longest, num_sms, units_per_sm, dtype,
                   kv_dtype or dtype)


def recommend_splits(heads: AttentionHeads | ModelSpec, context_lens: ArrayLike, num_sms: int,
                     page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
                     units_per_sm: float = 1.0) -> int:
    """The split count with the smallest predicted memory time, between 1 and MAX_SPLITS.

    Time of a step with S splits, in units of 1 / beta: attention bytes / fraction(S) + merge bytes. Past
    the point where the units fill the GPU, more splits only add partial traffic, so the smallest
    S that fills it wins; with a full GPU already (a large batch), S = 1.
    """
    lens = context_lengths(context_lens)
    best, best_time = 1, np.inf
    limit = int(min(MAX_SPLITS, np.ceil(lens.max() / check_page_size(page_size))))
    for s in range(1, limit + 1):
        cost = paged_decode(heads, lens, page_size, dtype, kv_dtype, s, num_sms, units_per_sm)
        t = float(cost.attention.hbm_bytes / cost.attention.parallel_fraction)
        if cost.merge is not None:
            t += float(cost.merge.hbm_bytes)
        if t < best_time * (1 - 1e-9):
            best, best_time = s, t
    return best


def default_splits(heads: AttentionHeads | ModelSpec, context_lens: ArrayLike, num_sms: int, page_size: int = 16,
                   dtype: DType = DType.fp16, kv_dtype: DType | None = None, units_per_sm: float = 1.0) -> int:
    """The split count a report's split-KV row shows when none is asked for: the recommended one, at least 2
    (so the row shows split-KV even where it does not pay)."""
    return max(2, recommend_splits(heads, context_lens, num_sms, page_size, dtype, kv_dtype, units_per_sm))

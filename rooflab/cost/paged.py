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
from ..limits import MAX_BATCH, MAX_PAGE_SIZE, MAX_RAGGED, MAX_TOKENS
from ..limits import MAX_SPLITS as LIMIT_SPLITS
from ..specs import AttentionHeads, ModelSpec
from ..units import FP32_BYTES, INT32_BYTES, DType
from ..vocab import Variant
from .common import ArrayLike, KernelCost, as_array, whole_number
from .merge import MergeCost, merge_splits
from .parallel import parallel_fraction

#: Largest split count rooflab considers when it recommends one.
MAX_SPLITS = 64
#: Largest split count a caller may ask for.
MAX_SPLITS_ALLOWED = LIMIT_SPLITS


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


@dataclass(frozen=True)
class DecodeBatch:
    """The sequences of one decode step, run-length coded: `counts[i]` sequences of `lengths[i]` tokens.

    A uniform batch of any size is one run, so a million sequences cost no more to price than one;
    a ragged list becomes its distinct lengths. Build one with decode_batch().
    """

    lengths: np.ndarray     # [U] distinct context lengths, ascending, float64
    counts: np.ndarray      # [U] sequences with each length, float64

    @classmethod
    def uniform(cls, context_len: int, batch: int) -> DecodeBatch:
        length = whole_number(context_len, "context length", maximum=MAX_TOKENS)
        size = whole_number(batch, "batch", maximum=MAX_BATCH)
        return cls(np.array([float(length)]), np.array([float(size)]))

    @property
    def size(self) -> int:
        """Sequences in the batch."""
        return int(self.counts.sum())

    @property
    def total_tokens(self) -> float:
        return float((self.lengths * self.counts).sum())

    @property
    def max_len(self) -> float:
        return float(self.lengths.max())

    @property
    def mean_len(self) -> float:
        return self.total_tokens / self.size

    @property
    def is_uniform(self) -> bool:
        return self.lengths.size == 1

    def expanded(self) -> tuple[int, ...]:
        """Every sequence's length, in ascending order (only for batches of at most MAX_RAGGED sequences)."""
        if self.size > MAX_RAGGED:
            raise InputError(f"a batch of {self.size:,} sequences is too large to list one by one "
                             f"(limit {MAX_RAGGED:,}); it is priced as {self.lengths.size} run(s)")
        return tuple(int(x) for x, n in zip(self.lengths, self.counts) for _ in range(int(n)))


def decode_batch(context_lens: ArrayLike | DecodeBatch) -> DecodeBatch:
    """A decode batch from a list of context lengths (whole numbers in [1, MAX_TOKENS]) or a DecodeBatch."""
    if isinstance(context_lens, DecodeBatch):
        return context_lens
    lens = as_array(context_lens, "context lengths", maximum=MAX_TOKENS).reshape(-1)
    if lens.size > MAX_RAGGED:
        raise InputError(f"{lens.size:,} context lengths given one by one; the limit is {MAX_RAGGED:,} "
                         "(give a uniform batch as one length and a batch size)")
    fractional = lens != np.floor(lens)
    if np.any(fractional):
        raise InputError(f"context lengths must be whole numbers, got {lens[fractional][0]:g}")
    lengths, counts = np.unique(lens, return_counts=True)
    return DecodeBatch(lengths, counts.astype(np.float64))


def context_lengths(context_lens: ArrayLike) -> np.ndarray:
    """A ragged batch's context lengths as a 1-D array of whole numbers >= 1."""
    batch = decode_batch(context_lens)
    return np.repeat(batch.lengths, batch.counts.astype(np.int64))


def check_page_size(page_size: int) -> int:
    return whole_number(page_size, "page size", maximum=MAX_PAGE_SIZE)


def check_splits(num_splits: int) -> int:
    return whole_number(num_splits, "number of splits", maximum=MAX_SPLITS_ALLOWED)


def _split_tokens(lens: np.ndarray, num_splits: int, page_size: int) -> np.ndarray:
    """Tokens of each (length, split), [U, S]: whole pages dealt out evenly, the last split shorter."""
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


def paged_decode(heads: AttentionHeads | ModelSpec, context_lens: ArrayLike | DecodeBatch, page_size: int = 16,
                 dtype: DType = DType.fp16, kv_dtype: DType | None = None, num_splits: int = 1,
                 num_sms: int | None = None, units_per_sm: float = 1.0) -> DecodeCost:
    """One decode step over a batch: `context_lens` holds one length per sequence, or is a DecodeBatch.

    With `num_sms` the parallelism model limits the attention launch's bandwidth; without, the
    launch is ideal (the pure roofline).
    """
    heads = _heads(heads)
    page_size, num_splits = check_page_size(page_size), check_splits(num_splits)
    batch = decode_batch(context_lens)
    unit_tokens = _split_tokens(batch.lengths, num_splits, page_size)     # [U, S]; the same for every KV head
    busy = unit_tokens > 0
    units = np.float64((busy * batch.counts[:, None]).sum() * heads.num_kv_heads)
    pages = (np.ceil(batch.lengths / page_size) * batch.counts).sum()
    return _decode(heads, np.float64(batch.total_tokens), pages, np.float64(batch.size), num_splits,
                   units, unit_tokens.max(), num_sms, units_per_sm, dtype, kv_dtype or dtype)


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


def recommend_splits(heads: AttentionHeads | ModelSpec, context_lens: ArrayLike | DecodeBatch, num_sms: int,
                     page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
                     units_per_sm: float = 1.0) -> int:
    """The split count with the smallest predicted memory time, between 1 and MAX_SPLITS.

    Time of a step with S splits, in units of 1 / beta: attention bytes / fraction(S) + merge bytes. Past
    the point where the units fill the GPU, more splits only add partial traffic, so the smallest
    S that fills it wins; with a full GPU already (a large batch), S = 1.
    """
    batch = decode_batch(context_lens)
    best, best_time = 1, np.inf
    limit = int(min(MAX_SPLITS, np.ceil(batch.max_len / check_page_size(page_size))))
    for s in range(1, limit + 1):
        cost = paged_decode(heads, batch, page_size, dtype, kv_dtype, s, num_sms, units_per_sm)
        t = float(cost.attention.hbm_bytes / cost.attention.parallel_fraction)
        if cost.merge is not None:
            t += float(cost.merge.hbm_bytes)
        if t < best_time * (1 - 1e-9):
            best, best_time = s, t
    return best


def default_splits(heads: AttentionHeads | ModelSpec, context_lens: ArrayLike | DecodeBatch, num_sms: int, page_size: int = 16,
                   dtype: DType = DType.fp16, kv_dtype: DType | None = None, units_per_sm: float = 1.0) -> int:
    """The split count a report's split-KV row shows when none is asked for: the recommended one, at least 2
    (so the row shows split-KV even where it does not pay)."""
    return max(2, recommend_splits(heads, context_lens, num_sms, page_size, dtype, kv_dtype, units_per_sm))

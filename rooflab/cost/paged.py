"""Paged decode, with optional split-KV: one query token per sequence, K and V read through a block table.

Sources: the chapter "FlashAttention and PagedAttention: what does each save?" (the block table, pages of
fixed size) and the chapter "Naive attention and the online softmax" (decode attention's fixed
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
from typing import Callable

import numpy as np

from ..errors import InputError
from ..limits import MAX_BATCH, MAX_PAGE_SIZE, MAX_TOKENS
from ..limits import MAX_SPLITS as LIMIT_SPLITS
from ..specs import AttentionHeads
from ..units import FP32_BYTES, INT32_BYTES, DType
from ..vocab import Variant
from .batch import DecodeBatch, decode_batch
from .common import (FULL_VISIBILITY, ArrayLike, KernelCost, Visibility, as_array, check_dtypes, check_heads,
                     whole_number)
from .merge import MergeCost, merge_splits
from .parallel import check_parallelism, parallel_fraction

#: Largest split count rooflab considers when it recommends one.
MAX_SPLITS = 64
#: Largest split count a caller may ask for.
MAX_SPLITS_ALLOWED = LIMIT_SPLITS
#: Most new tokens per sequence in one decode step (speculative verification, multi-token prediction).
MAX_Q_LEN = 1024


class SplitDecode:
    """What a decode step's cost says of itself, for one launch or split-KV with its merge (paged and MLA).

    The class using it holds `attention`, `merge`, `num_splits` and `kv_bytes`."""

    attention: KernelCost
    merge: MergeCost | None
    num_splits: int
    kv_bytes: np.ndarray

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
        """F over the cache bytes alone: 2h / (b_kv h_kv) for K and V, fixed by the heads whatever the context
        or batch; about 1.89 h q in bf16 for an MLA latent."""
        return self.flops / self.kv_bytes


@dataclass(frozen=True)
class DecodeCost(SplitDecode):
    """One decode step for one layer: the attention launch and, with splits, the merge."""

    attention: KernelCost
    merge: MergeCost | None
    kv_bytes: np.ndarray
    block_table_bytes: np.ndarray
    partial_bytes: np.ndarray
    num_splits: int
    work_units: np.ndarray
    longest_unit_tokens: np.ndarray   # tokens of the longest (sequence, KV head, split) unit: it bounds the launch


def check_page_size(page_size: int) -> int:
    return whole_number(page_size, "page size", maximum=MAX_PAGE_SIZE)


def check_splits(num_splits: int) -> int:
    return whole_number(num_splits, "number of splits", maximum=MAX_SPLITS_ALLOWED)


def decode_arguments(context_lens, page_size, dtype, kv_dtype, num_splits, num_sms, units_per_sm, q_len):
    """A decode launch's arguments checked, as paged_decode and mla_decode take them: (page_size, num_splits,
    q_len, dtype, kv_dtype, num_sms, units_per_sm, the DecodeBatch); every context holds its q_len new tokens."""
    page_size, num_splits = check_page_size(page_size), check_splits(num_splits)
    q_len = whole_number(q_len, "q_len (new tokens per sequence)", maximum=MAX_Q_LEN)
    num_sms, units_per_sm = check_parallelism(num_sms, units_per_sm)
    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    batch = decode_batch(context_lens)
    if batch.lengths.min() < q_len:
        raise InputError(f"q_len (--q-len) {q_len}: a context of {batch.lengths.min():.0f} tokens cannot hold "
                         f"{q_len} new tokens")
    return page_size, num_splits, q_len, dtype, kv_dtype, num_sms, units_per_sm, batch


def _split_tokens(lens: np.ndarray, num_splits: int, page_size: int) -> np.ndarray:
    """Tokens of each (length, split), [U, S]: whole pages dealt out evenly, the last split shorter."""
    pages_per_split = np.ceil(np.ceil(lens / page_size) / num_splits)
    span = pages_per_split * page_size
    starts = np.arange(num_splits)[None, :] * span[:, None]
    return np.clip(lens[:, None] - starts, 0, span[:, None])


def _decode(heads: AttentionHeads, tokens: np.ndarray, pairs: np.ndarray, pages: np.ndarray, batch: np.ndarray,
            q_len: int, num_splits: int, units: np.ndarray, longest: np.ndarray, num_sms: int | None,
            units_per_sm: float, dtype: DType, kv_dtype: DType, sinks: bool) -> DecodeCost:
    """The byte and FLOP count shared by the ragged and the uniform entry points.

    `tokens` cached tokens are read (per KV head), `pairs` (query, key) pairs computed per query head,
    for `batch` sequences of `q_len` new tokens each.
    """
    h, d, d_v = heads.num_qo_heads, heads.head_dim, heads.value_dim
    fraction = parallel_fraction(heads.num_kv_heads * tokens, longest, num_sms, units_per_sm)
    kv_bytes = heads.kv_bytes_per_token(kv_dtype) * tokens     # K and V: [pages, h_kv, page, d] each
    table_bytes = INT32_BYTES * (pages + batch)                 # block table and context lengths
    rows = batch * q_len * h                                    # (sequence, new token, query head)
    q_bytes = rows * d * dtype.bytes                            # [B, q, h, d]
    flops = 2 * h * (d + d_v) * pairs                           # QK^T (d) and PV (d_v) per visible pair
    split = num_splits > 1
    partial = rows * num_splits * (d_v + 1) * FP32_BYTES * split   # [S, B, q, h, d_v] + [S, B, q, h] fp32
    out_bytes = partial if split else rows * d_v * dtype.bytes  # partials, or O itself
    name = "split_decode" if split else "paged_decode"
    exps = h * pairs + (rows if sinks else 0)
    attention = KernelCost(name, flops, kv_bytes + table_bytes + q_bytes + out_bytes,
                           exp_ops=exps, parallel_fraction=fraction)
    merge = merge_splits(rows, num_splits, d_v, dtype) if split else None
    return DecodeCost(attention, merge, kv_bytes, table_bytes, 2 * partial, num_splits, units, longest)


def _pages_read(lens: np.ndarray, read: np.ndarray, page_size: int) -> np.ndarray:
    """Pages holding the last `read` of `lens` tokens: the ones a decode query (window) touches."""
    return np.ceil(lens / page_size) - np.floor((lens - read) / page_size)


def paged_decode(heads: AttentionHeads, context_lens: ArrayLike | DecodeBatch, page_size: int = 16,
                 dtype: DType = DType.fp16, kv_dtype: DType | None = None, num_splits: int = 1,
                 num_sms: int | None = None, units_per_sm: float = 1.0, q_len: int = 1,
                 visibility: Visibility = FULL_VISIBILITY, sinks: bool = False) -> DecodeCost:
    """One decode step over a batch: `context_lens` holds one length per sequence, or is a DecodeBatch.

    `q_len` new tokens per sequence (speculative verification, multi-token prediction) are the last
    q_len of each context, causal among themselves; they share every page read, so FLOPs grow with
    q_len and the KV bytes do not. `visibility` (a window or chunk) limits the keys read to the ones
    the new tokens see, and the pages to those that hold them. With `num_sms` the parallelism model
    limits the attention launch's bandwidth; without, the launch is ideal (the pure roofline).
    """
    heads = check_heads(heads, "paged_decode")
    page_size, num_splits, q_len, dtype, kv_dtype, num_sms, units_per_sm, batch = decode_arguments(
        context_lens, page_size, dtype, kv_dtype, num_splits, num_sms, units_per_sm, q_len)
    read = visibility.read_tokens(batch.lengths, q_len)                 # [U] keys each sequence reads
    unit_tokens = _split_tokens(read, num_splits, page_size)           # [U, S]; the same for every KV head
    busy = unit_tokens > 0
    units = np.float64((busy * batch.counts[:, None]).sum() * heads.num_kv_heads)
    pages = (_pages_read(batch.lengths, read, page_size) * batch.counts).sum()
    pairs = (visibility.pairs(q_len, batch.lengths) * batch.counts).sum()
    return _decode(heads, np.float64((read * batch.counts).sum()), pairs, pages, np.float64(batch.size), q_len,
                   num_splits, units, unit_tokens.max(), num_sms, units_per_sm, dtype, kv_dtype, sinks)


def paged_decode_uniform(heads: AttentionHeads, context_len: ArrayLike, batch: ArrayLike = 1,
                         page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
                         num_splits: int = 1, num_sms: int | None = None, units_per_sm: float = 1.0,
                         q_len: int = 1, visibility: Visibility = FULL_VISIBILITY,
                         sinks: bool = False) -> DecodeCost:
    """A decode step for `batch` sequences of one length each, vectorised over both (for sweeps)."""
    heads = check_heads(heads, "paged_decode_uniform")
    page_size, num_splits = check_page_size(page_size), check_splits(num_splits)
    q_len = whole_number(q_len, "q_len (new tokens per sequence)", maximum=MAX_Q_LEN)
    num_sms, units_per_sm = check_parallelism(num_sms, units_per_sm)
    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    lens = as_array(context_len, "context length", minimum=q_len, maximum=MAX_TOKENS)
    b = as_array(batch, "batch", maximum=MAX_BATCH)
    read = visibility.read_tokens(lens, q_len)
    pages = np.ceil(read / page_size)
    busy_splits = np.minimum(num_splits, np.ceil(pages / np.ceil(pages / num_splits)))
    units = b * heads.num_kv_heads * busy_splits
    longest = np.minimum(np.ceil(pages / num_splits) * page_size, read)
    pages_read = b * _pages_read(lens, read, page_size)
    return _decode(heads, b * read, b * visibility.pairs(q_len, lens), pages_read, b, q_len, num_splits, units,
                   longest, num_sms, units_per_sm, dtype, kv_dtype, sinks)


def best_splits(make_cost: Callable[[int], DecodeCost], limit: int, stop_when_full: bool = False) -> int:
    """The split count in 1..limit whose step is fastest in units of 1 / beta: attention bytes / fraction(S) +
    merge bytes (the smallest S on ties). `make_cost(S)` prices the step with S splits. `stop_when_full`: stop at
    the first S whose launch fills the GPU (fraction 1), for costs whose bytes and merge bytes grow with S
    (paged_decode's: no larger S can be faster, so the answer is the same)."""
    times = []
    for s in range(1, max(1, limit) + 1):
        cost = make_cost(s)
        t = float(cost.attention.hbm_bytes / cost.attention.parallel_fraction)
        if cost.merge is not None:
            t += float(cost.merge.hbm_bytes)
        times.append(t)
        if stop_when_full and float(cost.attention.parallel_fraction) >= 1.0:
            break
    return first_fastest(times)


def first_fastest(times) -> int:
    """1 + the index of the fastest of `times` (those of S = 1, 2, ...), the smallest S on ties (within 1e-9)."""
    best, best_time = 1, np.inf
    for s, t in enumerate(times, start=1):
        if t < best_time * (1 - 1e-9):
            best, best_time = s, t
    return best


def split_times(heads: AttentionHeads, context_lens: ArrayLike | DecodeBatch, limit: int, num_sms: int | None,
                page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
                units_per_sm: float = 1.0, q_len: int = 1, visibility: Visibility = FULL_VISIBILITY) -> np.ndarray:
    """best_splits' measure of paged decode for S = 1..limit at once, [limit] in units of 1 / beta: attention bytes /
    fraction(S) + merge bytes. paged_decode's and merge_splits' arithmetic in the same order over an array of S,
    so the same numbers as pricing each S (tests/cost/test_paged.py)."""
    heads = check_heads(heads, "split_times")
    page_size, _, q_len, dtype, kv_dtype, num_sms, units_per_sm, batch = decode_arguments(
        context_lens, page_size, dtype, kv_dtype, 1, num_sms, units_per_sm, q_len)
    splits = np.arange(1, check_splits(max(1, limit)) + 1, dtype=np.float64)              # [K]
    read = visibility.read_tokens(batch.lengths, q_len)                                   # [U]
    span = np.ceil(np.ceil(read / page_size)[:, None] / splits) * page_size              # [U, K] a split's tokens
    longest = np.minimum(read[:, None], span).max(axis=0)                                # [K]: a first split
    tokens = np.float64((read * batch.counts).sum())
    fraction = parallel_fraction(heads.num_kv_heads * tokens, longest, num_sms, units_per_sm)
    pages = (_pages_read(batch.lengths, read, page_size) * batch.counts).sum()
    b, h, d, d_v = np.float64(batch.size), heads.num_qo_heads, heads.head_dim, heads.value_dim
    rows = b * q_len * h
    fixed = heads.kv_bytes_per_token(kv_dtype) * tokens + INT32_BYTES * (pages + b) + rows * d * dtype.bytes
    split = splits > 1
    attention = fixed + np.where(split, rows * splits * (d_v + 1) * FP32_BYTES, rows * d_v * dtype.bytes)
    merge = rows * splits * (d_v + 1) * FP32_BYTES + rows * (d_v * dtype.bytes + 0)        # merge_splits' read + write
    return attention / fraction + np.where(split, merge, 0.0)


def fastest_splits(heads: AttentionHeads, context_lens: ArrayLike | DecodeBatch, limit: int, num_sms: int | None,
                   page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
                   units_per_sm: float = 1.0, q_len: int = 1, visibility: Visibility = FULL_VISIBILITY) -> int:
    """best_splits over paged decode's split counts 1..limit, every count priced at once (split_times)."""
    return first_fastest(split_times(heads, context_lens, limit, num_sms, page_size, dtype, kv_dtype, units_per_sm,
                                     q_len, visibility).tolist())


def recommend_splits(heads: AttentionHeads, context_lens: ArrayLike | DecodeBatch, num_sms: int | None,
                     page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
                     units_per_sm: float = 1.0, q_len: int = 1, visibility: Visibility = FULL_VISIBILITY) -> int:
    """The split count with the smallest predicted memory time, between 1 and MAX_SPLITS.

    Time of a step with S splits, in units of 1 / beta: attention bytes / fraction(S) + merge bytes. Past
    the point where the units fill the GPU, more splits only add partial traffic, so the smallest
    S that fills it wins (the K/V, Q and block-table bytes do not change with S, the partials and the merge's bytes
    grow with it; every S is priced at once, fastest_splits); with a full GPU already (a large batch), S = 1. `num_sms` None
    (a GPU spec that does not give its SMs): every launch is taken to fill the GPU, so S = 1.
    """
    heads = check_heads(heads, "recommend_splits")
    num_sms, units_per_sm = check_parallelism(num_sms, units_per_sm)
    batch = decode_batch(context_lens)
    read = float(visibility.read_tokens(batch.max_len, q_len))
    limit = int(min(MAX_SPLITS, np.ceil(read / check_page_size(page_size))))
    return fastest_splits(heads, batch, limit, num_sms, page_size, dtype, kv_dtype, units_per_sm, q_len, visibility)


def default_splits(heads: AttentionHeads, context_lens: ArrayLike | DecodeBatch, num_sms: int, page_size: int = 16,
                   dtype: DType = DType.fp16, kv_dtype: DType | None = None, units_per_sm: float = 1.0) -> int:
    """The split count a report's split-KV row shows when none is asked for: the recommended one, at least 2
    (so the row shows split-KV even where it does not pay)."""
    heads = check_heads(heads, "default_splits")
    return max(2, recommend_splits(heads, context_lens, num_sms, page_size, dtype, kv_dtype, units_per_sm))

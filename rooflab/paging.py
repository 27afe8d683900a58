"""Block accounting for a paged KV cache, prefix reuse, and continuous batching rounds.

Source: the chapter "FlashAttention and PagedAttention: what does each save?", "PagedAttention separates
logical order from physical placement" (blocks, slots, tail waste), the prefix-reuse
arithmetic (page alignment of a common prefix) and "Paging, continuous batching, and
chunked prefill are different mechanisms" (static against refilled rounds).
Counts are in tokens and blocks; multiply by a model's KV bytes per token for bytes.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .cost.common import whole_number
from .errors import InputError, shown
from .limits import MAX_PAGE_SIZE, MAX_TOKENS
from .units import INT32_BYTES


def _lengths(lengths: Sequence[int], name: str = "request lengths", minimum: int = 1) -> list[int]:
    """Whole numbers in [minimum, MAX_TOKENS]; text, NaN or 1e30 is an InputError naming `name` (plain ints, the
    common case, are checked in one pass; anything else one by one)."""
    if isinstance(lengths, (str, bytes, bytearray)) or not hasattr(lengths, "__iter__") \
            or getattr(lengths, "ndim", 1) == 0:      # a 0-d NumPy array has __iter__ but iterating it is a TypeError
        raise InputError(f"{name} must be a list of whole numbers, got {shown(lengths)}")
    mask = getattr(lengths, "mask", None)            # a masked array's list() keeps the masked entries' data
    if mask is not None and bool(np.any(mask)):
        raise InputError(f"{name} has {int(np.sum(mask))} masked (missing) value(s); give numbers only")
    items = list(lengths)
    if not items:
        raise InputError(f"{name} must not be empty")
    if all(type(n) is int and minimum <= n <= MAX_TOKENS for n in items):
        return items
    return [whole_number(n, name, minimum=minimum, maximum=MAX_TOKENS) for n in items]


def _page(page_size: int) -> int:
    return whole_number(page_size, "page size", maximum=MAX_PAGE_SIZE)   # 10**400 was taken


@dataclass(frozen=True)
class BlockUsage:
    """Physical blocks a set of requests holds, and the slots left empty in their tail blocks."""

    tokens: int
    blocks: int
    page_size: int

    @property
    def slots(self) -> int:
        return self.blocks * self.page_size

    @property
    def unused_slots(self) -> int:
        """Internal fragmentation: empty slots in each request's last, partly filled block."""
        return self.slots - self.tokens

    @property
    def block_table_bytes(self) -> int:
        """One int32 physical block id per logical block."""
        return self.blocks * INT32_BYTES


def block_usage(lengths: Sequence[int], page_size: int) -> BlockUsage:
    """Blocks for requests of the given token counts: sum of ceil(L_i / page)."""
    lens = _lengths(lengths)
    page = _page(page_size)
    return BlockUsage(sum(lens), sum(-(-n // page) for n in lens), page)


@dataclass(frozen=True)
class Fragmentation:
    """Paging against reserving a contiguous region of `max_len` tokens per request."""

    tokens: int
    paged_slots: int
    contiguous_slots: int

    @property
    def paged_waste(self) -> float:
        """Share of the paged slots that hold no token."""
        return 1 - self.tokens / self.paged_slots

    @property
    def contiguous_waste(self) -> float:
        return 1 - self.tokens / self.contiguous_slots

    @property
    def saving(self) -> float:
        """Slots paging saves, as a share of the contiguous reservation."""
        return 1 - self.paged_slots / self.contiguous_slots


def fragmentation(lengths: Sequence[int], page_size: int, max_len: int) -> Fragmentation:
    """Internal fragmentation of paging against a contiguous max-length reservation per request."""
    lens = _lengths(lengths)
    max_len = whole_number(max_len, "max_len", maximum=MAX_TOKENS)
    if max_len < max(lens):
        raise InputError(f"max_len {max_len} is shorter than the longest request ({max(lens)} tokens)")
    usage = block_usage(lens, page_size)
    return Fragmentation(usage.tokens, usage.slots, max_len * len(lens))


@dataclass(frozen=True)
class SharedPrefix:
    """Blocks when N requests share a common prefix: full prefix blocks stored once, reference-counted."""

    shared_blocks: int
    ref_count: int
    private_blocks: int
    unshared_blocks: int
    page_size: int = 1

    @property
    def total_blocks(self) -> int:
        return self.shared_blocks + self.private_blocks

    @property
    def saved_blocks(self) -> int:
        return self.unshared_blocks - self.total_blocks

    @property
    def saved_slots(self) -> int:
        """Token slots sharing frees; times a model's KV bytes per token, the bytes it frees."""
        return self.saved_blocks * self.page_size

    @property
    def saving(self) -> float:
        """Share of the unshared blocks that sharing frees."""
        return self.saved_blocks / self.unshared_blocks


def shared_prefix_blocks(prefix_len: int, suffix_lens: Sequence[int], page_size: int) -> SharedPrefix:
    """Count blocks with prefix sharing: only whole blocks of the prefix are shared.

    The prefix's partly filled last block cannot be shared (a request writing into it would
    need copy-on-write), so each request keeps its own copy of it, followed by its suffix.
    """
    suffixes = _lengths(suffix_lens, "suffix lengths", minimum=0)
    page = _page(page_size)
    prefix_len = whole_number(prefix_len, "prefix length", minimum=0, maximum=MAX_TOKENS)
    shared = prefix_len // page
    tail = prefix_len - shared * page
    private = sum(-(-(tail + s) // page) for s in suffixes)
    unshared = sum(-(-(prefix_len + s) // page) for s in suffixes)
    return SharedPrefix(shared, len(suffixes), private, unshared, page)


def reusable_prefix_len(common_prefix_len: int, page_size: int) -> int:
    """Tokens of a common prefix a full-block cache can reuse: the prefix aligned down to a page.

    A 7-token prefix reuses 7 tokens at page size 1, 4 at page size 4, 0 at page size 16.
    """
    common_prefix_len = whole_number(common_prefix_len, "common prefix length", minimum=0, maximum=MAX_TOKENS)
    page = _page(page_size)
    return (common_prefix_len // page) * page


def static_batching_rounds(steps: Sequence[int], slots: int) -> int:
    """Rounds when requests run in fixed batches of `slots`, each batch as long as its longest request."""
    work = _lengths(steps, "decode steps")
    slots = _slots(slots)
    return sum(max(work[i:i + slots]) for i in range(0, len(work), slots))


def continuous_batching_rounds(steps: Sequence[int], slots: int) -> int:
    """Rounds when a finished request's slot is refilled from the queue at the next round.

    Each round every running request advances one decode step; requests join in arrival order. Counted by
    events, not round by round (a request of 10**9 steps would take 10**9 iterations): a request joining after
    t rounds with s steps frees its slot after round t + s, and the queue refills at the earliest such round.
    """
    queue = _lengths(steps, "decode steps")
    slots = _slots(slots)
    finishing: list[int] = []           # a heap of the rounds after which the running requests finish
    now = 0
    for work in queue:
        if len(finishing) == slots:
            now = heapq.heappop(finishing)
        heapq.heappush(finishing, now + work)
    return max(finishing)


def _slots(slots: int) -> int:
    return whole_number(slots, "batch slots")


def pages_for(tokens: int, page_size: int) -> int:
    tokens = whole_number(tokens, "tokens", minimum=0, maximum=MAX_TOKENS)
    return -(-tokens // _page(page_size))

"""Tests of rooflab/paging.py: pages, blocks and slots (chapter 2, "FlashAttention and PagedAttention: what
does each save?"), reusable and shared prefixes, continuous batching counted by events, paging never reserving
more than contiguous allocation, and bad arguments named.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rooflab import load_model
from rooflab.cost.cascade import cascade_decode
from rooflab.cost.paged import paged_decode
from rooflab.errors import InputError
from rooflab.paging import (block_usage, continuous_batching_rounds, fragmentation, reusable_prefix_len,
                            shared_prefix_blocks, static_batching_rounds)


LLAMA = load_model("llama-3-8b")


def test_page_example_blocks_slots_unused():
    # chapter 2, "PagedAttention separates logical order from physical placement": page size 4,
    # requests of 5 and 3 tokens: three blocks, 12 slots for eight tokens, four unused tail slots
    usage = block_usage([5, 3], 4)
    assert (usage.blocks, usage.slots, usage.tokens, usage.unused_slots) == (3, 12, 8, 4)
    assert usage.block_table_bytes == 12


@pytest.mark.parametrize("page, reused", [(1, 7), (4, 4), (16, 0)])
def test_reusable_prefix_under_page_alignment(page, reused):
    # chapter 2, "vLLM versus SGLang": a seven-token common prefix keeps 7 positions at page size 1,
    # aligns down to 4 at page size 4, and fills no block (nothing reused) at 16
    assert reusable_prefix_len(7, page) == reused


def test_continuous_batching_rounds():
    # chapter 2, "Paging, continuous batching, and chunked prefill are different mechanisms": two slots,
    # requests needing 4, 1 and 2 decode steps: six rounds static, four with refilling
    assert static_batching_rounds([4, 1, 2], slots=2) == 6
    assert continuous_batching_rounds([4, 1, 2], slots=2) == 4


def test_shared_prefix_counted_once():
    # 3 requests sharing a 10-token prefix, page 4: two full prefix blocks shared; each keeps its own
    # copy of the 2-token prefix tail followed by its suffix
    shared = shared_prefix_blocks(10, [3, 5, 0], 4)
    assert (shared.shared_blocks, shared.ref_count) == (2, 3)
    assert shared.private_blocks == 2 + 2 + 1
    assert shared.unshared_blocks == 4 + 4 + 3
    assert shared.saved_blocks == 4


# --- invariants -------------------------------------------------------------------------

lens_st = st.lists(st.integers(1, 100_000), min_size=1, max_size=64)
page_st = st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256])


@settings(max_examples=200, deadline=None)
@given(lens_st, page_st, st.integers(0, 50_000))
def test_paging_never_reserves_more_than_contiguous(lens, page, extra):
    # a contiguous reservation must hold the longest request; paging rounds each request up to a page
    max_len = -(-max(lens) // page) * page + extra
    frag = fragmentation(lens, page, max_len)
    assert frag.paged_slots <= frag.contiguous_slots
    assert frag.paged_slots - frag.tokens < len(lens) * page   # waste confined to the tail blocks


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), page_st)
def test_reuse_never_exceeds_common_prefix(prefix, page):
    reused = reusable_prefix_len(prefix, page)
    assert 0 <= reused <= prefix and reused % page == 0 and prefix - reused < page


# --- bad input --------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: paged_decode(LLAMA.heads, [100], page_size=0),
    lambda: paged_decode(LLAMA.heads, [100], page_size=-16),
    lambda: paged_decode(LLAMA.heads, []),
    lambda: paged_decode(LLAMA.heads, [100, -1]),
    lambda: paged_decode(LLAMA.heads, [10.5]),
    lambda: paged_decode(LLAMA.heads, [100], num_splits=0),
    lambda: block_usage([5, 3], 0),
    lambda: block_usage([], 4),
    lambda: reusable_prefix_len(-1, 4),
    lambda: continuous_batching_rounds([1, 2], 0),
    lambda: cascade_decode(LLAMA.heads, 0, [1]),
    lambda: fragmentation([10], 4, 5),
])
def test_bad_decode_input_raises(call):
    with pytest.raises(InputError):
        call()


def test_shared_prefix_saved_slots():
    # flash-and-paged, prefix reuse: only whole pages of the prefix are shared
    s = shared_prefix_blocks(7, [1, 1], page_size=4)
    assert (s.shared_blocks, s.private_blocks, s.unshared_blocks) == (1, 2, 4)
    assert s.saved_blocks == 1 and s.saved_slots == 4 and s.saving == pytest.approx(0.25)


def test_continuous_batching_is_counted_by_events_not_rounds():
    """[10**9] * 5 on one slot looped 5 * 10**9 rounds; the event count gives the same answer at once."""
    from fuzz_support import bounded
    from rooflab.paging import continuous_batching_rounds

    with bounded():         # a watchdog for a loop of 5e9 rounds, not a speed bound
        assert continuous_batching_rounds([10**9] * 5, 1) == 5 * 10**9
    assert continuous_batching_rounds([3, 1, 1, 2], 2) == 4


@pytest.mark.parametrize("call, named", [
    ("pages_for(-1, 16)", "tokens"), ("pages_for(10.5, 16)", "tokens"), ("pages_for(float('nan'), 16)", "tokens"),
    ("block_usage('abc', 16)", "request lengths"), ("block_usage([10**30], 16)", "request lengths"),
    ("continuous_batching_rounds([float('nan')], 1)", "decode steps"),
    ("fragmentation([100], 16, 0)", "max_len"), ("shared_prefix_blocks(-1, [10], 16)", "prefix length"),
    ("shared_prefix_blocks(1.5, [10], 16)", "prefix length"), ("reusable_prefix_len(None, 16)", "prefix length"),
])
def test_paging_arguments_are_named(call, named):
    """NaN raised ValueError from int(); 'abc' was read character by character; -1 and 10.5 tokens were answered."""
    import rooflab.paging as paging
    from rooflab.errors import InputError

    with pytest.raises(InputError, match=named):
        eval(call, vars(paging))

"""Decode, paging, split-KV, the merge and cascade: golden figures from the chapters, and invariants.

Citations: "chapter 1" is the chapter "Naive attention and the online softmax",
"chapter 2" is the chapter "FlashAttention and PagedAttention: what does each save?".
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflab import AttentionHeads, DType, load_gpu, load_model
from rooflab.cost.cascade import breakeven_prefix_len, cascade_decode
from rooflab.cost.merge import merge_pair, merge_splits
from rooflab.cost.model import decode_step, experts_touched
from rooflab.cost.paged import paged_decode, paged_decode_uniform, recommend_splits
from rooflab.cost.parallel import parallel_fraction, schedule_fraction
from rooflab.errors import InputError
from rooflab.paging import (block_usage, continuous_batching_rounds, fragmentation, reusable_prefix_len,
                            shared_prefix_blocks, static_batching_rounds)
from rooflab.roofline import Ceilings, predict

LLAMA = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")


# --- golden figures ---------------------------------------------------------------------

@pytest.mark.parametrize("lens", [[1], [2500], [8192] * 128, [17, 5000, 100, 32768]])
def test_decode_intensity_is_4_for_llama3_8b_fp16(lens):
    # chapter 1, "Keep this in proportion": decode attention has "a fixed intensity of
    # I = 2h/(b h_kv) = 4 FLOP/byte, invariant in both context length and batch size"
    cost = paged_decode(LLAMA, lens)
    assert float(cost.flops / cost.kv_bytes) == pytest.approx(4.0, rel=1e-12)
    # the block table, lengths, Q and O move the whole-kernel figure by well under 1% once L >= 128
    if min(lens) >= 128:
        assert float(cost.flops / cost.hbm_bytes) == pytest.approx(4.0, rel=1e-2)


def test_fp8_kv_doubles_decode_intensity():
    cost = paged_decode(LLAMA, [4096] * 8, kv_dtype=DType.fp8_e4m3)
    assert float(cost.flops / cost.kv_bytes) == pytest.approx(8.0)


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


def test_merge_bytes_flops_intensity():
    # chapter 1, "Total HBM traffic for the merge, per token-head": 776 bytes at d_h = 128 in bf16,
    # roughly 390 FLOPs, I ~ 0.5 FLOP/byte
    cost = merge_pair(1, 1, 128, DType.bf16)
    assert float(cost.hbm_bytes) == 776
    assert float(cost.flops) == pytest.approx(390, abs=5)
    assert float(cost.flops / cost.hbm_bytes) == pytest.approx(0.5, abs=0.01)
    # writing the merged LSE adds one fp32 per (token, head)
    assert float(merge_pair(1, 1, 128, DType.bf16, write_lse=True).hbm_bytes) == 780


def test_continuous_batching_rounds():
    # chapter 2, "Paging, continuous batching, and chunked prefill are different mechanisms": two slots,
    # requests needing 4, 1 and 2 decode steps: six rounds static, four with refilling
    assert static_batching_rounds([4, 1, 2], slots=2) == 6
    assert continuous_batching_rounds([4, 1, 2], slots=2) == 4


def test_kv_bytes_per_token():
    # capacity planning: 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 128 KiB for Llama-3-8B fp16
    assert LLAMA.kv_bytes_per_token(DType.fp16) == 128 * 1024


def test_attention_share_of_decode_flops():
    # chapter 1, "Keep this in proportion": attention is "about 7% of decode FLOPs for Llama-3-8B at 2.5k context"
    step = decode_step(LLAMA, 2500)
    assert step.attention_flop_share == pytest.approx(0.07, abs=0.01)
    assert step.linear_flops_per_token == pytest.approx(2 * 8.03e9, rel=1e-3)  # about 2 x parameters
    assert step.weight_bytes_per_step == LLAMA.total_parameters * 2


def test_one_sequence_cannot_fill_132_sms():
    # one sequence with 8 KV heads cannot fill 132 SMs -> 8/132 of the bandwidth; recommend a split
    cost = paged_decode(LLAMA, [32768], num_sms=H100.num_sms)
    assert float(cost.parallel_fraction) == pytest.approx(8 / 132)
    splits = recommend_splits(LLAMA, [32768], H100.num_sms)
    assert splits == 17  # the fewest splits with 8 x S >= 132 work units
    assert float(paged_decode(LLAMA, [32768], num_splits=splits, num_sms=H100.num_sms).parallel_fraction) == 1.0


def test_large_batch_needs_no_split():
    assert recommend_splits(LLAMA, [8192] * 128, H100.num_sms) == 1


def test_split_kv_pays_at_batch_1():
    # in the model (the parallelism term), not in the floor: one sequence's 8 units keep 8 of 132 SMs busy
    from rooflab.predict import model_time

    roofs = Ceilings.of(H100, DType.fp16)
    plain = model_time(paged_decode(LLAMA, [32768], num_sms=H100.num_sms), roofs)
    split = model_time(paged_decode(LLAMA, [32768], num_splits=17, num_sms=H100.num_sms), roofs)
    assert float(split) < float(plain) / 10
    # the physical floors: splitting never pays (it only adds the partials' traffic)
    floor_plain = predict(paged_decode(LLAMA, [32768], num_sms=H100.num_sms), roofs).t_floor_s
    floor_split = predict(paged_decode(LLAMA, [32768], num_splits=17, num_sms=H100.num_sms), roofs).t_floor_s
    assert float(floor_split) > float(floor_plain)


def test_mixture_of_experts_reads_more_experts_with_batch():
    mixtral = load_model("mixtral-8x7b")
    assert experts_touched(mixtral, 1) == pytest.approx(2)
    assert experts_touched(mixtral, 1000) == pytest.approx(8)
    one = decode_step(mixtral, 1000, 1).weight_bytes_per_step
    many = decode_step(mixtral, 1000, 64).weight_bytes_per_step
    assert one == pytest.approx(mixtral.active_parameters * 2, rel=1e-3)
    assert many == pytest.approx(mixtral.total_parameters * 2, rel=1e-3)


def test_cascade_reads_the_prefix_once():
    n, prefix, suffix = 32, 4096, 100
    c = cascade_decode(LLAMA, prefix, [suffix] * n)
    kv_token = 2 * 8 * 128 * 2   # one layer, fp16
    # plain reads the prefix n times, cascade once: the saving is (n - 1) prefix tokens, less the overhead
    assert float(c.saved_bytes) == pytest.approx((n - 1) * prefix * kv_token, rel=0.01)
    assert float(c.saved_bytes) < (n - 1) * prefix * kv_token
    assert float(c.flops) == float(paged_decode(LLAMA, [prefix + suffix] * n).flops)


def test_cascade_breakeven():
    p = breakeven_prefix_len(LLAMA, 8)
    assert float(cascade_decode(LLAMA, p, [1] * 8).saved_bytes) > 0
    assert float(cascade_decode(LLAMA, p - 1, [1] * 8).saved_bytes) <= 0
    assert breakeven_prefix_len(LLAMA, 1) == 0


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


@settings(max_examples=100, deadline=None)
@given(lens_st, page_st)
def test_split_kv_traffic_grows_with_split_count(lens, page):
    bytes_by_splits = [float(paged_decode(LLAMA, lens, page, num_splits=s).hbm_bytes) for s in (1, 2, 4, 8, 16)]
    assert all(a < b for a, b in zip(bytes_by_splits, bytes_by_splits[1:]))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 100_000), st.integers(1, 128), st.sampled_from([64, 128, 256]),
       st.sampled_from([DType.fp16, DType.bf16, DType.fp32]))
def test_merge_bytes_scale_with_tokens_heads_and_head_dim(tokens, heads, d, dtype):
    cost = float(merge_pair(tokens, heads, d, dtype).hbm_bytes)
    assert cost == tokens * heads * (3 * d * dtype.bytes + 8)
    assert float(merge_pair(2 * tokens, heads, d, dtype).hbm_bytes) == 2 * cost


@settings(max_examples=100, deadline=None)
@given(lens_st, page_st)
def test_uniform_and_ragged_agree(lens, page):
    length = lens[0]
    ragged = paged_decode(LLAMA, [length] * len(lens), page, num_sms=132, num_splits=3)
    uniform = paged_decode_uniform(LLAMA, length, len(lens), page, num_sms=132, num_splits=3)
    assert float(uniform.hbm_bytes) == pytest.approx(float(ragged.hbm_bytes), rel=1e-12)
    assert float(uniform.parallel_fraction) == pytest.approx(float(ragged.parallel_fraction), rel=1e-12)


def test_parallel_fraction_bounds():
    assert parallel_fraction(8 * 100, 100, 132) == pytest.approx(8 / 132)
    assert parallel_fraction(1000 * 100, 100, 132) == 1.0
    assert parallel_fraction(1, 1, None) == 1.0
    # a ragged batch is held back by its longest unit
    assert parallel_fraction(200 + 10 * 10, 200, 4) == pytest.approx(300 / 800)


def test_s_way_merge_reads_all_partials():
    cost = merge_splits(32, 4, 128, DType.fp16)
    assert float(cost.hbm_bytes) == 32 * (4 * 129 * 4 + 128 * 2)


# --- bad input --------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: paged_decode(LLAMA, [100], page_size=0),
    lambda: paged_decode(LLAMA, [100], page_size=-16),
    lambda: paged_decode(LLAMA, []),
    lambda: paged_decode(LLAMA, [100, -1]),
    lambda: paged_decode(LLAMA, [10.5]),
    lambda: paged_decode(LLAMA, [100], num_splits=0),
    lambda: block_usage([5, 3], 0),
    lambda: block_usage([], 4),
    lambda: reusable_prefix_len(-1, 4),
    lambda: continuous_batching_rounds([1, 2], 0),
    lambda: cascade_decode(LLAMA, 0, [1]),
    lambda: fragmentation([10], 4, 5),
])
def test_bad_decode_input_raises(call):
    with pytest.raises(InputError):
        call()


def test_heads_must_divide():
    with pytest.raises(Exception, match="multiple"):
        AttentionHeads(32, 5, 128)

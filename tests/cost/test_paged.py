"""Tests of rooflab/cost/paged.py: paged and split-KV decode.

Golden figures ("chapter 1" = the chapter "Naive attention and the online softmax"): decode intensity 4 for
Llama-3-8B in fp16 and 8 with an fp8 KV cache, one sequence that cannot fill 132 SMs, a large batch that needs no split, split-KV
traffic growing with the split count; uniform, ragged and run-length batches priced alike; workloads past
any deployment and integers past 2**64 refused with the limit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rooflab.cost.paged import DecodeBatch, paged_decode, paged_decode_uniform, recommend_splits
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.specs import AttentionHeads
from rooflab.units import DType
from support import HUGE, heads, refused


LLAMA = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")


# --- golden figures ---------------------------------------------------------------------

@pytest.mark.parametrize("lens", [[1], [2500], [8192] * 128, [17, 5000, 100, 32768]])
def test_decode_intensity_is_4_for_llama3_8b_fp16(lens):
    # chapter 1, "Keep this in proportion": decode attention has "a fixed intensity of
    # I = 2h/(b h_kv) = 4 FLOP/byte, invariant in both context length and batch size"
    cost = paged_decode(LLAMA.heads, lens)
    assert float(cost.flops / cost.kv_bytes) == pytest.approx(4.0, rel=1e-12)
    # the block table, lengths, Q and O move the whole-kernel figure by well under 1% once L >= 128
    if min(lens) >= 128:
        assert float(cost.flops / cost.hbm_bytes) == pytest.approx(4.0, rel=1e-2)


def test_fp8_kv_doubles_decode_intensity():
    cost = paged_decode(LLAMA.heads, [4096] * 8, kv_dtype=DType.fp8_e4m3)
    assert float(cost.flops / cost.kv_bytes) == pytest.approx(8.0)


def test_one_sequence_cannot_fill_132_sms():
    # one sequence with 8 KV heads cannot fill 132 SMs -> 8/132 of the bandwidth; recommend a split
    cost = paged_decode(LLAMA.heads, [32768], num_sms=H100.num_sms)
    assert float(cost.parallel_fraction) == pytest.approx(8 / 132)
    splits = recommend_splits(LLAMA.heads, [32768], H100.num_sms)
    assert splits == 17  # the fewest splits with 8 x S >= 132 work units
    assert float(paged_decode(LLAMA.heads, [32768], num_splits=splits, num_sms=H100.num_sms).parallel_fraction) == 1.0


def test_large_batch_needs_no_split():
    assert recommend_splits(LLAMA.heads, [8192] * 128, H100.num_sms) == 1


# --- invariants -------------------------------------------------------------------------

lens_st = st.lists(st.integers(1, 100_000), min_size=1, max_size=64)
page_st = st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256])


@settings(max_examples=100, deadline=None)
@given(lens_st, page_st)
def test_split_kv_traffic_grows_with_split_count(lens, page):
    bytes_by_splits = [float(paged_decode(LLAMA.heads, lens, page, num_splits=s).hbm_bytes) for s in (1, 2, 4, 8, 16)]
    assert all(a < b for a, b in zip(bytes_by_splits, bytes_by_splits[1:]))


@settings(max_examples=100, deadline=None)
@given(lens_st, page_st)
def test_uniform_and_ragged_agree(lens, page):
    length = lens[0]
    ragged = paged_decode(LLAMA.heads, [length] * len(lens), page, num_sms=132, num_splits=3)
    uniform = paged_decode_uniform(LLAMA.heads, length, len(lens), page, num_sms=132, num_splits=3)
    assert float(uniform.hbm_bytes) == pytest.approx(float(ragged.hbm_bytes), rel=1e-12)
    assert float(uniform.parallel_fraction) == pytest.approx(float(ragged.parallel_fraction), rel=1e-12)


def test_run_length_batch_prices_exactly_like_the_list():
    lens = [17, 900, 4096, 900, 17, 30000]
    heads = AttentionHeads(32, 8, 128)
    for splits in (1, 4, 17):
        a = paged_decode(heads, lens, 16, num_splits=splits, num_sms=132)
        b = paged_decode(heads, DecodeBatch(np.array([17.0, 900, 4096, 30000]), np.array([2.0, 2, 1, 1])), 16,
                         num_splits=splits, num_sms=132)
        assert float(a.hbm_bytes) == float(b.hbm_bytes) and float(a.parallel_fraction) == float(b.parallel_fraction)
    assert recommend_splits(heads, lens, 132) == recommend_splits(heads, DecodeBatch(
        np.array([17.0, 900, 4096, 30000]), np.array([2.0, 2, 1, 1])), 132)


@pytest.mark.parametrize("call, needle", [
    (lambda h: paged_decode(h, [8192], num_splits=10**9), "number of splits"),
    (lambda h: paged_decode(h, [8192] * 70_000), "one by one"),
    (lambda h: paged_decode(h, [1e18]), "<="),
    (lambda h: DecodeBatch.uniform(8192, 10**19), "batch"),
])
def test_workloads_past_any_deployment_are_refused_with_the_limit(call, needle):
    with pytest.raises(InputError, match=needle):
        call(AttentionHeads(32, 8, 128))


# --- values past 2^64 through the API (item 6) --------------------------------------------------------------------

@pytest.mark.parametrize("call, name", [
    (lambda: DecodeBatch.uniform(HUGE, 4), "context length"),
    (lambda: DecodeBatch.uniform(8192, HUGE), "batch"),
    (lambda: paged_decode(heads(), [8192], HUGE), "page size"),
    (lambda: paged_decode(heads(), [8192], 16, num_splits=HUGE), "splits"),
    (lambda: paged_decode(heads(), [8192], 16, q_len=HUGE), "q_len"),
])
def test_cost_functions_refuse_ints_past_2_64(call, name):
    refused(call, name)


# --- the split search stops where the launch fills the GPU (issue 24, validate speed) ---------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40_000), min_size=1, max_size=6), st.sampled_from([1, 2, 4, 8, 32]),
       st.sampled_from([16, 64]), st.sampled_from([0.5, 1.0, 1.5, 4.0, 8.0]), st.integers(1, 3),
       st.sampled_from([None, 512, 4096]))
def test_recommended_splits_are_the_search_over_every_split_count(lens, kv_heads, page, k, q_len, window):
    """recommend_splits stops at the first split count that fills the GPU; the search over every count agrees."""
    from rooflab.cost.common import Visibility
    from rooflab.cost.paged import MAX_SPLITS, best_splits

    h, vis = AttentionHeads(32, kv_heads, 128), Visibility(window)
    lens = [max(n, q_len) for n in lens]
    limit = int(min(MAX_SPLITS, np.ceil(float(vis.read_tokens(max(lens), q_len)) / page)))
    every = best_splits(lambda s: paged_decode(h, lens, page, DType.fp16, None, s, 132, k, q_len, vis), limit)
    assert recommend_splits(h, lens, 132, page, DType.fp16, None, k, q_len, vis) == every


# --- every split count priced at once (issue 30, rooflab serve's speed) ----------------------------------------

@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 40_000), min_size=1, max_size=5), st.integers(1, 300), st.sampled_from([1, 2, 8]),
       st.sampled_from([16, 64]), st.sampled_from([None, 132, 78]), st.sampled_from([0.5, 1.0, 3.0]),
       st.integers(1, 3), st.sampled_from([(None, None), (512, None), (None, 2048)]),
       st.sampled_from([None, DType.fp8_e4m3]), st.integers(1, 64))
def test_split_times_are_each_split_count_priced_alone(lens, copies, kv_heads, page, sms, k, q_len, window_chunk,
                                                       kv_dtype, limit):
    """split_times is paged_decode's own arithmetic over an array of S: the same numbers, to the last bit, so
    fastest_splits answers what best_splits over paged_decode answers, ties included."""
    from rooflab.cost.common import Visibility
    from rooflab.cost.paged import best_splits, fastest_splits, split_times

    h, vis = AttentionHeads(32, kv_heads, 128), Visibility(*window_chunk)
    batch = DecodeBatch(np.array([float(max(n, q_len)) for n in lens]), np.full(len(lens), float(copies)))
    times = split_times(h, batch, limit, sms, page, DType.bf16, kv_dtype, k, q_len, vis)
    alone = []
    for s in range(1, limit + 1):
        cost = paged_decode(h, batch, page, DType.bf16, kv_dtype, s, sms, k, q_len, vis)
        alone.append(float(cost.attention.hbm_bytes / cost.attention.parallel_fraction)
                     + (float(cost.merge.hbm_bytes) if cost.merge is not None else 0.0))
    assert times.tolist() == alone
    every = best_splits(lambda s: paged_decode(h, batch, page, DType.bf16, kv_dtype, s, sms, k, q_len, vis), limit)
    assert fastest_splits(h, batch, limit, sms, page, DType.bf16, kv_dtype, k, q_len, vis) == every


@pytest.mark.parametrize("model, tp", [("llama-3-70b", 8), ("gemma-2-9b", 1), ("llama-4-scout", 4), ("qwen3-32b", 2)])
def test_a_layer_types_split_count_is_the_search_over_every_count(model, tp):
    """cost.layers.layer_splits prices every count at once for paged layers: the answer of pricing each with
    layer_decode, over the step table's decode grid."""
    from rooflab.cost.layers import layer_decode, layer_splits, layer_walk, split_limit
    from rooflab.cost.paged import best_splits

    spec = load_model(model)
    for name, layer, _ in layer_walk(spec):
        for decodes in (1, 3, 17, 256):
            for length in (100, 1500, 9000, 60_000):
                batch = DecodeBatch.uniform(length, decodes)

                def price(s, name=name, batch=batch):
                    return layer_decode(spec, name, batch, 16, DType.bf16, DType.fp8_e4m3, s, 1, H100.num_sms,
                                        H100.units_per_sm, tp)

                every = best_splits(price, split_limit(spec, name, batch, 16))
                assert layer_splits(spec, name, batch, H100.num_sms, 16, DType.bf16, DType.fp8_e4m3,
                                    H100.units_per_sm, tensor_parallel=tp) == every

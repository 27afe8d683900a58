"""Tests of rooflab/cost/naive.py: the materialised-S prefill cost.

Golden figures for one layer of Llama-3-8B on an H100 SXM in fp16, T = 8192 unless stated, derived in the
chapter "Naive attention and the online softmax" (cited "chapter 1, <passage>"): the S tensor, the three-kernel
traffic (16.156 GiB), intensity 63 (4096 without GQA sharing), per-head figures and the 32k prefill that does
not fit; invariants across random shapes (causal halves the FLOPs, costs linear in batch, vectorised calls
equal scalar ones); the naive ceiling (with tensor parallelism, per GPU); bad workloads refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rooflab.cost.naive import naive_ceiling, naive_max_seq_len, naive_prefill
from rooflab.errors import InputError
from rooflab.limits import MAX_BATCH
from rooflab.load import load_gpu, load_model
from rooflab.specs import AttentionHeads
from rooflab.units import DType, GB, GiB
from support import HUGE, refused


# The chapter prints three or four significant figures; compare at that precision.
REL = 5e-4


@pytest.mark.parametrize("seq_len, gib", [(8192, 4.00), (32768, 64.0)])
def test_s_size(llama, seq_len, gib):
    # chapter 1, "At T = 8192 ... Four gibibytes" and "32 x 32768^2 x 2 = 64.0 GiB for S alone"
    cost = naive_prefill(llama.heads, seq_len)
    assert float(cost.s_bytes) / GiB == pytest.approx(gib, rel=REL)
    assert float(cost.p_bytes) == float(cost.s_bytes)  # P is a second allocation of the same size
    assert float(cost.peak_extra_bytes) / GiB == pytest.approx(2 * gib, rel=REL)


def test_naive_traffic_16_156_gib(llama):
    # chapter 1, three-kernel compulsory traffic at T = 8192: 16.156 GiB per layer
    assert float(naive_prefill(llama.heads, 8192).hbm_bytes) / GiB == pytest.approx(16.156, rel=REL)


def test_intensity_materialised_63(llama):
    # chapter 1, "I_materialised ... 63"
    cost = naive_prefill(llama.heads, 8192)
    assert round(float(cost.flops / cost.hbm_bytes)) == 63


def test_intensity_without_gqa_sharing_is_4096():
    # chapter 1, "count per head without that sharing and you get T/b = 4096 instead of 6553.6"
    mha = naive_prefill(AttentionHeads(32, 32, 128), 8192)
    assert float(mha.flops / mha.qkvo_bytes) == pytest.approx(4096, rel=1e-9)


def test_per_head_figures():
    # chapter 1, "the per-head figure (34.36 GFLOP over 545.3 MB) and the per-layer figure are the same 63"
    head = naive_prefill(AttentionHeads(1, 1, 128), 8192)
    assert float(head.flops) / 1e9 == pytest.approx(34.36, rel=REL)
    assert float(head.hbm_bytes) / 1e6 == pytest.approx(545.3, rel=REL)
    assert round(float(head.flops / head.hbm_bytes)) == 63


def test_32k_naive_prefill_does_not_fit(llama, h100):
    # chapter 1, "On an 80 GB H100 that already holds 15 GB of Llama-3-8B weights, a single
    # 32k-token sequence cannot be prefilled by the textbook algorithm at all"
    weights = llama.total_parameters * DType.fp16.bytes
    assert weights / GiB == pytest.approx(15, abs=0.1)
    assert 80 * GB <= h100.hbm_capacity_bytes <= 80 * GiB
    assert float(naive_prefill(llama.heads, 32768).working_set_bytes) > h100.hbm_capacity_bytes - weights
    longest = naive_max_seq_len(llama, h100)
    assert 8192 < longest < 32768
    # the ceiling is tight: one more token does not fit
    free = h100.hbm_capacity_bytes - weights
    assert float(naive_prefill(llama.heads, longest).working_set_bytes) <= free
    assert float(naive_prefill(llama.heads, longest + 1).working_set_bytes) > free


heads_st = st.builds(
    lambda kv, group, d: AttentionHeads(kv * group, kv, d),
    st.integers(1, 16), st.sampled_from([1, 2, 4, 8]), st.sampled_from([64, 80, 96, 128, 256]),
)
dtype_st = st.sampled_from([DType.fp16, DType.bf16, DType.fp32, DType.fp8_e4m3])
seq_st = st.integers(1, 200_000)
batch_st = st.integers(1, 64)


@settings(max_examples=200, deadline=None)
@given(heads_st, st.integers(64, 200_000), batch_st, dtype_st)
def test_causal_roughly_halves_flops(heads, t, b, dtype):
    full = float(naive_prefill(heads, t, b, dtype, causal=False).flops)
    causal = float(naive_prefill(heads, t, b, dtype, causal=True).flops)
    # exactly (T + 1) / (2T) of the non-causal count: the lower triangle plus the diagonal
    assert causal / full == pytest.approx((t + 1) / (2 * t), rel=1e-12)
    assert 0.5 < causal / full <= 0.51


@settings(max_examples=100, deadline=None)
@given(heads_st, seq_st, batch_st)
def test_costs_scale_linearly_with_batch(heads, t, b):
    one = naive_prefill(heads, t, 1)
    many = naive_prefill(heads, t, b)
    assert float(many.hbm_bytes) == pytest.approx(b * float(one.hbm_bytes), rel=1e-12)
    assert float(many.flops) == pytest.approx(b * float(one.flops), rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(heads_st, st.integers(1, 100_000))
def test_s_does_not_depend_on_head_dim(heads, t):
    narrow = naive_prefill(AttentionHeads(heads.num_qo_heads, heads.num_kv_heads, 64), t)
    wide = naive_prefill(AttentionHeads(heads.num_qo_heads, heads.num_kv_heads, 256), t)
    assert float(narrow.s_bytes) == float(wide.s_bytes)


def test_vectorised_over_seq_len_and_batch_matches_scalar_calls():
    heads = AttentionHeads(32, 8, 128)
    t = np.array([[1], [100], [8192], [32768]])
    b = np.array([1, 3, 16])
    grid = naive_prefill(heads, t, b, causal=True)
    assert grid.hbm_bytes.shape == (4, 3)
    for i, ti in enumerate(t[:, 0]):
        for j, bj in enumerate(b):
            scalar = naive_prefill(heads, int(ti), int(bj), causal=True)
            assert grid.hbm_bytes[i, j] == float(scalar.hbm_bytes)
            assert grid.flops[i, j] == float(scalar.flops)


@pytest.mark.parametrize("bad", [0, -5, float("nan"), []])
def test_bad_workload_raises(bad):
    with pytest.raises(InputError):
        naive_prefill(AttentionHeads(32, 8, 128), bad)


# --- naive ceiling in exact integers (item 2) ---------------------------------------------------------------------

@pytest.mark.parametrize("batch", [1, 7, 1_000_000, MAX_BATCH])
def test_naive_ceiling_is_the_longest_prefill_that_fits(llama, h100, batch):
    ceiling = naive_ceiling(llama, h100, batch)
    free = ceiling.free_bytes
    t = ceiling.max_seq_len
    if t:
        assert naive_prefill(llama.heads, t, batch).working_set_bytes <= free
    # exact: a T^2 + l T > free one token further
    assert ceiling.quadratic_bytes * (t + 1) ** 2 + ceiling.linear_bytes * (t + 1) > free


def test_naive_ceiling_golden_and_its_batch_checked(llama, h100):
    assert naive_ceiling(llama, h100).max_seq_len == naive_ceiling(llama, h100, np.int64(1)).max_seq_len
    for bad in (0, True, 1.5, "8", HUGE):
        refused(lambda: naive_ceiling(llama, h100, bad), "batch")


LLAMA8 = load_model("llama-3-8b")
LLAMA70 = load_model("llama-3-70b")
H100 = load_gpu("h100-sxm")
H200 = load_gpu("h200-sxm")


def test_naive_ceiling_with_tensor_parallel_is_per_gpu():
    limit = naive_max_seq_len(LLAMA70, H200, tensor_parallel=4)
    heads = LLAMA70.heads.shard(4)
    free = H200.hbm_capacity_bytes - LLAMA70.total_parameters * 2 / 4
    assert float(naive_prefill(heads, limit).working_set_bytes) <= free
    assert float(naive_prefill(heads, limit + 1).working_set_bytes) > free
    assert naive_max_seq_len(LLAMA8, H100, tensor_parallel=1) == 23215   # the foundation's H100 figure

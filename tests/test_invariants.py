"""Invariants of the prefill cost model across random shapes (STYLE.md habit 9)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflab import AttentionHeads, DType, load_gpu
from rooflab.cost.flash import FlashTile, choose_tile, flash_prefill
from rooflab.cost.naive import naive_prefill
from rooflab.errors import InputError
from rooflab.cost.paged import paged_decode_uniform
from rooflab.roofline import Ceilings, predict, predict_kernel

heads_st = st.builds(
    lambda kv, group, d: AttentionHeads(kv * group, kv, d),
    st.integers(1, 16), st.sampled_from([1, 2, 4, 8]), st.sampled_from([64, 80, 96, 128, 256]),
)
dtype_st = st.sampled_from([DType.fp16, DType.bf16, DType.fp32, DType.fp8_e4m3])
seq_st = st.integers(1, 200_000)
batch_st = st.integers(1, 64)


@settings(max_examples=200, deadline=None)
@given(heads_st, seq_st, batch_st, dtype_st, st.booleans())
def test_flash_flops_equal_naive_flops(heads, t, b, dtype, causal):
    naive = naive_prefill(heads, t, b, dtype, causal)
    flash = flash_prefill(heads, t, b, dtype, causal)
    assert float(flash.flops) == float(naive.flops)


@settings(max_examples=200, deadline=None)
@given(heads_st, seq_st, batch_st, dtype_st, st.booleans())
def test_flash_bytes_never_exceed_naive(heads, t, b, dtype, causal):
    naive = naive_prefill(heads, t, b, dtype, causal)
    flash = flash_prefill(heads, t, b, dtype, causal)
    assert float(flash.hbm_bytes) <= float(naive.hbm_bytes)
    # compulsory <= tiled: re-reading K and V can only add bytes
    assert float(flash.hbm_bytes) <= float(flash.hbm_bytes_tiled) * (1 + 1e-12)


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


def test_tiled_causal_reads_about_half_the_kv():
    heads = AttentionHeads(32, 8, 128)
    tile = FlashTile(128, 128)
    full = flash_prefill(heads, 8192, tile=tile)
    causal = flash_prefill(heads, 8192, causal=True, tile=tile)
    kv_full = float(full.hbm_bytes_tiled - full.hbm_bytes)
    kv_causal = float(causal.hbm_bytes_tiled - causal.hbm_bytes)
    assert kv_causal / kv_full == pytest.approx((64 + 1) / (2 * 64), rel=0.02)


@pytest.mark.parametrize("gpu, d, expected", [("h100-sxm", 128, (128, 128)), ("h100-sxm", 256, (128, 64)),
                                              ("a100-sxm-80gb", 128, (128, 128)), ("l40s", 128, (128, 64)),
                                              ("mi300x", 128, (128, 32))])
def test_tile_fits_shared_memory(gpu, d, expected):
    g = load_gpu(gpu)
    tile = choose_tile(g, d, DType.fp16)
    assert (tile.block_q, tile.block_kv) == expected
    assert tile.smem_bytes(d, DType.fp16) <= g.smem_per_sm_bytes


def test_kernel_floors_sum_to_at_least_both_roofs():
    # predict() takes the variant's floor as the sum of its launches' floors; that sum must already be at
    # least the headline compute and memory times (predict clamps only float rounding, so check before it)
    g = load_gpu("h200-sxm")
    roofs = Ceilings.of(g, DType.bf16)
    t = np.geomspace(16, 131072, 50)
    for cost in (naive_prefill(AttentionHeads(64, 8, 128), t, causal=True), flash_prefill(AttentionHeads(64, 8, 128), t),
                 paged_decode_uniform(AttentionHeads(64, 8, 128), t, 4, num_splits=8)):
        kernels = sum(predict_kernel(k, roofs).t_floor_s for k in cost.kernels)
        p = predict(cost, roofs)
        assert np.all(kernels >= p.t_compute_s * (1 - 1e-12)) and np.all(kernels >= p.t_memory_s * (1 - 1e-12))


@pytest.mark.parametrize("bad", [0, -5, float("nan"), []])
def test_bad_workload_raises(bad):
    with pytest.raises(InputError):
        naive_prefill(AttentionHeads(32, 8, 128), bad)

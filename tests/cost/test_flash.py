"""Tests of rooflab/cost/flash.py: the FlashAttention prefill cost.

Invariants across random shapes (STYLE.md habit 9): flash FLOPs equal naive FLOPs, flash bytes never exceed
naive, a tiled causal pass reads about half the KV, the tile fits shared memory; the parallel fraction; golden
figures for one layer of Llama-3-8B on an H100 SXM in fp16 ("chapter 1" = the chapter "Naive attention and the
online softmax": FLOPs per layer, compulsory intensity 6553.6); tile work counted by hand for full and windowed attention; bad
arguments refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rooflab import AttentionHeads, DType, load_gpu
from rooflab.cost.flash import FlashTile, choose_tile, flash_prefill
from rooflab.cost.naive import naive_prefill


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


HEADS = AttentionHeads(32, 8, 128)


def test_flash_parallel_fraction():
    tile = FlashTile(128, 64)
    # 32 heads x 4 query tiles = 128 units on 132 SMs
    assert float(flash_prefill(HEADS, 512, tile=tile, num_sms=132).kernel.parallel_fraction) == pytest.approx(128 / 132)
    # a long non-causal launch keeps the GPU nearly full; causal's unequal tiles leave a tail
    full = float(flash_prefill(HEADS, 16384, tile=tile, num_sms=132, units_per_sm=2).kernel.parallel_fraction)
    causal = float(flash_prefill(HEADS, 2048, causal=True, tile=tile, num_sms=132, units_per_sm=2)
                   .kernel.parallel_fraction)
    assert full > 0.95 and causal < 0.8
    # no SM count: the ideal launch of the pure roofline
    assert float(flash_prefill(HEADS, 512).kernel.parallel_fraction) == 1.0


def test_flash_fraction_is_elementwise():
    t = np.array([512, 4096])
    cost = flash_prefill(HEADS, t, tile=FlashTile(128, 64), num_sms=132)
    assert cost.kernel.parallel_fraction.shape == (2,)
    for i, ti in enumerate(t):
        one = flash_prefill(HEADS, int(ti), tile=FlashTile(128, 64), num_sms=132)
        assert cost.kernel.parallel_fraction[i] == float(one.kernel.parallel_fraction)


# The chapter prints three or four significant figures; compare at that precision.
REL = 5e-4


def test_flops_per_layer(llama):
    # chapter 1, "F = 4 x 32 x 8192^2 x 128 = 1.0995 x 10^12 FLOP per layer"
    assert float(naive_prefill(llama.heads, 8192).flops) == pytest.approx(1.0995e12, rel=REL)
    assert float(flash_prefill(llama.heads, 8192).flops) == pytest.approx(1.0995e12, rel=REL)


def test_intensity_compulsory_6553_6(llama):
    # chapter 1, "I_compulsory = 2hT / (b(h + h_kv))" = 6553.6 with K/V shared across the group
    cost = naive_prefill(llama.heads, 8192)
    assert float(cost.flops / cost.qkvo_bytes) == pytest.approx(6553.6, rel=1e-9)
    # the flash kernel without its LSE write moves exactly the compulsory bytes
    flash = flash_prefill(llama.heads, 8192, write_lse=False)
    assert float(flash.flops / flash.hbm_bytes) == pytest.approx(6553.6, rel=1e-9)


# --- the work a tile kernel does (FlashCost.tile_work), for predictions -------------------------------------------

def test_tile_work_of_a_window_counted_by_hand():
    """T 8192, window 1024, 128 x 128 tiles: query tile i touches key tiles max(0, i - 8) .. i, so tiles 0..7 touch
    i + 1 and the other 56 touch 9: 36 + 504 = 540 tiles of 128^2 pairs = 8,847,360 against W (W + 1) / 2 +
    (T - W) W = 7,864,832 visible pairs; a fixed cost of 2 key tiles a query tile adds 64 x 2 tiles."""
    from rooflab.cost.common import Visibility

    cost = flash_prefill(AttentionHeads(32, 8, 128), 8192, tile=FlashTile(128, 128), visibility=Visibility(1024))
    assert float(cost.tile_work()) == pytest.approx(8_847_360 / 7_864_832, rel=1e-12)
    assert float(cost.tile_work(2)) == pytest.approx((540 + 128) * 128 ** 2 / 7_864_832, rel=1e-12)


def test_tile_work_of_full_attention():
    """Causal T 256: tiles (0, 0), (1, 0), (1, 1) = 3 x 128^2 against 256 x 257 / 2 pairs; non-causal at a multiple
    of the tile: exactly the pairs, plus the fixed cost of 2 query tiles."""
    heads, tile = AttentionHeads(32, 8, 128), FlashTile(128, 128)
    assert float(flash_prefill(heads, 256, causal=True, tile=tile).tile_work()) == pytest.approx(
        3 * 128 ** 2 / (256 * 257 / 2), rel=1e-12)
    plain = flash_prefill(heads, 256, causal=False, tile=tile)
    assert float(plain.tile_work()) == 1.0
    assert float(plain.tile_work(1.5)) == pytest.approx(1 + 2 * 1.5 * 128 ** 2 / 256 ** 2, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 20_000), st.sampled_from([None, 1, 64, 128, 1000, 4096]), st.sampled_from([None, 256, 8192]),
       st.floats(0, 4))
def test_tile_work_is_at_least_the_visible_pairs_and_grows_with_the_fixed_cost(t, window, chunk, overhead):
    from rooflab.cost.common import Visibility

    vis = Visibility(window, None if window else chunk)
    cost = flash_prefill(AttentionHeads(8, 8, 64), np.array([t, t + 1]), tile=FlashTile(128, 64), causal=True,
                         visibility=vis)
    base, more = cost.tile_work(), cost.tile_work(overhead)
    assert base.shape == (2,) and np.all(base >= 1 - 1e-12) and np.all(more >= base)


def test_tile_work_refuses_a_bad_fixed_cost():
    from rooflab.errors import InputError

    cost = flash_prefill(AttentionHeads(32, 8, 128), 4096, causal=True)
    for bad in (-1, float("nan"), 1e9, "2"):
        with pytest.raises(InputError, match="unit_overhead_tiles"):
            cost.tile_work(bad)


@pytest.mark.parametrize("gpu, head_dim, named", [(None, 128, "GpuSpec"), ("h200-sxm", 0, "head_dim"),
                                                  ("h200-sxm", 128.5, "head_dim"), ("h200-sxm", -128, "head_dim")])
def test_choose_tile_refuses_bad_arguments_by_name(gpu, head_dim, named):
    from rooflab.errors import InputError

    with pytest.raises(InputError, match=named):
        choose_tile(load_gpu(gpu) if gpu else None, head_dim)

"""Tests of rooflab/cost/flash.py.

From the suites this file gathers:

Invariants of the prefill cost model across random shapes (STYLE.md habit 9).

The parallelism model (cost/parallel.py): launches whose work units cannot fill the GPU.

Golden figures for one layer of Llama-3-8B on an H100 SXM in fp16, T = 8192 unless stated.

Every number here is derived in the chapter "Naive attention and the online softmax",
in the opening part (cited as "chapter 1, <passage>"): the S tensor, the
three-kernel traffic count, the intensity reconciliation and the time floors.
rooflab computes them from the YAML specs; nothing below is fed in but the workload.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rooflab import AttentionHeads, DType, load_gpu, load_model
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


@pytest.fixture(scope="module")
def llama():
    return load_model("llama-3-8b")


def test_flops_per_layer(llama):
    # chapter 1, "F = 4 x 32 x 8192^2 x 128 = 1.0995 x 10^12 FLOP per layer"
    assert float(naive_prefill(llama, 8192).flops) == pytest.approx(1.0995e12, rel=REL)
    assert float(flash_prefill(llama, 8192).flops) == pytest.approx(1.0995e12, rel=REL)


def test_intensity_compulsory_6553_6(llama):
    # chapter 1, "I_compulsory = 2hT / (b(h + h_kv))" = 6553.6 with K/V shared across the group
    cost = naive_prefill(llama, 8192)
    assert float(cost.flops / cost.qkvo_bytes) == pytest.approx(6553.6, rel=1e-9)
    # the flash kernel without its LSE write moves exactly the compulsory bytes
    flash = flash_prefill(llama, 8192, write_lse=False)
    assert float(flash.flops / flash.hbm_bytes) == pytest.approx(6553.6, rel=1e-9)

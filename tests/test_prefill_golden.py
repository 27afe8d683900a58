"""Golden figures for one layer of Llama-3-8B on an H100 SXM in fp16, T = 8192 unless stated.

Every number here is derived in the chapter "Naive attention and the online softmax",
in the opening part (cited as "chapter 1, <passage>"): the S tensor, the
three-kernel traffic count, the intensity reconciliation and the time floors.
rooflab computes them from the YAML specs; nothing below is fed in but the workload.
"""

from __future__ import annotations

import pytest

from rooflab import AttentionHeads, DType, load_gpu, load_model
from rooflab.cost.flash import flash_prefill
from rooflab.cost.naive import naive_max_seq_len, naive_prefill
from rooflab.report import prefill_report
from rooflab.roofline import Ceilings, predict
from rooflab.units import GB, GiB

# The chapter prints three or four significant figures; compare at that precision.
REL = 5e-4


@pytest.fixture(scope="module")
def llama():
    return load_model("llama-3-8b")


@pytest.fixture(scope="module")
def h100():
    return load_gpu("h100-sxm")


@pytest.fixture(scope="module")
def roofs(h100):
    return Ceilings.of(h100, DType.fp16)


def test_ridge_point_is_295(h100):
    # chapter 1, "Against the H100 SXM ridge point of I* = 295 FLOP/byte fixed in section 0.4"
    assert h100.ridge_flop_per_byte(DType.fp16) == pytest.approx(989.4e12 / 3.35e12)
    assert round(h100.ridge_flop_per_byte(DType.fp16)) == 295


@pytest.mark.parametrize("seq_len, gib", [(8192, 4.00), (32768, 64.0)])
def test_s_size(llama, seq_len, gib):
    # chapter 1, "At T = 8192 ... Four gibibytes" and "32 x 32768^2 x 2 = 64.0 GiB for S alone"
    cost = naive_prefill(llama, seq_len)
    assert float(cost.s_bytes) / GiB == pytest.approx(gib, rel=REL)
    assert float(cost.p_bytes) == float(cost.s_bytes)  # P is a second allocation of the same size
    assert float(cost.peak_extra_bytes) / GiB == pytest.approx(2 * gib, rel=REL)


def test_naive_traffic_16_156_gib(llama):
    # chapter 1, three-kernel compulsory traffic at T = 8192: 16.156 GiB per layer
    assert float(naive_prefill(llama, 8192).hbm_bytes) / GiB == pytest.approx(16.156, rel=REL)


def test_flops_per_layer(llama):
    # chapter 1, "F = 4 x 32 x 8192^2 x 128 = 1.0995 x 10^12 FLOP per layer"
    assert float(naive_prefill(llama, 8192).flops) == pytest.approx(1.0995e12, rel=REL)
    assert float(flash_prefill(llama, 8192).flops) == pytest.approx(1.0995e12, rel=REL)


def test_intensity_materialised_63(llama):
    # chapter 1, "I_materialised ... 63"
    cost = naive_prefill(llama, 8192)
    assert round(float(cost.flops / cost.hbm_bytes)) == 63


def test_intensity_compulsory_6553_6(llama):
    # chapter 1, "I_compulsory = 2hT / (b(h + h_kv))" = 6553.6 with K/V shared across the group
    cost = naive_prefill(llama, 8192)
    assert float(cost.flops / cost.qkvo_bytes) == pytest.approx(6553.6, rel=1e-9)
    # the flash kernel without its LSE write moves exactly the compulsory bytes
    flash = flash_prefill(llama, 8192, write_lse=False)
    assert float(flash.flops / flash.hbm_bytes) == pytest.approx(6553.6, rel=1e-9)


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


def test_ridge_distances(llama, roofs):
    # chapter 1, "22x past the ridge", "4.7x left of it", "a factor of 103"
    naive = predict(naive_prefill(llama, 8192), roofs)
    flash = predict(flash_prefill(llama, 8192), roofs)
    assert round(float(flash.ridge_ratio)) == 22
    assert round(1 / float(naive.ridge_ratio), 1) == 4.7
    assert round(float(flash.intensity_flop_per_byte / naive.intensity_flop_per_byte)) == 103


def test_memory_bound_time(llama, roofs):
    # chapter 1, "at 3.35 TB/s, 16.156 GiB per layer is 5.18 ms, or 165.7 ms for all 32 layers"
    naive = predict(naive_prefill(llama, 8192), roofs)
    assert float(naive.t_memory_s) * 1e3 == pytest.approx(5.18, abs=0.005)
    assert float(naive.t_floor_s) * llama.num_layers * 1e3 == pytest.approx(165.7, abs=0.05)
    assert str(naive.bound) == "memory"


def test_compute_floor(llama, roofs):
    # chapter 1, "F/pi = 1.0995e12 x 32 / 989.4e12 = 35.6 ms"
    naive = predict(naive_prefill(llama, 8192), roofs)
    flash = predict(flash_prefill(llama, 8192), roofs)
    assert float(naive.t_compute_s) * llama.num_layers * 1e3 == pytest.approx(35.6, abs=0.05)
    assert float(flash.t_floor_s) * llama.num_layers * 1e3 == pytest.approx(35.6, abs=0.05)
    assert str(flash.bound) == "compute"


def test_32k_naive_prefill_does_not_fit(llama, h100):
    # chapter 1, "On an 80 GB H100 that already holds 15 GB of Llama-3-8B weights, a single
    # 32k-token sequence cannot be prefilled by the textbook algorithm at all"
    weights = llama.total_parameters * DType.fp16.bytes
    assert weights / GiB == pytest.approx(15, abs=0.1)
    assert 80 * GB <= h100.hbm_capacity_bytes <= 80 * GiB
    assert float(naive_prefill(llama, 32768).working_set_bytes) > h100.hbm_capacity_bytes - weights
    longest = naive_max_seq_len(llama, h100)
    assert 8192 < longest < 32768
    # the ceiling is tight: one more token does not fit
    free = h100.hbm_capacity_bytes - weights
    assert float(naive_prefill(llama, longest).working_set_bytes) <= free
    assert float(naive_prefill(llama, longest + 1).working_set_bytes) > free


def test_report_rows_carry_the_chapter_figures(llama, h100):
    rep = prefill_report(llama, h100).to_dict()
    naive, flash = rep["rows"]
    assert (naive["variant"], flash["variant"]) == ("naive", "flash")
    assert naive["s_bytes"] / GiB == pytest.approx(4.0)
    assert naive["hbm_bytes"] / GiB == pytest.approx(16.156, rel=REL)
    assert rep["facts"]["naive_fits"] is True
    assert [k["kernel"] for k in naive["kernels"]] == ["qk", "softmax", "pv"]

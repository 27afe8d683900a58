"""Kernel rows (rooflab/published/kernels.py): a rate to seconds under each source's FLOP convention (checked by hand
against the sources' own counts), the rows' checks, and every bundled GPU's floor held against every published
kernel row on it."""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.errors import SpecError
from rooflab.load import load_gpu
from rooflab.published import DEFECT_PREFIX, Convention, Implementation, KernelMetric, kernel_floor_s, load_published
from rooflab.units import DType
from rooflab.vocab import Phase
from support import refused

from .rows_support import GOOD_ROW, SOURCES, _folder, _one_row, _with


def test_fa_convention_against_a_hand_computation(tmp_path):
    """FlashAttention-3 (arXiv 2407.08608) section 4.1: FLOP = 4 x seqlen^2 x head dim x heads (x batch), halved
    with the causal mask. Batch 1, 16 heads, T 16384, d 128: 4 x 16 x 16384^2 x 128 = 2,199,023,255,552 FLOP;
    at 648 TFLOP/s that is 3.3935 ms; causal at 616 TFLOP/s, half the FLOPs: 1.7849 ms."""
    row = _one_row(tmp_path)
    assert row.flops(Convention.fa) == 2_199_023_255_552
    assert row.time_s(Convention.fa) == pytest.approx(2_199_023_255_552 / 648e12, rel=1e-12)
    assert row.time_s(Convention.fa) == pytest.approx(3.3935e-3, rel=1e-4)
    causal = _one_row(tmp_path, _with("causal", "true").replace(",648,", ",616,"))
    assert causal.flops(Convention.fa) == 2_199_023_255_552 / 2
    assert causal.time_s(Convention.fa) == pytest.approx(1.7849e-3, rel=1e-4)


def test_flashmla_convention_never_halves(tmp_path):
    """FlashMLA's deep-dive (docs/20250422-new-kernel-deep-dive.md): FLOP = 2 h_q s_q s_k (d_k + d_v), never halved.
    h_q 128, s_q 2, s_k 4096, d_k 576, d_v 512, batch 4: 2 x 4 x 128 x 2 x 4096 x 1088 = 9,126,805,504 FLOP, causal
    or not; the fa count halves it under a causal mask."""
    row = _one_row(tmp_path, "demo,h100-sxm,flashmla,decode,bf16,4,128,1,2,4096,576,512,true,,64,tflops,500,")
    assert row.flops(Convention.fa_no_half) == 2 * 4 * 128 * 2 * 4096 * (576 + 512) == 9_126_805_504
    assert row.flops(Convention.fa) == 9_126_805_504 / 2
    assert row.time_s(Convention.fa_no_half) == pytest.approx(9_126_805_504 / 500e12)


def test_a_time_row_is_its_value(tmp_path):
    row = _one_row(tmp_path, _with("metric", "time_s").replace(",648,", ",0.0034,"))
    assert row.time_s(Convention.time) == 0.0034 and row.metric is KernelMetric.time_s


def test_rows_are_typed_and_frozen(tmp_path):
    row = _one_row(tmp_path)
    assert (row.implementation, row.phase, row.dtype, row.causal, row.head_dim_v, row.window) == \
        (Implementation.fa3, Phase.prefill, DType.fp16, False, 0, 0)
    assert row.heads.value_dim == 128 and row.defect is None
    with pytest.raises(AttributeError):
        row.value = 1.0          # type: ignore[misc]


def test_a_defect_is_a_note_with_the_prefix(tmp_path):
    row = _one_row(tmp_path, GOOD_ROW.replace("panel (c)", f"{DEFECT_PREFIX} counted causal FLOPs unhalved"))
    assert row.defect == "counted causal FLOPs unhalved"


def test_a_causal_append_with_more_queries_than_keys_is_refused(tmp_path):
    row = _with("seq_len_q", "32768").replace("false", "true")
    refused(lambda: load_published(_folder(tmp_path, [row])), "line 2", "seq_len_q", "32768", error=SpecError)


def test_a_rate_needs_a_flop_convention(tmp_path):
    sources = SOURCES.replace("convention: fa", "convention: time")
    refused(lambda: load_published(_folder(tmp_path, [GOOD_ROW], sources)), "line 2", "'metric'",
            "needs a FLOP convention", error=SpecError)


_PUBLISHED = load_published()


_GPUS = sorted({r.gpu for r in _PUBLISHED.kernels})


@pytest.mark.parametrize("gpu_name", _GPUS)
def test_no_published_kernel_row_beats_its_gpus_floor(gpu_name):
    """Every row on the GPU against rooflab's floor for its shape (kernel_floor_s, the GPU's default floor roofs):
    a row faster than its floor is a spec defect to fix or a measurement defect to record (note 'defect: why')."""
    gpu = load_gpu(gpu_name)
    beaten = []
    for row in (r for r in _PUBLISHED.kernels if r.gpu == gpu_name):
        floor_s, measured_s = kernel_floor_s(row, gpu), _PUBLISHED.time_s(row)
        if measured_s < floor_s and row.defect is None:
            beaten.append(f"{row.where} ({row.implementation.value}, {row.value:g}): {floor_s / measured_s:.2f}x")
    assert not beaten, f"{len(beaten)} rows beat {gpu_name}'s floor: " + "; ".join(beaten[:5])


def test_the_floor_is_a_flash_prefill_roofline(tmp_path):
    """Non-causal H100 row of 2.2 PFLOP (rooflab's count equals the fa count there): its floor is that over the
    H100's floor-roof fp16 rate, or the bytes over the bandwidth, whichever is longer."""
    from rooflab.cost.flash import flash_prefill
    from rooflab.floors import Ceilings, floor

    row, gpu = _one_row(tmp_path), load_gpu("h100-sxm")
    expected = floor(flash_prefill(row.heads, 16384, 1, DType.fp16, False, gpu=gpu), Ceilings.of(gpu, DType.fp16))
    assert kernel_floor_s(row, gpu) == pytest.approx(float(expected.t_floor_s))
    assert kernel_floor_s(row, gpu) >= row.flops(Convention.fa) / Ceilings.of(gpu, DType.fp16).matmul_flop_per_s


def test_an_absorbed_mla_decode_is_floored_as_one_latent_read_once(tmp_path):
    """FlashMLA's shape (h_kv 1, d 576 = d_c 512 + d_R 64, d_v 512): K and V are one latent, read once, so the floor
    is at least B s_k 576 x 2 bytes over the bandwidth and below what separate K and V (576 + 512) would take.
    128 sequences of 4096 keys: 603,979,776 latent bytes."""
    row = _one_row(tmp_path, "demo,h100-sxm,flashmla,decode,bf16,128,16,1,1,4096,576,512,true,,64,time_s,0.000215,")
    gpu = load_gpu("h100-sxm")
    latent_bytes = 128 * 4096 * 576 * 2
    assert row.is_mla_latent and latent_bytes == 603_979_776
    floor_s = kernel_floor_s(row, gpu)
    assert latent_bytes / gpu.hbm_bandwidth_bytes_per_s <= floor_s < latent_bytes * 1088 / 576 / gpu.hbm_bandwidth_bytes_per_s


@pytest.mark.parametrize("name, value", [("batch", -3), ("batch", float("nan")), ("batch", 1 + 2j), ("batch", None),
                                         ("seq_len_kv", 2.5), ("head_dim", 0), ("value_dim", "128"),
                                         ("num_qo_heads", True), ("causal", "x"), ("causal", 1)])
def test_convention_flops_checks_its_arguments(name, value):
    """convention_flops(fa, batch -3, ...) returned -4.12e11 FLOPs, nan nan, 1+2j a complex count, None a TypeError
    from the product; causal 'x' was taken as True. Each size is a whole number in a kernel row's bounds."""
    from rooflab.published import convention_flops

    args = dict(convention=Convention.fa, batch=1, num_qo_heads=32, seq_len_q=4096, seq_len_kv=4096, head_dim=128,
                value_dim=128, causal=True)
    refused(lambda: convention_flops(**{**args, name: value}), name)
    assert convention_flops(**{**args, "batch": np.int64(2)}) == 2 * convention_flops(**args)


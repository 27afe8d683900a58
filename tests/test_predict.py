"""Tests of rooflab/predict.py: fitted times (predictions), not floors.

The parallelism model in the prediction (one 32k sequence of Llama-3-8B: 8 work units on 132 SMs) and not in
the floor; the automatic choice skipping a fit that missed its held-out rows; split-KV at batch 1; tile terms;
MLA's memory efficiency and fp8 rows; fewer SMs scaling the roofs along the read curve; transfers; bad
arguments refused by name.
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflab.cost.paged import paged_decode
from rooflab.load import load_gpu, load_model
from rooflab.predict import launch_model_time
from rooflab.floors import Ceilings, floor, floor_kernel
from rooflab.specs import MeasuredCeilings
from rooflab.units import DType
from rooflab.vocab import CeilingSource


H200 = load_gpu("h200-sxm")
#: A made-up curve shaped like a Hopper's: a few SMs draw more than their 1/132 share, all 132 reach 4.3 TB/s.
CURVE = {"1": 60e9, "2": 120e9, "4": 240e9, "8": 470e9, "16": 900e9, "32": 1.7e12, "64": 3.1e12, "132": 4.3e12}


def _with_curve(curve: dict | None):
    m = H200.measured or MeasuredCeilings(copy_bytes_per_s=4.3e12, gemm_flop_per_s={"fp16": 7.6e14},
                                          date="2026-11-30", device_name="NVIDIA H200")
    return dataclasses.replace(H200, measured=dataclasses.replace(m, stream_bytes_per_s=curve))


def test_prediction_uses_it_and_the_floor_does_not():
    """One 32k sequence of Llama-3-8B in one launch: 8 work units on 132 SMs."""
    gpu = _with_curve(CURVE)
    cost = paged_decode(load_model("llama-3-8b").heads, [32768], num_sms=gpu.num_sms, units_per_sm=1.0)
    plain = Ceilings.of(_with_curve(None), DType.fp16, CeilingSource.calibrated)
    curved = Ceilings.of(gpu, DType.fp16, CeilingSource.calibrated)
    t_plain = float(launch_model_time(cost.attention, plain))
    t_curved = float(launch_model_time(cost.attention, curved))
    assert t_curved == pytest.approx(t_plain * (8 / 132) / (470e9 / 4.3e12))
    floor = floor_kernel(cost.attention, Ceilings.of(gpu, DType.fp16))
    assert float(floor.t_floor_s) < t_curved                   # the floor: every SM busy, datasheet roofs


def test_the_automatic_choice_skips_a_fit_that_did_not_hold():
    """A fit that missed its held-out rows (mla_decode/rooflab, mma.sync, missed by 48% until session 7's refit; here
    given a 59% median): without --impl, the rows use a fit that held."""
    import dataclasses

    from rooflab.predict import MAX_AUTO_ERROR, predict_time
    from rooflab.vocab import Kernel

    gpu = dataclasses.replace(H200, fitted=tuple(
        dataclasses.replace(f, median_error=0.59) if (f.kernel, f.impl) == (Kernel.mla_decode, "rooflab") else f
        for f in H200.fitted))
    fits = {f.impl: f for f in gpu.fitted_for(Kernel.mla_decode)}
    assert fits["rooflab"].median_error > MAX_AUTO_ERROR >= fits["rooflab_hopper"].median_error
    from rooflab.cost.batch import DecodeBatch
    from rooflab.cost.layers import layer_decode

    ds = load_model("deepseek-v3")
    price = (lambda n, u: layer_decode(ds, "mla", DecodeBatch.uniform(8192, 64), 64, DType.bf16, DType.bf16, 1, 1,
                                       n, u))
    auto = predict_time(gpu, Kernel.mla_decode, price, DType.bf16)
    assert auto.impl != "rooflab"
    named = predict_time(gpu, Kernel.mla_decode, price, DType.bf16, impl="rooflab")
    assert named.impl == "rooflab" and named.median_error > MAX_AUTO_ERROR


LLAMA = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")


def test_split_kv_pays_at_batch_1():
    # in the model (the parallelism term), not in the floor: one sequence's 8 units keep 8 of 132 SMs busy
    from rooflab.predict import model_time

    roofs = Ceilings.of(H100, DType.fp16)
    plain = model_time(paged_decode(LLAMA.heads, [32768], num_sms=H100.num_sms), roofs)
    split = model_time(paged_decode(LLAMA.heads, [32768], num_splits=17, num_sms=H100.num_sms), roofs)
    assert float(split) < float(plain) / 10
    # the physical floors: splitting never pays (it only adds the partials' traffic)
    floor_plain = floor(paged_decode(LLAMA.heads, [32768], num_sms=H100.num_sms), roofs).t_floor_s
    floor_split = floor(paged_decode(LLAMA.heads, [32768], num_splits=17, num_sms=H100.num_sms), roofs).t_floor_s
    assert float(floor_split) > float(floor_plain)


def test_a_tile_term_prices_the_flash_launch_at_its_tiles_work_and_nothing_else():
    """model_time with unit_overhead_tiles scales a flash launch's FLOPs and exps by FlashCost.tile_work; the bytes
    stay, and a cost that is not a flash launch is priced as it is."""
    import numpy as np

    from rooflab.cost.common import Visibility
    from rooflab.cost.flash import FlashTile, flash_prefill
    from rooflab.predict import model_time, priced_launches
    from rooflab.specs import AttentionHeads

    gpu = load_gpu("h200-sxm")
    roofs = Ceilings.of(gpu, DType.fp16, CeilingSource.calibrated)
    cost = flash_prefill(AttentionHeads(32, 8, 128), 32768, tile=FlashTile(128, 128), visibility=Visibility(1024))
    (plain,), (tiled,) = priced_launches(cost), priced_launches(cost, 2.0)
    scale = float(cost.tile_work(2.0))
    assert scale > 1.1
    assert float(tiled.flops) == pytest.approx(float(plain.flops) * scale)
    assert float(tiled.exp_ops) == pytest.approx(float(plain.exp_ops) * scale)
    assert float(tiled.hbm_bytes) == float(plain.hbm_bytes)
    assert float(model_time(cost, roofs, 0.0, 2.0)) > float(model_time(cost, roofs)) * 1.1   # compute-bound here
    decode = paged_decode(AttentionHeads(32, 8, 128), [8192] * 4, 16)
    assert priced_launches(decode, 2.0) == decode.kernels
    assert np.asarray(model_time(decode, roofs, 0.0, 2.0)) == np.asarray(model_time(decode, roofs))


@pytest.mark.parametrize("call, named", [
    (lambda p, lt: p.decode_kernel(None), "layer"),
    (lambda p, lt: p.decode_kernel(lt, 0), "splits"),
    (lambda p, lt: p.decode_kernel(lt, 1, 0), "q_len"),
    (lambda p, lt: p.prefill_kernel(lt, "yes"), "naive"),
    (lambda p, lt: p.model_time(None, None), "Cost"),
])
def test_prediction_helpers_refuse_bad_arguments_by_name(call, named):
    import rooflab.predict as p
    from rooflab.errors import InputError

    layer = next(iter(load_model("llama-3-8b").layer_types.values()))
    with pytest.raises(InputError, match=named):
        call(p, layer)


@pytest.mark.parametrize("overlap", [2.0, -0.1, float("nan"), "0.5"])
def test_launch_model_time_refuses_an_exp_overlap_outside_0_to_1(overlap):
    from rooflab.errors import InputError

    gpu = load_gpu("h200-sxm")
    kernel = paged_decode(load_model("llama-3-8b").heads, [8192], 16).kernels[0]
    with pytest.raises(InputError, match="exp_overlap"):
        launch_model_time(kernel, Ceilings.of(gpu, DType.fp16, CeilingSource.calibrated), overlap)


def test_mla_memory_efficiency_and_fp8_rows():
    """MLA decode's own memory efficiency divides the memory term alone, and an fp8 latent's rows add to its tile
    work (session 7: the mma.sync kernel's fit, hardware/h200-sxm.yaml)."""
    from rooflab import load_gpu, load_model
    from rooflab.cost.mla import mla_decode
    from rooflab.predict import model_time
    from rooflab.floors import Ceilings
    from rooflab.units import DType
    from rooflab.vocab import CeilingSource

    gpu = load_gpu("h200-sxm")
    layer = next(iter(load_model("deepseek-v3").layer_types.values()))
    roofs = Ceilings.of(gpu, DType.bf16, CeilingSource.calibrated)
    bf16 = mla_decode(layer, 16, [4096] * 100, num_sms=gpu.num_sms)
    fp8 = mla_decode(layer, 16, [4096] * 100, kv_dtype=DType.fp8_e4m3, num_sms=gpu.num_sms)
    assert not bf16.kv_fp8 and fp8.kv_fp8
    assert float(fp8.tile_work(24.0, 8.0)) == float(fp8.tile_work(32.0))
    assert float(bf16.tile_work(24.0, 8.0)) == float(bf16.tile_work(24.0))
    one = float(model_time(bf16, roofs, 1.0, 24.0))
    fast = float(model_time(bf16, roofs, 1.0, 24.0, memory_ratio=2.0))
    assert fast <= one and fast >= one / 2 - 1e-15       # only the memory term is halved
    fit = [f for f in gpu.fitted if f.kernel.value == "mla_decode" and f.impl == "rooflab"][0]
    assert fit.memory_efficiency is not None and fit.memory_efficiency <= 1.0
    assert fit.memory_ratio == fit.memory_efficiency / fit.efficiency


# --- transfer (rooflab/transfer.py): a fit measured on the H200 predicting another GPU --------------------------

def test_transfer_provenance_band_and_refusals():
    from rooflab.load import load_gpu
    from rooflab.predict import no_prediction_reason, predict_time
    from rooflab.specs import AttentionHeads
    from rooflab.cost.flash import flash_prefill
    from rooflab.units import DType
    from rooflab.vocab import Kernel

    heads = AttentionHeads(32, 8, 128)
    for name, ok in (("h100-sxm", True), ("a100-pcie-80gb", True), ("b200", True), ("t4", False), ("mi300x", False)):
        gpu = load_gpu(name)
        price = lambda n, k, gpu=gpu: flash_prefill(heads, 4096, 1, DType.fp16, True, gpu=gpu, num_sms=n,
                                                     units_per_sm=k)
        p = predict_time(gpu, Kernel.flash, price, DType.fp16, optional=True)
        assert (p is not None) is ok, name
        if ok:
            assert p.provenance == "transferred from h200-sxm" and p.assumes and p.error_band is not None
            assert p.impl != "rooflab_hopper" or gpu.architecture == "hopper"        # wgmma on Hopper only
        else:
            assert name in no_prediction_reason(gpu, Kernel.flash)


def test_fewer_sms_scales_roofs_and_follows_the_read_curve():
    from rooflab.load import load_gpu
    from rooflab.transfer import calibrated_ceilings, fewer_sms
    from rooflab.units import DType

    gpu = load_gpu("h200-sxm")
    full, _ = calibrated_ceilings(gpu, DType.fp16)
    part = fewer_sms(full, gpu.num_sms, 16)
    assert part.matmul_flop_per_s == pytest.approx(full.matmul_flop_per_s * 16 / 132)
    # the measured curve: 16 SMs draw 344 of the 2451 GB/s all 132 draw
    assert part.bandwidth_bytes_per_s == pytest.approx(full.bandwidth_bytes_per_s * 3.4404e11 / 2.4512e12)
    assert fewer_sms(full, gpu.num_sms, 132).bandwidth_bytes_per_s == pytest.approx(full.bandwidth_bytes_per_s)
    with pytest.raises(Exception):
        fewer_sms(full, gpu.num_sms, 0)


def test_fp8_never_above_a_measured_fraction():
    from rooflab.load import load_gpu
    from rooflab.transfer import calibrated_ceilings, matmul_fraction
    from rooflab.units import DType

    h200 = load_gpu("h200-sxm")
    roofs, note = calibrated_ceilings(h200, DType.fp8_e4m3)
    assert roofs.matmul_flop_per_s == pytest.approx(h200.measured.fp8_gemm_flop_per_s)
    assert "no fp8 attention" in note
    share, note = matmul_fraction(h200, DType.bf16)
    assert note is None and share < 1

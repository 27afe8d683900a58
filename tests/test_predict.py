"""The prediction model (rooflab/predict.py) and the calibrated ceilings it runs on: the per-SM streaming curve."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rooflab.cost.paged import paged_decode
from rooflab.load import load_gpu, load_model
from rooflab.predict import launch_model_time
from rooflab.roofline import Ceilings, predict_kernel
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


def test_without_a_curve_the_share_is_the_fraction():
    roofs = Ceilings.of(_with_curve(None), DType.fp16, CeilingSource.calibrated)
    f = np.array([1 / 132, 0.25, 1.0])
    assert np.array_equal(roofs.busy_share(f), f)


def test_the_curve_turns_busy_sms_into_bandwidth():
    roofs = Ceilings.of(_with_curve(CURVE), DType.fp16, CeilingSource.calibrated)
    share = roofs.busy_share(np.array([8 / 132, 16 / 132, 100 / 132, 1.0, 1.5]))
    assert share[0] == pytest.approx(470e9 / 4.3e12)            # a measured count: its own rate
    assert share[1] == pytest.approx(900e9 / 4.3e12)
    lo, hi = 3.1e12 / 4.3e12, 1.0                               # between 64 and 132 SMs, log-log
    assert lo < share[2] < hi
    assert share[3] == 1.0 and share[4] == 1.0
    assert roofs.busy_share(0.5 / 132) == pytest.approx(0.5 * 60e9 / 4.3e12)   # below one SM: linear


def test_a_curve_below_the_linear_model_never_slows_a_launch_down():
    flat = {"1": 10e9, "132": 4.3e12}                           # one SM draws less than its 1/132 share
    roofs = Ceilings.of(_with_curve(flat), DType.fp16, CeilingSource.calibrated)
    assert roofs.busy_share(1 / 132) == pytest.approx(1 / 132)


def test_prediction_uses_it_and_the_floor_does_not():
    """One 32k sequence of Llama-3-8B in one launch: 8 work units on 132 SMs."""
    gpu = _with_curve(CURVE)
    cost = paged_decode(load_model("llama-3-8b").heads, [32768], num_sms=gpu.num_sms, units_per_sm=1.0)
    plain = Ceilings.of(_with_curve(None), DType.fp16, CeilingSource.calibrated)
    curved = Ceilings.of(gpu, DType.fp16, CeilingSource.calibrated)
    t_plain = float(launch_model_time(cost.attention, plain))
    t_curved = float(launch_model_time(cost.attention, curved))
    assert t_curved == pytest.approx(t_plain * (8 / 132) / (470e9 / 4.3e12))
    floor = predict_kernel(cost.attention, Ceilings.of(gpu, DType.fp16))
    assert float(floor.t_floor_s) < t_curved                   # the floor: every SM busy, datasheet roofs


def test_a_curve_for_another_sm_count_is_ignored():
    odd = {"1": 60e9, "100": 4.3e12}                            # not this GPU's 132 SMs: not this GPU's curve
    assert Ceilings.of(_with_curve(odd), DType.fp16, CeilingSource.calibrated).stream == ()


def test_the_automatic_choice_skips_a_fit_that_did_not_hold():
    """mla_decode/rooflab (mma.sync) missed its held-out rows by ~59%: without --impl, the rows use a fit that held."""
    from rooflab.predict import MAX_AUTO_ERROR, predict_time
    from rooflab.vocab import Kernel

    fits = {f.impl: f for f in H200.fitted_for(Kernel.mla_decode)}
    assert fits["rooflab"].median_error > MAX_AUTO_ERROR >= fits["rooflab_hopper"].median_error
    from rooflab.cost.batch import DecodeBatch
    from rooflab.cost.layers import layer_decode

    ds = load_model("deepseek-v3")
    price = (lambda n, u: layer_decode(ds, "mla", DecodeBatch.uniform(8192, 64), 64, DType.bf16, DType.bf16, 1, 1,
                                       n, u))
    auto = predict_time(H200, Kernel.mla_decode, price, DType.bf16)
    assert auto.impl != "rooflab"
    named = predict_time(H200, Kernel.mla_decode, price, DType.bf16, impl="rooflab")
    assert named.impl == "rooflab" and named.median_error > MAX_AUTO_ERROR

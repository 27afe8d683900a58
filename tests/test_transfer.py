"""Tests of rooflab/transfer.py: a fit measured on one GPU predicting another (the SM-bound launches here; the roofs'
fractions, fewer SMs, fp8 and the provenance in tests/test_predict.py)."""

from __future__ import annotations

import dataclasses

import pytest

from rooflab.cost.naive import naive_prefill
from rooflab.load import load_gpu
from rooflab.predict import launch_model_time, predict_with, prediction_model_time
from rooflab.specs import AttentionHeads
from rooflab.transfer import IMPL_PATH, SM_BOUND_LAUNCHES, sm_bound_launches, sm_ratio, transferred_ceilings
from rooflab.units import DType
from rooflab.vocab import Kernel

H200 = load_gpu("h200-sxm")
EAGER = H200.fitted_model(Kernel.naive, "torch_eager")
HEADS = AttentionHeads(32, 32, 64)


def _eager(t: int = 4096, batch: int = 4):
    return naive_prefill(HEADS, t, batch, DType.fp16, False)


def test_the_eager_softmax_is_the_sm_bound_launch():
    assert sm_bound_launches("torch_eager") == {"softmax"}
    assert sm_bound_launches("torch_cudnn") == frozenset()
    assert all("measurements/shapes/h200-softmax-bound.csv" in why for why in SM_BOUND_LAUNCHES.values())
    assert {k.name for k in _eager().kernels} >= sm_bound_launches("torch_eager")


def test_sm_ratio_is_sms_times_clock():
    b200 = load_gpu("b200")
    assert sm_ratio(H200, H200) == 1.0
    assert sm_ratio(H200, b200) == pytest.approx(H200.num_sms * H200.boost_clock_hz /
                                                (b200.num_sms * b200.boost_clock_hz))


def test_a_transfer_to_the_gpu_it_was_fitted_on_keeps_the_fitted_time():
    """Ratio 1 and the same roofs: the SM-bound launch's source time is at least its time at full speed."""
    here = predict_with(EAGER, lambda n, k: _eager(), H200, DType.fp16)
    moved = predict_with(EAGER, lambda n, k: _eager(), H200, DType.fp16, source=H200)
    assert moved.t_predicted_s == pytest.approx(here.t_predicted_s, rel=1e-12)


def test_more_bandwidth_speeds_the_gemm_launches_not_the_softmax():
    """A part like the H200 with twice its HBM bandwidth: QK^T and PV (bandwidth-bound in the model) halve, the
    softmax (SM-bound on the H200) keeps its time; twice the SMs instead halve the softmax alone."""
    cost = _eager()
    wide = dataclasses.replace(H200, name="h200-wide", hbm_bandwidth_bytes_per_s=2 * H200.hbm_bandwidth_bytes_per_s)
    source = transferred_ceilings(H200, H200, DType.fp16, IMPL_PATH["torch_eager"], "torch_eager").ceilings
    per = {k.name: float(launch_model_time(k, source)) for k in cost.kernels}
    t_same = float(prediction_model_time(cost, EAGER, H200, DType.fp16, H200)[0])
    t_wide = float(prediction_model_time(cost, EAGER, wide, DType.fp16, H200)[0])
    assert t_same == pytest.approx(sum(per.values()))
    assert t_wide == pytest.approx(per["qk"] / 2 + per["softmax"] + per["pv"] / 2, rel=1e-6)
    more = dataclasses.replace(H200, name="h200-264", num_sms=2 * H200.num_sms,
                               dense_tensor_flop_per_s={k: 2 * v for k, v in H200.dense_tensor_flop_per_s.items()})
    t_more = float(prediction_model_time(cost, EAGER, more, DType.fp16, H200)[0])
    floor = float(launch_model_time(cost.softmax, transferred_ceilings(H200, more, DType.fp16,
                                                                      IMPL_PATH["torch_eager"]).ceilings))
    assert t_more == pytest.approx(per["qk"] + max(per["softmax"] / 2, floor * EAGER.efficiency) + per["pv"], rel=1e-6)


def test_the_assumption_is_said():
    moved = transferred_ceilings(H200, load_gpu("h100-sxm"), DType.fp16, IMPL_PATH["torch_eager"], "torch_eager")
    assert "softmax launch at the source's time x 1.00" in moved.assumes and moved.source_ceilings is not None
    flash = transferred_ceilings(H200, load_gpu("h100-sxm"), DType.fp16, IMPL_PATH["torch_cudnn"], "torch_cudnn")
    assert flash.source_ceilings is None and "softmax" not in flash.assumes

"""Cross-field consistency checks of the specs (rooflab/specs/gpu.py, model.py, fitted.py, interconnect.py).

Each case is a real bundled spec with one field changed to contradict another, as a hostile round wrote them;
each must be a SpecError naming the field, and the bundled specs themselves all pass (loaded by every test).
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import load_gpu, load_model
from rooflab.errors import SpecError
from rooflab.load import available
from rooflab.specs.fitted import FittedModel
from rooflab.specs.interconnect import CollectiveFit
from rooflab.vocab import Kernel


@pytest.fixture(scope="module")
def h200():
    return load_gpu("h200-sxm")        # the bundled GPU with measured ceilings, stream rates and fits


def _refused(build, field: str) -> SpecError:
    with pytest.raises(SpecError) as err:
        build()
    assert err.value.field == field, str(err.value)
    return err.value


def test_every_bundled_spec_passes_the_checks():
    for name in available("hardware"):
        load_gpu(name)
    for name in available("models"):
        load_model(name)


@pytest.mark.parametrize("factor", [10, 100, 1000])
@pytest.mark.parametrize("field", ["copy_bytes_per_s", "gemm_flop_per_s", "exp_per_s"])
def test_calibrated_ceilings_far_above_the_datasheet_are_refused(h200, field, factor):
    m = h200.measured
    value = getattr(m, field)
    new = {k: v * factor for k, v in value.items()} if isinstance(value, dict) else value * factor
    try:
        changed = dataclasses.replace(m, **{field: new})
    except SpecError as err:            # past the field's own plausible range: refused there, as it should be
        assert err.field.startswith(field)
        return
    err = _refused(lambda: dataclasses.replace(h200, measured=changed),
                   f"measured.{field}" + (".fp16" if field == "gemm_flop_per_s" else ""))
    assert "datasheet roof" in str(err)


def test_measured_ceilings_near_the_datasheet_are_kept(h200):
    m = h200.measured
    dataclasses.replace(h200, measured=dataclasses.replace(m, copy_bytes_per_s=h200.hbm_bandwidth_bytes_per_s * 1.1))


def test_stream_rates_for_more_sms_than_the_gpu_has_are_refused(h200):
    rates = dict(h200.measured.stream_bytes_per_s)
    rates["264"] = rates["132"]
    m = dataclasses.replace(h200.measured, stream_bytes_per_s=rates)
    err = _refused(lambda: dataclasses.replace(h200, measured=m), "measured.stream_bytes_per_s.264")
    assert "num_sms (132)" in str(err)
    for key in ("0", "-1", "all"):
        m = dataclasses.replace(h200.measured, stream_bytes_per_s={**dict(h200.measured.stream_bytes_per_s), key: 1e10})
        _refused(lambda: dataclasses.replace(h200, measured=m), f"measured.stream_bytes_per_s.{key}")


def test_one_sm_faster_than_all_is_refused(h200):
    rates = dict(h200.measured.stream_bytes_per_s)
    rates["1"] = rates["132"] * 2             # within the HBM roof, but one SM out-reads all 132
    m = dataclasses.replace(h200.measured, stream_bytes_per_s=rates)
    err = _refused(lambda: dataclasses.replace(h200, measured=m), "measured.stream_bytes_per_s.1")
    assert "faster than 132 SMs" in str(err)


def test_a_capacity_below_the_cuda_visible_memory_is_refused(h200):
    err = _refused(lambda: dataclasses.replace(h200, hbm_capacity_bytes=h200.cuda_visible_bytes - 1),
                   "cuda_visible_bytes")
    assert "hbm_capacity_bytes" in str(err)


def test_fit_metadata_with_more_held_out_rows_than_rows_is_refused():
    _refused(lambda: FittedModel(kernel=Kernel.paged, impl="rooflab", overhead_s=1e-5, efficiency=0.9, rows=10,
                                 held_out_rows=11), "held_out_rows")
    FittedModel(kernel=Kernel.paged, impl="rooflab", overhead_s=1e-5, efficiency=0.9, rows=10, held_out_rows=10)


def test_collective_fit_metadata_with_more_held_out_rows_than_rows_is_refused(h200):
    fit = h200.interconnect.collectives[0]
    _refused(lambda: dataclasses.replace(fit, held_out_rows=fit.rows + 1), "held_out_rows")
    assert isinstance(fit, CollectiveFit)


def test_a_dense_ffn_size_on_a_dense_model_is_refused():
    """A dense model has ffn_size only: dense_ffn_size silently replaced it in every layer's MLP."""
    llama = load_model("llama-3-8b")
    err = _refused(lambda: dataclasses.replace(llama, dense_ffn_size=1024), "dense_ffn_size")
    assert "ffn_size (14336)" in str(err)
    dataclasses.replace(llama, dense_ffn_size=llama.ffn_size)       # the same size says nothing new: kept


@pytest.mark.parametrize("change, field", [({"first_dense_layers": 61}, "first_dense_layers"),
                                           ({"first_dense_layers": 1000}, "first_dense_layers"),
                                           ({"moe_layer_step": 62}, "moe_layer_step")])
def test_moe_settings_that_leave_no_moe_layer_are_refused(change, field):
    v3 = load_model("deepseek-v3")         # 61 layers, 256 experts, the first 3 dense
    err = _refused(lambda: dataclasses.replace(v3, **change), field)
    assert "no MoE layer" in str(err)
    dataclasses.replace(v3, first_dense_layers=60)                  # one MoE layer left: kept

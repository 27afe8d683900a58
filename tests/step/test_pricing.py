"""Tests of rooflab/step/pricing.py: GEMM ceilings, where launch times come from, and eager launches."""

from __future__ import annotations

from rooflab.deployment import Deployment
from rooflab.load import load_gpu, load_model
from rooflab.predict import MEASURED_HERE
from rooflab.step import gemm_ceilings, launch_times, step_report
from rooflab.units import DType

H200 = load_gpu("h200-sxm")


def test_fp8_gemms_at_the_measured_fp8_rate():
    """hardware/h200-sxm.yaml's measured.fp8_gemm_flop_per_s; a GPU without one says how its rate was taken."""
    roofs, note = gemm_ceilings(H200, DType.fp8_e4m3)
    assert roofs.matmul_flop_per_s == H200.measured.fp8_gemm_flop_per_s and note is None
    _, note = gemm_ceilings(load_gpu("h100-sxm"), DType.fp8_e4m3)
    assert note is not None and "h100-sxm" in note


def test_launch_times_own_transferred_or_none():
    own = launch_times(H200)
    assert own.times is H200.measured.launch and own.provenance == MEASURED_HERE and own.measured_on == "h200-sxm"
    h100 = launch_times(load_gpu("h100-sxm"))
    assert h100.times == H200.measured.launch and h100.provenance == "transferred from h200-sxm"
    amd = launch_times(load_gpu("mi300x"))
    assert amd.times is None and amd.provenance is None and "mi300x" in amd.why


def test_eager_launches_are_never_below_the_host_issue_time():
    r = step_report(load_model("llama-3-8b"), H200, 1, 1024, deployment=Deployment(cuda_graphs=False))
    for row in r.rows:
        if row.variant == "gemm":
            assert row.t_predicted_s >= row.calls * H200.measured.launch.eager_host_s

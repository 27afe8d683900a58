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


def test_fp8_weights_without_fp8_tensor_cores_run_weight_only():
    """fp8 weights on an A100 (CC 8.0, no fp8 tensor-core rate): vLLM's FP8 Marlin kernel, weight-only (vllm 0.29.0
    model_executor/layers/quantization/fp8.py:257-258). Llama-3-8B's MLP at 1 byte a weight, 32 layers of gate/up
    (2 x 14336 x 4096) and down (4096 x 14336); its FLOPs at the bf16 roof (312 TFLOP/s dense, hardware/a100-sxm-80gb
    .yaml) and its activations at 2 bytes."""
    from rooflab.units import WeightFormat

    a100 = load_gpu("a100-sxm-80gb")
    assert not a100.has_rate(DType.fp8_e4m3)
    r = step_report(load_model("llama-3-8b"), a100, 1, 1024, deployment=Deployment(weight_format=WeightFormat.fp8))
    mlp = next(row for row in r.rows if row.component == "dense_mlp")
    assert mlp.weight_bytes == 32 * 3 * 14336 * 4096 * 1
    assert mlp.gemm_dtype == "bf16" and "weight-only fp8 (Marlin), bf16 arithmetic" in mlp.source
    assert mlp.t_compute_s == mlp.flops / a100.matmul_flop_per_s(DType.bf16)
    on_h100 = step_report(load_model("llama-3-8b"), load_gpu("h100-sxm"), 1, 1024,
                          deployment=Deployment(weight_format=WeightFormat.fp8))
    assert next(row for row in on_h100.rows if row.component == "dense_mlp").gemm_dtype == "fp8_e4m3"

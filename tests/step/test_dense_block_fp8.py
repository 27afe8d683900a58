"""rooflab.step.dense_block_fp8: the kernel vLLM 0.7.x and SGLang 0.4.x ran the dense block-fp8 GEMMs with on a
compute-capability-9.x GPU (CUTLASS blockwise, Triton at a shipped tuned config where N or K is not a multiple of
128), and SGLang 0.5.x (DeepGEMM where N is a multiple of 64 and K of 128), read from their wheels: stated in the
step's note, the price kept at the measured cuBLASLt blockwise fit."""

import pytest

from rooflab.deployment import Deployment
from rooflab.load import load_gpu, load_model
from rooflab.step import engine_kernels, step_report
from rooflab.step.dense_block_fp8 import dense_block_fp8_fact


@pytest.mark.parametrize("engine, version, named", [
    ("vllm", "0.7.3", "ops.cutlass_scaled_mm"), ("vllm", "0.7.4.dev181+gf35f8e22", "ops.cutlass_scaled_mm"),
    ("sglang", "0.4.3.post2", "fp8_blockwise_scaled_mm"), ("vllm", "0.9.0", None), ("sglang", "0.5.12", "DeepGEMM"),
    ("sglang", "0.5.10", "DeepGEMM"), ("sglang", "0.6.0", None), (None, None, None),
])
def test_the_release_facts_name_the_kernel(engine, version, named):
    words = dense_block_fp8_fact(engine, version, load_gpu("h200-sxm"), True)
    assert (named in words and "neither engine kernel is measured" in words) if named else words == ""


def test_only_block_fp8_weights_on_a_9x_gpu_get_the_note():
    assert dense_block_fp8_fact("vllm", "0.7.3", load_gpu("h200-sxm"), False) == ""
    assert dense_block_fp8_fact("vllm", "0.7.3", load_gpu("a100-sxm-80gb"), True) == ""
    h200 = load_gpu("h200-sxm")
    assert engine_kernels(load_model("llama-3-8b"), h200, Deployment(), "vllm", "0.7.3").dense_reason == ""


def test_the_note_says_it_and_the_price_is_unchanged():
    """The step's note carries the fact; the GEMM rows keep the torch_scaled_mm_block fit (not re-priced)."""
    model, h200, dep = load_model("deepseek-v3"), load_gpu("h200-sxm"), Deployment(tensor_parallel=8)
    r = step_report(model, h200, 8, 2048, deployment=dep, engine="vllm", engine_version="0.7.3", check_memory=False)
    assert any("dense block-fp8 GEMMs CUTLASS sm90 blockwise" in n for n in r.notes)
    projections = next(row for row in r.rows if row.label.startswith("attention projections"))
    assert projections.predicted_impl == "torch_scaled_mm_block"


def test_sglang_0_5_12_names_deepgemm_and_its_shapes():
    """SGLang 0.5.12 (its wheel: srt/layers/quantization/fp8_utils.py:454-455, 659): DeepGEMM where N % 64 and
    K % 128 are 0, the Triton fallback elsewhere; the 0.4.x words (multiples of 128, CUTLASS) not said of it."""
    words = dense_block_fp8_fact("sglang", "0.5.12", load_gpu("h200-sxm"), True)
    assert "DeepGEMM" in words and "where N is a multiple of 64 and K of 128" in words
    assert "fp8_utils.py:445-463,645-696" in words and "CUTLASS" not in words
    r = step_report(load_model("deepseek-v3"), load_gpu("h200-sxm"), 8, 2048, deployment=Deployment(tensor_parallel=8),
                    engine="sglang", engine_version="0.5.12", check_memory=False)
    assert any("dense block-fp8 GEMMs DeepGEMM" in n for n in r.notes)

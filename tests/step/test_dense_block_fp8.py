"""rooflab.step.dense_block_fp8: the kernel vLLM 0.7.x and SGLang 0.4.x ran the dense block-fp8 GEMMs with on a
compute-capability-9.x GPU (CUTLASS blockwise, Triton at a shipped tuned config where N or K is not a multiple of
128), and SGLang 0.5.x (DeepGEMM where N is a multiple of 64 and K of 128), read from their wheels: stated in the
step's note; vLLM 0.7.x's and SGLang 0.4.x's priced at the measured cuBLASLt blockwise fit, SGLang 0.5.x's at
DeepGEMM's measured fit where DeepGEMM takes the shape (the cuBLASLt fit for the Triton fallback's)."""

import dataclasses

import pytest

from rooflab.cost.gemm import gemm
from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.step import Pricer, engine_kernels, step_context, step_report
from rooflab.step.dense_block_fp8 import DenseBlockFp8Kernel, dense_block_fp8_fact, dense_block_fp8_kernel
from rooflab.units import DType
from rooflab.vocab import Kernel

DEEP, CUBLASLT = DenseBlockFp8Kernel.deepgemm, DenseBlockFp8Kernel.scaled_mm_block


@pytest.mark.parametrize("engine, version, named, priced", [
    ("vllm", "0.7.3", "ops.cutlass_scaled_mm", CUBLASLT), ("vllm", "0.7.4.dev181+gf35f8e22", "ops.cutlass_scaled_mm",
                                                           CUBLASLT),
    ("sglang", "0.4.3.post2", "fp8_blockwise_scaled_mm", CUBLASLT), ("vllm", "0.9.0", None, CUBLASLT),
    ("sglang", "0.5.12", "DeepGEMM", DEEP), ("sglang", "0.5.10", "DeepGEMM", DEEP), ("sglang", "0.6.0", None, CUBLASLT),
    (None, None, None, CUBLASLT),
])
def test_the_release_facts_name_the_kernel_and_what_prices_it(engine, version, named, priced):
    h200 = load_gpu("h200-sxm")
    words = dense_block_fp8_fact(engine, version, h200, True)
    measured = "priced by the deepgemm fit where DeepGEMM takes the shape (measured as SGLang 0.5.12 calls it"
    said = measured if priced is DEEP else "neither engine kernel is measured"
    assert (named in words and said in words) if named else words == ""
    assert dense_block_fp8_kernel(engine, version, h200, True) is priced
    assert dense_block_fp8_kernel(engine, version, h200, False) is CUBLASLT
    assert dense_block_fp8_kernel(engine, version, load_gpu("a100-sxm-80gb"), True) is CUBLASLT


def test_only_block_fp8_weights_on_a_9x_gpu_get_the_note():
    assert dense_block_fp8_fact("vllm", "0.7.3", load_gpu("h200-sxm"), False) == ""
    assert dense_block_fp8_fact("vllm", "0.7.3", load_gpu("a100-sxm-80gb"), True) == ""
    h200 = load_gpu("h200-sxm")
    assert engine_kernels(load_model("llama-3-8b"), h200, Deployment(), "vllm", "0.7.3").dense_reason == ""


def test_the_note_says_it_and_vllm_0_7_3_keeps_the_cublaslt_fit():
    """The step's note carries the fact; vLLM 0.7.3's GEMM rows keep the torch_scaled_mm_block fit (its CUTLASS
    kernel is not measured), none priced by DeepGEMM's."""
    model, h200, dep = load_model("deepseek-v3"), load_gpu("h200-sxm"), Deployment(tensor_parallel=8)
    r = step_report(model, h200, 8, 2048, deployment=dep, engine="vllm", engine_version="0.7.3", check_memory=False)
    assert any("dense block-fp8 GEMMs CUTLASS sm90 blockwise" in n for n in r.notes)
    projections = next(row for row in r.rows if row.label.startswith("attention projections"))
    assert projections.predicted_impl == "torch_scaled_mm_block"
    assert not any("deepgemm" in (row.predicted_impl or "") for row in r.rows)


def test_sglang_0_5_12_names_deepgemm_and_its_shapes():
    """SGLang 0.5.12 (its wheel: srt/layers/quantization/fp8_utils.py:454-455, 659): DeepGEMM where N % 64 and
    K % 128 are 0, the Triton fallback elsewhere; the 0.4.x words (multiples of 128, CUTLASS) not said of it."""
    words = dense_block_fp8_fact("sglang", "0.5.12", load_gpu("h200-sxm"), True)
    assert "DeepGEMM" in words and "where N is a multiple of 64 and K of 128" in words
    assert "fp8_utils.py:445-463,645-696" in words and "CUTLASS" not in words
    r = step_report(load_model("deepseek-v3"), load_gpu("h200-sxm"), 8, 2048, deployment=Deployment(tensor_parallel=8),
                    engine="sglang", engine_version="0.5.12", check_memory=False)
    assert any("dense block-fp8 GEMMs DeepGEMM" in n for n in r.notes)


def test_sglang_0_5_12_prices_its_dense_gemm_rows_by_the_deepgemm_fit():
    """SGLang 0.5.12 on the H200: DeepSeek-V3's attention projections (q_a and kv_a fused, N 2112) and dense MLP at TP
    8 all take DeepGEMM's shapes, so both rows are priced by the deepgemm fit, the note naming its measurement; the
    same rows cost less than vLLM 0.7.3's cuBLASLt-priced ones of the same MLP (DeepGEMM measured faster at decode)."""
    model, h200, dep = load_model("deepseek-v3"), load_gpu("h200-sxm"), Deployment(tensor_parallel=8)
    r = step_report(model, h200, 8, 2048, deployment=dep, engine="sglang", engine_version="0.5.12",
                    check_memory=False)
    rows = {row.component: row for row in r.rows if row.variant == "gemm"}
    assert rows["attention"].predicted_impl == rows["dense_mlp"].predicted_impl == "deepgemm"
    assert any("priced by the deepgemm fit" in n and "h200-deepgemm-block-gemm.csv" in n for n in r.notes)
    assert engine_kernels(model, h200, dep, "sglang", "0.5.12").dense_block is DEEP
    v = step_report(model, h200, 8, 2048, deployment=dep, engine="vllm", engine_version="0.7.3", check_memory=False)
    vllm_mlp = next(row for row in v.rows if row.component == "dense_mlp")
    assert rows["dense_mlp"].t_predicted_s < vllm_mlp.t_predicted_s


@pytest.mark.parametrize("n, k, takes", [(576, 7168, True), (2112, 7168, True), (4096, 256, True),
                                         (4000, 7168, False), (1536, 7000, False)])
def test_deepgemm_prices_only_the_shapes_it_takes(n, k, takes):
    """N a multiple of 64 and K of 128 (sglang 0.5.12 fp8_utils.py:659): deepgemm; else the Triton fallback's, at
    the cuBLASLt blockwise fit as before."""
    assert DEEP.takes(n, k) is takes and CUBLASLT.takes(n, k)
    pricer = Pricer(load_gpu("h200-sxm"), DType.bf16, dense_block=DEEP)
    cost = gemm(8, n, k, DType.fp8_e4m3)
    assert pricer.dense_gemm_impl(DType.fp8_e4m3, True, cost) == ("deepgemm" if takes else "torch_scaled_mm_block")
    assert pricer.dense_gemm_impl(DType.fp8_e4m3, False, cost) == "torch_scaled_mm"   # per-tensor fp8: not DeepGEMM
    assert Pricer(load_gpu("h200-sxm"), DType.bf16).dense_gemm_impl(DType.fp8_e4m3, True, cost) == \
        "torch_scaled_mm_block"


def test_without_a_deepgemm_fit_the_cublaslt_fit_prices_it_and_says_so():
    h200 = load_gpu("h200-sxm")
    bare = dataclasses.replace(h200, fitted=tuple(f for f in h200.fitted if f.impl != "deepgemm"))
    pricer = Pricer(bare, DType.bf16, dense_block=DEEP)
    assert pricer.dense_gemm_impl(DType.fp8_e4m3, True, gemm(8, 2112, 7168, DType.fp8_e4m3)) == "torch_scaled_mm_block"
    assert any("no deepgemm fit predicts" in n for n in pricer.notes)
    assert h200.fitted_model(Kernel.gemm, "deepgemm").campaigns == ("gemm/h200-deepgemm-block-gemm.csv",)


def test_a_dense_block_kernel_that_is_not_one_is_refused_by_name():
    with pytest.raises(InputError, match="dense_block must be one of scaled_mm_block, deepgemm"):
        step_context(load_model("deepseek-v3"), load_gpu("h200-sxm"), Deployment(tensor_parallel=8),
                     dense_block="cutlass")

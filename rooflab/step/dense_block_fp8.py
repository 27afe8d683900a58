"""Which kernel an engine runs a block-fp8 model's dense (non-expert) linear layers with at a release, read from its
wheel: a fact the step states in its note, not a price. rooflab prices these GEMMs with its block-fp8 GEMM fit
(torch_scaled_mm_block: torch._scaled_mm with blockwise scales, cuBLASLt, measured on the H200) whatever the engine;
neither engine kernel below is measured here, so the fit is kept and the note says so.

Facts (DENSE_BLOCK_FP8_FACTS), each read at one release and assumed kept within its minor line (0.7.x, 0.4.x,
0.5.x):

    vLLM 0.7.3          apply_w8a8_block_fp8_linear (model_executor/layers/quantization/utils/fp8_utils.py:48-78)
                        runs ops.cutlass_scaled_mm, CUTLASS's sm90 blockwise GEMM (the wheel's _C.abi3.so holds
                        cutlass_3x_gemm_fp8_blockwise with 128 x 128 x 128 tiles, and its
                        cutlass_scaled_mm_supports_block_fp8 compiles to capability > 89), where the weight's N and K
                        are multiples of 128, else the Triton w8a8_block_fp8_matmul at the tuned config the wheel ships
                        for the shape (DeepSeek-V3's kv_a, N 576: utils/configs/N=576,K=7168,
                        device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json)
    SGLang 0.4.3.post2  the same split (srt/layers/quantization/fp8_utils.py:42-52,68-84: sgl_kernel's
                        fp8_blockwise_scaled_mm at capability >= 9.0 with CUDA >= 12.0, else its Triton
                        w8a8_block_fp8_matmul at its shipped H200 configs, layers/quantization/configs/)
    SGLang 0.5.12       DeepGEMM by default: the auto --fp8-gemm-backend picks deepgemm_w8a8_block_fp8_linear_with_
                        fallback first where deep_gemm_wrapper.ENABLE_JIT_DEEPGEMM (srt/layers/quantization/
                        fp8_utils.py:445-463), true from compute capability 9.0 with deep_gemm importable (the wheel
                        requires sgl-deep-gemm 0.1.0) and SGLANG_ENABLE_JIT_DEEPGEMM, default True (layers/
                        deep_gemm_wrapper/configurer.py:17-32, environ.py:399); DeepGEMM's fp8 x fp8 -> bf16 NT GEMM
                        where the weight's N is a multiple of 64 and K of 128 and the output bf16, else the Triton
                        w8a8_block_fp8_matmul (fp8_utils.py:659-672). The activations are still quantised by a
                        launch of their own before each GEMM (sglang_per_token_group_quant_fp8, fp8_utils.py:678-684:
                        what small_ops.act_quant_time prices); DeepSeek-V3's MLA absorbed matmuls run bf16 torch.bmm
                        (kv_b dequantised to bf16 at load, models/deepseek_common/deepseek_weight_loader.py:512-530
                        with SGL_USE_DEEPGEMM_BMM unset; attention_forward_methods/forward_mla.py:359 W_UK, 644-662
                        W_UV)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..vocab import engine_release


@dataclass(frozen=True)
class DenseBlockFp8Fact:
    """An engine line's dense block-fp8 GEMM kernel on compute capability 9.x, read at `version` from its wheel."""

    engine: str
    version: str
    kernel: str
    source: str
    where: str = "N and K are multiples of 128"     # the shapes the kernel takes; the Triton fallback elsewhere


DENSE_BLOCK_FP8_FACTS = (
    DenseBlockFp8Fact("vllm", "0.7.3", "CUTLASS sm90 blockwise (ops.cutlass_scaled_mm)",
                      "vllm 0.7.3 wheel: model_executor/layers/quantization/utils/fp8_utils.py:48-78, _C.abi3.so"),
    DenseBlockFp8Fact("sglang", "0.4.3.post2", "CUTLASS sm90 blockwise (sgl_kernel fp8_blockwise_scaled_mm)",
                      "sglang 0.4.3.post2 wheel: srt/layers/quantization/fp8_utils.py:42-52,68-84"),
    DenseBlockFp8Fact("sglang", "0.5.12", "DeepGEMM (deep_gemm fp8 x fp8 -> bf16 NT, JIT)",
                      "sglang 0.5.12 wheel: srt/layers/quantization/fp8_utils.py:445-463,645-696, "
                      "layers/deep_gemm_wrapper/configurer.py:17-32, environ.py:399",
                      "N is a multiple of 64 and K of 128"),
)


def dense_block_fp8_fact(engine, version, gpu, block_fp8: bool) -> str:
    """The note's words on the kernel `engine` at `version` runs block-fp8 dense GEMMs with on `gpu` ('' where the
    weights are not block fp8 (`block_fp8` False), the GPU is not compute capability 9.x, or no fact covers the
    release)."""
    cc = getattr(gpu, "compute_capability", None)
    if not block_fp8 or not cc or cc.split(".")[0] != "9":
        return ""
    name = str(getattr(engine, "value", engine) or "").lower()
    at = engine_release(version) if version else None
    for fact in DENSE_BLOCK_FP8_FACTS:
        if fact.engine == name and at is not None and at[:2] == engine_release(fact.version)[:2]:
            return (f"{fact.kernel} where {fact.where}, Triton w8a8_block_fp8_matmul at the shipped tuned config "
                    f"elsewhere, read at {name} {fact.version} ({fact.source}); priced by the torch_scaled_mm_block "
                    f"fit (cuBLASLt): neither engine kernel is measured")
    return ""


__all__ = ["DENSE_BLOCK_FP8_FACTS", "DenseBlockFp8Fact", "dense_block_fp8_fact"]

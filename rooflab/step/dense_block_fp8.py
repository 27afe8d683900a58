"""Which kernel an engine runs a block-fp8 model's dense (non-expert) linear layers with at a release, read from its
wheel: a fact the step states in its note, not a price. rooflab prices these GEMMs with its block-fp8 GEMM fit
(torch_scaled_mm_block: torch._scaled_mm with blockwise scales, cuBLASLt, measured on the H200) whatever the engine;
neither engine kernel below is measured here, so the fit is kept and the note says so.

Facts (DENSE_BLOCK_FP8_FACTS), each read at one release and assumed kept within its minor line (0.7.x, 0.4.x):

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


DENSE_BLOCK_FP8_FACTS = (
    DenseBlockFp8Fact("vllm", "0.7.3", "CUTLASS sm90 blockwise (ops.cutlass_scaled_mm)",
                      "vllm 0.7.3 wheel: model_executor/layers/quantization/utils/fp8_utils.py:48-78, _C.abi3.so"),
    DenseBlockFp8Fact("sglang", "0.4.3.post2", "CUTLASS sm90 blockwise (sgl_kernel fp8_blockwise_scaled_mm)",
                      "sglang 0.4.3.post2 wheel: srt/layers/quantization/fp8_utils.py:42-52,68-84"),
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
            return (f"{fact.kernel} where N and K are multiples of 128, Triton w8a8_block_fp8_matmul at the shipped "
                    f"tuned config elsewhere, read at {name} {fact.version} ({fact.source}); priced by the "
                    f"torch_scaled_mm_block fit (cuBLASLt): neither engine kernel is measured")
    return ""


__all__ = ["DENSE_BLOCK_FP8_FACTS", "DenseBlockFp8Fact", "dense_block_fp8_fact"]

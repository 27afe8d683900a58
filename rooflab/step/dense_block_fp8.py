"""Which kernel an engine runs a block-fp8 model's dense (non-expert) linear layers with at a release, read from its
wheel, and what prices them (DenseBlockFp8Kernel). rooflab prices these GEMMs with its block-fp8 GEMM fit
(torch_scaled_mm_block: torch._scaled_mm with blockwise scales, cuBLASLt, measured on the H200) for every engine
kernel it has not measured (vLLM 0.7.x's and SGLang 0.4.x's CUTLASS blockwise, the engines' Triton fallbacks); SGLang
0.5.x's DeepGEMM is measured (benchmarks/deepgemm_block_gemm.py, measurements/gemm/h200-deepgemm-block-gemm.csv: the
call SGLang 0.5.12 makes, on the H200) and priced by its own fit (deepgemm) where DeepGEMM takes the shape.

Facts (DENSE_BLOCK_FP8_FACTS), each read at one release for NVIDIA compute capability 9.x and assumed kept within
its minor line (0.7.x, 0.4.x, 0.5.x). None applies on an AMD GPU (GpuSpec.vendor; the MI300X's '9.4' is gfx942, where
the CUDA-only CUTLASS and DeepGEMM kernels are not built): there no engine kernel is named and the GEMMs are priced by
rooflab's own torch_scaled_mm_block fit:

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
from typing import Optional

import numpy as np

from ..vocab import _Named, fact_of_line


def is_nvidia(gpu) -> bool:
    """Whether `gpu` (a GpuSpec) is an NVIDIA GPU, so that a fact read for CUDA compute capabilities applies to it
    (GpuSpec.vendor; an unknown vendor is not taken for NVIDIA: AMD reports gfx942 as capability '9.4')."""
    return str(getattr(gpu, "vendor", "") or "").lower() == "nvidia"

#: DeepGEMM's shapes in SGLang 0.5.12: the weight's N a multiple of 64 and K of 128 (srt/layers/quantization/
#: fp8_utils.py:659, deepgemm_w8a8_block_fp8_linear_with_fallback); the Triton fallback elsewhere.
DEEPGEMM_N_MULTIPLE, DEEPGEMM_K_MULTIPLE = 64, 128


class DenseBlockFp8Kernel(_Named):
    """What prices a step's dense block-fp8 GEMMs (the module docstring)."""

    scaled_mm_block = "scaled_mm_block"      # the torch_scaled_mm_block fit (cuBLASLt) whatever the engine runs
    deepgemm = "deepgemm"                    # SGLang 0.5.x: the deepgemm fit where DeepGEMM takes the shape (takes)

    def takes(self, n, k) -> bool:
        """Whether this kernel runs a GEMM of weight [n, k] (DeepGEMM: DEEPGEMM_N_MULTIPLE, DEEPGEMM_K_MULTIPLE;
        every shape for scaled_mm_block); n, k may be arrays (all must hold)."""
        if self is DenseBlockFp8Kernel.scaled_mm_block:
            return True
        return bool(np.all(np.asarray(n) % DEEPGEMM_N_MULTIPLE == 0)
                    and np.all(np.asarray(k) % DEEPGEMM_K_MULTIPLE == 0))


@dataclass(frozen=True)
class DenseBlockFp8Fact:
    """An engine line's dense block-fp8 GEMM kernel on NVIDIA compute capability 9.x, read at `version` from its wheel, and
    what prices it."""

    engine: str
    version: str
    kernel: str
    source: str
    where: str = "N and K are multiples of 128"     # the shapes the kernel takes; the Triton fallback elsewhere
    priced_as: DenseBlockFp8Kernel = DenseBlockFp8Kernel.scaled_mm_block


DENSE_BLOCK_FP8_FACTS = (
    DenseBlockFp8Fact("vllm", "0.7.3", "CUTLASS sm90 blockwise (ops.cutlass_scaled_mm)",
                      "vllm 0.7.3 wheel: model_executor/layers/quantization/utils/fp8_utils.py:48-78, _C.abi3.so"),
    DenseBlockFp8Fact("sglang", "0.4.3.post2", "CUTLASS sm90 blockwise (sgl_kernel fp8_blockwise_scaled_mm)",
                      "sglang 0.4.3.post2 wheel: srt/layers/quantization/fp8_utils.py:42-52,68-84"),
    DenseBlockFp8Fact("sglang", "0.5.12", "DeepGEMM (deep_gemm fp8 x fp8 -> bf16 NT, JIT)",
                      "sglang 0.5.12 wheel: srt/layers/quantization/fp8_utils.py:445-463,645-696, "
                      "layers/deep_gemm_wrapper/configurer.py:17-32, environ.py:399",
                      f"N is a multiple of {DEEPGEMM_N_MULTIPLE} and K of {DEEPGEMM_K_MULTIPLE}",
                      DenseBlockFp8Kernel.deepgemm),
)


def _fact(engine, version, gpu, block_fp8: bool) -> Optional[DenseBlockFp8Fact]:
    """The fact covering `engine` at `version` on `gpu` for block-fp8 weights; None where the weights are not block
    fp8, the GPU is not an NVIDIA one of compute capability 9.x (the facts were read for CUDA; an AMD GPU's '9.4' is
    gfx942, where the CUDA-only kernels do not run), or no fact covers the release."""
    cc = getattr(gpu, "compute_capability", None)
    if not block_fp8 or not cc or cc.split(".")[0] != "9" or not is_nvidia(gpu):
        return None
    return fact_of_line(DENSE_BLOCK_FP8_FACTS, engine, version)


def dense_block_fp8_fact(engine, version, gpu, block_fp8: bool) -> str:
    """The note's words on the kernel `engine` at `version` runs block-fp8 dense GEMMs with on `gpu` ('' where the
    weights are not block fp8 (`block_fp8` False), the GPU is not an NVIDIA one of compute capability 9.x, or no fact
    covers the release: no engine kernel named, the GEMMs priced by rooflab's own torch_scaled_mm_block fit), and
    what prices it."""
    fact = _fact(engine, version, gpu, block_fp8)
    if fact is None:
        return ""
    head = (f"{fact.kernel} where {fact.where}, Triton w8a8_block_fp8_matmul at the shipped tuned config elsewhere, "
            f"read at {fact.engine} {fact.version} ({fact.source}); ")
    if fact.priced_as is DenseBlockFp8Kernel.deepgemm:
        return head + ("priced by the deepgemm fit where DeepGEMM takes the shape (measured as SGLang 0.5.12 calls it; "
                       "the GEMM note names the campaign), by the torch_scaled_mm_block fit (cuBLASLt) elsewhere: the "
                       "Triton fallback is not measured")
    return head + "priced by the torch_scaled_mm_block fit (cuBLASLt): neither engine kernel is measured"


def dense_block_fp8_kernel(engine, version, gpu, block_fp8: bool) -> DenseBlockFp8Kernel:
    """What prices `engine` at `version`'s dense block-fp8 GEMMs on `gpu` (the fact's priced_as; scaled_mm_block
    where no fact covers it)."""
    fact = _fact(engine, version, gpu, block_fp8)
    return DenseBlockFp8Kernel.scaled_mm_block if fact is None else fact.priced_as


__all__ = ["DEEPGEMM_K_MULTIPLE", "DEEPGEMM_N_MULTIPLE", "DENSE_BLOCK_FP8_FACTS", "DenseBlockFp8Fact",
           "DenseBlockFp8Kernel", "dense_block_fp8_fact", "dense_block_fp8_kernel", "is_nvidia"]

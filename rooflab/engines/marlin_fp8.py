"""vLLM's block-fp8 linear layers under Marlin: the group-wise scales it expands the 128 x 128 block scales into.

A checkpoint whose linear layers are fp8 in 128 x 128 blocks (fp8_block: Qwen3-8B-FP8, DeepSeek-V3) ships one
fp32 scale a block, [ceil(N / 128), ceil(K / 128)] for a layer of N outputs and K inputs. vLLM v0.29.0 picks the
first block-fp8 kernel the GPU supports, in _POSSIBLE_FP8_BLOCK_KERNELS' order (CUDA: FlashInfer-DeepGEMM,
DeepGEMM, CUTLASS, B12x, Marlin, Humming, Triton, torch; vllm/model_executor/kernels/linear/__init__.py:435-446
and choose_scaled_mm_linear_kernel :607, :652-663). DeepGEMM needs Hopper or Blackwell (scaled_mm/deep_gemm.py:47-52),
CUTLASS's block kernels SM90 or later (cutlass_scaled_mm_supports_block_fp8, csrc/quantization/w8a8/cutlass/
scaled_mm_entry.cu) and B12x SM12x, so below compute capability 9.0 the default `--linear-backend auto` takes
MarlinFP8ScaledMMLinearKernel (Marlin: CC 7.5 or later, marlin_utils_fp8.py:31-32 is_fp8_marlin_supported). Set
6's v0.29.0 L4 (8.9) logs print "Selected MarlinFP8ScaledMMLinearKernel for Fp8LinearMethod" under auto, Triton
under --linear-backend=triton.

Marlin has no block scales: prepare_fp8_layer_for_marlin turns them into group scales of 128 inputs, each block's
scale repeated over its 128 outputs, in the layer's original dtype (the activations'), and they replace the block
scales (vllm v0.29.0 vllm/model_executor/layers/quantization/utils/marlin_utils_fp8.py:156-214: `.to(
layer.orig_dtype)`, repeat_interleave(block_n, 1) to [K / 128, N], replace_parameter). The weights repack to the
same bytes (gptq_marlin_repack, 8 bits a weight). Per layer, with b the activations' bytes:

    group scales  (K / 128) N b       replacing      block scales  (N / 128)(K / 128) 4

so a GPU holding P such parameters holds P (b / 128 - 4 / 128^2) bytes more than fp8_block's own bits count
(dtypes.WeightFormat.fp8_block: 8 + 32 / 128^2 bits a weight). Qwen3-8B-FP8 at TP 1, bf16: its attention and MLP
projections hold 6,945,767,424 parameters (36 x 192,937,984), so 6,945,767,424 x (2 / 128 - 4 / 16,384) =
106,831,872 bytes (0.0995 GiB). process_weights_after_loading runs inside load_model, so the weights figure counts
them. Set 6's v0.29.0 logs (post hoc): the decode servers on Marlin hold 0.134 GiB more non-KV memory than the
prefill servers on Triton with everything else alike.

Not modelled: Marlin's padding of N to 64 and K to 128 (marlin_utils.py:221-243; rooflab's projections are whole
multiples), its workspace (one int32 a streaming multiprocessor a layer), a --linear-backend other than auto
(EngineSettings has no field: Triton or Humming keep the block scales; marlin on a GPU of 9.0 or later would
expand them), the routed experts' fp8 MoE methods (fused Marlin MoE below 8.9: not read), and the releases before
v0.29.0 (the kernel list was not read for them; v0.10's Fp8LinearMethod took Marlin only below 8.9 and ran block
fp8 through Triton: MARLIN_BLOCK_FP8_RELEASE is the first release read).
"""

from __future__ import annotations

from typing import Optional

from ..specs import GpuSpec, ModelSpec
from ..specs.weights import WeightComponent
from ..units import WeightFormat
from .settings import model_dtype
from .vocab import Accounting

#: The first vLLM release whose block-fp8 kernel choice was read (module docstring): v0.29.0.
MARLIN_BLOCK_FP8_RELEASE = (0, 29)
#: The compute capabilities where `--linear-backend auto` picks Marlin for block fp8 (module docstring).
MARLIN_CAPABILITY, NATIVE_BLOCK_CAPABILITY = (7, 5), (9, 0)
#: Marlin's group of inputs a scale covers, and the checkpoint's block edge (weight_block_size).
GROUP, BLOCK = 128, 128
#: The dense linear components a block-fp8 checkpoint quantizes (the routed experts take the MoE methods).
DENSE_LINEAR = (WeightComponent.attention, WeightComponent.dense_mlp, WeightComponent.shared_experts)


def takes_marlin(gpu: Optional[GpuSpec], accounting: Optional[Accounting],
                 release: Optional[tuple[int, ...]]) -> bool:
    """Whether vLLM V1 at `release` lays block-fp8 linear layers out for Marlin on `gpu` (module docstring): from
    MARLIN_BLOCK_FP8_RELEASE, on an NVIDIA GPU of compute capability 7.5 up to 9.0 (ROCm's kernel list,
    kernels/linear/__init__.py:448-451, has no Marlin); a GPU without a compute capability, another accounting or
    no release: no."""
    cc = gpu.compute_capability_version if gpu is not None else None
    nvidia = gpu is not None and (gpu.vendor or "nvidia").lower() == "nvidia"    # ROCm's list has no Marlin
    return (accounting is Accounting.vllm_v1 and release is not None and tuple(release) >= MARLIN_BLOCK_FP8_RELEASE
            and nvidia and cc is not None and MARLIN_CAPABILITY <= cc < NATIVE_BLOCK_CAPABILITY)


def marlin_scale_bytes(model: ModelSpec, tensor_parallel: int, weight_format=None, gpu: Optional[GpuSpec] = None,
                       accounting: Optional[Accounting] = None, release: Optional[tuple[int, ...]] = None) -> int:
    """The bytes one GPU's block-fp8 dense linear layers hold beyond fp8_block's own bits once Marlin's group
    scales replace the block scales (module docstring), P (b / 128 - 4 / 128^2) with P the parameters of the
    components in fp8_block split `tensor_parallel` ways; 0 where vLLM does not take Marlin (takes_marlin)."""
    if not takes_marlin(gpu, accounting, release):
        return 0
    counts = model.parameters.by_component()
    params = sum(counts[c] for c in DENSE_LINEAR if model.weight_format(c, weight_format) is WeightFormat.fp8_block)
    b = model_dtype(model).bytes
    return params * b // (GROUP * tensor_parallel) - params * 4 // (GROUP * BLOCK * tensor_parallel)


__all__ = ["DENSE_LINEAR", "MARLIN_BLOCK_FP8_RELEASE", "marlin_scale_bytes", "takes_marlin"]

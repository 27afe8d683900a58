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

Earlier releases (MARLIN_BLOCK_SPANS): from v0.9.0 to v0.11.2 there is no kernel list; Fp8LinearMethod (a
checkpoint whose quant_method is fp8, Qwen3-8B-FP8) sets use_marlin below compute capability 8.9 for block fp8
too, and process_weights_after_loading runs prepare_fp8_layer_for_marlin on it, which expands the block scales
the same way (`.to(layer.orig_dtype)`, repeat_interleave(block_n, 1)); Fp8Config needs 8.0 (get_min_capability
80), so A100s, A10s and RTX 3090s take it and the L4 (8.9) runs block fp8 through Triton (wheels: fp8.py use_marlin
at 0.9.0:179, 0.9.2:188, 0.10.0:197, 0.11.2:362, prepare_fp8_layer_for_marlin at :383, :392, :416, :539;
marlin_utils_fp8.py repeat_interleave(block_n, 1) at :151, :152, :152, :158). v0.7.3, v0.8.0 and v0.8.5 turn
Marlin off for block quant (fp8.py `if self.block_quant: self.use_marlin = False`, 0.8.5:183-185), so v0.9.0 is
the first (v0.8.5.post1 between them, taken as v0.8.5). compressed-tensors' block-fp8 scheme has no Marlin path
in that span: CompressedTensorsW8A8Fp8 builds W8A8BlockFp8LinearOp (CUTLASS from SM90, else Triton; 0.11.2
compressed_tensors_w8a8_fp8.py:46-76) and needs 8.9, and its W8A16Fp8 fallback refuses the block strategy
(compressed_tensors_w8a16_fp8.py:96-109). The releases between v0.11.2 and v0.29.0 were not read: no expansion.

Not modelled: Marlin's padding of N to 64 and K to 128 (marlin_utils.py:221-243; rooflab's projections are whole
multiples), its workspace (one int32 a streaming multiprocessor a layer), a --linear-backend other than auto
(EngineSettings has no field: Triton or Humming keep the block scales; marlin on a GPU of 9.0 or later would
expand them), VLLM_TEST_FORCE_FP8_MARLIN, and the routed experts' fp8 MoE methods (fused Marlin MoE below 8.9: not
read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..specs import GpuSpec, ModelSpec, QuantMethod
from ..specs.weights import WeightComponent
from ..dtypes import FP8_BLOCK
from ..units import WeightFormat
from .settings import model_dtype
from .vocab import Accounting, Engine, in_range, in_span


@dataclass(frozen=True)
class MarlinSpan:
    """vLLM releases (first, last: vocab.in_span) whose block-fp8 linear layers take Marlin on compute capabilities
    [lowest, below), and whether compressed-tensors' block scheme does too (module docstring)."""

    releases: tuple[tuple[int, ...], tuple[int, ...]]
    lowest: tuple[int, int]
    below: tuple[int, int]
    compressed_tensors: bool


#: Where vLLM lays block fp8 out for Marlin (module docstring): v0.9.0-v0.11.2 Fp8LinearMethod's use_marlin below
#: 8.9 (Fp8Config from 8.0); v0.29.0 `--linear-backend auto`'s kernel list below 9.0 from Marlin's 7.5.
MARLIN_BLOCK_SPANS = (MarlinSpan(((0, 9, 0), (0, 11, 2)), (8, 0), (8, 9), compressed_tensors=False),
                      MarlinSpan(((0, 29), (0, 29)), (7, 5), (9, 0), compressed_tensors=True))
#: Marlin's group of inputs a scale covers, and the checkpoint's block edge (weight_block_size).
GROUP, BLOCK = 128, FP8_BLOCK
#: The dense linear components a block-fp8 checkpoint quantizes (the routed experts take the MoE methods).
DENSE_LINEAR = (WeightComponent.attention, WeightComponent.dense_mlp, WeightComponent.shared_experts)


def takes_marlin(gpu: Optional[GpuSpec], accounting: Optional[Accounting], release: Optional[tuple[int, ...]],
                 quant_method: Optional[QuantMethod] = None) -> bool:
    """Whether vLLM at `release` lays block-fp8 linear layers out for Marlin on `gpu` (module docstring): a release
    of MARLIN_BLOCK_SPANS that `accounting` covers, on an NVIDIA GPU of a compute capability in its span (ROCm
    turns Marlin off: fp8.py `if current_platform.is_rocm()`, and the v0.29 ROCm kernel list,
    kernels/linear/__init__.py:448-451, has none), the checkpoint's `quant_method` one the span's kernels take
    (None: an override on an unquantized checkpoint, fp8's method); a GPU without a compute capability, another
    engine or no release: no."""
    cc = gpu.compute_capability_version if gpu is not None else None
    nvidia = gpu is not None and (gpu.vendor or "nvidia").lower() == "nvidia"
    if (accounting is None or accounting.engine is not Engine.vllm or release is None or not nvidia or cc is None
            or not in_range(accounting, tuple(release))):
        return False
    return any(in_span(tuple(release), span.releases) and span.lowest <= cc < span.below
               and (span.compressed_tensors or quant_method is not QuantMethod.compressed_tensors)
               for span in MARLIN_BLOCK_SPANS)


def marlin_scale_bytes(model: ModelSpec, tensor_parallel: int, weight_format=None, gpu: Optional[GpuSpec] = None,
                       accounting: Optional[Accounting] = None, release: Optional[tuple[int, ...]] = None) -> int:
    """The bytes one GPU's block-fp8 dense linear layers hold beyond fp8_block's own bits once Marlin's group
    scales replace the block scales (module docstring), P (b / 128 - 4 / 128^2) with P the parameters of the
    components in fp8_block split `tensor_parallel` ways; 0 where vLLM does not take Marlin (takes_marlin)."""
    if not takes_marlin(gpu, accounting, release, model.quant_method):
        return 0
    counts = model.parameters.by_component()
    params = sum(counts[c] for c in DENSE_LINEAR if model.weight_format(c, weight_format) is WeightFormat.fp8_block)
    b = model_dtype(model).bytes
    return params * b // (GROUP * tensor_parallel) - params * 4 // (GROUP * BLOCK * tensor_parallel)


__all__ = ["DENSE_LINEAR", "MARLIN_BLOCK_SPANS", "MarlinSpan", "marlin_scale_bytes", "takes_marlin"]

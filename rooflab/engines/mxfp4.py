"""vLLM's mxfp4 routed experts (gpt-oss) as loaded: the sizes its MoE backend rounds them up to, by release and GPU.

vLLM loads a checkpoint whose experts are mxfp4 (quant_method mxfp4: Mxfp4Config, Mxfp4MoEMethod) into tensors
whose hidden size H and per-rank intermediate size I = F // tp (F the experts' FFN size; tp 1 under expert
parallelism, which keeps experts whole: FusedMoEParallelConfig) are first rounded up to the multiples the chosen
backend's kernel takes (Mxfp4MoEMethod.create_weights), H' and I':

    w13 [E, 2 I', H' / 2] u8 + its scales [E, 2 I', H' / 32] u8      (gate and up: two fp4 a byte, e8m0 per 32)
    w2  [E, H', I' / 2] u8  + its scales [E, H', I' / 32] u8         (down)

so one expert on one rank holds 3 H' I' 17 / 32 bytes against the checkpoint's 3 H I 17 / 32. The padding is zeros
in GPU memory, and "Model loading took" counts it (torch's allocated bytes after load_model). The rest of the model
(attention, router, embeddings, LM head, sinks) stays in the checkpoint's bf16 (Mxfp4Config.get_quant_method:
linear and attention layers unquantized).

    backend      H' multiple  I' multiple  chosen by vLLM (CUDA, no environment variable set)
    marlin       256          128          compute capability below 9.0 in every release with mxfp4 (v0.10.1 on);
                                           9.x before v0.12.0 (the wheel has no triton_kernels: v0.11.2's
                                           get_mxfp4_backend, v0.10.1.1's _should_use_marlin, torch 2.7.1 < 2.8);
                                           11.x and 12.x in every release (triton_kernels only on 9.0 to < 11.0)
    triton       1            64           9.x from v0.12.0 (has_triton_kernels finds vllm.third_party.triton_kernels)
    flashinfer   256          256          10.x: the SM100 FlashInfer (TRT-LLM) BF16 backend, flashinfer-python a
                                           dependency from v0.11.x (v0.10.1.1 only with its extra)

Marlin repacks the weights (gptq_marlin_repack, 4 bits a weight still) and permutes the scales back to e8m0 one
byte each (marlin_utils_fp4.py prepare_moe_fp4_layer_for_marlin, mxfp4_marlin_process_scales): the padded sizes
are its bytes. The Triton backend on Hopper swizzles each tensor, transposed to [K / 2, N] and [N, K / 32] (K the
reduced size), into triton_kernels' layouts (v0.19.0 and v0.20.2: oracle/mxfp4.py
convert_gpt_oss_weight_to_mxfp4_moe_kernel_format -> utils/mxfp4_utils.py _swizzle_mxfp4, 8 warps): the values
with both dims padded to 64 (HopperMXValueLayout.swizzle_data), the scales with N padded to 2 x 8 x 2 x 8 = 256
(HopperMXScaleLayout.swizzle_data); the loaded scale parameters stay on the layer beside the swizzled copy
(Mxfp4MoEMethod._setup_kernel assigns the TRITON backends' scales to precision configs, not to w13_weight_scale):

    triton bytes = ceil64(H/2) ceil64(2I') + ceil64(I'/2) ceil64(H)                         values
                 + 2I' H/32 + H I'/32                                                       scales as loaded
                 + ceil256(2I') ceil2(H/32) + ceil256(H) ceil2(I'/32)                       swizzled scales

Not modelled: the experts' biases (inside the published count; their padding, and the Triton backend's fp32
copies of them, under 0.1 GiB for gpt-oss-120b); the Triton layouts before v0.19.0 (v0.12.0's vendored copy pads
the values to 16 x 32 only); AMD GPUs (ROCm's rounding by triton target, get_padding_alignment, or AITER's); the
releases where B300 (10.3) missed the exact-10.0 tests (v0.11.2, v0.12.0). The accounting names a range of
releases; its rule is the newest one read (RULE_RELEASE). SGLang is not modelled here: v0.5.3's
Mxfp4MoEMethod.create_weights rounds (256, 256) on SM100 with FlashInfer and I to 32 with triton_kernels, and
dequantises the experts to bf16 at load without either (python/sglang/srt/layers/quantization/mxfp4.py,
process_weights_after_loading), which depends on the install.

Sources: vLLM v0.10.1.1, v0.11.2, v0.12.0 vllm/model_executor/layers/quantization/mxfp4.py (get_mxfp4_backend,
Mxfp4MoEMethod.create_weights); v0.19.0, v0.20.2 vllm/model_executor/layers/fused_moe/oracle/mxfp4.py
(select_gpt_oss_mxfp4_moe_backend, mxfp4_round_up_hidden_size_and_intermediate_size) and
vllm/third_party/triton_kernels/tensor_details/layout_details/hopper_value.py, hopper_scale.py;
vllm/utils/import_utils.py has_triton_kernels (v0.11.2: the triton_kernels package only; v0.12.0: also the
vendored copy).
"""

from __future__ import annotations

import enum
from fractions import Fraction
from typing import Optional

from ..specs import GpuSpec, ModelSpec
from ..units import WeightFormat
from .vocab import Accounting

Release = tuple[int, int, int]

#: The first vLLM release with mxfp4 experts (gpt-oss, v0.10.1) and the first that vendors triton_kernels.
FIRST_MXFP4: Release = (0, 10, 1)
TRITON_VENDORED: Release = (0, 12, 0)

#: The release whose rule each accounting follows: the newest of its range read (vllm-v1: v0.9.1 - v0.20).
RULE_RELEASE: dict[Accounting, Release] = {Accounting.vllm_v1: (0, 20, 2)}


class Mxfp4Backend(str, enum.Enum):
    """vLLM's MoE kernels for mxfp4 experts, as far as their weights' layout goes."""

    marlin = "marlin"
    triton = "triton"
    flashinfer = "flashinfer"

    @property
    def rounding(self) -> tuple[int, int]:
        """(H multiple, I multiple) create_weights rounds the experts' sizes up to."""
        return {"marlin": (256, 128), "triton": (1, 64), "flashinfer": (256, 256)}[self.value]


def vllm_mxfp4_backend(release: Release, compute_capability: Optional[tuple[int, int]],
                       vendor: Optional[str]) -> Optional[Mxfp4Backend]:
    """The backend vLLM `release` picks for mxfp4 experts on a GPU of `compute_capability` (module table), with no
    environment variable set; None where no rule is modelled (before mxfp4, AMD, no compute capability)."""
    if release < FIRST_MXFP4 or compute_capability is None or (vendor or "nvidia").lower() != "nvidia":
        return None
    major = compute_capability[0]
    if major == 10:
        return Mxfp4Backend.flashinfer
    if major == 9 and release >= TRITON_VENDORED:
        return Mxfp4Backend.triton
    return Mxfp4Backend.marlin


def _up(size: int, multiple: int) -> int:
    return -(-size // multiple) * multiple


def loaded_expert_bytes(backend: Mxfp4Backend, hidden: int, per_rank: int) -> int:
    """One expert's weights and scales on one rank as `backend` holds them (module docstring's shapes and formula)."""
    hidden_multiple, inter_multiple = backend.rounding
    h, i = _up(hidden, hidden_multiple), _up(per_rank, inter_multiple)
    if backend is not Mxfp4Backend.triton:
        return 2 * i * (h // 2) + 2 * i * (h // 32) + h * (i // 2) + h * (i // 32)   # w13 + scales, w2 + scales
    values = _up(h // 2, 64) * _up(2 * i, 64) + _up(i // 2, 64) * _up(h, 64)             # [K/2, N], 64 x 64
    scales = 2 * i * (h // 32) + h * (i // 32)                                            # kept as loaded
    swizzled = _up(2 * i, 256) * _up(h // 32, 2) + _up(h, 256) * _up(i // 32, 2)          # [N, K/32], N to 256
    return values + scales + swizzled


def expert_padding(model: ModelSpec, accounting: Accounting, gpu: Optional[GpuSpec], tensor_parallel: int,
                   expert_parallel: int = 1, weight_format=None) -> tuple[Fraction, str]:
    """The loaded routed experts' bytes over the checkpoint's on one rank (loaded_expert_bytes over 3 H I 17 / 32,
    I = F / tp), and a line saying so; 1 and '' where the experts are not mxfp4 as loaded or no rule is modelled for
    the accounting or GPU. `tensor_parallel` splits I unless `expert_parallel` > 1 keeps experts whole;
    `weight_format` is engine_weight_bytes' (a format the linear layers are quantised to at load, None: as shipped)."""
    if gpu is None or not model.is_moe or model.weight_format("experts", weight_format) is not WeightFormat.mxfp4:
        return Fraction(1), ""
    release = RULE_RELEASE.get(accounting)
    backend = None if release is None else vllm_mxfp4_backend(release, gpu.compute_capability_version, gpu.vendor)
    if backend is None:
        return Fraction(1), ""
    tp = 1 if expert_parallel > 1 else tensor_parallel
    hidden, per_rank = model.hidden_size, model.ffn_size // tp
    shipped = Fraction(3 * hidden * model.ffn_size * 17, 32 * tp)
    ratio = loaded_expert_bytes(backend, hidden, per_rank) / shipped
    hidden_multiple, inter_multiple = backend.rounding
    layout = " and triton_kernels' Hopper layouts" if backend is Mxfp4Backend.triton else ""
    return ratio, (f"experts as vLLM v{'.'.join(map(str, release))}'s {backend.value} mxfp4 MoE loads them on "
                   f"compute capability {gpu.compute_capability}: H {hidden} -> {_up(hidden, hidden_multiple)}, "
                   f"I {per_rank} -> {_up(per_rank, inter_multiple)} a rank{layout} (x{float(ratio):.4f})")


__all__ = ["FIRST_MXFP4", "Mxfp4Backend", "RULE_RELEASE", "TRITON_VENDORED", "expert_padding", "loaded_expert_bytes",
           "vllm_mxfp4_backend"]

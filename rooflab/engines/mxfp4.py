"""vLLM's mxfp4 routed experts (gpt-oss) as loaded: the sizes its MoE backend rounds them up to, by release and GPU.

vLLM loads a checkpoint whose experts are mxfp4 (quant_method mxfp4: Mxfp4Config, Mxfp4MoEMethod) into tensors
whose hidden size H and per-rank intermediate size I = F // tp (F the experts' FFN size; tp 1 under expert
parallelism, which keeps experts whole: FusedMoEParallelConfig) are first rounded up to the multiples the chosen
backend's kernel takes (Mxfp4MoEMethod.create_weights):

    w13 [E, 2 I', H' / 2] u8 + its scales [E, 2 I', H' / 32] u8      (gate and up, 4.25 bits a weight)
    w2  [E, H', I' / 2] u8  + its scales [E, H', I' / 32] u8         (down)

so each rank's experts take H' I' / (H I) of the checkpoint's bytes (weights and scales alike; the biases
[E, 2 I'] and [E, H'] are inside the published count rooflab scales to). The padding is zeros in GPU memory, and
"Model loading took" counts it. The rest of the model (attention, router, embeddings, LM head, sinks) stays in
the checkpoint's bf16 (Mxfp4Config.get_quant_method: linear and attention layers unquantized).

    backend      H' multiple  I' multiple  chosen by vLLM (CUDA; vendored triton_kernels from v0.12.0)
    marlin       256          128          compute capability below 9.0 in every release with mxfp4 (v0.10.1 on);
                                           9.x before v0.12.0 (the wheel has no triton_kernels: v0.11.2's
                                           get_mxfp4_backend, v0.10.1.1's _should_use_marlin, torch 2.7.1 < 2.8);
                                           11.x and 12.x in every release (triton_kernels only on 9.0 to < 11.0)
    triton       1            64           9.x from v0.12.0 (has_triton_kernels finds vllm.third_party.triton_kernels)
    flashinfer   256          256          10.x: the SM100 FlashInfer (TRT-LLM) BF16 backend, flashinfer-python a
                                           dependency from v0.11.x (v0.10.1.1 only with its extra)

Marlin repacks the weights (gptq_marlin_repack, 4 bits a weight still) and permutes the scales back to e8m0 one
byte each (marlin_utils_fp4.py prepare_moe_fp4_layer_for_marlin, mxfp4_marlin_process_scales): the padded sizes
are its bytes. Not modelled: the Triton backend's swizzled layout (triton_kernels HopperMXScaleLayout pads each
scale tensor's rows to 256; the v0.19.0 H100 gpt-oss-20b log of the regular corpus loads 7.01 GiB a rank at TP 2
against 6.52 with the rounding above); AMD GPUs (ROCm's rounding by triton target, get_padding_alignment, or
AITER's); the releases where B300 (10.3) missed the exact-10.0 tests (v0.11.2, v0.12.0). The accounting names a
range of releases; its rule is the newest one read (RULE_RELEASE). SGLang is not modelled here: v0.5.3's
Mxfp4MoEMethod.create_weights rounds (256, 256) on SM100 with FlashInfer and I to 32 with triton_kernels, and
dequantises the experts to bf16 at load without either (python/sglang/srt/layers/quantization/mxfp4.py,
process_weights_after_loading), which depends on the install.

Sources: vLLM v0.10.1.1, v0.11.2, v0.12.0 vllm/model_executor/layers/quantization/mxfp4.py (get_mxfp4_backend,
Mxfp4MoEMethod.create_weights); v0.20.2 vllm/model_executor/layers/fused_moe/oracle/mxfp4.py
(select_gpt_oss_mxfp4_moe_backend, mxfp4_round_up_hidden_size_and_intermediate_size); vllm/utils/import_utils.py
has_triton_kernels (v0.11.2: the triton_kernels package only; v0.12.0: also the vendored copy).
"""

from __future__ import annotations

import enum
import math
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


def expert_padding(model: ModelSpec, accounting: Accounting, gpu: Optional[GpuSpec], tensor_parallel: int,
                   expert_parallel: int = 1, weight_format=None) -> tuple[Fraction, str]:
    """The loaded routed experts' bytes over the checkpoint's on one rank, H' I' / (H I) (module docstring), and a
    line saying so; 1 and '' where the experts are not mxfp4 as loaded or no rule is modelled for the accounting
    or GPU. `tensor_parallel` splits I unless `expert_parallel` > 1 keeps experts whole; `weight_format` is
    engine_weight_bytes' (a format the linear layers are quantised to at load, None: as shipped)."""
    if gpu is None or not model.is_moe or model.weight_format("experts", weight_format) is not WeightFormat.mxfp4:
        return Fraction(1), ""
    release = RULE_RELEASE.get(accounting)
    backend = None if release is None else vllm_mxfp4_backend(release, gpu.compute_capability_version, gpu.vendor)
    if backend is None:
        return Fraction(1), ""
    hidden, per_rank = model.hidden_size, model.ffn_size // (1 if expert_parallel > 1 else tensor_parallel)
    hidden_multiple, inter_multiple = backend.rounding
    hidden_pad = math.ceil(hidden / hidden_multiple) * hidden_multiple
    per_rank_pad = math.ceil(per_rank / inter_multiple) * inter_multiple
    ratio = Fraction(hidden_pad * per_rank_pad, hidden * per_rank)
    shown = ".".join(map(str, release))
    return ratio, (f"experts as vLLM v{shown}'s {backend.value} mxfp4 MoE loads them on compute capability "
                   f"{gpu.compute_capability}: H {hidden} -> {hidden_pad}, I {per_rank} -> {per_rank_pad} a rank "
                   f"(x{float(ratio):.4f})")


__all__ = ["FIRST_MXFP4", "Mxfp4Backend", "RULE_RELEASE", "TRITON_VENDORED", "expert_padding", "vllm_mxfp4_backend"]

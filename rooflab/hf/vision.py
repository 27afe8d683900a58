"""Vision-language configs: the language model is read (and planned) as its own family reads it; the vision
tower and projector are counted as weights (ModelSpec.vision_parameters), never as layers.

    LlavaForConditionalGeneration   text_config read as Llama (the model_type Llava 1.5 and 1.6 ship); a
                                    CLIP vision tower (vision_config) and a two-layer projector
    Qwen3VLForConditionalGeneration text_config read as Qwen3 (q/k norms left out); Qwen3-VL's vision tower
                                    with its patch merger and one DeepStack merger per deepstack_visual_indexes
    Gemma3ForConditionalGeneration  text_config read as Gemma 3; a SigLIP tower (vision_config) and Gemma 3's
                                    projector; an image's prompt tokens from mm_tokens_per_image

The tower's parameters, from transformers' modeling_clip.py and modeling_llava.py (release 5.24.0), with
width D, MLP width I, L layers, patch P, image size S, C channels:

    CLIPVisionEmbeddings      class token D, patch convolution C P^2 D (no bias), positions ((S / P)^2 + 1) D
    pre- and post-layer norm  2 D each (weight and bias)
    CLIPEncoderLayer          q, k, v, out: 4 (D^2 + D); fc1 D I + I, fc2 I D + D; two layer norms 4 D
    LlavaMultiModalProjector  linear_1 (D k) H + H, linear_2 H H + H (biases where multimodal_projector_bias),
                              k the vision feature layers taken (1 for an int vision_feature_layer)

Qwen3-VL's tower (modeling_qwen3_vl.py), width D, MLP I, `depth` blocks, patch P, temporal patch T, merge m,
output width H_o, N position embeddings:

    Qwen3VLVisionPatchEmbed   Conv3d C T P^2 D + D; pos_embed N D
    Qwen3VLVisionBlock        two LayerNorms 4 D; qkv 3 D^2 + 3 D, proj D^2 + D; linear_fc1 D I + I, fc2 I D + D
    Qwen3VLVisionPatchMerger  norm 2 D (2 D m^2 after the shuffle, the DeepStack mergers'); linear_fc1
                              D m^2 x D m^2 + D m^2; linear_fc2 D m^2 H_o + H_o

Gemma 3 (Gemma3ForConditionalGeneration; modeling_siglip.py and modeling_gemma3.py), a SigLIP tower of width D,
MLP I, L layers, patch P, image S, C channels, without the pooling head (vision_use_head false), and the
projector into the text width H:

    SiglipVisionEmbeddings    patch convolution C P^2 D + D (bias), positions (S / P)^2 D (no class token)
    SiglipEncoderLayer        q, k, v, out: 4 (D^2 + D); fc1 D I + I, fc2 I D + D; two layer norms 4 D
    post_layernorm            2 D
    Gemma3MultiModalProjector mm_input_projection_weight D H, mm_soft_emb_norm D (RMSNorm)

An image's prompt tokens (ModelSpec.image_tokens) are mm_tokens_per_image + 4: transformers' Gemma3Processor
writes each image as "\n\n" boi, mm_tokens_per_image image tokens, eoi "\n\n" (processing_gemma3.py,
Gemma3Processor.__init__ full_image_sequence; "\n\n" is one token of Gemma's vocabulary), and vLLM's profiler
counts the whole span (vllm v0.11.2 vllm/multimodal/registry.py get_max_tokens_per_item_by_modality,
get_mm_max_contiguous_tokens; gemma3_mm.py get_image_repl without pan-and-scan crops, its default). Its
processed input (ModelSpec.image_input_elements) is one num_channels x image_size x image_size pixel_values
array (gemma3_mm.py get_num_image_tokens: num_crops + 1 arrays, num_crops 0 without pan-and-scan). A file
without vision_config counts no tower (rooflab's exporter writes such files).

CLIPVisionConfig's defaults fill the keys a file leaves out (width 768, MLP 3072, 12 layers, patch 32,
image 224, 3 channels); LlamaConfig's fill text_config's (Llava 1.5's file gives only the vocabulary and
context of its Llama 2 7B).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from ..errors import SpecError
from .families import gemma3, llama, qwen3
from .read import Fields

#: CLIPVisionConfig's defaults (transformers 5.24.0, configuration_clip.py).
CLIP_VISION_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_channels": 3,
                        "image_size": 224, "patch_size": 32}
#: SiglipVisionConfig's defaults (configuration_siglip.py) and Gemma3Config's mm_tokens_per_image.
SIGLIP_VISION_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_channels": 3,
                          "image_size": 224, "patch_size": 16}
GEMMA3_MM_TOKENS_PER_IMAGE = 256
#: Tokens Gemma3Processor writes around an image's mm_tokens_per_image: "\n\n", boi, eoi, "\n\n".
GEMMA3_IMAGE_FRAME_TOKENS = 4
#: LlamaConfig's defaults for the shape keys (configuration_llama.py).
LLAMA_DEFAULTS = {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                  "num_attention_heads": 32, "vocab_size": 32000, "max_position_embeddings": 2048}

#: Qwen3VLVisionConfig's and Qwen3VLTextConfig's defaults (configuration_qwen3_vl.py) for the keys read.
QWEN3_VL_VISION_DEFAULTS = {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "in_channels": 3,
                            "patch_size": 16, "temporal_patch_size": 2, "spatial_merge_size": 2,
                            "out_hidden_size": 3584, "num_position_embeddings": 2304,
                            "deepstack_visual_indexes": [8, 16, 24]}
QWEN3_VL_TEXT_DEFAULTS = {"head_dim": 128, "tie_word_embeddings": False, "use_sliding_window": False,
                          "max_window_layers": 28}

_TEXT_READERS = {"llama": llama}


def clip_vision_parameters(v: Fields) -> int:
    """Parameters of transformers' CLIPVisionModel for a vision_config (the module docstring's terms)."""
    if v.raw("model_type", "clip_vision_model") != "clip_vision_model":
        raise v.error("model_type", v.raw("model_type"), "rooflab counts a CLIP vision tower (clip_vision_model)")
    d, mlp, n = v.count("hidden_size"), v.count("intermediate_size"), v.count("num_hidden_layers", hi=10_000)
    patch, image, channels = v.count("patch_size"), v.count("image_size"), v.count("num_channels")
    if image % patch:
        raise v.error("image_size", image, f"must be a multiple of patch_size ({patch})")
    positions = (image // patch) ** 2 + 1
    embeddings = d + channels * patch * patch * d + positions * d
    layer = 4 * (d * d + d) + (d * mlp + mlp) + (mlp * d + d) + 2 * 2 * d
    return embeddings + 2 * 2 * d + n * layer


def qwen3_vl_vision_parameters(v: Fields) -> int:
    """Parameters of transformers' Qwen3VLVisionModel for a vision_config (the module docstring's terms)."""
    d, mlp, n = v.count("hidden_size"), v.count("intermediate_size"), v.count("depth", hi=10_000)
    patch, temporal, channels = v.count("patch_size"), v.count("temporal_patch_size"), v.count("in_channels")
    merge, out = v.count("spatial_merge_size"), v.count("out_hidden_size")
    deepstack = len(v.indices("deepstack_visual_indexes") or ())
    embeddings = channels * temporal * patch * patch * d + d + v.count("num_position_embeddings") * d
    block = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * mlp + mlp) + (mlp * d + d)
    merged = d * merge * merge
    merger = merged * merged + merged + merged * out + out
    return embeddings + n * block + (2 * d + merger) + deepstack * (2 * merged + merger)


def siglip_vision_parameters(v: Fields) -> int:
    """Parameters of transformers' SiglipVisionModel without its pooling head (the module docstring's terms)."""
    if v.raw("model_type", "siglip_vision_model") != "siglip_vision_model":
        raise v.error("model_type", v.raw("model_type"), "rooflab counts a SigLIP vision tower (siglip_vision_model)")
    if v.raw("vision_use_head", True) is not False:
        raise v.error("vision_use_head", v.raw("vision_use_head", None), "rooflab counts a SigLIP tower without its "
                      "pooling head (false, as Gemma 3's files give)")
    d, mlp, n = v.count("hidden_size"), v.count("intermediate_size"), v.count("num_hidden_layers", hi=10_000)
    patch, image, channels = v.count("patch_size"), v.count("image_size"), v.count("num_channels")
    if image % patch:
        raise v.error("image_size", image, f"must be a multiple of patch_size ({patch})")
    embeddings = channels * patch * patch * d + d + (image // patch) ** 2 * d
    layer = 4 * (d * d + d) + (d * mlp + mlp) + (mlp * d + d) + 2 * 2 * d
    return embeddings + n * layer + 2 * d


def gemma3_vl(c: Fields) -> dict:
    """Gemma3ForConditionalGeneration: text_config as Gemma 3 reads it, plus the SigLIP tower and projector's
    parameters and an image's prompt tokens where the file has a vision_config (the module docstring)."""
    spec = gemma3(c)
    if "vision_config" not in c.outer:
        return spec
    vision = c.outer["vision_config"]
    if not isinstance(vision, dict):
        raise SpecError(c.where, "vision_config", vision, "must be a mapping")
    v = Fields(vision, c.where, "vision_config.", {}, SIGLIP_VISION_DEFAULTS)
    per_image = c.outer.get("mm_tokens_per_image", GEMMA3_MM_TOKENS_PER_IMAGE)
    side = math.isqrt(per_image) if isinstance(per_image, int) and not isinstance(per_image, bool) and per_image > 0 \
        else 0
    patches = v.count("image_size") // v.count("patch_size")
    if not side or side * side != per_image or patches % side:
        raise SpecError(c.where, "mm_tokens_per_image", per_image, f"must be a square whose side divides the "
                        f"{patches} patches a side (image_size / patch_size: Gemma3MultiModalProjector's pooling)")
    d = v.count("hidden_size")
    projector = d * spec["hidden_size"] + d
    return {**spec, "vision_parameters": siglip_vision_parameters(v) + projector,
            "image_tokens": per_image + GEMMA3_IMAGE_FRAME_TOKENS,
            "image_input_elements": v.count("num_channels") * v.count("image_size") ** 2}


def llava_projector_parameters(vision_width: int, text_width: int, feature_layers: int, bias: bool) -> int:
    """LlavaMultiModalProjector: linear_1 (D k -> H) and linear_2 (H -> H)."""
    return vision_width * feature_layers * text_width + text_width * text_width + (2 * text_width if bias else 0)


def _feature_layers(outer: Mapping[str, Any], where: str) -> int:
    layer = outer.get("vision_feature_layer", -2)
    if isinstance(layer, list) and layer and all(isinstance(i, int) and not isinstance(i, bool) for i in layer):
        return len(layer)
    if isinstance(layer, int) and not isinstance(layer, bool):
        return 1
    raise SpecError(where, "vision_feature_layer", layer, "must be a layer index or a list of them")


def llava(c: Fields) -> dict:
    """LlavaForConditionalGeneration: text_config as its family reads it, plus the vision tower's parameters."""
    kind = c.raw("model_type", "llama")
    if kind not in _TEXT_READERS:
        raise c.error("model_type", kind, f"rooflab reads a Llava language model of type {', '.join(_TEXT_READERS)}")
    spec = _TEXT_READERS[kind](c)
    vision = c.outer.get("vision_config", {})
    if not isinstance(vision, dict):
        raise SpecError(c.where, "vision_config", vision, "must be a mapping")
    v = Fields(vision, c.where, "vision_config.", {}, CLIP_VISION_DEFAULTS)
    bias = c.outer.get("multimodal_projector_bias", True)
    if not isinstance(bias, bool):
        raise SpecError(c.where, "multimodal_projector_bias", bias, "must be true or false")
    projector = llava_projector_parameters(v.count("hidden_size"), spec["hidden_size"],
                                           _feature_layers(c.outer, c.where), bias)
    return {**spec, "vision_parameters": clip_vision_parameters(v) + projector}


def qwen3_vl(c: Fields) -> dict:
    """Qwen3VLForConditionalGeneration: text_config as Qwen3 reads it, plus the vision tower's parameters."""
    vision = c.outer.get("vision_config", {})
    if not isinstance(vision, dict):
        raise SpecError(c.where, "vision_config", vision, "must be a mapping")
    v = Fields(vision, c.where, "vision_config.", {}, QWEN3_VL_VISION_DEFAULTS)
    return {**qwen3(c), "vision_parameters": qwen3_vl_vision_parameters(v)}


__all__ = ["CLIP_VISION_DEFAULTS", "clip_vision_parameters", "GEMMA3_IMAGE_FRAME_TOKENS", "GEMMA3_MM_TOKENS_PER_IMAGE",
           "gemma3_vl", "LLAMA_DEFAULTS", "llava", "llava_projector_parameters", "qwen3_vl", "QWEN3_VL_TEXT_DEFAULTS",
           "QWEN3_VL_VISION_DEFAULTS", "qwen3_vl_vision_parameters", "SIGLIP_VISION_DEFAULTS",
           "siglip_vision_parameters"]

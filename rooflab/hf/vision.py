"""Vision-language configs: the language model is read (and planned) as its own family reads it; the vision
tower and projector are counted as weights (ModelSpec.vision_parameters), never as layers.

    LlavaForConditionalGeneration   text_config read as Llama (the model_type Llava 1.5 and 1.6 ship); a
                                    CLIP vision tower (vision_config) and a two-layer projector

The tower's parameters, from transformers' modeling_clip.py and modeling_llava.py (release 5.24.0), with
width D, MLP width I, L layers, patch P, image size S, C channels:

    CLIPVisionEmbeddings      class token D, patch convolution C P^2 D (no bias), positions ((S / P)^2 + 1) D
    pre- and post-layer norm  2 D each (weight and bias)
    CLIPEncoderLayer          q, k, v, out: 4 (D^2 + D); fc1 D I + I, fc2 I D + D; two layer norms 4 D
    LlavaMultiModalProjector  linear_1 (D k) H + H, linear_2 H H + H (biases where multimodal_projector_bias),
                              k the vision feature layers taken (1 for an int vision_feature_layer)

CLIPVisionConfig's defaults fill the keys a file leaves out (width 768, MLP 3072, 12 layers, patch 32,
image 224, 3 channels); LlamaConfig's fill text_config's (Llava 1.5's file gives only the vocabulary and
context of its Llama 2 7B).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import SpecError
from .families import llama
from .read import Fields

#: CLIPVisionConfig's defaults (transformers 5.24.0, configuration_clip.py).
CLIP_VISION_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_channels": 3,
                        "image_size": 224, "patch_size": 32}
#: LlamaConfig's defaults for the shape keys (configuration_llama.py).
LLAMA_DEFAULTS = {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                  "num_attention_heads": 32, "vocab_size": 32000, "max_position_embeddings": 2048}

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


__all__ = ["CLIP_VISION_DEFAULTS", "LLAMA_DEFAULTS", "clip_vision_parameters", "llava", "llava_projector_parameters"]

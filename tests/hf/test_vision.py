"""Tests of rooflab/hf/vision.py: a vision-language config's language model is planned; its vision tower and
projector are counted as weights (ModelSpec.vision_parameters).

Llava 1.5 7B's real config.json (tests/data/hf_configs, SOURCES.md): a Llama 2 7B language model (vocabulary
32064), a CLIP ViT-L/14 tower at 336 pixels and a two-layer projector; the Hugging Face page counts 7.06B.
Qwen3-VL-8B-Instruct's: Qwen3-8B's shape and Qwen3-VL's tower with DeepStack mergers, 8.77B.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflab import SpecError, load_model
from rooflab.hf import from_hf_config
from rooflab.hf.read import Fields, read_json
from rooflab.hf.vision import clip_vision_parameters, llava_projector_parameters
from rooflab.units import DType
from support import read_config

CONFIGS = Path(__file__).parent.parent / "data" / "hf_configs"


def llava_15_7b():
    path = CONFIGS / "llava-1.5-7b.json"
    if not path.is_file():
        pytest.skip("llava-1.5-7b.json not collected")
    return read_json(path), str(path)


def test_clip_vit_l_14_336_by_its_shapes():
    """CLIP ViT-L/14 at 336 pixels: width 1024, 24 layers, MLP 4096, 577 positions (24^2 + the class token)."""
    d, mlp, layers, positions = 1024, 4096, 24, (336 // 14) ** 2 + 1
    embeddings = d + 3 * 14 * 14 * d + positions * d
    layer = 4 * (d * d + d) + (d * mlp + mlp) + (mlp * d + d) + 4 * d
    by_hand = embeddings + 4 * d + layers * layer
    v = Fields({"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "image_size": 336,
                "patch_size": 14}, "test", "vision_config.", {}, {"num_channels": 3})
    assert clip_vision_parameters(v) == by_hand == 303_507_456


def test_llava_1_5_7b_plans_the_language_model_and_counts_the_tower():
    data, where = llava_15_7b()
    m = from_hf_config(data, where)
    assert (m.num_layers, m.hidden_size, m.ffn_size, m.num_kv_heads, m.vocab_size) == (32, 4096, 11008, 32, 32064)
    assert (m.max_context_len, m.weight_dtype, m.tie_word_embeddings) == (4096, DType.fp16, False)
    projector = llava_projector_parameters(1024, 4096, 1, bias=True)
    assert projector == 1024 * 4096 + 4096 + 4096 * 4096 + 4096
    assert m.vision_parameters == 303_507_456 + projector
    assert m.derived_parameters == pytest.approx(7.06e9, rel=0.001)       # "7.06B params" (Hugging Face page)
    assert m.kv_bytes_per_token(DType.fp16) == 32 * 32 * 256 * 2 == 524_288   # the tower caches nothing
    # the tower is held whole on every GPU, in the checkpoint's dtype
    assert m.weight_bytes(tensor_parallel=2) == pytest.approx(m.parameters.total + 2 * m.vision_parameters, abs=2)


def test_llava_refuses_a_language_model_it_does_not_read():
    data, where = llava_15_7b()
    with pytest.raises(SpecError) as caught:
        from_hf_config({**data, "text_config": {**data["text_config"], "model_type": "mpt"}}, where)
    assert (caught.value.field, caught.value.value) == ("text_config.model_type", "mpt")


def test_vision_feature_layers_widen_the_projector():
    data, where = llava_15_7b()
    one = from_hf_config(data, where).vision_parameters
    two = read_config({**data, "vision_feature_layer": [-2, -5]}).vision_parameters
    assert two - one == 1024 * 4096
    with pytest.raises(SpecError):
        read_config({**data, "vision_feature_layer": "last"})


def test_qwen3_vl_8b_plans_qwen3_8b_and_counts_its_tower():
    """Qwen3-VL-8B-Instruct: the text model has Qwen3-8B's shape (the bundled qwen3-8b's derived count); the tower
    (27 blocks of width 1152, MLP 4304, 16-pixel patches over 2 frames, 2304 positions, a 2 x 2 merger to 4096 and
    three DeepStack mergers) by its shapes; 8.77B in all (the Hugging Face page's count)."""
    from rooflab import load_model

    path = CONFIGS / "qwen3-vl-8b-instruct.partial.json"
    if not path.is_file():
        pytest.skip("qwen3-vl-8b-instruct.partial.json not collected")
    m = from_hf_config(read_json(path), str(path))
    assert m.parameters.total == load_model("qwen3-8b").derived_parameters
    d, mlp, merged, out = 1152, 4304, 1152 * 4, 4096
    embeddings = 3 * 2 * 16 * 16 * d + d + 2304 * d
    block = 4 * d + 4 * d * d + 4 * d + 2 * d * mlp + mlp + d
    merger = merged * merged + merged + merged * out + out
    assert m.vision_parameters == embeddings + 27 * block + 2 * d + merger + 3 * (2 * merged + merger) == 576_388_336
    assert m.derived_parameters == pytest.approx(8.77e9, rel=0.001)
    assert (m.max_context_len, m.kv_bytes_per_token(DType.bf16)) == (262144, 36 * 8 * 256 * 2)


# --- Gemma 3: a SigLIP tower and Gemma 3's projector ----------------------------------------------------------------

#: google/gemma-3-27b-it's config.json (https://huggingface.co/google/gemma-3-27b-it/blob/main/config.json): the
#: text_config keys models/gemma-3-27b.yaml reads, its vision_config and mm_tokens_per_image.
GEMMA3_27B_IT = {"architectures": ["Gemma3ForConditionalGeneration"], "torch_dtype": "bfloat16",
                 "mm_tokens_per_image": 256,
                 "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
                                 "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16,
                                 "sliding_window": 1024},
                 "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                                   "model_type": "siglip_vision_model", "num_attention_heads": 16,
                                   "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False}}


def test_gemma3_27b_it_counts_its_siglip_tower_and_projector():
    """SigLIP So400m/14 at 896 pixels (width 1152, MLP 4304, 27 layers, 64^2 patches, no class token, no head)
    and Gemma3MultiModalProjector (1152 x 5376 + the 1152 RMSNorm); the tower alone is the Gemma 3 report's 417M."""
    d, mlp, layers, patches = 1152, 4304, 27, (896 // 14) ** 2
    embeddings = 3 * 14 * 14 * d + d + patches * d
    layer = 4 * (d * d + d) + (d * mlp + mlp) + (mlp * d + d) + 4 * d
    tower = embeddings + layers * layer + 2 * d
    assert tower == 416_866_032
    m = read_config(GEMMA3_27B_IT)
    assert m.vision_parameters == tower + 1152 * 5376 + 1152 == 423_060_336
    assert m.image_tokens == 256 + 4                   # "\n\n" boi, 256 image tokens, eoi "\n\n"
    assert m.image_input_elements == 3 * 896 * 896     # one pixel_values array, no pan-and-scan crops
    bundled = load_model("gemma-3-27b")
    assert (bundled.vision_parameters, bundled.image_tokens, bundled.image_input_elements) == \
        (m.vision_parameters, m.image_tokens, m.image_input_elements)


def test_gemma3_without_a_vision_config_counts_no_tower():
    m = read_config({k: v for k, v in GEMMA3_27B_IT.items() if k not in ("vision_config", "mm_tokens_per_image")})
    assert (m.vision_parameters, m.image_tokens, m.image_input_elements) == (0, 0, 0)


@pytest.mark.parametrize("change, field", [
    ({"vision_config": {**GEMMA3_27B_IT["vision_config"], "vision_use_head": True}}, "vision_config.vision_use_head"),
    ({"vision_config": {**GEMMA3_27B_IT["vision_config"], "model_type": "clip_vision_model"}},
     "vision_config.model_type"),
    ({"vision_config": {**GEMMA3_27B_IT["vision_config"], "image_size": 900}}, "vision_config.image_size"),
    ({"mm_tokens_per_image": 200}, "mm_tokens_per_image"),
    ({"mm_tokens_per_image": 49}, "mm_tokens_per_image"),      # a 7 x 7 pool does not divide 64 patches a side
    ({"vision_config": [1]}, "vision_config"),
])
def test_gemma3_vision_config_refusals_name_the_key(change, field):
    with pytest.raises(SpecError) as caught:
        read_config({**GEMMA3_27B_IT, **change})
    assert caught.value.field == field

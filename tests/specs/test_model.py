"""Tests of rooflab/specs/model.py: parameter counts from the architecture (Mixtral's active ones), KV bytes
per token (Llama-3-8B; per GPU under tensor parallelism), and a stack with no softmax layer refused.
"""

from __future__ import annotations

import pytest

from rooflab import DType, load_model
from rooflab.units import KiB


REQUIRED_MODELS = ["llama-3-8b", "llama-3-70b", "llama-3.1-405b", "llama-2-7b", "llama-2-70b", "mistral-7b",
                   "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-72b", "gemma-2-9b"]


@pytest.mark.parametrize("name", REQUIRED_MODELS)
def test_model_parameter_counts_match_the_architecture(name):
    m = load_model(name)
    assert m.name == name
    # the published count and the count derived from the shapes agree within 0.5%
    assert m.derived_parameters == pytest.approx(m.total_parameters, rel=5e-3)
    assert m.num_qo_heads % m.num_kv_heads == 0


def test_mixtral_active_parameters():
    # Mixtral 8x7B: 46.7 B parameters, about 12.9 B active per token (2 of 8 experts)
    m = load_model("mixtral-8x7b")
    assert m.total_parameters / 1e9 == pytest.approx(46.7, abs=0.05)
    assert m.active_parameters / 1e9 == pytest.approx(12.9, abs=0.05)


def test_kv_bytes_per_token_llama3_8b():
    # flash-and-paged / capacity planning: 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 128 KiB
    assert load_model("llama-3-8b").kv_bytes_per_token(DType.fp16) == 128 * 1024


LLAMA70 = load_model("llama-3-70b")


def test_kv_bytes_per_token_per_gpu():
    # 2 x 80 layers x 8 KV heads x 128 x 2 bytes = 320 KiB for Llama-3-70B in fp16, split by KV head
    assert LLAMA70.kv_bytes_per_token(DType.fp16) == 320 * KiB
    assert LLAMA70.kv_bytes_per_token(DType.fp16, 4) == 80 * KiB
    assert LLAMA70.kv_bytes_per_token(DType.fp16, 8) == 40 * KiB
    # past h_kv every GPU still holds one whole KV head: no further saving per GPU
    assert LLAMA70.kv_bytes_per_token(DType.fp16, 16) == 40 * KiB


LLAMA = load_model("llama-3-8b")


def test_kv_bytes_per_token():
    # capacity planning: 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 128 KiB for Llama-3-8B fp16
    assert LLAMA.kv_bytes_per_token(DType.fp16) == 128 * 1024


def test_a_stack_of_linear_layers_only_is_refused():
    """rooflab prices softmax attention: a stack with no full, sliding, chunked or MLA layer is a SpecError naming
    the pattern (it reached decode facts once, which failed inside rooflab picking the main softmax layer)."""
    import dataclasses

    from rooflab import SpecError

    model = load_model("qwen3-next-80b-a3b")
    linear = next(name for name, t in model.layer_types.items() if t.kind.value == "linear")
    with pytest.raises(SpecError) as caught:
        dataclasses.replace(model, layer_pattern=(linear,), first_layers=())
    assert caught.value.field == "layer_pattern" and "linear" in str(caught.value)


def test_image_tokens_need_a_vision_tower_and_a_text_step_never_runs_it():
    """gemma-3-27b is the -it checkpoint: an image is 260 prompt tokens and its 423,060,336-parameter tower
    (rooflab/hf/vision.py) is counted in the published total but not in what a text token touches."""
    import dataclasses

    from rooflab import SpecError

    m = load_model("gemma-3-27b")
    assert (m.vision_parameters, m.image_tokens) == (423_060_336, 260)
    assert m.active_parameters == m.total_parameters - 423_060_336 == 27_016_000_000
    with pytest.raises(SpecError) as caught:
        dataclasses.replace(m, vision_parameters=0)
    assert caught.value.field == "image_tokens"
    with pytest.raises(SpecError) as caught:
        dataclasses.replace(m, vision_parameters=0, image_tokens=0)
    assert caught.value.field == "image_input_elements"
    with pytest.raises(SpecError) as caught:
        dataclasses.replace(m, image_tokens=-1)
    assert caught.value.field == "image_tokens"


def test_a_vision_tower_of_the_whole_published_count_is_refused():
    """vision_parameters is part of num_parameters (gemma-3-27b's 423,060,336 of 27,439,060,336): at or past it
    the text model's share (num_parameters - vision_parameters, which prices its weights) is 0 or negative, a
    SpecError naming both fields and values (hostile session 16: 27,439,060,337 loaded, active_parameters -1)."""
    import dataclasses

    from rooflab import SpecError

    m = load_model("gemma-3-27b")
    for vision in (m.num_parameters, m.num_parameters + 1):
        with pytest.raises(SpecError, match=rf"vision_parameters.*{vision}.*num_parameters \({m.num_parameters:,}\)"):
            dataclasses.replace(m, vision_parameters=vision)
    assert dataclasses.replace(m, vision_parameters=m.num_parameters - 1).active_parameters == 1

"""Tests of rooflab/hf/export.py: a spec written as a config.json reads back as the same spec, and what no
config.json can hold is refused.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from rooflab import SpecError, available, load_model
from rooflab.hf import export_hf_config, from_hf_config
from rooflab.hf.export import choose_architecture
from rooflab.hf.read import parse_json
from rooflab.specs import ModelSpec


def test_export_refuses_what_no_config_can_hold():
    m = load_model("llama-3-8b")
    with pytest.raises(SpecError) as caught:
        export_hf_config(dataclasses.replace(m, quantization={"linear": "nvfp4"}))
    assert caught.value.field == "quantization"
    with pytest.raises(SpecError):
        export_hf_config(m, "GptOssForCausalLM")                 # no sinks on Llama-3's layers


BUNDLED = available("models")


#: The architecture the exporter writes for each bundled model.
ARCHITECTURE = {
    "deepseek-v3": "DeepseekV3ForCausalLM", "gpt-oss-120b": "GptOssForCausalLM", "gpt-oss-20b": "GptOssForCausalLM",
    "gemma-3-27b": "Gemma3ForConditionalGeneration", "gemma-2-9b": "Gemma2ForCausalLM",
    "qwen3-32b": "Qwen3ForCausalLM", "qwen3-235b-a22b": "Qwen3MoeForCausalLM", "qwen3-30b-a3b": "Qwen3MoeForCausalLM",
    "llama-4-scout": "Llama4ForConditionalGeneration", "qwen3-next-80b-a3b": "Qwen3NextForCausalLM",
    "mistral-7b-v0.1": "MistralForCausalLM", "mixtral-8x7b": "MixtralForCausalLM", "qwen2.5-7b": "Qwen2ForCausalLM",
    "qwen2.5-72b": "Qwen2ForCausalLM", "qwen3-coder-480b-a35b": "Qwen3MoeForCausalLM",
    "minimax-m2.5": "Qwen3MoeForCausalLM",
}


def _same(a: ModelSpec, b: ModelSpec) -> bool:
    """Equal up to name, display_name, source and the published count (a config.json carries none of them)."""
    return dataclasses.replace(a, name=b.name, display_name=b.display_name, source=b.source,
                               num_parameters=b.num_parameters, parameters_note=b.parameters_note) == b


# --- config.json round trip and the real files ------------------------------------------------------------

@pytest.mark.parametrize("name", BUNDLED)
def test_export_round_trip(name):
    """A bundled vision-language model (gemma-3-27b) is refused whole and its text model round-trips."""
    m = load_model(name)
    if m.vision_parameters:
        with pytest.raises(SpecError) as caught:
            export_hf_config(m)
        assert caught.value.field == "vision_parameters"
        m = dataclasses.replace(m, vision_parameters=0, image_tokens=0, image_input_elements=0)
    data = export_hf_config(m)
    assert data["architectures"] == [ARCHITECTURE.get(name, "LlamaForCausalLM")] == [choose_architecture(m)]
    text = json.dumps(data, indent=2, allow_nan=False)
    back = from_hf_config(parse_json(text, f"{name}/config.json"), f"{name}/config.json")
    assert _same(back, m)


def test_deepseek_v3_2_round_trips_with_its_indexer():
    """A spec with a lightning indexer is written as DeepseekV32ForCausalLM (index_head_dim, index_n_heads) and
    reads back the same; DeepSeek-V3's writer, which has no field for the indexer, refuses it."""
    from pathlib import Path

    from rooflab.hf.read import read_json

    path = Path(__file__).parent.parent / "data" / "hf_configs" / "deepseek-v3.2.json"
    if not path.is_file():
        pytest.skip("deepseek-v3.2.json not collected")
    m = from_hf_config(read_json(path), str(path))
    data = export_hf_config(m)
    assert data["architectures"] == ["DeepseekV32ForCausalLM"] and (data["index_head_dim"], data["index_n_heads"]) \
        == (128, 64)
    assert _same(from_hf_config(json.loads(json.dumps(data)), "back"), m)
    with pytest.raises(SpecError) as caught:
        export_hf_config(m, "DeepseekV3ForCausalLM")
    assert caught.value.field == "layer_types"
    with pytest.raises(SpecError):
        export_hf_config(load_model("deepseek-v3"), "DeepseekV32ForCausalLM")


def test_a_vision_tower_is_refused_not_dropped():
    m = dataclasses.replace(load_model("llama-3-8b"), vision_parameters=300_000_000)
    with pytest.raises(SpecError) as caught:
        export_hf_config(m)
    assert caught.value.field == "vision_parameters"

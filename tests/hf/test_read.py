"""Tests of rooflab/hf/read.py: strict JSON, an oversized file refused before parsing, and a count past
2**63 refused naming the file and its field (exit 2 from the CLI).
"""

from __future__ import annotations

import json

import pytest

from rooflab import SpecError
from rooflab.load import load_hf_config
from rooflab.hf.read import MAX_CONFIG_BYTES, parse_json


LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
         "max_position_embeddings": 8192, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16"}


# --- bad input --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ['{"hidden_size": NaN}', '{"hidden_size": Infinity}', '{"a": -Infinity}',
                                  '{"a": 1e999}', '{"a": 1, "a": 2}', '[1, 2]', '{"a": ', "[" * 100_000,
                                  '{"vocab_size": ' + "9" * 5000 + "}"])     # past Python's int-digits limit
def test_strict_json(text):
    with pytest.raises(SpecError) as caught:
        parse_json(text, "where.json")
    assert caught.value.where == "where.json"


def test_oversized_file_is_refused_before_parsing(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "padding": "x" * MAX_CONFIG_BYTES}))
    with pytest.raises(SpecError, match="larger than"):
        load_hf_config(path)


@pytest.mark.parametrize("window", [1e308, 10**30, 2**63 + 1])
def test_a_count_past_two_to_the_63_is_refused_naming_the_file_and_its_field(tmp_path, window):
    """A sliding_window past 2^63 was refused as "LayerType: field 'window'", naming neither the file nor the
    key it wrote (the session-7 hostile round); the reader now refuses it at the key."""
    config = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
              "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
              "intermediate_size": 14336, "vocab_size": 32000, "sliding_window": window,
              "torch_dtype": "bfloat16", "max_position_embeddings": 32768}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(SpecError, match=r"config\.json.*'sliding_window'.*2\^63"):
        load_hf_config(path)

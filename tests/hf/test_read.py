"""Hugging Face config.json as a model spec: the configs' own rules, strict reading, and errors naming file,
field and value (exit 2 from the CLI).

Configs here are small dicts written for the rule under test (a real file's fields where one is at hand);
the real files are read in tests/hf/test_init.py (test_real_config_loads_to_the_bundled_spec).
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

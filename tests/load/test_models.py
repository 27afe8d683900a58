"""Models from any reference (rooflab/load/models.py): a bundled name, a YAML path, a config.json folder or a cached
'org/name' id; a local folder named like a bundled model never shadows it, and a config.json gets the published
count of the bundled model of the same architecture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflab.errors import SpecError
from rooflab.load import data_dir, load_model


LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
         "max_position_embeddings": 8192, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16"}


def test_a_folder_and_a_cached_id(tmp_path, monkeypatch):
    folder = tmp_path / "my-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    assert load_model(str(folder)).name == "my-llama"
    snapshot = tmp_path / "hf" / "hub" / "models--org--tiny-llama" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({**LLAMA, "num_hidden_layers": 2}))
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("abc123")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    m = load_model("org/tiny-llama")
    assert m.num_layers == 2 and m.source == str(snapshot / "config.json")
    assert m.display_name.startswith("org/tiny-llama (config.json:") and "parameters derived" in m.display_name
    with pytest.raises(SpecError, match="not in the local Hugging Face cache"):
        load_model("org/absent")


def test_a_yaml_path_and_a_bundled_name_still_load_as_yaml():
    assert load_model("llama-3-8b").source.startswith("https://")
    assert load_model(str(data_dir("models") / "llama-3-8b.yaml")).name == "llama-3-8b"


def _config_folder(where: Path, name: str) -> Path:
    from rooflab.hf import export_hf_config
    from rooflab.load import bundled_model

    folder = where / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(export_hf_config(bundled_model("qwen2.5-7b"))))
    return folder


def test_a_folder_named_like_a_bundled_model_never_recurses(tmp_path, monkeypatch):
    """Before the fix every config.json load here ended in RecursionError: the published-count lookup loaded each
    bundled name, and a local folder of that name won over it."""
    _config_folder(tmp_path, "qwen2.5-7b")
    _config_folder(tmp_path, "mine")
    monkeypatch.chdir(tmp_path)
    spec = load_model("./mine")
    assert "published 7.62 B as bundled 'qwen2.5-7b'" in spec.display_name
    assert load_model("./qwen2.5-7b").num_parameters == load_model(data_dir("models") / "qwen2.5-7b.yaml").num_parameters


def test_a_bare_name_that_is_bundled_and_a_local_folder_is_an_error_naming_both(tmp_path, monkeypatch):
    _config_folder(tmp_path, "qwen2.5-7b")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match=r"both the bundled model 'qwen2.5-7b' and a folder here.*'\./qwen2.5-7b'"):
        load_model("qwen2.5-7b")
    assert load_model("llama-3-8b").name == "llama-3-8b"      # other bundled names are untouched


def test_a_bare_name_of_a_local_folder_only_reads_the_folder(tmp_path, monkeypatch):
    _config_folder(tmp_path, "mymodel")
    monkeypatch.chdir(tmp_path)
    assert load_model("mymodel").num_layers == 28

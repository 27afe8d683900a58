"""vLLM's default max_model_len from config.json (rooflab/hf/context.py; vLLM's _get_and_verify_max_len,
vllm/config/model.py at commit 0052a5b). The length and rope fields are those of the published config.json
files named (https://huggingface.co/<id>/blob/main/config.json); the other fields do not enter the rule."""

import math

import pytest

from rooflab.errors import SpecError
from rooflab.hf.context import DEFAULT_MAX_LEN, vllm_max_model_len
from rooflab.hf.read import Fields


def derived(data: dict, outer: dict | None = None) -> int:
    return vllm_max_model_len(Fields(data, "config.json", outer=outer or {}))


@pytest.mark.parametrize("model,fields,expected", [
    # meta-llama/Llama-3.1-8B: llama3 scaling is not applied (the 131072 is already the extended window)
    ("Llama-3.1-8B", {"max_position_embeddings": 131072, "rope_scaling": {
        "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
        "rope_type": "llama3"}}, 131072),
    # deepseek-ai/DeepSeek-V3: yarn scales its own original_max_position_embeddings: 4096 x 40
    ("DeepSeek-V3", {"max_position_embeddings": 163840, "rope_scaling": {
        "beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096, "type": "yarn"}}, 163840),
    # Qwen/Qwen2.5-7B-Instruct with the yarn block its model card adds for long texts: 32768 x 4
    ("Qwen2.5-7B-Instruct + yarn", {"max_position_embeddings": 32768, "rope_scaling": {
        "factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}}, 131072),
    # Qwen/Qwen2.5-7B-Instruct as shipped (no rope_scaling)
    ("Qwen2.5-7B-Instruct", {"max_position_embeddings": 32768, "rope_scaling": None}, 32768),
    # microsoft/Phi-3-mini-128k-instruct: longrope defaults to original_max_position_embeddings
    ("Phi-3-mini-128k-instruct", {"max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
                                  "rope_scaling": {"long_factor": [1.0], "short_factor": [1.0],
                                                   "type": "longrope"}}, 4096),
    # CohereForAI/c4ai-command-r-v01: model_max_length overrides max_position_embeddings
    ("c4ai-command-r-v01", {"max_position_embeddings": 8192, "model_max_length": 131072}, 131072),
    # a config naming no length key: vLLM's 2048
    ("no length key", {}, DEFAULT_MAX_LEN),
])
def test_vllm_default_max_model_len(model, fields, expected):
    assert derived(fields) == expected


def test_gemma3_is_not_scaled_again():
    """google/gemma-3-27b-it: text_config max_position_embeddings 131072, rope_scaling linear factor 8; vLLM
    skips the factor for gemma3 ("Gemma3's max_model_len (128K) is already scaled")."""
    text = {"model_type": "gemma3_text", "max_position_embeddings": 131072,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}
    assert derived(text, {"model_type": "gemma3"}) == 131072
    assert derived({**text, "model_type": "llama"}) == 8 * 131072      # the same scaling elsewhere is applied


def test_the_smallest_length_key_wins():
    assert derived({"max_position_embeddings": 4096, "seq_length": 2048, "n_positions": 8192}) == 2048


def test_per_layer_type_rope_parameters():
    """transformers v5's rope_parameters, one per layer type: the factor applies once."""
    rp = {"full_attention": {"rope_type": "linear", "factor": 2.0},
          "sliding_attention": {"rope_type": "default"}}
    assert derived({"max_position_embeddings": 4096, "rope_parameters": rp}) == 8192


@pytest.mark.parametrize("fields", [
    {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 0}},
    {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": -2}},
    {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": math.nan}},
    {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": math.inf}},
    {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 1e300}},
    {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": "2"}},
    {"max_position_embeddings": 4096, "rope_scaling": {"type": "", "factor": 2}},
    {"max_position_embeddings": 4096, "rope_scaling": {"type": "yarn", "factor": 2}},
    {"max_position_embeddings": 4096, "rope_scaling": {"type": "yarn", "factor": 2,
                                                       "original_max_position_embeddings": 10**30}},
    {"max_position_embeddings": 4096, "rope_scaling": "yarn"},
    {"max_position_embeddings": 0},
    {"max_position_embeddings": -1},
    {"max_position_embeddings": 4096.5},
    {"max_position_embeddings": ""},
])
def test_bad_fields_are_refused_naming_the_field(fields):
    with pytest.raises(SpecError):
        derived(fields)

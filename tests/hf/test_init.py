"""Tests of rooflab/hf/__init__.py: a Hugging Face config.json as a model spec.

Each family's rules (Llama, Qwen's windows, Mistral, Gemma 2 and 3, Llama 4's chunked layers, Qwen3-Next's
linear layers, DeepSeek's MLA and MoE, Kimi K2), quantization configs, and errors naming the field and value.
Configs are small dicts written for the rule under test, or real files from tests/data/hf_configs (sources in
its SOURCES.md); each real file loads to its bundled spec. A test whose real file is not in the repository
skips, naming the file.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from rooflab import SpecError, load_model
from rooflab.hf import from_hf_config, same_architecture
from rooflab.hf.read import read_json
from rooflab.units import DType, WeightFormat
from support import read_config


LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
         "max_position_embeddings": 8192, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16"}
QWEN3 = {**LLAMA, "architectures": ["Qwen3ForCausalLM"], "head_dim": 128, "num_hidden_layers": 8,
         "sliding_window": 4096, "use_sliding_window": False, "max_window_layers": 8}
GEMMA3_TEXT = {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504, "num_attention_heads": 32,
               "num_hidden_layers": 62, "num_key_value_heads": 16, "sliding_window": 1024}
GEMMA3 = {"architectures": ["Gemma3ForConditionalGeneration"], "torch_dtype": "bfloat16", "text_config": GEMMA3_TEXT}


def error(data: dict) -> SpecError:
    with pytest.raises(SpecError) as caught:
        read_config(data)
    return caught.value


def kinds(m) -> list[str]:
    return [m.layer_types[name].kind.value for name in m.layer_type_names]


# --- the configs' rules -----------------------------------------------------------------------------------

def test_a_plain_llama_config():
    m = read_config(LLAMA)
    assert (m.num_layers, m.num_qo_heads, m.num_kv_heads, m.head_dim, m.ffn_size) == (32, 32, 8, 128, 14336)
    assert kinds(m) == ["full"] * 32 and m.weight_dtype is DType.bf16 and not m.tie_word_embeddings


def test_layer_types_win_over_the_family_rule():
    # Gemma 2's rule makes layer 0 sliding; the file's own layer_types say otherwise, and win
    listed = ["full_attention", "sliding_attention"] * 21
    m = read_config({**load_json("gemma-2-9b.json"), "layer_types": listed})
    assert kinds(m)[:4] == ["full", "sliding", "full", "sliding"]
    assert kinds(read_config({**QWEN3, "layer_types": ["full_attention"] * 8, "use_sliding_window": True})) == ["full"] * 8


def test_qwen_window_counts_only_when_use_sliding_window_is_true():
    assert kinds(read_config(QWEN3)) == ["full"] * 8                 # sliding_window 4096 is there, but switched off
    m = read_config({**QWEN3, "use_sliding_window": True, "max_window_layers": 5})
    assert kinds(m) == ["full"] * 5 + ["sliding"] * 3 and m.layer_types["sliding"].window == 4096
    assert m.first_layers == ("full",) * 5                  # the stack keeps its prefix
    assert kinds(read_config({**QWEN3, "use_sliding_window": True})) == ["full"] * 8  # max_window_layers = all layers


def test_qwen_sliding_layer_types_with_the_window_off_contradict():
    e = error({**QWEN3, "layer_types": ["sliding_attention"] * 8})
    assert e.field == "use_sliding_window" and e.value is False


def test_mistral_window_on_every_layer_unless_null():
    assert kinds(read_config({**LLAMA, "architectures": ["MistralForCausalLM"], "sliding_window": 4096})) == ["sliding"] * 32
    assert kinds(read_config({**LLAMA, "architectures": ["MistralForCausalLM"], "sliding_window": None})) == ["full"] * 32
    absent = read_config({**LLAMA, "architectures": ["MistralForCausalLM"]})        # MistralConfig's default: 4096
    assert absent.layer_types["sliding"].window == 4096


def test_gemma3_nests_its_text_model_and_takes_transformers_defaults():
    m = read_config(GEMMA3)
    assert (m.vocab_size, m.max_context_len, m.tie_word_embeddings) == (262_208, 131_072, True)
    assert kinds(m).count("full") == 10 and kinds(m)[5] == "full" and kinds(m)[60:] == ["sliding", "sliding"]
    flat = read_config({**GEMMA3_TEXT, "architectures": ["Gemma3ForCausalLM"], "torch_dtype": "bfloat16"})
    assert dataclasses.replace(flat, name=m.name, display_name=m.display_name) == m


def test_gemma3_sliding_window_pattern():
    m = read_config({**GEMMA3, "text_config": {**GEMMA3_TEXT, "sliding_window_pattern": 2, "num_hidden_layers": 6}})
    assert kinds(m) == ["sliding", "full"] * 3


def test_nested_fields_are_named_with_their_prefix():
    e = error({**GEMMA3, "text_config": {k: v for k, v in GEMMA3_TEXT.items() if k != "num_hidden_layers"}})
    assert e.field == "text_config.num_hidden_layers" and "missing" in e.problem
    e = error({k: v for k, v in GEMMA3.items() if k != "text_config"})
    assert e.field == "text_config"


def test_llama4_chunked_rope_layers_and_nope_globals():
    text = {**load_json("llama-4-scout.partial.json")["text_config"], "num_hidden_layers": 8,
            "interleave_moe_layer_step": 2}
    m = read_config({"architectures": ["Llama4ForConditionalGeneration"], "text_config": text})
    assert kinds(m) == ["chunked", "chunked", "chunked", "full"] * 2
    assert [i for i in range(8) if m.is_moe_layer(i)] == [1, 3, 5, 7] and m.dense_ffn_size == 16384
    explicit = read_config({"architectures": ["Llama4ForCausalLM"], **text, "no_rope_layers": [0, 1] * 4,
                     "moe_layers": [3, 4, 5, 6, 7], "interleave_moe_layer_step": 1})
    assert kinds(explicit) == ["full", "chunked"] * 4 and explicit.first_dense_layers == 3
    e = error({"architectures": ["Llama4ForCausalLM"], **text, "moe_layers": [0, 5]})
    assert (e.field, e.value) == ("moe_layers", [0, 5])
    e = error({**QWEN3, "architectures": ["Qwen3MoeForCausalLM"], "num_experts": 8, "num_experts_per_tok": 2,
               "moe_intermediate_size": 768, "mlp_only_layers": [5]})
    assert (e.field, e.value) == ("mlp_only_layers", [5])


def test_qwen3_next_linear_layers():
    m = read_config(load_json("qwen3-next-80b-a3b-thinking.json"))
    linear = m.layer_types["linear"]
    assert linear.state_bytes_per_sequence(DType.bf16) == (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2
    assert m.kv_bytes_per_token(DType.bf16) == 12 * 2 * 2 * 256 * 2


def test_deepseek_mla_and_moe_layout():
    m = read_config(load_json("deepseek-v3.json"))
    assert (m.head_dim, m.v_head_dim, m.num_kv_heads) == (192, 128, 128)
    assert m.num_moe_layers == 58 and m.dense_ffn_size == 18432 and m.num_shared_experts == 1
    assert m.quantization == {"linear": WeightFormat.fp8_block}
    assert (m.expert_groups, m.topk_groups) == (8, 4)          # n_group, topk_group: the grouped top-k routing
    written = read_config({**load_json("deepseek-v3.json"), "head_dim": 64})   # transformers writes qk_rope_head_dim there
    assert written == m


def test_quantization_configs():
    assert read_config(load_json("gpt-oss-120b.json")).quantization == {"experts": WeightFormat.mxfp4}
    per_tensor = read_config({**LLAMA, "quantization_config": {"quant_method": "fp8"}})
    assert per_tensor.quantization == {"linear": WeightFormat.fp8}
    kept = read_config({**LLAMA, "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
                                                  "modules_to_not_convert": ["model.layers.*.self_attn"]}})
    assert kept.weight_format("attention") is WeightFormat.bf16 and kept.weight_format("mlp") is WeightFormat.fp8_block
    e = error({**LLAMA, "quantization_config": {"quant_method": "hqq"}})      # transformers has it; rooflab does not
    assert e.field == "quantization_config.quant_method" and e.value == "hqq" and "awq" in str(e)


@pytest.mark.parametrize("data, field, value", [
    ({**LLAMA, "architectures": ["BertModel"]}, "architectures", "BertModel"),
    ({k: v for k, v in LLAMA.items() if k != "architectures"}, "architectures", None),
    ({k: v for k, v in LLAMA.items() if k != "num_hidden_layers"}, "num_hidden_layers", None),
    ({**LLAMA, "num_hidden_layers": None}, "num_hidden_layers", None),
    ({**LLAMA, "num_hidden_layers": 10**12}, "num_hidden_layers", 10**12),   # refused before a 10**12-layer loop
    ({**LLAMA, "num_key_value_heads": 7}, "num_key_value_heads", 7),
    ({**LLAMA, "hidden_size": 4096.5}, "hidden_size", 4096.5),
    ({**LLAMA, "vocab_size": True}, "vocab_size", True),
    ({**LLAMA, "architectures": ["MistralForCausalLM"], "sliding_window": 0}, "sliding_window", 0),
    ({**LLAMA, "architectures": ["MistralForCausalLM"], "sliding_window": -4096}, "sliding_window", -4096),
    ({**LLAMA, "layer_types": ["full_attention"] * 31}, "layer_types", "31 entries"),
    ({**LLAMA, "layer_types": ["full_attention"] * 31 + ["mamba"]}, "layer_types[31]", "mamba"),
    ({**LLAMA, "layer_types": ["sliding_attention"] * 32}, "sliding_window", None),
    ({**LLAMA, "torch_dtype": "int8"}, "torch_dtype", "int8"),
    ({**LLAMA, "torch_dtype": ["bfloat16"]}, "torch_dtype", ["bfloat16"]),     # unhashable: a TypeError once
    ({**LLAMA, "dtype": {"a": 1}, "torch_dtype": None}, "dtype", {"a": 1}),
    ({**LLAMA, "architectures": ["Llama4ForCausalLM"], "num_local_experts": 16, "num_experts_per_tok": 1,
      "intermediate_size_mlp": 16384, "attention_chunk_size": 0}, "attention_chunk_size", 0),
])
def test_bad_configs_name_the_field_and_value(data, field, value):
    e = error(data)
    assert (e.where, e.field, e.value) == ("config.json", field, value)


def test_contradictory_fields():
    oss = load_json("gpt-oss-20b.json")
    e = error({**oss, "experts_per_token": 2})
    assert (e.field, e.value) == ("experts_per_token", 2) and "num_experts_per_tok" in e.problem
    e = error({**oss, "num_experts_per_tok": 64, "experts_per_token": 64})
    assert e.field == "num_experts_per_tok"
    e = error({**load_json("deepseek-v3.json"), "num_key_value_heads": 16})
    assert (e.field, e.value) == ("num_key_value_heads", 16)
    e = error({**oss, "layer_types": ["linear_attention"] * 24})
    assert e.field == "layer_types" and e.value == "linear_attention"


@pytest.mark.parametrize("name, edit, field, value", [
    ("qwen3-235b-a22b.json", {"mlp_only_layers": [1000]}, "mlp_only_layers", 1000),
    ("deepseek-v3.json", {"first_k_dense_replace": 1000}, "first_k_dense_replace", 1000),
    ("qwen3-next-80b-a3b-thinking.json", {"full_attention_interval": 10**6}, "full_attention_interval", 10**6),
])
def test_layer_indices_past_the_stack_are_refused(name, edit, field, value):
    """A dense layer, a dense run or an attention interval past num_hidden_layers: a malformed file, not a model
    (the interval one left no softmax layer, and decode facts then failed inside rooflab)."""
    e = error({**load_json(name), **edit})
    assert (e.field, e.value) == (field, value)


@pytest.mark.parametrize("edit, field, value", [({"n_group": 7}, "n_group", 7), ({"topk_group": 9}, "topk_group", 9)])
def test_expert_groups_that_do_not_split_the_experts_are_refused(edit, field, value):
    """DeepSeek's grouped top-k: n_group must divide the 256 routed experts, topk_group cannot exceed n_group."""
    e = error({**load_json("deepseek-v3.json"), **edit})
    assert (e.field, e.value) == (field, value)


def load_json(name: str) -> dict:
    path = Path(__file__).parent.parent / "data" / "hf_configs" / name
    if not path.is_file():
        pytest.skip(f"{name} not collected")
    return json.loads(path.read_text())


CONFIGS = Path(__file__).parent.parent / "data" / "hf_configs"


#: The real config.json of each bundled model we have one for (SOURCES.md), by bundled name.
FIXTURES = {
    "deepseek-v3": "deepseek-v3.json", "gpt-oss-120b": "gpt-oss-120b.json", "gpt-oss-20b": "gpt-oss-20b.json",
    "gemma-3-27b": "gemma-3-27b.partial.json", "qwen3-32b": "qwen3-32b.json",
    "qwen3-235b-a22b": "qwen3-235b-a22b.json", "llama-4-scout": "llama-4-scout.partial.json",
    "qwen3-next-80b-a3b": "qwen3-next-80b-a3b-thinking.json", "mistral-7b-v0.1": "mistral-7b-v0.1.json",
    "gemma-2-9b": "gemma-2-9b.json", "qwen2.5-7b": "qwen2.5-7b.json", "llama-2-7b": "llama-2-7b.json",
    "llama-2-70b": "llama-2-70b.json", "llama-3-8b": "llama-3-8b.json", "llama-3.1-405b": "llama-3.1-405b.json",
    "mixtral-8x7b": "mixtral-8x7b.json", "llama-3.1-8b": "llama-3.1-8b.json", "llama-3.1-70b": "llama-3.1-70b.json",
    "llama-3.3-70b": "llama-3.3-70b-instruct.json", "qwen3-coder-480b-a35b": "qwen3-coder-480b-a35b-instruct.json",
    "llama-3.2-3b": "llama-3.2-3b.json", "qwen3-14b": "qwen3-14b.json", "qwen3-8b": "qwen3-8b.json",
    "llama-3.2-1b": "llama-3.2-1b-instruct.json", "minimax-m2.5": "minimax-m2.5.partial.json",
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_real_config_loads_to_the_bundled_spec(name):
    path = CONFIGS / FIXTURES[name]
    if not path.is_file():
        pytest.skip(f"{path.name} not collected")
    loaded = from_hf_config(read_json(path), str(path))
    assert same_architecture(loaded, load_model(name))


def test_kimi_k2_reads_as_deepseek_v3_with_its_own_numbers():
    """Kimi K2's config.json has DeepSeek-V3's schema (DeepseekV3ForCausalLM, model_type kimi_k2): the same
    MLA latent, so the same KV bytes per token; 64 heads, 384 experts, 1 dense layer, no MTP layer."""
    path = CONFIGS / "kimi-k2.json"
    if not path.is_file():
        pytest.skip("kimi-k2.json not collected")
    k2, v3 = from_hf_config(read_json(path), str(path)), load_model("deepseek-v3")
    assert (k2.num_qo_heads, k2.num_experts, k2.first_dense_layers, k2.vocab_size) == (64, 384, 1, 163840)
    assert k2.layer_types == v3.layer_types
    assert k2.kv_bytes_per_token(DType.bf16) == v3.kv_bytes_per_token(DType.bf16) == 70_272
    assert k2.derived_parameters / 1e12 == pytest.approx(1.026, abs=1e-3)  # "1T" on its model card


def test_the_moved_loader_is_still_reachable_from_hf_for_one_release():
    """load_hf_config and with_published_count moved to rooflab.load (which knows the bundled published counts);
    the old names still answer, with a warning saying where they went."""
    import rooflab.hf
    from rooflab import load

    for name in ("load_hf_config", "with_published_count"):
        with pytest.warns(DeprecationWarning, match=f"rooflab.load.{name}"):
            assert getattr(rooflab.hf, name) is getattr(load, name)
    with pytest.raises(AttributeError):
        rooflab.hf.not_a_name

"""Every bundled model: its parameter count against the published one, the round trip through a config.json,
the real config.json files in tests/data/hf_configs loading to the bundled specs, KV golden values, and the CLI.

Published counts and what each includes are in each YAML's comment and parameters_note; the config.json
files and where they were copied from are listed in tests/data/hf_configs/SOURCES.md.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab import available, load_model
from rooflab.cli import app
from rooflab.hf import export_hf_config, from_hf_config, same_architecture
from rooflab.hf.export import choose_architecture
from rooflab.hf.read import parse_json, read_json
from rooflab.kvcache import kv_layout
from rooflab.specs import MLA_SPARSE_FP8_BYTES, ModelSpec
from rooflab.units import GiB, DType
from rooflab.vocab import LayerKind, WindowAllocation

BUNDLED = available("models")
CONFIGS = Path(__file__).parent / "data" / "hf_configs"
#: Published counts are rounded figures (671B, 80B) or exact ones; the derived count leaves out small terms
#: (q/k norms, output gates, expert biases: below 0.6% of any bundled model). 1% holds them all.
PARAMETER_TOLERANCE = 0.01

#: The real config.json of each bundled model we have one for (SOURCES.md), by bundled name.
FIXTURES = {
    "deepseek-v3": "deepseek-v3.json", "gpt-oss-120b": "gpt-oss-120b.json", "gpt-oss-20b": "gpt-oss-20b.json",
    "gemma-3-27b": "gemma-3-27b.partial.json", "qwen3-32b": "qwen3-32b.json",
    "qwen3-235b-a22b": "qwen3-235b-a22b.json", "llama-4-scout": "llama-4-scout.partial.json",
    "qwen3-next-80b-a3b": "qwen3-next-80b-a3b-thinking.json", "mistral-7b-v0.1": "mistral-7b-v0.1.json",
    "gemma-2-9b": "gemma-2-9b.json", "qwen2.5-7b": "qwen2.5-7b.json", "llama-2-7b": "llama-2-7b.json",
    "llama-2-70b": "llama-2-70b.json", "llama-3-8b": "llama-3-8b.json", "llama-3.1-405b": "llama-3.1-405b.json",
    "mixtral-8x7b": "mixtral-8x7b.json",
}

#: The architecture the exporter writes for each bundled model.
ARCHITECTURE = {
    "deepseek-v3": "DeepseekV3ForCausalLM", "gpt-oss-120b": "GptOssForCausalLM", "gpt-oss-20b": "GptOssForCausalLM",
    "gemma-3-27b": "Gemma3ForConditionalGeneration", "gemma-2-9b": "Gemma2ForCausalLM",
    "qwen3-32b": "Qwen3ForCausalLM", "qwen3-235b-a22b": "Qwen3MoeForCausalLM",
    "llama-4-scout": "Llama4ForConditionalGeneration", "qwen3-next-80b-a3b": "Qwen3NextForCausalLM",
    "mistral-7b-v0.1": "MistralForCausalLM", "mixtral-8x7b": "MixtralForCausalLM", "qwen2.5-7b": "Qwen2ForCausalLM",
    "qwen2.5-72b": "Qwen2ForCausalLM",
}


def llama4_scout_vision_parameters() -> int:
    """Llama 4 Scout's vision encoder and projector: counted in the published 109B, not modelled by rooflab.

    The shapes of transformers' Llama4VisionModel and Llama4MultiModalProjector for Scout's vision_config
    (width 1408, 34 layers with biases, MLP 5632, 14-pixel patches of 336-pixel images, a pixel-shuffle
    MLP 4 x 1408 -> 4096 -> 4096, a projector 4096 -> the text model's 5120): 871,932,416 parameters.
    """
    d, layers, mlp, positions = 1408, 34, 5632, (336 // 14) ** 2 + 1
    embeddings = d + positions * d + 3 * 14 * 14 * d + 2 * 2 * d   # class token, positions, patches, 2 norms
    layer = 4 * (d * d + d) + (d * mlp + mlp) + (mlp * d + d) + 2 * 2 * d
    adapter = 4 * d * 4096 + 4096 * 4096
    projector = 4096 * 5120
    return embeddings + layers * layer + adapter + projector


#: Parameters a published count includes that rooflab's spec does not describe.
NOT_MODELLED = {"llama-4-scout": llama4_scout_vision_parameters()}


def _same(a: ModelSpec, b: ModelSpec) -> bool:
    """Equal up to name, display_name, source and the published count (a config.json carries none of them)."""
    return dataclasses.replace(a, name=b.name, display_name=b.display_name, source=b.source,
                               num_parameters=b.num_parameters, parameters_note=b.parameters_note) == b


# --- parameter counts -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", BUNDLED)
def test_derived_parameters_within_1_percent_of_the_published_count(name):
    m = load_model(name)
    assert m.name == name and m.num_parameters is not None, "every bundled model gives its published count"
    derived = m.derived_parameters + NOT_MODELLED.get(name, 0)
    assert derived == pytest.approx(m.num_parameters, rel=PARAMETER_TOLERANCE)


def test_what_the_published_count_includes_is_stated():
    new = ("deepseek-v3", "gpt-oss-120b", "gpt-oss-20b", "gemma-3-27b", "qwen3-32b", "qwen3-235b-a22b",
           "llama-4-scout", "qwen3-next-80b-a3b", "mistral-7b-v0.1")
    assert all(load_model(name).parameters_note for name in new)


def test_llama4_scout_vision_tower_by_its_shapes():
    assert llama4_scout_vision_parameters() == 871_932_416
    derived = load_model("llama-4-scout").derived_parameters
    assert derived == 107_769_861_120                           # the text model
    assert (derived + llama4_scout_vision_parameters()) / 1e9 == pytest.approx(108.64, abs=0.01)  # "109B"


# --- config.json round trip and the real files ------------------------------------------------------------

@pytest.mark.parametrize("name", BUNDLED)
def test_export_round_trip(name):
    m = load_model(name)
    data = export_hf_config(m)
    assert data["architectures"] == [ARCHITECTURE.get(name, "LlamaForCausalLM")] == [choose_architecture(m)]
    text = json.dumps(data, indent=2, allow_nan=False)
    back = from_hf_config(parse_json(text, f"{name}/config.json"), f"{name}/config.json")
    assert _same(back, m)


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


# --- golden values ----------------------------------------------------------------------------------------

def test_deepseek_v3_latent_cache_per_token():
    """DeepSeek-V3 technical report, section 2.1.1: one (d_c + d_R) = 512 + 64 latent per token per layer."""
    m = load_model("deepseek-v3")
    assert m.kv_bytes_per_token(DType.bf16) == 61 * 576 * 2 == 70_272
    assert m.kv_bytes_per_token(DType.fp8_e4m3) == 61 * 576 == 35_136
    mla = m.layer_types["mla"]
    assert MLA_SPARSE_FP8_BYTES == 656        # FlashMLA's fp8 layout: 512 e4m3 + 4 fp32 scales + 64 bf16 rope
    assert mla.kv_bytes_per_token(m.heads, DType.bf16, mla_sparse_fp8=True) == 656
    assert kv_layout(m, 1, DType.bf16, 1, mla_sparse_fp8=True).bytes_per_token_full == 61 * 656


@pytest.mark.parametrize("name, full_gib, hybrid_gib", [("gemma-3-27b", 31.00, 5.41), ("gpt-oss-120b", 4.50, 2.25)])
def test_kv_per_sequence_at_64k_tokens(name, full_gib, hybrid_gib):
    """65,536 tokens in 16-token pages, bf16. Gemma-3-27B: 62 x 65,536 x 8 KiB = 31.00 GiB with full-length
    tables; 10 full layers + 52 sliding ones of 65 pages = 5.41 GiB. gpt-oss-120b: 36 x 65,536 x 2 KiB =
    4.50 GiB; 18 full + 18 sliding of 9 pages (window 128) = 2.25 GiB."""
    m = load_model(name)
    full = kv_layout(m, 65_536, DType.bf16, 16, allocation=WindowAllocation.full).bytes_per_sequence
    hybrid = kv_layout(m, 65_536, DType.bf16, 16, allocation=WindowAllocation.hybrid).bytes_per_sequence
    assert round(full / GiB, 2) == full_gib and round(hybrid / GiB, 2) == hybrid_gib


def test_layer_stacks_of_the_hybrid_models():
    counts = {name: dict(load_model(name).layer_counts) for name in
              ("gemma-2-9b", "gemma-3-27b", "gpt-oss-120b", "llama-4-scout", "qwen3-next-80b-a3b", "mistral-7b-v0.1")}
    assert counts == {"gemma-2-9b": {"sliding": 21, "full": 21}, "gemma-3-27b": {"sliding": 52, "full": 10},
                      "gpt-oss-120b": {"sliding": 18, "full": 18}, "llama-4-scout": {"chunked": 36, "full": 12},
                      "qwen3-next-80b-a3b": {"linear": 36, "full": 12}, "mistral-7b-v0.1": {"sliding": 32}}
    gemma3 = load_model("gemma-3-27b").layer_type_names
    assert [i for i, t in enumerate(gemma3) if t == "full"] == list(range(5, 62, 6))
    assert load_model("gemma-2-9b").layer_type_names[0] == "sliding"
    assert all(t.sinks for t in load_model("gpt-oss-120b").layer_types.values())
    assert load_model("llama-4-scout").layer_types["chunked"].chunk == 8192


def test_weight_formats_as_shipped():
    v3, oss = load_model("deepseek-v3"), load_model("gpt-oss-120b")
    assert v3.weight_format("experts").value == v3.weight_format("attention").value == "fp8_block"
    assert v3.weight_format("embeddings").value == v3.weight_format("norms").value == "bf16"
    assert oss.weight_format("experts").value == "mxfp4" and oss.weight_format("experts").bits_per_weight == 4.25
    assert oss.weight_format("attention").value == oss.weight_format("lm_head").value == "bf16"


# --- the CLI ----------------------------------------------------------------------------------------------

runner = CliRunner()


def _tp(m: ModelSpec) -> int:
    """A tensor-parallel size that splits the heads and fits the weights on H200s."""
    return next(tp for tp in (8, 4, 2, 1) if m.num_qo_heads % tp == 0)


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_model_through_the_cli(name):
    m = load_model(name)
    for args in (["report", "-m", name, "-T", "4096"], ["report", "-m", name, "--phase", "decode"],
                 ["capacity", "-m", name, "-g", "h200-sxm", "--tp", str(_tp(m))]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, f"{' '.join(args)}: {result.output}"


def test_list_models_shows_every_bundled_model():
    result = runner.invoke(app, ["list", "models", "--format", "json"])
    assert result.exit_code == 0
    listed = {row["name"]: row for row in json.loads(result.stdout)}
    assert set(listed) == set(BUNDLED)
    assert listed["deepseek-v3"]["kv_bytes_per_token_fp16"] == 70_272


def test_a_config_json_through_the_cli():
    path = CONFIGS / "gpt-oss-20b.json"
    if not path.is_file():
        pytest.skip("gpt-oss-20b.json not collected")
    result = runner.invoke(app, ["report", "-m", str(path)])
    assert result.exit_code == 0, result.output
    assert "20.91 B parameters derived; published 20.90 B as bundled 'gpt-oss-20b'" in result.stdout
    assert load_model(str(path)).kv_bytes_per_token(DType.bf16) == 24 * 8 * 64 * 2 * 2
    assert [t.kind for t in load_model(str(path)).layer_types.values()] == [LayerKind.sliding, LayerKind.full]

"""Tests of rooflab/hf/more_families.py: Phi-3 / Phi-4, Cohere, Granite, OLMo 2, GLM-4.7, MiniMax-M2.5,
DeepSeek-V3.2 and the Mamba hybrids (Jamba, Bamba, Granite 4.0-H; NemotronH and FalconH1 refused) read as specs.

Each real config.json (tests/data/hf_configs, sources in its SOURCES.md) gives the parameter count its model card
publishes, within the rounding the card uses (PARAMETER_TOLERANCE), and the KV bytes a token worked out by hand
from the file's numbers. Rules without a real file (Cohere2's window pattern, Granite's MoE, Phi-3's narrow
window) are checked on small dicts written for the rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflab import SpecError
from rooflab.hf import from_hf_config
from rooflab.hf.read import read_json
from rooflab.specs import LayerType
from rooflab.vocab import LayerKind
from rooflab.units import DType
from support import JAMBA_V01, read_config

CONFIGS = Path(__file__).parent.parent / "data" / "hf_configs"

#: Published counts are rounded (3.8B, 8B, 230B) and leave out the small terms rooflab's count leaves out
#: (q/k norms, router biases); 1%, the tolerance of every bundled model (tests/specs/test_weights.py).
PARAMETER_TOLERANCE = 0.01


def read(name: str):
    path = CONFIGS / name
    if not path.is_file():
        pytest.skip(f"{name} not collected")
    return from_hf_config(read_json(path), str(path))


def mtp_module(m, layer_attention: int, embeddings_copied: bool) -> int:
    """A multi-token-prediction module the published count includes and rooflab's spec does not: one more
    decoder layer (the model's attention and a MoE layer), eh_proj 2H x H, enorm, hnorm and the head's norm; in
    DeepSeek-V3's checkpoint also its own copies of the embeddings and the head (DeepSeek-V3 README: 671B main
    model + 14B MTP module = 685B)."""
    h = m.hidden_size
    moe = m.num_experts * m.expert_parameters + m.num_shared_experts * 3 * h * (m.shared_expert_ffn_size or m.ffn_size)
    copies = 2 * m.vocab_size * h if embeddings_copied else 0
    return layer_attention + moe + h * m.num_experts + 2 * h + 2 * h * h + 2 * h + h + copies


# --- Phi-3 / Phi-4 ------------------------------------------------------------------------------------------

def test_phi_3_5_mini():
    """Phi-3.5-mini-instruct: 32 layers of 32 heads of 96, multi-head (32 KV heads), untied 32064 vocabulary;
    "3.8B parameters" (model card). The 262144 window exceeds its 131072 positions: full attention. LongRoPE:
    vLLM serves original_max_position_embeddings (4096) by default."""
    m = read("phi-3.5-mini-instruct.json")
    assert list(m.layer_types) == ["full"] and (m.num_kv_heads, m.head_dim) == (32, 96)
    assert m.derived_parameters == pytest.approx(3.8e9, rel=PARAMETER_TOLERANCE)
    # exactly the count keras-hub gives its Phi-3-mini presets, the same shape (keras-team/keras-hub
    # keras_hub/src/models/phi3/phi3_presets.py, "params": 3821079552, commit 96b8685)
    assert m.derived_parameters == 3_821_079_552
    assert m.kv_bytes_per_token(DType.bf16) == 32 * 32 * (96 + 96) * 2 == 393_216
    assert m.max_context_len == 4096


def test_phi_4_mini():
    """Phi-4-mini-instruct: 24 heads of 128 (3072 / 24), 8 KV heads, tied 200064 vocabulary, partial rotary 0.75
    (no change to weights or cache); "3.8B parameters" (model card)."""
    m = read("phi-4-mini-instruct.json")
    assert (m.num_qo_heads, m.num_kv_heads, m.head_dim, m.tie_word_embeddings) == (24, 8, 128, True)
    assert m.derived_parameters == pytest.approx(3.8e9, rel=PARAMETER_TOLERANCE)
    assert m.kv_bytes_per_token(DType.bf16) == 32 * 8 * (128 + 128) * 2 == 131_072


def test_phi3_window_narrower_than_the_positions_is_sliding():
    """Phi-3-mini-4k's rule: a sliding_window below max_position_embeddings slides on every layer."""
    data = json.loads((CONFIGS / "phi-3.5-mini-instruct.json").read_text()) if (
        CONFIGS / "phi-3.5-mini-instruct.json").is_file() else pytest.skip("phi-3.5-mini-instruct.json not collected")
    data = {**data, "sliding_window": 2047, "max_position_embeddings": 4096, "rope_scaling": None}
    m = read_config(data)
    assert list(m.layer_types) == ["sliding"] and m.layer_types["sliding"].window == 2047
    assert read_config({**data, "sliding_window": None}).layer_types["full"].window is None


# --- Cohere, OLMo 2 -----------------------------------------------------------------------------------------

def test_aya_23_8b_cohere():
    """Aya 23 8B (CohereForCausalLM): 32 layers, 32 heads of 128, 8 KV heads, tied 256000 vocabulary (Cohere's
    default: the file does not say); "8 billion parameters" (model card)."""
    m = read("aya-23-8b.json")
    assert (m.tie_word_embeddings, m.head_dim, m.weight_dtype) == (True, 128, DType.fp16)
    assert m.derived_parameters == pytest.approx(8e9, rel=PARAMETER_TOLERANCE)
    assert m.kv_bytes_per_token(DType.fp16) == 32 * 8 * 256 * 2 == 131_072
    assert m.max_context_len == 8192


@pytest.mark.parametrize("architecture", ["CohereForCausalLM", "Cohere2ForCausalLM"])
def test_cohere_takes_hidden_over_heads_whatever_head_dim_the_file_holds(architecture):
    """A stray "head_dim": 7 in Aya 23's file priced 7,168 KV bytes a token (32 layers x 8 KV heads x 7 x 2 x 2). vLLM's
    CohereAttention (model_executor/models/commandr.py, Cohere and Cohere2 alike) sizes its heads and KV cache at
    hidden_size // num_attention_heads = 4096 / 32 = 128, whatever head_dim says: 131,072 bytes, the file without it."""
    data = read_json(CONFIGS / "aya-23-8b.json") if (CONFIGS / "aya-23-8b.json").is_file() else pytest.skip("no file")
    data = {**data, "architectures": [architecture]}
    plain = from_hf_config(data, "aya")
    stray = from_hf_config({**data, "head_dim": 7}, "aya")
    assert stray.head_dim == plain.head_dim == 4096 // 32
    assert stray.kv_bytes_per_token(DType.fp16) == plain.kv_bytes_per_token(DType.fp16) == 32 * 8 * 128 * 2 * 2
    assert stray.derived_parameters == plain.derived_parameters


def test_cohere2_three_local_layers_to_one_global():
    """Cohere2's rule: sliding where (i + 1) % sliding_window_pattern != 0, window 4096 by default."""
    data = {"architectures": ["Cohere2ForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
            "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 8, "vocab_size": 256000,
            "max_position_embeddings": 8192}
    m = read_config(data)
    assert [m.layer_types[n].kind.value for n in m.layer_type_names] == ["sliding", "sliding", "sliding", "full"] * 2
    assert m.layer_types["sliding"].window == 4096 and m.tie_word_embeddings
    m2 = read_config({**data, "sliding_window_pattern": 2, "sliding_window": 1024})
    assert m2.layer_type_names.count("full") == 4 and m2.layer_types["sliding"].window == 1024


def test_olmo_2_7b():
    """OLMo-2-1124-7B: Llama's shapes (q/k norms left out), multi-head, fp32 checkpoint; 7.3B parameters (the
    Hugging Face page's count of its safetensors)."""
    m = read("olmo-2-1124-7b.json")
    assert (m.num_kv_heads, m.weight_dtype) == (32, DType.fp32)
    assert m.derived_parameters == pytest.approx(7.3e9, rel=PARAMETER_TOLERANCE)
    assert m.kv_bytes_per_token(DType.bf16) == 32 * 32 * 256 * 2 == 524_288


# --- Granite ------------------------------------------------------------------------------------------------

def test_granite_3_1_1b_a400m_moe():
    """Granite-3.1-1B-A400M-Instruct (GraniteMoeForCausalLM): 24 layers of 16 heads of 64 over 8 KV heads, each a
    MoE of 32 experts of 512 (8 a token), tied 49155 vocabulary; "1.3B" parameters, "400M" active (the model
    card's table, rounded to 0.1B and 0.1B: half a unit either way)."""
    m = read("granite-3.1-1b-a400m-instruct.json")
    assert (m.num_experts, m.num_experts_per_token, m.num_moe_layers, m.tie_word_embeddings) == (32, 8, 24, True)
    assert m.derived_parameters == pytest.approx(1.3e9, abs=0.05e9)
    assert m.active_parameters == pytest.approx(0.4e9, abs=0.05e9)
    assert m.kv_bytes_per_token(DType.bf16) == 24 * 8 * 128 * 2 == 49_152


def test_granite_moe_every_layer_and_a_shared_expert():
    """GraniteMoe: every layer num_local_experts experts of intermediate_size; GraniteMoeShared adds one of
    shared_intermediate_size (none when 0); the multipliers change no weight."""
    data = {"architectures": ["GraniteMoeForCausalLM"], "hidden_size": 1024, "intermediate_size": 512,
            "num_attention_heads": 16, "num_key_value_heads": 8, "num_hidden_layers": 24, "vocab_size": 49155,
            "max_position_embeddings": 4096, "num_local_experts": 32, "num_experts_per_tok": 8,
            "embedding_multiplier": 12.0, "attention_multiplier": 0.015625}
    m = read_config(data)
    assert (m.num_experts, m.num_experts_per_token, m.num_moe_layers, m.num_shared_experts) == (32, 8, 24, 0)
    shared = read_config({**data, "architectures": ["GraniteMoeSharedForCausalLM"], "shared_intermediate_size": 1024})
    assert (shared.num_shared_experts, shared.shared_expert_ffn_size) == (1, 1024)
    assert read_config({**data, "embedding_multiplier": 1.0}) == m


# --- GLM-4.7, MiniMax-M2.5 ----------------------------------------------------------------------------------

def test_glm_4_7_moe_with_shared_experts():
    """GLM-4.7 (Glm4MoeForCausalLM): 92 layers, 3 dense, then 160 experts of 1536 (8 a token) and one shared;
    96 heads of 128, 8 KV heads. "358B total parameters" (NVIDIA's GLM-4.7 model card) counts the MTP layer
    (num_nextn_predict_layers 1), which the spec leaves out."""
    m = read("glm-4.7-fp8.partial.json")
    assert (m.first_dense_layers, m.num_moe_layers, m.num_experts, m.num_shared_experts) == (3, 89, 160, 1)
    assert m.dense_ffn_size == 12288 and m.ffn_size == 1536
    attention = dict(m.parameters.attention_by_type)["full"] // m.num_layers
    total = m.derived_parameters + mtp_module(m, attention, embeddings_copied=False)
    assert total == pytest.approx(358e9, rel=PARAMETER_TOLERANCE)
    assert m.kv_bytes_per_token(DType.bf16) == 92 * 8 * 256 * 2 == 376_832


def test_minimax_m2_5():
    """MiniMax-M2.5 (MiniMaxM2ForCausalLM): 62 full-attention layers of 48 heads of 128, 8 KV heads, each a MoE of
    256 experts of 1536 (8 a token), fp8 128 x 128 blocks; "230B total parameters, 10B active" (MiniMax-M2's
    model card: M2.5 keeps M2's shape)."""
    m = read("minimax-m2.5.partial.json")
    assert (m.num_experts, m.num_experts_per_token, m.num_moe_layers, m.max_context_len) == (256, 8, 62, 196608)
    assert m.derived_parameters == pytest.approx(230e9, rel=PARAMETER_TOLERANCE)
    assert m.active_parameters / 1e9 == pytest.approx(10, abs=1.1)       # "10B": 11.0 with embeddings and head
    assert m.kv_bytes_per_token(DType.bf16) == 62 * 8 * 256 * 2 == 253_952


def test_minimax_m2_refuses_a_shared_expert():
    with pytest.raises(SpecError) as caught:
        read_config({"architectures": ["MiniMaxM2ForCausalLM"], "hidden_size": 64, "intermediate_size": 32,
                     "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100,
                     "num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 16})
    assert caught.value.field == "shared_intermediate_size"


# --- DeepSeek-V3.2 ------------------------------------------------------------------------------------------

def test_deepseek_v3_2_indexer_cache_and_count():
    """DeepSeek-V3.2: V3's MLA (512 + 64 latent) plus the lightning indexer's key on every layer: 128 fp8 values
    and one fp32 scale, 132 bytes (vLLM's DeepseekV32IndexerCache), so 61 x (576 x 2 + 132) bytes a token in
    bf16. The indexer adds wq_b 1536 x 64 x 128, wk 7168 x 128, k_norm 2 x 128 and weights_proj 7168 x 64 a
    layer. "685B" (the Hugging Face page; DeepSeek-V3's README splits its 685B as 671B main model + 14B MTP
    module) with the MTP module counted by hand."""
    m = read("deepseek-v3.2.json")
    t = m.layer_types["mla"]
    assert (t.index_head_dim, t.index_n_heads, t.indexer_bytes_per_token) == (128, 64, 132)
    assert m.kv_bytes_per_token(DType.bf16) == 61 * (576 * 2 + 128 + 4) == 78_324
    assert m.kv_bytes_per_token(DType.fp8_e4m3, tensor_parallel=8) == 61 * (576 + 132)   # replicated, not split
    v3 = read("deepseek-v3.json")
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert m.derived_parameters - v3.derived_parameters == 61 * indexer
    attention = dict(m.parameters.attention_by_type)["mla"] // m.num_layers
    total = m.derived_parameters + mtp_module(m, attention, embeddings_copied=True)
    assert total == pytest.approx(685e9, rel=PARAMETER_TOLERANCE)


def test_the_indexer_scales_count_whole_quantisation_blocks_as_vllm_sizes_them():
    """vLLM's DeepseekV32IndexerCache: d_I + d_I // 128 * 4 bytes a token (floor): 64 -> 64, 192 -> 196, 256 -> 264."""
    for d, expected in ((64, 64), (192, 196), (256, 264)):
        t = LayerType(LayerKind.mla, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, index_head_dim=d,
                      index_n_heads=64)
        assert t.indexer_bytes_per_token == expected


def test_an_indexer_needs_both_fields():
    from rooflab.specs import LayerType
    from rooflab.vocab import LayerKind

    with pytest.raises(SpecError) as caught:
        LayerType(LayerKind.mla, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, index_head_dim=128)
    assert caught.value.field == "index_n_heads"
    with pytest.raises(SpecError) as caught:
        LayerType(LayerKind.full, index_head_dim=128, index_n_heads=64)
    assert caught.value.field == "index_head_dim"


def test_index_head_dim_must_be_positive():
    data = json.loads((CONFIGS / "deepseek-v3.2.json").read_text()) if (CONFIGS / "deepseek-v3.2.json").is_file() \
        else pytest.skip("deepseek-v3.2.json not collected")
    with pytest.raises(SpecError) as caught:
        read_config({**data, "index_head_dim": 0})
    assert (caught.value.field, caught.value.value) == ("index_head_dim", 0)


# --- the Mamba hybrids ---------------------------------------------------------------------------------------------
# No verbatim config.json of a Jamba, Bamba, Granite 4.0-H or Nemotron-H checkpoint could be collected for
# tests/data/hf_configs, so none is stored. Jamba's count is checked on the shape transformers documents as
# Jamba-v0.1's (support.JAMBA_V01: JambaConfig's defaults); the other rules on small dicts written for the rule.

SMALL_MAMBA2 = {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 8, "num_attention_heads": 4,
                "num_key_value_heads": 2, "vocab_size": 1000, "mamba_n_heads": 8, "mamba_d_head": 64,
                "mamba_n_groups": 2, "mamba_d_state": 32, "mamba_d_conv": 4, "mamba_expand": 2}


def test_jamba_v0_1_stack_state_and_published_count():
    """Attention where i % 8 == 4 (layers 4, 12, 20, 28), Mamba-1 elsewhere; a MoE of 16 experts, 2 a token, where
    i % 2 == 1 (JambaConfig.layers_block_type, layers_num_experts). "12B active parameters and an overall of 52B
    parameters across all experts" (transformers' docs/source/en/model_doc/jamba.md, Model Details)."""
    m = read_config(JAMBA_V01)
    assert [i for i, name in enumerate(m.layer_type_names) if name == "full"] == [4, 12, 20, 28]
    assert [i for i in range(32) if m.is_moe_layer(i)] == list(range(1, 32, 2))
    mamba = m.layer_types["linear"]
    # d_inner = mamba_expand 2 x 4096; dt_rank 'auto' = ceil(4096 / 16)
    assert (mamba.linear_mixer.value, mamba.ssm_inner, mamba.ssm_state, mamba.ssm_dt_rank,
            mamba.linear_conv_kernel) == ("mamba1", 8192, 16, 256, 4)
    assert m.derived_parameters == pytest.approx(52e9, rel=PARAMETER_TOLERANCE)
    assert m.active_parameters == pytest.approx(12e9, rel=PARAMETER_TOLERANCE)
    # 4 attention layers of 8 KV heads of 128 in bf16: 4 x 2 x 8 x 128 x 2 bytes a token; the Mamba layers none
    assert m.kv_bytes_per_token(DType.bf16) == 4 * 2 * 8 * 128 * 2


@pytest.mark.parametrize("change, field", [
    ({"attn_layer_offset": 8}, "attn_layer_offset"),           # offset < period (JambaConfig.validate_architecture)
    ({"expert_layer_period": 4, "expert_layer_offset": 1}, "expert_layer_offset"),   # layers 1, 5, 9: no k-th rule
    ({"attn_layer_period": 64, "attn_layer_offset": 40}, "num_hidden_layers"),   # no attention layer in 32
    ({"mamba_dt_rank": "wide"}, "mamba_dt_rank")])
def test_jamba_refusals_name_the_field(change, field):
    with pytest.raises(SpecError) as caught:
        read_config({**JAMBA_V01, **change})
    assert caught.value.field == field


def test_bamba_attention_on_its_indices_mamba2_elsewhere():
    m = read_config({**SMALL_MAMBA2, "architectures": ["BambaForCausalLM"], "attn_layer_indices": [3, 7]})
    assert [i for i, name in enumerate(m.layer_type_names) if name == "full"] == [3, 7]
    t = m.layer_types["linear"]
    assert (t.linear_mixer.value, t.ssm_heads, t.ssm_head_dim, t.ssm_groups, t.ssm_state) == ("mamba2", 8, 64, 2, 32)
    assert not m.is_moe and m.ffn_size == 512
    auto = read_config({**SMALL_MAMBA2, "architectures": ["BambaForCausalLM"], "attn_layer_indices": [3],
                        "mamba_d_head": "auto"})
    assert auto.layer_types["linear"].ssm_head_dim == 2 * 256 // 8          # mamba_expand x H / heads


@pytest.mark.parametrize("change, field", [
    ({"mamba_d_head": 32}, "mamba_d_head"),        # 8 x 32 != 2 x 256 (BambaConfig.validate_architecture)
    ({"mamba_n_groups": 3}, "mamba_n_groups"),
    ({"attn_layer_indices": [8]}, "attn_layer_indices"),
    ({"attn_layer_indices": None}, "num_hidden_layers")])
def test_bamba_refusals_name_the_field(change, field):
    with pytest.raises(SpecError) as caught:
        read_config({**SMALL_MAMBA2, "architectures": ["BambaForCausalLM"], "attn_layer_indices": [3], **change})
    assert caught.value.field == field


GRANITE_TYPES = ["mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "attention"]


def test_granite_4_h_experts_and_shared_mlp_on_every_layer():
    """GraniteMoeHybridDecoderLayer: block_sparse_moe (num_local_experts of intermediate_size) plus shared_mlp
    (shared_intermediate_size) on every layer; with 0 experts the shared MLP alone (Granite 4.0-H-Micro)."""
    moe = read_config({**SMALL_MAMBA2, "architectures": ["GraniteMoeHybridForCausalLM"], "layer_types": GRANITE_TYPES,
                       "num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 768})
    assert m_names(moe) == ["linear"] * 3 + ["full"] + ["linear"] * 3 + ["full"]
    assert (moe.num_experts, moe.num_moe_layers, moe.ffn_size, moe.num_shared_experts,
            moe.shared_expert_ffn_size) == (4, 8, 512, 1, 768)
    dense = read_config({**SMALL_MAMBA2, "architectures": ["GraniteMoeHybridForCausalLM"],
                         "layer_types": GRANITE_TYPES, "num_local_experts": 0, "shared_intermediate_size": 768})
    assert not dense.is_moe and dense.ffn_size == 768
    five = read_config({**SMALL_MAMBA2, "architectures": ["GraniteMoeHybridForCausalLM"], "num_local_experts": 0,
                        "layer_types": ["linear_attention"] * 7 + ["full_attention"]})     # transformers 5's names
    assert m_names(five) == ["linear"] * 7 + ["full"]


def m_names(m) -> list[str]:
    return list(m.layer_type_names)


@pytest.mark.parametrize("change, field", [
    ({"layer_types": None}, "layer_types"),
    ({"layer_types": GRANITE_TYPES[:7]}, "layer_types"),
    ({"layer_types": GRANITE_TYPES[:7] + ["moe"]}, "layer_types[7]")])
def test_granite_4_h_refusals_name_the_field(change, field):
    with pytest.raises(SpecError) as caught:
        read_config({**SMALL_MAMBA2, "architectures": ["GraniteMoeHybridForCausalLM"], "layer_types": GRANITE_TYPES,
                     **change})
    assert caught.value.field == field


@pytest.mark.parametrize("arch, words", [("NemotronHForCausalLM", "MLP (-)"), ("FalconH1ForCausalLM", "side by side")])
def test_nemotron_h_and_falcon_h1_are_refused_with_the_reason(arch, words):
    with pytest.raises(SpecError) as caught:
        read_config({**SMALL_MAMBA2, "architectures": [arch]})
    assert caught.value.field == "architectures" and words in str(caught.value)

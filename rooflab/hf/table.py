"""The dispatch table: each architecture name config.json gives -> its reader, where its text model sits, and
transformers' defaults for the keys its files leave out (configuration_<family>.py, release 5.24.0 for the
families of more_families.py and vision.py).

The readers live in families.py (Llama, Mistral, Qwen, Gemma, gpt-oss, DeepSeek V2/V3, Llama 4, Qwen3-Next),
more_families.py (Phi-3/4, Cohere, Granite, OLMo 2, GLM-4.5, MiniMax-M2, DeepSeek-V3.2, and the Mamba hybrids
Jamba, Bamba, Granite 4.0-H; NemotronH and FalconH1 are recognised and refused with the reason) and vision.py
(Llava, Qwen3-VL). Granite and OLMo 2 have Llama's shapes and read as Llama.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .families import (deepseek, gemma2, gemma3, gpt_oss, llama, llama4, mistral, mixtral, qwen2, qwen2_moe, qwen3,
                       qwen3_moe, qwen3_next)
from .more_families import (FALCON_H1_REFUSED, NEMOTRON_H_REFUSED, bamba, cohere, cohere2, deepseek_v32, glm4_moe,
                            granite_moe, granite_moe_hybrid, jamba, minimax_m2, phi3, refused)
from .read import Fields
from .vision import LLAMA_DEFAULTS, QWEN3_VL_TEXT_DEFAULTS, gemma3_vl, llava, qwen3_vl


@dataclass(frozen=True)
class Family:
    """How one architecture's config.json reads: its reader, whether the text model sits under text_config,
    and transformers' defaults for keys its files leave out."""

    read: Callable[[Fields], dict]
    nested: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)


_MISTRAL = {"sliding_window": 4096, "tie_word_embeddings": False}
_QWEN = {"use_sliding_window": False, "max_window_layers": 28}
_GEMMA2 = {"vocab_size": 256_000, "max_position_embeddings": 8192, "head_dim": 256, "sliding_window": 4096,
           "tie_word_embeddings": True}
_GEMMA3 = {"vocab_size": 262_208, "max_position_embeddings": 131_072, "head_dim": 256, "sliding_window": 4096,
           "sliding_window_pattern": 6, "tie_word_embeddings": True}
_GPT_OSS = {"head_dim": 64, "sliding_window": 128, "attention_bias": True}
_LLAMA4 = {"head_dim": 128, "attention_chunk_size": 8192}
_QWEN3_NEXT = {"head_dim": 256, "linear_conv_kernel_dim": 4}
_PHI3 = {"vocab_size": 32064, "tie_word_embeddings": False}
_COHERE = {"tie_word_embeddings": True}
_COHERE2 = {"tie_word_embeddings": True, "sliding_window": 4096}
_GRANITE_MOE = {"num_local_experts": 8, "num_experts_per_tok": 2}
_GLM4_MOE = {"first_k_dense_replace": 1, "n_shared_experts": 1, "n_routed_experts": 128,
             "moe_intermediate_size": 1408, "num_experts_per_tok": 8}
_MINIMAX_M2 = {"head_dim": 128}
_DEEPSEEK_V32 = {"index_head_dim": 128, "index_n_heads": 64}
_JAMBA = {"vocab_size": 65536, "tie_word_embeddings": False, "max_position_embeddings": 262144,
          "num_experts_per_tok": 2, "num_experts": 16, "expert_layer_period": 2, "expert_layer_offset": 1,
          "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
          "mamba_dt_rank": "auto"}
_MAMBA2 = {"mamba_n_heads": 128, "mamba_d_head": "auto", "mamba_n_groups": 1, "mamba_d_state": 256,
           "mamba_d_conv": 4, "mamba_expand": 2}
_BAMBA = {**_MAMBA2, "vocab_size": 128000, "tie_word_embeddings": False, "max_position_embeddings": 262144}
_GRANITE_MOE_HYBRID = {**_MAMBA2, "vocab_size": 32000, "tie_word_embeddings": False, "max_position_embeddings": 2048,
                       "num_local_experts": 8, "num_experts_per_tok": 2, "shared_intermediate_size": 1024}

ARCHITECTURES: dict[str, Family] = {
    "LlamaForCausalLM": Family(llama),
    "MistralForCausalLM": Family(mistral, defaults=_MISTRAL),
    "MixtralForCausalLM": Family(mixtral),
    "Qwen2ForCausalLM": Family(qwen2, defaults=_QWEN),
    "Qwen3ForCausalLM": Family(qwen3, defaults={**_QWEN, "head_dim": 128}),
    "Qwen2MoeForCausalLM": Family(qwen2_moe, defaults=_QWEN),
    "Qwen3MoeForCausalLM": Family(qwen3_moe, defaults={**_QWEN, "head_dim": 128}),
    "Qwen3NextForCausalLM": Family(qwen3_next, defaults=_QWEN3_NEXT),
    "Gemma2ForCausalLM": Family(gemma2, defaults=_GEMMA2),
    "Gemma3ForCausalLM": Family(gemma3, defaults=_GEMMA3),
    "Gemma3ForConditionalGeneration": Family(gemma3_vl, nested=True, defaults=_GEMMA3),
    "GptOssForCausalLM": Family(gpt_oss, defaults=_GPT_OSS),
    "DeepseekV2ForCausalLM": Family(deepseek),
    "DeepseekV3ForCausalLM": Family(deepseek),
    "DeepseekV32ForCausalLM": Family(deepseek_v32, defaults=_DEEPSEEK_V32),
    "Llama4ForCausalLM": Family(llama4, defaults=_LLAMA4),
    "Llama4ForConditionalGeneration": Family(llama4, nested=True, defaults=_LLAMA4),
    "Phi3ForCausalLM": Family(phi3, defaults=_PHI3),
    "CohereForCausalLM": Family(cohere, defaults=_COHERE),
    "Cohere2ForCausalLM": Family(cohere2, defaults=_COHERE2),
    "GraniteForCausalLM": Family(llama),
    "GraniteMoeForCausalLM": Family(granite_moe, defaults=_GRANITE_MOE),
    "GraniteMoeSharedForCausalLM": Family(granite_moe, defaults=_GRANITE_MOE),
    "Olmo2ForCausalLM": Family(llama),
    "Glm4MoeForCausalLM": Family(glm4_moe, defaults=_GLM4_MOE),
    "MiniMaxM2ForCausalLM": Family(minimax_m2, defaults=_MINIMAX_M2),
    "JambaForCausalLM": Family(jamba, defaults=_JAMBA),
    "BambaForCausalLM": Family(bamba, defaults=_BAMBA),
    "GraniteMoeHybridForCausalLM": Family(granite_moe_hybrid, defaults=_GRANITE_MOE_HYBRID),
    "NemotronHForCausalLM": Family(refused("NemotronHForCausalLM", NEMOTRON_H_REFUSED)),
    "FalconH1ForCausalLM": Family(refused("FalconH1ForCausalLM", FALCON_H1_REFUSED)),
    "LlavaForConditionalGeneration": Family(llava, nested=True, defaults=LLAMA_DEFAULTS),
    "Qwen3VLForConditionalGeneration": Family(qwen3_vl, nested=True, defaults=QWEN3_VL_TEXT_DEFAULTS),
}

__all__ = ["ARCHITECTURES", "Family"]

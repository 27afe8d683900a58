"""Readers for the families added in issue 28: Phi-3 / Phi-4, Cohere, Granite, OLMo 2, GLM-4.5, MiniMax-M2 and
DeepSeek-V3.2, each a config.json's text model -> ModelSpec fields by the config's own rules.

Rules and shapes, from transformers' configuration_<family>.py and modeling_<family>.py (release 5.24.0):

    Phi3            Phi-3, Phi-3.5-mini, Phi-4, Phi-4-mini: q, k, v fused in qkv_proj and gate, up fused in
                    gate_up_proj (the same weights as separate projections, no biases); sliding_window passed to
                    every layer, read as full attention where it is no smaller than max_position_embeddings
                    (Phi-3.5 and Phi-4-mini give 262144 against 131072 positions: no key is ever dropped);
                    partial_rotary_factor turns part of each head only (no change to weights or cache); LongRoPE
                    (rope_scaling type longrope) serves original_max_position_embeddings by default (context.py)
    Cohere          Command-R, Aya 23: one LayerNorm a layer (parallel attention and MLP), embeddings tied
                    unless the file says otherwise; every layer full attention
    Cohere2         Command R7B, Command A: layer_types, else sliding when (i + 1) % sliding_window_pattern != 0
                    (pattern 4: 3 local, 1 global), window 4096 by default; tied embeddings
    Granite         Llama's shapes; embedding_multiplier, attention_multiplier, residual_multiplier and
                    logits_scaling scale activations and change no weight or cache
    GraniteMoe      every layer a MoE of num_local_experts, num_experts_per_tok (GraniteMoeShared: a shared
                    expert of shared_intermediate_size, none when 0)
    Olmo2           Llama's shapes with q/k norms over all heads and the norms after attention and MLP (left
                    out of the count as elsewhere: 2 H a layer, as the pre-norms they replace)
    Glm4Moe         GLM-4.5, 4.6, 4.7: biases on q, k, v where attention_bias; MoE from first_k_dense_replace on
                    (n_routed_experts of moe_intermediate_size, n_shared_experts), dense intermediate_size
                    before; partial rotary (0.5); the multi-token-prediction layer is not modelled
    MiniMaxM2       every layer full attention and a MoE of num_local_experts of intermediate_size, with
                    per-layer q/k norms; the MTP modules are not modelled
    DeepseekV32     DeepSeek-V3's MLA and MoE plus the lightning indexer on every layer: index_n_heads query
                    heads of index_head_dim from the q latent, one key of index_head_dim a token, cached in fp8
                    with fp32 scales (specs.layers.INDEXER_QUANT_BLOCK; vLLM's DeepseekV32IndexerCache)
"""

from __future__ import annotations

import dataclasses

from ..specs import LayerType
from ..vocab import LayerKind
from .common import moe, stack
from .families import FULL, SLIDING, base, by_rule, deepseek, layers
from .read import Fields


def phi3(c: Fields) -> dict:
    """Phi3ForCausalLM: Llama's weights in fused projections; the window on every layer where it drops keys."""
    spec = {**base(c), "attention_bias": False}
    window = c.count_or_none("sliding_window")
    positions = c.count_or_none("max_position_embeddings")
    if window is not None and positions is not None and window >= positions:
        window = None                         # wider than any position the model takes: full attention
    kinds = by_rule(c, spec["num_layers"], lambda i: SLIDING if window else FULL)
    return {**spec, **layers(c, kinds, window), "ffn_size": c.count("intermediate_size")}


def cohere(c: Fields) -> dict:
    """CohereForCausalLM: full attention on every layer, biases as attention_bias says, tied embeddings."""
    spec = base(c)
    kinds = by_rule(c, spec["num_layers"], lambda i: FULL)
    return {**spec, **layers(c, kinds), "ffn_size": c.count("intermediate_size")}


def cohere2(c: Fields) -> dict:
    """Cohere2ForCausalLM: 3 sliding layers to each global one (sliding_window_pattern 4), or layer_types."""
    spec = base(c)
    pattern = c.count("sliding_window_pattern", 4)
    kinds = by_rule(c, spec["num_layers"], lambda i: SLIDING if (i + 1) % pattern else FULL)
    return {**spec, **layers(c, kinds, c.count_or_none("sliding_window"), allowed=(FULL, SLIDING)),
            "ffn_size": c.count("intermediate_size")}


def granite_moe(c: Fields) -> dict:
    """GraniteMoeForCausalLM / GraniteMoeSharedForCausalLM: every layer a MoE (a shared expert where
    shared_intermediate_size is given and not 0)."""
    spec = base(c)
    n = spec["num_layers"]
    kinds = by_rule(c, n, lambda i: FULL)
    ffn = c.count("intermediate_size")
    shared_ffn = c.count_or_none("shared_intermediate_size", 0, lo=0) or None
    return {**spec, **layers(c, kinds),
            **moe(c, n, range(n), "num_local_experts", experts=c.count("num_local_experts"),
                  top_k=c.count("num_experts_per_tok"), expert_ffn=ffn, dense_ffn=ffn,
                  shared=1 if shared_ffn else 0, shared_ffn=shared_ffn)}


def glm4_moe(c: Fields) -> dict:
    """Glm4MoeForCausalLM: full attention (q/k/v biases as attention_bias says); dense layers before
    first_k_dense_replace, then routed experts and n_shared_experts shared ones."""
    spec = base(c)
    n = spec["num_layers"]
    first = c.count("first_k_dense_replace", lo=0)
    if first >= n:
        raise c.error("first_k_dense_replace", first, f"leaves no MoE layer among the {n} layers")
    kinds = by_rule(c, n, lambda i: FULL)
    return {**spec, **layers(c, kinds),
            **moe(c, n, range(first, n), "first_k_dense_replace", experts=c.count("n_routed_experts"),
                  top_k=c.count("num_experts_per_tok"), expert_ffn=c.count("moe_intermediate_size"),
                  dense_ffn=c.count("intermediate_size"), shared=c.count("n_shared_experts", lo=0),
                  shared_ffn=c.count("moe_intermediate_size"))}


def minimax_m2(c: Fields) -> dict:
    """MiniMaxM2ForCausalLM: full attention on every layer, every layer a MoE of intermediate_size experts."""
    spec = base(c)
    n = spec["num_layers"]
    kinds = by_rule(c, n, lambda i: FULL)
    if c.count_or_none("shared_intermediate_size", 0, lo=0):
        raise c.error("shared_intermediate_size", c.raw("shared_intermediate_size"),
                      "MiniMaxM2's modelling code has no shared expert (0 expected)")
    ffn = c.count("intermediate_size")
    return {**spec, **layers(c, kinds, allowed=(FULL,)),
            **moe(c, n, range(n), "num_local_experts", experts=c.count("num_local_experts"),
                  top_k=c.count("num_experts_per_tok"), expert_ffn=ffn, dense_ffn=ffn)}


def deepseek_v32(c: Fields) -> dict:
    """DeepseekV32ForCausalLM: DeepSeek-V3's layers, each MLA layer with a lightning indexer."""
    spec = deepseek(c)
    mla: LayerType = spec["layer_types"][LayerKind.mla.value]
    indexed = dataclasses.replace(mla, index_head_dim=c.count("index_head_dim"),
                                  index_n_heads=c.count("index_n_heads"))
    kinds = [LayerKind.mla] * spec["num_layers"]
    return {**spec, **stack(kinds, {LayerKind.mla: indexed})}


__all__ = ["cohere", "cohere2", "deepseek_v32", "glm4_moe", "granite_moe", "minimax_m2", "phi3"]

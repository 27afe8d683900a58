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
                    unless the file says otherwise; every layer full attention; head dim hidden_size /
                    num_attention_heads whatever head_dim the file holds (`cohere_fields`)
    Cohere2         Command R7B, Command A: layer_types, else sliding when (i + 1) % sliding_window_pattern != 0
                    (pattern 4: 3 local, 1 global), window 4096 by default; tied embeddings; Cohere's head dim
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

The Mamba hybrids: every layer attention or a Mamba mixer, then an MLP (a linear layer of mixer mamba1 / mamba2):

    Jamba           attention where i % attn_layer_period == attn_layer_offset, Mamba-1 elsewhere (d_inner
                    mamba_expand x hidden_size, mamba_d_state, mamba_d_conv, mamba_dt_rank 'auto' = ceil(H / 16));
                    a MoE of num_experts where i % expert_layer_period == expert_layer_offset (JambaConfig's
                    layers_block_type and layers_num_experts)
    Bamba           attention on attn_layer_indices, Mamba-2 elsewhere (mamba_n_heads of mamba_d_head, 'auto' =
                    mamba_expand x H / heads, mamba_n_groups, mamba_d_state, mamba_d_conv); a dense MLP a layer
    GraniteMoeHybrid  Granite 4.0-H: layer_types ('mamba' / 'attention', or transformers 5's linear_attention /
                    full_attention), Bamba's Mamba-2 fields; every layer a shared MLP of shared_intermediate_size,
                    plus a MoE of num_local_experts (none when 0: Granite 4.0-H-Micro is dense)

NemotronH (hybrid_override_pattern: a layer is a Mamba mixer, attention or an MLP alone, never a mixer and its MLP)
and FalconH1 (attention and Mamba-2 side by side in every layer) do not fit one type and one MLP per layer and are
refused with the reason (families.refused).
"""

from __future__ import annotations

import dataclasses
import math

from ..specs import LayerType, LinearMixer
from ..vocab import LayerKind
from .common import moe, stack
from .families import FULL, LINEAR, SLIDING, _with, base, by_rule, deepseek, layers
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


def cohere_fields(c: Fields) -> Fields:
    """The file as the engines build Cohere's attention from it: head dim hidden_size / num_attention_heads, a
    head_dim key ignored (a stray head_dim of 7 in Aya 23's file would price 7,168 KV bytes a token for 131,072).

    vLLM's CohereAttention (model_executor/models/commandr.py, which builds Cohere and Cohere2 alike) sets
    `self.head_dim = self.hidden_size // self.total_num_heads`, and the KV cache is sized from that layer; SGLang's
    commandr.py and transformers 4.x's CohereAttention the same. transformers 5.24.0's CohereAttention reads
    `getattr(config, "head_dim", hidden_size // num_attention_heads)` (its CohereConfig declares no head_dim, so only
    a stray key sets one, and then the checkpoint's q_proj, sized by hidden / heads, does not load);
    Cohere2Config sets head_dim = hidden_size // num_attention_heads itself (configuration_cohere2.py).
    """
    return _with(c, head_dim=None)


def cohere(c: Fields) -> dict:
    """CohereForCausalLM: full attention on every layer, biases as attention_bias says, tied embeddings; the head dim
    as the engines take it (cohere_fields)."""
    c = cohere_fields(c)
    spec = base(c)
    kinds = by_rule(c, spec["num_layers"], lambda i: FULL)
    return {**spec, **layers(c, kinds), "ffn_size": c.count("intermediate_size")}


def cohere2(c: Fields) -> dict:
    """Cohere2ForCausalLM: 3 sliding layers to each global one (sliding_window_pattern 4), or layer_types; Cohere's
    head dim (cohere_fields)."""
    c = cohere_fields(c)
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


# --- Mamba hybrids -------------------------------------------------------------------------------------------

def mamba_stack(c: Fields, kinds: list[LayerKind], mamba: LayerType) -> dict:
    """One kind per layer, attention or Mamba; a stack with no attention layer is refused (rooflab prices softmax)."""
    if FULL not in kinds:
        raise c.error("num_hidden_layers", len(kinds), "no layer is attention: rooflab plans hybrids with at least "
                                                       "one softmax layer, not pure Mamba models")
    return stack(kinds, {FULL: LayerType(FULL), LINEAR: mamba})


def mamba2_type(c: Fields, hidden: int) -> LayerType:
    """A Mamba-2 mixer of Bamba's and Granite 4.0-H's fields; mamba_d_head 'auto' = mamba_expand x H / heads, and
    heads x head_dim must be mamba_expand x H (BambaConfig.validate_architecture)."""
    heads, inner = c.count("mamba_n_heads"), c.count("mamba_expand") * hidden
    raw = c.raw("mamba_d_head")
    head_dim = inner // heads if raw == "auto" else c.count("mamba_d_head")
    if heads * head_dim != inner:
        raise c.error("mamba_d_head", raw, f"mamba_n_heads ({heads}) x mamba_d_head must be mamba_expand x "
                                           f"hidden_size ({inner})")
    groups = c.count("mamba_n_groups")
    if heads % groups:
        raise c.error("mamba_n_groups", groups, f"must divide mamba_n_heads ({heads})")
    return LayerType(LINEAR, mixer=LinearMixer.mamba2, ssm_heads=heads, ssm_head_dim=head_dim, ssm_groups=groups,
                     ssm_state=c.count("mamba_d_state"), linear_conv_kernel=c.count("mamba_d_conv"))


def periodic(c: Fields, n: int, period_key: str, offset_key: str) -> list[int]:
    """The layers i with i % period == offset (Jamba's attention and expert layers); offset < period."""
    period, offset = c.count(period_key), c.count(offset_key, lo=0)
    if offset >= period:
        raise c.error(offset_key, offset, f"must be smaller than {period_key} ({period})")
    return [i for i in range(n) if i % period == offset]


def jamba(c: Fields) -> dict:
    """JambaForCausalLM: Mamba-1 layers, attention every attn_layer_period-th, MoE every expert_layer_period-th."""
    spec = base(c)
    n, hidden = spec["num_layers"], spec["hidden_size"]
    attention = set(periodic(c, n, "attn_layer_period", "attn_layer_offset"))
    rank = c.raw("mamba_dt_rank")
    mamba = LayerType(LINEAR, mixer=LinearMixer.mamba1, ssm_inner=c.count("mamba_expand") * hidden,
                      ssm_state=c.count("mamba_d_state"), linear_conv_kernel=c.count("mamba_d_conv"),
                      ssm_dt_rank=math.ceil(hidden / 16) if rank == "auto" else c.count("mamba_dt_rank"))
    kinds = [FULL if i in attention else LINEAR for i in range(n)]
    ffn, experts = c.count("intermediate_size"), c.count("num_experts")
    if experts == 1:                              # one expert a layer: every MLP dense (num_experts_per_tok unread)
        return {**spec, **mamba_stack(c, kinds, mamba), "ffn_size": ffn}
    moe_layers = periodic(c, n, "expert_layer_period", "expert_layer_offset")
    return {**spec, **mamba_stack(c, kinds, mamba),
            **moe(c, n, moe_layers, "expert_layer_offset", experts=experts, top_k=c.count("num_experts_per_tok"),
                  expert_ffn=ffn, dense_ffn=ffn)}


def bamba(c: Fields) -> dict:
    """BambaForCausalLM: attention on attn_layer_indices, Mamba-2 elsewhere, a dense MLP on every layer."""
    spec = base(c)
    n = spec["num_layers"]
    attention = set(c.indices("attn_layer_indices") or ())
    past = sorted(i for i in attention if i >= n)
    if past:
        raise c.error("attn_layer_indices", past[0], f"names a layer past the last (num_hidden_layers is {n})")
    kinds = [FULL if i in attention else LINEAR for i in range(n)]
    return {**spec, **mamba_stack(c, kinds, mamba2_type(c, spec["hidden_size"])),
            "ffn_size": c.count("intermediate_size")}


#: GraniteMoeHybrid's layer_types values (its config files' and transformers 5's spellings).
GRANITE_HYBRID_KINDS = {"mamba": LINEAR, "linear_attention": LINEAR, "attention": FULL, "full_attention": FULL}


def granite_moe_hybrid(c: Fields) -> dict:
    """GraniteMoeHybridForCausalLM (Granite 4.0-H): layer_types, Mamba-2 mixers, a shared MLP on every layer and
    routed experts where num_local_experts > 0."""
    spec = base(c)
    n = spec["num_layers"]
    names = c.names("layer_types")
    if names is None:
        raise c.error("layer_types", None, "missing: GraniteMoeHybridConfig's default makes every layer Mamba")
    if len(names) != n:
        raise c.error("layer_types", f"{len(names)} entries", f"must list one type per layer (num_hidden_layers "
                                                              f"is {n})")
    for i, name in enumerate(names):
        if name not in GRANITE_HYBRID_KINDS:
            raise c.error(f"layer_types[{i}]", name, f"rooflab reads {', '.join(GRANITE_HYBRID_KINDS)}")
    kinds = [GRANITE_HYBRID_KINDS[name] for name in names]
    shared = c.count("shared_intermediate_size")
    experts = c.count("num_local_experts", lo=0)
    mlp = {"ffn_size": shared} if experts == 0 else \
        moe(c, n, range(n), "num_local_experts", experts=experts, top_k=c.count("num_experts_per_tok"),
            expert_ffn=c.count("intermediate_size"), dense_ffn=shared, shared=1, shared_ffn=shared)
    return {**spec, **mamba_stack(c, kinds, mamba2_type(c, spec["hidden_size"])), **mlp}


def refused(architecture: str, reason: str):
    """A reader for an architecture rooflab recognises but cannot describe: a SpecError saying why."""
    def read(c: Fields) -> dict:
        raise c.error_at("architectures", architecture, reason)
    return read


NEMOTRON_H_REFUSED = ("NemotronH's layers are each a Mamba mixer (M), attention (*), an MLP (-) or a MoE (E) alone; "
                      "rooflab's layers are a mixer and an MLP each, so its weights and stack would be misread")
FALCON_H1_REFUSED = ("FalconH1 runs attention and a Mamba-2 mixer side by side in every layer (a KV cache and a "
                     "state each); rooflab's layers are one kind each")


__all__ = ["FALCON_H1_REFUSED", "GRANITE_HYBRID_KINDS", "NEMOTRON_H_REFUSED", "bamba", "cohere", "cohere2",
           "deepseek_v32", "glm4_moe", "granite_moe", "granite_moe_hybrid", "jamba", "mamba2_type", "minimax_m2",
           "phi3", "refused"]

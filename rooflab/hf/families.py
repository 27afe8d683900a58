"""One reader per architecture family: a config.json's text model -> ModelSpec fields, by the config's own rules
(the newer families in more_families.py and vision.py; the dispatch table in table.py).

Rules, each as the family's transformers configuration class applies it (configuration_<family>.py):

    every family   layer_types, where the file gives it, wins over the family's rule below
    Llama          every layer full attention
    Mistral        sliding_window (4096 when absent, none when null) on every layer; Mixtral likewise, MoE
    Qwen2 / Qwen3  sliding_window counts only when use_sliding_window is true, and then only on layers
                   i >= max_window_layers; Qwen2 has q/k/v biases whatever the file says
    Qwen2-MoE      sliding on even layers below max_window_layers when use_sliding_window is true
    Gemma 2        layer i sliding when (i + 1) % 2 != 0 (layer 0 sliding), window 4096 by default
    Gemma 3        layer i sliding when (i + 1) % sliding_window_pattern != 0 (pattern 6: 5 local, 1 global)
    gpt-oss        as Gemma 2, window 128, one sink logit per query head on every layer
    DeepSeek V2/V3 every layer MLA (Kimi K2 too); MoE from layer first_k_dense_replace on
    Llama 4        RoPE layers chunked (attention_chunk_size), NoPE layers global: no_rope_layers, by default
                   every 4th layer NoPE; MoE layers moe_layers, by default every interleave_moe_layer_step-th
    Qwen3-Next     layer i Gated DeltaNet when (i + 1) % full_attention_interval != 0 (interval 4)

The shape (layers, hidden size, heads, MLP sizes) is required; the keys a family's published files leave
out take transformers' defaults, listed per family in DEFAULTS (Gemma 3's config.json, say, names no
vocab_size). Small weights the parameter count leaves out (norms inside attention, output gates) do not
change the spec. Sources: transformers' configuration and modeling files of each family; vLLM's model
files agree on which layers are windowed or chunked.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence

from ..specs import LayerType, ModelSpec
from ..vocab import LayerKind
from .common import (HF_NAMES, chunk_type, layer_kinds, linear_type, moe, sparse_step_layers, stack, weight_dtype,
                     window_type)
from .context import vllm_max_model_len
from .quant import quantization
from .read import Fields

FULL, SLIDING, CHUNKED, LINEAR = LayerKind.full, LayerKind.sliding, LayerKind.chunked, LayerKind.linear

#: ModelSpec's bound on num_layers, checked before the stack is built layer by layer (10**12 layers would not end).
MAX_LAYERS = int(next(f for f in dataclasses.fields(ModelSpec) if f.name == "num_layers").metadata["range"].hi)


#: The key under which a family's fields carry the quantization_config's exclusion list to from_hf_config
#: (which counts the parameters it keeps once the spec is built: quant.unquantized_parameters).
EXCLUDED = "_excluded_modules"


# --- what every family reads alike --------------------------------------------------------------------------

def base(c: Fields) -> dict:
    """Sizes, heads, vocabulary, context, tying, biases and weight formats; the MLP and the stack are the family's."""
    heads = c.count("num_attention_heads")
    kv = c.count("num_key_value_heads", heads)      # absent: multi-head, transformers' backward-compatible rule
    if heads % kv:
        raise c.error("num_key_value_heads", kv, f"must divide num_attention_heads ({heads})")
    hidden = c.count("hidden_size")
    return {"num_layers": c.count("num_hidden_layers", hi=MAX_LAYERS), "hidden_size": hidden, "num_qo_heads": heads,
            "num_kv_heads": kv, "head_dim": head_dim(c, hidden, heads), "vocab_size": c.count("vocab_size"),
            "max_context_len": vllm_max_model_len(c), "tie_word_embeddings": tied(c),
            "attention_bias": c.flag("attention_bias", False), "weight_dtype": weight_dtype(c),
            **dict(zip(("quantization", EXCLUDED, "quant_method"), quantization(c)))}


def head_dim(c: Fields, hidden: int, heads: int) -> int:
    """head_dim where given (many models differ from hidden / heads: Qwen3-32B 128, not 80), else hidden / heads."""
    given = c.count_or_none("head_dim")
    if given is not None:
        return given
    if hidden % heads:
        raise c.error("head_dim", None, f"missing, and hidden_size ({hidden}) is not a multiple of "
                                        f"num_attention_heads ({heads})")
    return hidden // heads


def tied(c: Fields) -> bool:
    """tie_word_embeddings of the text model, else of the wrapper around it, else the family's default."""
    if "tie_word_embeddings" not in c.data and "tie_word_embeddings" in c.outer:
        value = c.outer["tie_word_embeddings"]
        if not isinstance(value, bool):
            raise c.error_at("tie_word_embeddings", value, "must be true or false")
        return value
    return c.flag("tie_word_embeddings", False)


def layers(c: Fields, kinds: Sequence[LayerKind], window: Optional[int] = None, sinks: bool = False,
           allowed: Sequence[LayerKind] = (FULL, SLIDING, CHUNKED)) -> dict:
    """The stack of one kind per layer; sliding layers take `window` (the file's sliding_window, as the family
    reads it), chunked ones attention_chunk_size, linear ones the linear_* fields."""
    makers: dict[LayerKind, Callable[[], LayerType]] = {
        FULL: lambda: LayerType(FULL, sinks=sinks),
        SLIDING: lambda: window_type(c, window, sinks),
        CHUNKED: lambda: chunk_type(c),
        LINEAR: lambda: linear_type(c),
    }
    for kind in dict.fromkeys(kinds):
        if kind not in allowed:
            raise c.error("layer_types", HF_NAMES[kind], "this architecture has no such layers")
    return stack(kinds, {kind: makers[kind]() for kind in dict.fromkeys(kinds)})


def by_rule(c: Fields, n: int, rule: Callable[[int], LayerKind]) -> list[LayerKind]:
    """The file's layer_types where it gives them, else the family's rule for layer i."""
    return layer_kinds(c, n) or [rule(i) for i in range(n)]


# --- the families -------------------------------------------------------------------------------------------

def llama(c: Fields) -> dict:
    """LlamaForCausalLM: full attention on every layer."""
    spec = base(c)
    kinds = by_rule(c, spec["num_layers"], lambda i: FULL)
    return {**spec, **layers(c, kinds, c.count_or_none("sliding_window")), "ffn_size": c.count("intermediate_size")}


def mistral(c: Fields) -> dict:
    """MistralForCausalLM: sliding_window on every layer (4096 when absent; null: none); no attention biases
    whatever the file says (MistralAttention's projections have none)."""
    spec = {**base(c), "attention_bias": False}
    window = c.count_or_none("sliding_window")
    kinds = by_rule(c, spec["num_layers"], lambda i: SLIDING if window else FULL)
    return {**spec, **layers(c, kinds, window), "ffn_size": c.count("intermediate_size")}


def mixtral(c: Fields) -> dict:
    """MixtralForCausalLM: Mistral's attention (no window when sliding_window is absent), every layer a MoE."""
    spec = mistral(c)
    n = spec["num_layers"]
    return {**spec, **moe(c, n, range(n), "num_local_experts", experts=c.count("num_local_experts"),
                          top_k=c.count("num_experts_per_tok"), expert_ffn=spec["ffn_size"],
                          dense_ffn=spec["ffn_size"])}


def qwen_window(c: Fields) -> Optional[int]:
    """sliding_window, counted only when use_sliding_window is true (Qwen2Config, Qwen3Config, Qwen3MoeConfig)."""
    return c.count_or_none("sliding_window") if c.flag("use_sliding_window", False) else None


def qwen_stack(c: Fields, n: int, rule: Callable[[int, Optional[int]], bool]) -> dict:
    """Qwen's layers: layer_types, else sliding where rule(i, window) holds; sliding layers need the window on."""
    window = qwen_window(c)
    kinds = by_rule(c, n, lambda i: SLIDING if window is not None and rule(i, window) else FULL)
    if SLIDING in kinds and window is None and not c.flag("use_sliding_window", False):
        raise c.error("use_sliding_window", False, "layer_types lists sliding_attention layers, but the window is off")
    return layers(c, kinds, window)


def beyond_window_layers(c: Fields) -> Callable[[int, Optional[int]], bool]:
    """Qwen2 / Qwen3: sliding on layers i >= max_window_layers."""
    first = c.count("max_window_layers", lo=0)
    return lambda i, window: i >= first


def qwen2(c: Fields) -> dict:
    """Qwen2ForCausalLM (Qwen2, Qwen2.5): q, k and v always carry biases (Qwen2Attention)."""
    spec = {**base(c), "attention_bias": True}
    return {**spec, **qwen_stack(c, spec["num_layers"], beyond_window_layers(c)),
            "ffn_size": c.count("intermediate_size")}


def qwen3(c: Fields) -> dict:
    """Qwen3ForCausalLM: Qwen2's rules with attention_bias from the file (q/k norms left out of the count)."""
    spec = base(c)
    return {**spec, **qwen_stack(c, spec["num_layers"], beyond_window_layers(c)),
            "ffn_size": c.count("intermediate_size")}


def qwen_moe(c: Fields, spec: dict, shared: bool) -> dict:
    """Qwen MoE MLPs: experts on sparse-step layers, dense intermediate_size elsewhere, one shared expert if any."""
    n = spec["num_layers"]
    shared_ffn = c.count("shared_expert_intermediate_size") if shared else None
    return moe(c, n, sparse_step_layers(c, n), "mlp_only_layers", experts=c.count("num_experts"),
               top_k=c.count("num_experts_per_tok"), expert_ffn=c.count("moe_intermediate_size"),
               dense_ffn=c.count("intermediate_size"), shared=1 if shared else 0, shared_ffn=shared_ffn)


def qwen2_moe(c: Fields) -> dict:
    """Qwen2MoeForCausalLM: q/k/v biases as qkv_bias says; a shared expert gated per token."""
    spec = {**base(c), "attention_bias": c.flag("qkv_bias", True)}
    first = c.count("max_window_layers", lo=0)
    stacked = qwen_stack(c, spec["num_layers"], lambda i, window: (i + 1) % 2 != 0 and i < first)
    return {**spec, **stacked, **qwen_moe(c, spec, shared=True)}


def qwen3_moe(c: Fields) -> dict:
    """Qwen3MoeForCausalLM: Qwen3's attention, routed experts only."""
    spec = base(c)
    return {**spec, **qwen_stack(c, spec["num_layers"], beyond_window_layers(c)), **qwen_moe(c, spec, shared=False)}


def qwen3_next(c: Fields) -> dict:
    """Qwen3NextForCausalLM: Gated DeltaNet layers and gated full attention every full_attention_interval-th layer."""
    spec = base(c)
    interval = c.count("full_attention_interval", 4)
    if interval > spec["num_layers"]:
        raise c.error("full_attention_interval", interval, f"exceeds num_hidden_layers ({spec['num_layers']}): no "
                                                           "layer would have full attention")
    kinds = by_rule(c, spec["num_layers"], lambda i: LINEAR if (i + 1) % interval else FULL)
    return {**spec, **layers(c, kinds, allowed=(FULL, LINEAR)), **qwen_moe(c, spec, shared=True)}


def gemma2(c: Fields) -> dict:
    """Gemma2ForCausalLM: sliding and full layers alternate, layer 0 sliding."""
    spec = base(c)
    kinds = by_rule(c, spec["num_layers"], lambda i: SLIDING if (i + 1) % 2 else FULL)
    return {**spec, **layers(c, kinds, c.count_or_none("sliding_window")), "ffn_size": c.count("intermediate_size")}


def gemma3(c: Fields) -> dict:
    """Gemma 3's text model: layer i global when (i + 1) % sliding_window_pattern == 0."""
    spec = base(c)
    pattern = c.count("sliding_window_pattern")
    kinds = by_rule(c, spec["num_layers"], lambda i: SLIDING if (i + 1) % pattern else FULL)
    return {**spec, **layers(c, kinds, c.count_or_none("sliding_window")), "ffn_size": c.count("intermediate_size")}


def gpt_oss(c: Fields) -> dict:
    """GptOssForCausalLM: banded (sliding) and full layers alternating, sinks on both, every layer a MoE."""
    spec = base(c)
    n = spec["num_layers"]
    top_k = c.count("num_experts_per_tok")
    legacy = c.count_or_none("experts_per_token")
    if legacy is not None and legacy != top_k:
        raise c.error("experts_per_token", legacy, f"contradicts num_experts_per_tok ({top_k})")
    kinds = by_rule(c, n, lambda i: SLIDING if (i + 1) % 2 else FULL)
    ffn = c.count("intermediate_size")
    return {**spec, **layers(c, kinds, c.count_or_none("sliding_window"), sinks=True, allowed=(FULL, SLIDING)),
            **moe(c, n, range(n), "num_local_experts", experts=c.count("num_local_experts"), top_k=top_k,
                  expert_ffn=ffn, dense_ffn=ffn)}


def deepseek(c: Fields) -> dict:
    """DeepseekV3ForCausalLM (and V2, Kimi K2): MLA on every layer; MoE from first_k_dense_replace on.

    head_dim is the un-absorbed q.k width qk_nope_head_dim + qk_rope_head_dim (the file's head_dim, where
    transformers wrote one, is the rope width and is not read); prefill is multi-head, so the KV heads are
    the query heads. The multi-token-prediction layers (num_nextn_predict_layers) are not modelled.
    """
    heads = c.count("num_attention_heads")
    kv = c.count("num_key_value_heads", heads)
    if kv != heads:
        raise c.error("num_key_value_heads", kv, f"MLA's un-absorbed attention is multi-head: must equal "
                                                 f"num_attention_heads ({heads})")
    nope, rope = c.count("qk_nope_head_dim"), c.count("qk_rope_head_dim")
    mla = LayerType(LayerKind.mla, kv_lora_rank=c.count("kv_lora_rank"), qk_rope_head_dim=rope,
                    qk_nope_head_dim=nope, q_lora_rank=c.count_or_none("q_lora_rank"))
    spec = {**base(_with(c, head_dim=nope + rope)), "v_head_dim": c.count("v_head_dim")}
    n = spec["num_layers"]
    if c.count("moe_layer_freq", 1) != 1:
        raise c.error("moe_layer_freq", c.raw("moe_layer_freq"), "rooflab reads MoE on every layer past the dense "
                                                                  "ones (moe_layer_freq 1) only")
    experts = c.count_or_none("n_routed_experts")
    dense = c.count("intermediate_size")
    if experts is None:
        mlp = {"ffn_size": dense}
    else:
        first = c.count("first_k_dense_replace", 0, lo=0)
        if first > n:
            raise c.error("first_k_dense_replace", first, f"exceeds num_hidden_layers ({n})")
        mlp = moe(c, n, range(min(first, n), n), "first_k_dense_replace", experts=experts,
                  top_k=c.count("num_experts_per_tok"), expert_ffn=c.count("moe_intermediate_size"),
                  dense_ffn=dense, shared=c.count("n_shared_experts", 0, lo=0))
        groups, kept = c.count("n_group", 1), c.count("topk_group", 1)
        if experts % groups:
            raise c.error("n_group", groups, f"must divide n_routed_experts ({experts})")
        if kept > groups:
            raise c.error("topk_group", kept, f"cannot exceed n_group ({groups})")
        mlp.update(expert_groups=groups, topk_groups=kept)
    return {**spec, **stack([LayerKind.mla] * n, {LayerKind.mla: mla}), **mlp}


def _with(c: Fields, **values: Any) -> Fields:
    """The same fields with some values set (read as if the file held them)."""
    return Fields({**c.data, **values}, c.where, c.prefix, c.outer, c.defaults)


def llama4(c: Fields) -> dict:
    """Llama 4's text model: chunked attention on RoPE layers, global NoPE layers, experts plus a shared expert."""
    spec = base(c)
    n = spec["num_layers"]
    interval = c.count("no_rope_layer_interval", 4)
    rope = c.indices("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(n)]
    if len(rope) != n:
        raise c.error("no_rope_layers", f"{len(rope)} entries", f"must list one flag per layer ({n} layers)")
    kinds = by_rule(c, n, lambda i: CHUNKED if rope[i] else FULL)
    step = c.count("interleave_moe_layer_step", 1)
    moe_layers = c.indices("moe_layers") or list(range(step - 1, n, step))
    ffn = c.count("intermediate_size")
    return {**spec, **layers(c, kinds, c.count_or_none("sliding_window")),
            **moe(c, n, moe_layers, "moe_layers", experts=c.count("num_local_experts"),
                  top_k=c.count("num_experts_per_tok"), expert_ffn=ffn, dense_ffn=c.count("intermediate_size_mlp"),
                  shared=1, shared_ffn=ffn)}


__all__ = ["EXCLUDED", "FULL", "LINEAR", "SLIDING", "CHUNKED", "base", "by_rule", "deepseek", "gemma2", "gemma3",
           "gpt_oss", "layers", "llama", "llama4", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
           "qwen3_next"]

"""One writer per architecture: a ModelSpec as that architecture's config.json, or a SpecError naming the field
the architecture has no room for (a second window, per-type heads, an MoE layout it cannot express).

Each writer writes the family's own rule fields where the stack follows the rule (max_window_layers,
sliding_window_pattern, full_attention_interval, no_rope_layers) and layer_types where it does not.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..errors import SpecError
from ..specs import LayerType, ModelSpec
from ..vocab import LayerKind
from .common import HF_NAMES, MAX_PERIOD, TORCH_DTYPES, quantization_config

FULL, SLIDING, CHUNKED, LINEAR, MLA = (LayerKind.full, LayerKind.sliding, LayerKind.chunked, LayerKind.linear,
                                       LayerKind.mla)
_TORCH_NAMES = {dtype: name for name, dtype in TORCH_DTYPES.items()}


def _refuse(m: ModelSpec, field: str, value: Any, problem: str) -> SpecError:
    return SpecError(m.name, field, value, problem)


# --- reading the spec's stack -------------------------------------------------------------------------------

def kinds(m: ModelSpec) -> list[LayerKind]:
    """Each layer's kind, layer 0 first."""
    return [m.layer_types[name].kind for name in m.layer_type_names]


def one_type(m: ModelSpec, kind: LayerKind) -> Optional[LayerType]:
    """The spec's one layer type of `kind` in use (a config.json has one window, one chunk); None if unused."""
    used = {m.layer_types[name] for name in m.layer_counts if m.layer_types[name].kind is kind}
    if len(used) > 1:
        raise _refuse(m, "layer_types", kind.value, f"a config.json has one {kind.value} layer type; this spec has "
                                                    f"{len(used)}")
    t = next(iter(used), None)
    if t is not None and (t.num_qo_heads or t.num_kv_heads or t.head_dim):
        raise _refuse(m, "layer_types", kind.value, "heads of a layer type's own have no config.json field")
    if t is not None and t.state_dtype is not None:
        raise _refuse(m, "layer_types", kind.value, "a linear layer's state_dtype has no config.json field")
    return t


def sinks(m: ModelSpec) -> bool:
    """Whether the layers have sinks: all of them or none (gpt-oss has them on every layer)."""
    used = {m.layer_types[name].sinks for name in m.layer_counts}
    if len(used) > 1:
        raise _refuse(m, "layer_types", "sinks", "sinks on some layer types only have no config.json field")
    return used.pop()


def rule_period(ks: list[LayerKind], local: LayerKind) -> Optional[int]:
    """p where layer i is global exactly when (i + 1) % p == 0 and `local` otherwise (Gemma 3's
    sliding_window_pattern, Qwen3-Next's full_attention_interval); None where no p up to MAX_PERIOD (or one
    past the last layer: every layer local) gives the stack."""
    for p in (*range(1, min(len(ks), MAX_PERIOD) + 1), len(ks) + 1):
        if all(k is (FULL if (i + 1) % p == 0 else local) for i, k in enumerate(ks)):
            return p
    return None


def layer_types_list(ks: list[LayerKind]) -> list[str]:
    return [HF_NAMES[k] for k in ks]


# --- the fields every architecture writes -------------------------------------------------------------------

def base(m: ModelSpec, arch: str, model_type: str, allowed: tuple[LayerKind, ...]) -> dict:
    """architectures, sizes, heads, vocabulary, context, tying, biases, dtype and quantization."""
    for kind in dict.fromkeys(kinds(m)):
        if kind not in allowed:
            raise _refuse(m, "layer_types", kind.value, f"{arch} has no {kind.value} layers")
    if m.vision_parameters:
        raise _refuse(m, "vision_parameters", m.vision_parameters, "a vision tower has no field in a text model's "
                                                                   "config.json (the exporter writes text models)")
    if m.v_head_dim is not None and MLA not in allowed and m.v_head_dim != m.head_dim:
        raise _refuse(m, "v_head_dim", m.v_head_dim, f"{arch} has no separate value width")
    out = {"architectures": [arch], "model_type": model_type, "hidden_size": m.hidden_size,
           "num_hidden_layers": m.num_layers, "num_attention_heads": m.num_qo_heads,
           "num_key_value_heads": m.num_kv_heads, "head_dim": m.head_dim, "vocab_size": m.vocab_size,
           "max_position_embeddings": m.max_context_len, "tie_word_embeddings": m.tie_word_embeddings,
           "attention_bias": m.attention_bias}
    if m.weight_dtype is not None:
        if m.weight_dtype not in _TORCH_NAMES:
            raise _refuse(m, "weight_dtype", m.weight_dtype.value, "has no torch_dtype name")
        out["torch_dtype"] = _TORCH_NAMES[m.weight_dtype]
    quant = quantization_config(m)
    if quant is not None:
        out["quantization_config"] = quant
    return out


def moe_fields(m: ModelSpec, *, first: bool = True, step: bool = True, shared: int | None = 0) -> None:
    """Refuse an MoE layout the architecture has no field for (a dense prefix, a step, shared experts)."""
    if not first and m.first_dense_layers:
        raise _refuse(m, "first_dense_layers", m.first_dense_layers, "this architecture has no dense layers first")
    if not step and m.moe_layer_step != 1:
        raise _refuse(m, "moe_layer_step", m.moe_layer_step, "this architecture puts experts on every layer")
    if shared is not None and m.num_shared_experts != shared:
        raise _refuse(m, "num_shared_experts", m.num_shared_experts, f"this architecture has {shared}")


def dense_size(m: ModelSpec) -> int:
    return m.dense_ffn_size or m.ffn_size


def window(m: ModelSpec) -> Optional[int]:
    t = one_type(m, SLIDING)
    return t.window if t else None


def qwen_window_fields(m: ModelSpec) -> dict:
    """use_sliding_window / sliding_window / max_window_layers, or layer_types where the sliding layers are not
    the ones from max_window_layers on."""
    ks = kinds(m)
    w = window(m)
    if w is None:
        return {"use_sliding_window": False, "sliding_window": None, "max_window_layers": m.num_layers}
    first = ks.index(SLIDING)
    out = {"use_sliding_window": True, "sliding_window": w, "max_window_layers": first}
    if any(k is not (SLIDING if i >= first else FULL) for i, k in enumerate(ks)):
        out["layer_types"] = layer_types_list(ks)
    return out


def qwen_moe_fields(m: ModelSpec) -> dict:
    return {"num_experts": m.num_experts, "num_experts_per_tok": m.num_experts_per_token,
            "moe_intermediate_size": m.ffn_size, "intermediate_size": dense_size(m),
            "decoder_sparse_step": m.moe_layer_step, "mlp_only_layers": list(range(m.first_dense_layers))}


# --- the writers --------------------------------------------------------------------------------------------

def check(m: ModelSpec, arch: str, *, moe: Optional[bool], sinks_: bool = False, bias: Optional[bool] = None) -> None:
    """Refuse what `arch` lacks: experts (moe False) or dense MLPs (moe True), sinks (or their absence), and
    attention biases where the architecture fixes them."""
    if moe is not None and m.is_moe != moe:
        raise _refuse(m, "num_experts", m.num_experts, f"{arch} {'is a mixture of experts' if moe else 'is dense'}")
    if sinks(m) != sinks_:
        raise _refuse(m, "layer_types", "sinks", f"{arch} has sinks on {'every' if sinks_ else 'no'} layer")
    if bias is not None and m.attention_bias != bias:
        raise _refuse(m, "attention_bias", m.attention_bias, f"{arch} always has {'' if bias else 'no '}q/k/v biases")


def llama(m: ModelSpec) -> dict:
    check(m, "LlamaForCausalLM", moe=False)
    return {**base(m, "LlamaForCausalLM", "llama", (FULL,)), "intermediate_size": m.ffn_size}


def mistral(m: ModelSpec, arch: str = "MistralForCausalLM", model_type: str = "mistral") -> dict:
    check(m, arch, moe=arch == "MixtralForCausalLM", bias=False)
    out = base(m, arch, model_type, (FULL, SLIDING))
    del out["attention_bias"]
    if len(set(kinds(m))) > 1:
        raise _refuse(m, "layer_pattern", list(m.layer_pattern), f"{arch} windows every layer or none")
    return {**out, "sliding_window": window(m), "intermediate_size": m.ffn_size}


def mixtral(m: ModelSpec) -> dict:
    moe_fields(m, first=False, step=False, shared=0)
    return {**mistral(m, "MixtralForCausalLM", "mixtral"), "num_local_experts": m.num_experts,
            "num_experts_per_tok": m.num_experts_per_token}


def qwen2(m: ModelSpec) -> dict:
    check(m, "Qwen2ForCausalLM", moe=False, bias=True)
    return {**base(m, "Qwen2ForCausalLM", "qwen2", (FULL, SLIDING)), **qwen_window_fields(m),
            "intermediate_size": m.ffn_size}


def qwen3(m: ModelSpec) -> dict:
    check(m, "Qwen3ForCausalLM", moe=False)
    return {**base(m, "Qwen3ForCausalLM", "qwen3", (FULL, SLIDING)), **qwen_window_fields(m),
            "intermediate_size": m.ffn_size}


def qwen3_moe(m: ModelSpec) -> dict:
    check(m, "Qwen3MoeForCausalLM", moe=True)
    moe_fields(m, shared=0)
    return {**base(m, "Qwen3MoeForCausalLM", "qwen3_moe", (FULL, SLIDING)), **qwen_window_fields(m),
            **qwen_moe_fields(m)}


def qwen2_moe(m: ModelSpec) -> dict:
    check(m, "Qwen2MoeForCausalLM", moe=True)
    moe_fields(m, shared=1)
    out = {**base(m, "Qwen2MoeForCausalLM", "qwen2_moe", (FULL, SLIDING)), "qkv_bias": m.attention_bias}
    w = window(m)
    stack = {"use_sliding_window": w is not None, "sliding_window": w, "max_window_layers": m.num_layers}
    if w is not None:
        stack["layer_types"] = layer_types_list(kinds(m))
    return {**out, **stack, **qwen_moe_fields(m),
            "shared_expert_intermediate_size": m.shared_expert_ffn_size or m.ffn_size}


def qwen3_next(m: ModelSpec) -> dict:
    check(m, "Qwen3NextForCausalLM", moe=True)
    moe_fields(m, shared=1)
    out = base(m, "Qwen3NextForCausalLM", "qwen3_next", (FULL, LINEAR))
    ks = kinds(m)
    interval = rule_period(ks, LINEAR)
    stack = {"full_attention_interval": interval} if interval else {"layer_types": layer_types_list(ks)}
    t = one_type(m, LINEAR)
    if t is not None and t.linear_mixer.is_mamba:
        raise _refuse(m, "layer_types", t.linear_mixer.value, "Qwen3NextForCausalLM's linear layers are Gated "
                                                              "DeltaNet, not Mamba")
    if t is not None:
        stack.update(linear_num_key_heads=t.linear_num_key_heads, linear_num_value_heads=t.linear_num_value_heads,
                     linear_key_head_dim=t.linear_key_head_dim, linear_value_head_dim=t.linear_value_head_dim,
                     linear_conv_kernel_dim=t.linear_conv_kernel)
    return {**out, **stack, **qwen_moe_fields(m),
            "shared_expert_intermediate_size": m.shared_expert_ffn_size or m.ffn_size}


def gemma2(m: ModelSpec) -> dict:
    check(m, "Gemma2ForCausalLM", moe=False)
    out = {**base(m, "Gemma2ForCausalLM", "gemma2", (FULL, SLIDING)), "intermediate_size": m.ffn_size}
    ks = kinds(m)
    if window(m) is not None:
        out["sliding_window"] = window(m)
    if ks != [SLIDING if (i + 1) % 2 else FULL for i in range(len(ks))]:
        out["layer_types"] = layer_types_list(ks)
    return out


def gemma3(m: ModelSpec) -> dict:
    check(m, "Gemma3ForConditionalGeneration", moe=False)
    text = {**base(m, "Gemma3ForConditionalGeneration", "gemma3_text", (FULL, SLIDING)),
            "intermediate_size": m.ffn_size}
    ks = kinds(m)
    if window(m) is not None:
        text["sliding_window"] = window(m)
    pattern = rule_period(ks, SLIDING)
    text.update({"sliding_window_pattern": pattern} if pattern else {"layer_types": layer_types_list(ks)})
    return nest(text, "gemma3")


def nest(text: dict, model_type: str) -> dict:
    """A multimodal wrapper's config: architectures, dtype and quantization outside, the text model inside."""
    outer = {key: text.pop(key) for key in ("architectures", "torch_dtype", "quantization_config") if key in text}
    return {**outer, "model_type": model_type, "text_config": text}


def gpt_oss(m: ModelSpec) -> dict:
    check(m, "GptOssForCausalLM", moe=True, sinks_=True)
    moe_fields(m, first=False, step=False, shared=0)
    return {**base(m, "GptOssForCausalLM", "gpt_oss", (FULL, SLIDING)), "sliding_window": window(m),
            "layer_types": layer_types_list(kinds(m)), "num_local_experts": m.num_experts,
            "num_experts_per_tok": m.num_experts_per_token, "intermediate_size": m.ffn_size}


def deepseek(m: ModelSpec, arch: str = "DeepseekV3ForCausalLM", model_type: str = "deepseek_v3") -> dict:
    t = one_type(m, MLA)
    if t is None:
        raise _refuse(m, "layer_types", None, f"{arch} has MLA layers")
    if (t.index_head_dim is not None) != (arch == "DeepseekV32ForCausalLM"):
        raise _refuse(m, "layer_types", "mla", f"{arch} has {'a' if t.index_head_dim is None else 'no'} lightning "
                                               "indexer")
    check(m, arch, moe=None)
    moe_fields(m, step=False, shared=None)
    out = base(m, arch, model_type, (MLA,))
    del out["head_dim"]
    out.update(kv_lora_rank=t.kv_lora_rank, q_lora_rank=t.q_lora_rank, qk_nope_head_dim=t.qk_nope_head_dim,
               qk_rope_head_dim=t.qk_rope_head_dim, v_head_dim=m.heads.value_dim, intermediate_size=dense_size(m))
    if arch == "DeepseekV32ForCausalLM":
        out.update(index_head_dim=t.index_head_dim, index_n_heads=t.index_n_heads)
    if not m.is_moe:
        return {**out, "n_routed_experts": None}
    if m.shared_expert_ffn_size is not None:
        raise _refuse(m, "shared_expert_ffn_size", m.shared_expert_ffn_size, "DeepSeek's shared experts have the "
                                                                               "routed experts' size")
    return {**out, "n_routed_experts": m.num_experts, "num_experts_per_tok": m.num_experts_per_token,
            "n_shared_experts": m.num_shared_experts, "moe_intermediate_size": m.ffn_size,
            "first_k_dense_replace": m.first_dense_layers, "moe_layer_freq": 1, "n_group": m.expert_groups,
            "topk_group": m.topk_groups}


def deepseek_v32(m: ModelSpec) -> dict:
    """DeepSeek-V3's fields and the lightning indexer's (index_head_dim, index_n_heads)."""
    return deepseek(m, "DeepseekV32ForCausalLM", "deepseek_v32")


def llama4(m: ModelSpec) -> dict:
    check(m, "Llama4ForConditionalGeneration", moe=True)
    moe_fields(m, shared=1)
    if m.shared_expert_ffn_size is not None:
        raise _refuse(m, "shared_expert_ffn_size", m.shared_expert_ffn_size, "Llama 4's shared expert has the "
                                                                               "routed experts' size")
    text = base(m, "Llama4ForConditionalGeneration", "llama4_text", (FULL, CHUNKED))
    chunked = one_type(m, CHUNKED)
    text.update(no_rope_layers=[int(k is CHUNKED) for k in kinds(m)],
                attention_chunk_size=chunked.chunk if chunked else None,
                num_local_experts=m.num_experts, num_experts_per_tok=m.num_experts_per_token,
                intermediate_size=m.ffn_size, intermediate_size_mlp=dense_size(m),
                interleave_moe_layer_step=m.moe_layer_step,
                moe_layers=[i for i in range(m.num_layers) if m.is_moe_layer(i)])
    return nest(text, "llama4")


WRITERS: dict[str, Callable[[ModelSpec], dict]] = {
    "LlamaForCausalLM": llama, "MistralForCausalLM": mistral, "MixtralForCausalLM": mixtral,
    "Qwen2ForCausalLM": qwen2, "Qwen3ForCausalLM": qwen3, "Qwen2MoeForCausalLM": qwen2_moe,
    "Qwen3MoeForCausalLM": qwen3_moe, "Qwen3NextForCausalLM": qwen3_next, "Gemma2ForCausalLM": gemma2,
    "Gemma3ForConditionalGeneration": gemma3, "GptOssForCausalLM": gpt_oss, "DeepseekV3ForCausalLM": deepseek,
    "DeepseekV32ForCausalLM": deepseek_v32, "Llama4ForConditionalGeneration": llama4,
}


__all__ = ["WRITERS", "kinds"]

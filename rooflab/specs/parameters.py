"""Parameter counts by component, from a model's shapes: what the weights hold and what a token reads.

Per layer, with hidden size H (biases where the spec says, small terms named below):

    softmax attention  q H h d + k H h_kv d + v H h_kv d_v + o h d_v H      (+ h sink logits)
    mla                q: H r_q + r_q + r_q h (d_nope + d_R), or H h (d_nope + d_R) without a q rank;
                       kv_a: H (d_c + d_R) + d_c; kv_b: d_c h (d_nope + d_v); o: h d_v H
    linear (GDN)       in_proj H (2 h_k d_k + 2 h_v d_v) + H 2 h_v; conv (2 h_k d_k + h_v d_v) K;
                       2 h_v (decay and bias) + d_v (norm); out h_v d_v H
    dense MLP          3 H F                 (gate, up, down)
    MoE MLP            E 3 H F_e + S 3 H F_s + H E (router)
    norms              2 H per layer, H at the end; embeddings V H, lm_head V H unless tied

The small per-layer terms a checkpoint may add (q/k norms, output gates, expert biases) are below
0.2% of any bundled model and are left out; tests hold every bundled model within 1% of its
published count. Sources: each architecture's Hugging Face modeling code (the projections' shapes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..vocab import LayerKind
from .heads import AttentionHeads
from .layers import LayerType

if TYPE_CHECKING:
    from .model import ModelSpec


@dataclass(frozen=True)
class ParameterCount:
    """Parameters by component; `attention` sums every layer type (`attention_by_type` splits it)."""

    embeddings: int
    lm_head: int
    attention: int
    dense_mlp: int
    experts: int
    shared_experts: int
    router: int
    norms: int
    attention_by_type: tuple[tuple[str, int], ...] = ()

    @property
    def total(self) -> int:
        return sum(self.by_component().values())

    def by_component(self) -> dict[str, int]:
        """{component: parameters}, the components weight formats are given for (specs.model.QUANTIZABLE)."""
        return {"embeddings": self.embeddings, "lm_head": self.lm_head, "attention": self.attention,
                "dense_mlp": self.dense_mlp, "experts": self.experts, "shared_experts": self.shared_experts,
                "router": self.router, "norms": self.norms}


def attention_parameters(t: LayerType, heads: AttentionHeads, hidden: int, bias: bool) -> int:
    """One layer's attention parameters for layer type `t` with the model's `heads` (see the module docstring)."""
    h = hidden
    if t.kind is LayerKind.mla:
        qk = t.qk_nope_head_dim + t.qk_rope_head_dim
        hq, dv = heads.num_qo_heads, heads.value_dim
        q = (h * t.q_lora_rank + t.q_lora_rank + t.q_lora_rank * hq * qk) if t.q_lora_rank else h * hq * qk
        kv_a = h * (t.kv_lora_rank + t.qk_rope_head_dim) + t.kv_lora_rank
        kv_b = t.kv_lora_rank * hq * (t.qk_nope_head_dim + dv)
        return q + kv_a + kv_b + hq * dv * h
    if t.kind is LayerKind.linear:
        key_dim = t.linear_num_key_heads * t.linear_key_head_dim
        value_dim = t.linear_num_value_heads * t.linear_value_head_dim
        in_proj = h * (2 * key_dim + 2 * value_dim) + h * 2 * t.linear_num_value_heads
        conv = (2 * key_dim + value_dim) * t.linear_conv_kernel
        return in_proj + conv + 2 * t.linear_num_value_heads + t.linear_value_head_dim + value_dim * h
    own = t.heads(heads)
    q_out, kv_out = own.num_qo_heads * own.head_dim, own.num_kv_heads * own.head_dim
    v_out, o_in = own.num_kv_heads * own.value_dim, own.num_qo_heads * own.value_dim
    weights = h * q_out + h * kv_out + h * v_out + o_in * h
    biases = (q_out + kv_out + v_out) if bias else 0
    return weights + biases + (own.num_qo_heads if t.sinks else 0)


def count_parameters(model: "ModelSpec") -> ParameterCount:
    """The model's parameters by component, every expert included."""
    h = model.hidden_size
    by_type = []
    for name, layer, layers in model.layer_walk():
        per_layer = attention_parameters(layer, model.heads, h, model.attention_bias)
        by_type.append((name, layers * per_layer))
    dense_ffn = model.dense_ffn_size or model.ffn_size
    moe_layers = model.num_moe_layers
    shared_ffn = model.shared_expert_ffn_size or model.ffn_size
    return ParameterCount(
        embeddings=model.vocab_size * h,
        lm_head=0 if model.tie_word_embeddings else model.vocab_size * h,
        attention=sum(n for _, n in by_type),
        dense_mlp=model.num_dense_layers * 3 * h * dense_ffn,
        experts=moe_layers * model.num_experts * model.expert_parameters if model.is_moe else 0,
        shared_experts=moe_layers * model.num_shared_experts * 3 * h * shared_ffn,
        router=moe_layers * h * model.num_experts if model.is_moe else 0,
        norms=model.num_layers * 2 * h + h,
        attention_by_type=tuple(by_type),
    )


__all__ = ["ParameterCount", "attention_parameters", "count_parameters"]

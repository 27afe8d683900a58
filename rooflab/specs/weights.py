"""A model's weights: parameters by component, the bytes they take on each GPU, and the bytes one step reads.

The one loop over a model's components (_component_bits) prices each in its format (ModelSpec.weight_format);
ModelSpec.weight_bytes (what a GPU holds) and cost.model.weights_read (what a decode step reads) both use it. A
spec that gives a published count scales the derived components to it. The functions take a ModelSpec, which
imports this module (so it is named here in words, not imported).

Parameters per layer, with hidden size H (biases where the spec says, small terms named below):

    softmax attention  q H h d + k H h_kv d + v H h_kv d_v + o h d_v H      (+ h sink logits)
    mla                q: H r_q + r_q + r_q h (d_nope + d_R), or H h (d_nope + d_R) without a q rank;
                       kv_a: H (d_c + d_R) + d_c; kv_b: d_c h (d_nope + d_v); o: h d_v H;
                       a lightning indexer (DeepSeek-V3.2): wq_b r_q n_I d_I + wk H d_I + k_norm 2 d_I
                       + weights_proj H n_I
    linear (GDN)       in_proj H (2 h_k d_k + 2 h_v d_v) + H 2 h_v; conv (2 h_k d_k + h_v d_v) K;
                       2 h_v (decay and bias) + d_v (norm); out h_v d_v H
    linear (mamba1)    in_proj H 2 I; conv I K + I (bias); x_proj I (R + 2 N); dt_proj R I + I; A I N + D I;
                       dt, B, C norms R + 2 N; out I H   (I = d_inner, N = d_state, R = dt_rank: Jamba)
    linear (mamba2)    in_proj H (2 I + 2 G N + n_h); conv (I + 2 G N)(K + 1) (bias); dt_bias, A, D 3 n_h;
                       gated norm I; out I H   (I = n_h head_dim, G = n_groups: Bamba, Granite 4.0-H)
    dense MLP          3 H F                 (gate, up, down)
    MoE MLP            E 3 H F_e + S 3 H F_s + H E (router)
    norms              2 H per layer, H at the end; embeddings V H, lm_head V H unless tied

Held whole on every tensor-parallel rank (ParameterCount.tp_replicated; replicated_attention_parameters and
count_parameters the one place that says which), as the engines build them: replicated linear layers, not split
ones. vLLM v0.8.4 model_executor/models/deepseek_v2.py: q_a_proj and kv_a_proj_with_mqa ReplicatedLinear with the
checkpoint's quant_config, the MoE `gate` ReplicatedLinear with quant_config=None (v0.20.2: one fused_qkv_a_proj,
a MergedColumnParallelLinear with disable_tp, and the gate a GateLinear, a ReplicatedLinear); SGLang v0.4.3.post2
srt/models/deepseek_v2.py: q_a_proj and kv_a_proj_with_mqa ReplicatedLinear, the gate a whole nn.Parameter
(v0.5.3: one fused_qkv_a_proj_with_mqa ReplicatedLinear); the router gate ReplicatedLinear with quant_config=None
in vLLM v0.8.4's mixtral.py, qwen2_moe.py, qwen3_moe.py and llama4.py (its `router`), v0.20.2's gpt_oss.py (its
`router`, with an E bias not counted here) and SGLang v0.4.3.post2's mixtral.py. DeepSeek-V3.2's lightning
indexer is replicated whole by both (vLLM v0.20.2 deepseek_v2.py Indexer: wq_b ReplicatedLinear, wk and
weights_proj one MergedColumnParallelLinear with disable_tp; SGLang v0.5.3 srt/layers/attention/nsa/nsa_indexer.py:
wq_b, wk, weights_proj ReplicatedLinear):

    mla down-projections   q_a: H r_q + r_q (its norm), kv_a: H (d_c + d_R) + d_c, per MLA layer
    lightning indexer      wq_b r_q n_I d_I + wk H d_I + k_norm 2 d_I + weights_proj H n_I, per layer with one
    MoE router             H E per MoE layer (the whole router component)

Each is priced at its component's bits per parameter: the router in the checkpoint's dtype (the gate is built
without the quant config, and a fp8 checkpoint such as DeepSeek-V3 ships it in bf16), the down-projections and the
indexer at the attention component's format (their norms, 2,048 of the 15.1 million a DeepSeek-V3 layer
replicates, are bf16 in the engines; vLLM v0.20.2 loads the indexer's wk and weights_proj in bf16, H (d_I + n_I)
parameters a layer priced at fp8 here: 84 MB a GPU on V3.2). Not counted at all: DeepSeek's
e_score_correction_bias (E a MoE layer, whole on every rank).

Everything else is counted split: the up-projections (q_b, kv_b), o, every softmax and linear-attention
projection, MLPs and experts, embeddings and lm_head (VocabParallelEmbedding / ParallelLMHead). The engines hold
every RMSNorm whole too (a norm's weight is its full width on each rank in both engines' layernorm), but the
`norms` component (2 H a layer and H at the end) is counted split, so a dense model splits evenly: the bytes left
out per GPU are (2 L H + H)(1 - 1/TP) in the checkpoint's dtype, 1.65 MB on DeepSeek-V3 at TP 16 (below 0.01%).

The small per-layer terms a checkpoint may add (q/k norms, output gates, expert biases) are below
0.2% of any bundled model and are left out; tests hold every bundled model within 1% of its
published count. Sources: each architecture's Hugging Face modeling code (the projections' shapes).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterator, Mapping

from ..errors import InputError, shown
from ..units import DType, WeightFormat
from ..vocab import _Named
from .heads import AttentionHeads
from .layers import LayerType, LinearMixer


class WeightComponent(_Named):
    """A model's weight components, defined here once: ParameterCount's fields, the keys of its by_component, of
    weight_bytes' `splits` (capacity.weight_split's layouts, engines.memory's fused copies) and of a pipeline
    stage's `shares` (capacity.stages), which also takes "vision" (VISION). Members are strings, so a component's
    name looks one up in a dict keyed by members."""

    embeddings = "embeddings"
    lm_head = "lm_head"
    attention = "attention"
    dense_mlp = "dense_mlp"
    experts = "experts"
    shared_experts = "shared_experts"
    router = "router"
    norms = "norms"


#: The key of a pipeline stage's `shares` for a vision tower, counted apart from the text components.
VISION = "vision"


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
    #: (component, parameters of it every tensor-parallel rank holds whole): see the module docstring.
    tp_replicated: tuple[tuple[str, int], ...] = ()

    @property
    def total(self) -> int:
        return sum(self.by_component().values())

    def by_component(self) -> dict[str, int]:
        """{component: parameters} for every WeightComponent, the components weight formats are given for
        (specs.model.QUANTIZABLE)."""
        return {c: getattr(self, c.value) for c in WeightComponent}


def attention_parameters(t: LayerType, heads: AttentionHeads, hidden: int, bias: bool) -> int:
    """One layer's attention parameters for layer type `t` with the model's `heads` (see the module docstring)."""
    h = hidden
    if t.is_latent:
        qk = t.qk_nope_head_dim + t.qk_rope_head_dim
        hq, dv = heads.num_qo_heads, heads.value_dim
        q = t.q_lora_rank * hq * qk if t.q_lora_rank else h * hq * qk
        return replicated_attention_parameters(t, h) + q + mla_kv_b_parameters(t, heads) + hq * dv * h
    if t.linear_mixer is not None and t.linear_mixer.is_mamba:
        return _mamba_parameters(t, hidden)
    if not t.is_attention:
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


def mla_kv_b_parameters(t: LayerType, heads: AttentionHeads) -> int:
    """One MLA layer's kv_b up-projection, d_c h (d_nope + d_v) with the `heads` given (a rank's under TP); 0 for a
    layer that is not MLA."""
    if not t.is_latent:
        return 0
    return t.kv_lora_rank * heads.num_qo_heads * (t.qk_nope_head_dim + heads.value_dim)


def replicated_attention_parameters(t: LayerType, hidden: int) -> int:
    """One layer's attention parameters every tensor-parallel rank holds whole (module docstring): an MLA layer's
    down-projections with their norms and its lightning indexer; 0 for any other layer."""
    return mla_down_parameters(t, hidden) + indexer_parameters(t, hidden)


def mla_down_parameters(t: LayerType, hidden: int) -> int:
    """One MLA layer's down-projections with their norms, which every tensor-parallel rank holds whole:
    q_a H r_q + r_q (none without a q rank) and kv_a H (d_c + d_R) + d_c; 0 for a layer that is not MLA."""
    if not t.is_latent:
        return 0
    q_a = hidden * t.q_lora_rank + t.q_lora_rank if t.q_lora_rank else 0
    return q_a + hidden * (t.kv_lora_rank + t.qk_rope_head_dim) + t.kv_lora_rank


def indexer_parameters(t: LayerType, hidden: int) -> int:
    """One MLA layer's lightning indexer (DeepSeek-V3.2), which every tensor-parallel rank holds whole:
    wq_b q_in n_I d_I (q_in the q rank, H without one) + wk H d_I + k_norm 2 d_I + weights_proj H n_I; 0 without one."""
    if not (t.is_latent and t.index_head_dim):
        return 0
    q_in = t.q_lora_rank or hidden
    return (q_in * t.index_n_heads * t.index_head_dim + hidden * t.index_head_dim + 2 * t.index_head_dim
            + hidden * t.index_n_heads)


def _mamba_parameters(t: LayerType, hidden: int) -> int:
    """One Mamba layer's parameters (module docstring; transformers' JambaMambaMixer, BambaMixer and
    GraniteMoeHybridMambaLayer, release 5.24.0; no in/out projection biases, as every published checkpoint)."""
    h, inner, n, k = hidden, t.ssm_width, t.ssm_state, t.linear_conv_kernel
    if t.linear_mixer is LinearMixer.mamba1:
        r = t.ssm_dt_rank
        in_proj, conv = h * 2 * inner, inner * k + inner
        x_proj, dt_proj = inner * (r + 2 * n), r * inner + inner
        return in_proj + conv + x_proj + dt_proj + inner * n + inner + (r + 2 * n) + inner * h
    heads, conv_dim = t.ssm_heads, inner + 2 * t.ssm_groups * n
    in_proj = h * (inner + conv_dim + heads)
    return in_proj + conv_dim * (k + 1) + 3 * heads + inner + inner * h


def count_parameters(model) -> ParameterCount:
    """A ModelSpec's parameters by component, every expert included."""
    h = model.hidden_size
    by_type = []
    for name, layer, layers in model.layer_walk():
        per_layer = attention_parameters(layer, model.heads, h, model.attention_bias)
        by_type.append((name, layers * per_layer))
    dense_ffn = model.dense_ffn_size or model.ffn_size
    moe_layers = model.num_moe_layers
    shared_ffn = model.shared_expert_ffn_size or model.ffn_size
    router = moe_layers * h * model.num_experts if model.is_moe else 0
    down = sum(layers * replicated_attention_parameters(layer, h) for _, layer, layers in model.layer_walk())
    replicated = tuple((c, n) for c, n in ((WeightComponent.attention, down), (WeightComponent.router, router)) if n)
    return ParameterCount(
        embeddings=model.vocab_size * h,
        lm_head=0 if model.tie_word_embeddings else model.vocab_size * h,
        attention=sum(n for _, n in by_type),
        dense_mlp=model.num_dense_layers * 3 * h * dense_ffn,
        experts=moe_layers * model.num_experts * model.expert_parameters if model.is_moe else 0,
        shared_experts=moe_layers * model.num_shared_experts * 3 * h * shared_ffn,
        router=router,
        norms=model.num_layers * 2 * h + h,
        attention_by_type=tuple(by_type),
        tp_replicated=replicated,
    )


def _component_bits(model, dtype: DType | WeightFormat | None) -> Iterator[tuple[str, Fraction]]:
    """(component, bits of its parameters) for each component, each in its format: `dtype` overrides the
    quantizable components' formats (ModelSpec.weight_format); without an override, the parameters a checkpoint's
    exclusion list keeps (unquantized_parameters) stay in the checkpoint's dtype."""
    own_bits = Fraction(WeightFormat.of(model.weight_dtype or DType.bf16).bits_per_weight)
    for component, n in model.parameters.by_component().items():
        fmt = model.weight_format(component, dtype)
        kept = model.unquantized_parameters.get(component, 0) if dtype is None and fmt.is_quantized else 0
        yield component, Fraction(n - kept) * Fraction(fmt.bits_per_weight) + Fraction(kept) * own_bits


def _published_scale(model) -> Fraction:
    """Published text parameters over derived ones: 1 where the spec gives no published count."""
    if model.num_parameters is None:
        return Fraction(1)
    return Fraction(model.total_parameters - model.vision_parameters, model.parameters.total)


def weight_bytes(model, dtype: DType | WeightFormat | None = None, tensor_parallel: int = 1,
                 expert_parallel: int = 1, splits: Mapping[str, int] | None = None,
                 shares: Mapping[str, Fraction] | None = None, expert_layout: Fraction = Fraction(1)) -> int:
    """Bytes of every parameter (all experts) per GPU, each component in its format (_component_bits).

    Split `tensor_parallel` ways but for what the engines hold whole on every rank (ParameterCount.tp_replicated:
    MLA down-projections and indexer, the MoE router; each priced at its component's bits per parameter), the
    routed experts also `expert_parallel` ways. `splits` ({component: ways}) splits a component another number of
    ways than TP (SGLang's data-parallel attention: capacity.weight_split.dp_attention_splits); its replicated
    parameters stay whole. Per GPU, with b_c a component's bits, r_c its replicated parameters over n_c and w_c
    its ways (TP unless `splits` says):

        bytes = ceil(((sum_c b_c (1 - r_c / n_c) / w_c + sum_c b_c r_c / n_c) * published_scale + vision) / 8

    (a component's bits averaged over its parameters where an exclusion list keeps some unquantized). Each key of
    `splits` must be a WeightComponent and each value a whole number >= 1 (_checked_splits). A vision
    tower (vision_parameters) is counted whole on every GPU in the checkpoint's dtype (vLLM shards it too where its
    encoder supports TP: an upper bound). Rounded up.
    `shares` ({component or "vision": the fraction of it this GPU holds}, 1 where absent) is one pipeline
    stage's part of each component (capacity.stages.Stage.shares). `expert_layout` is the routed experts' bytes
    as an engine lays them out over the checkpoint's (engines.mxfp4.expert_padding; 1: as shipped).
    """
    shares, splits = shares or {}, _checked_splits(splits)
    counts = model.parameters.by_component()
    whole = dict(model.parameters.tp_replicated)
    per_gpu = Fraction(0)
    for component, bits in _component_bits(model, dtype):
        bits *= shares.get(component, 1)
        if component is WeightComponent.experts:
            bits *= Fraction(expert_layout) / expert_parallel
        own = bits * Fraction(whole.get(component, 0), counts[component]) if counts[component] else Fraction(0)
        per_gpu += (bits - own) / splits.get(component, tensor_parallel) + own
    vision = Fraction(model.vision_parameters) * Fraction(WeightFormat.of(model.weight_dtype or DType.bf16)
                                                          .bits_per_weight) * shares.get(VISION, 1)
    return math.ceil((per_gpu * _published_scale(model) + vision) / 8)


def _checked_splits(splits: Mapping[str, int] | None) -> dict[WeightComponent, int]:
    """weight_bytes' `splits` keyed by WeightComponent, each a whole number of ways >= 1; an InputError naming the key
    otherwise (a misspelt component was ignored, 0 divided by zero, -1 shrank the weights)."""
    if splits is None:
        return {}
    if not isinstance(splits, Mapping):
        raise InputError(f"splits must be a mapping of weight component to ways, got {shown(splits)}")
    checked = {}
    for key, ways in splits.items():
        component = WeightComponent.of(key, "a splits key (a weight component)")
        if isinstance(ways, bool) or not isinstance(ways, numbers.Integral) or ways < 1:
            raise InputError(f"splits[{component.value!r}] must be a whole number of ways >= 1, got {shown(ways)}")
        checked[component] = int(ways)
    return checked


def bytes_read_per_step(model, experts_read: float, dtype: DType | WeightFormat | None = None) -> float:
    """Bytes of weights one step of the text model reads on one GPU holding them all: every component once,
    the routed experts' `experts_read` share of them (cost.model.experts_touched over num_experts), each in its
    format. The vision tower is not read by a text step."""
    bits = Fraction(0)
    for component, component_bits in _component_bits(model, dtype):
        bits += component_bits * Fraction(experts_read) if component is WeightComponent.experts else component_bits
    return float(bits * _published_scale(model) / 8)


__all__ = ["VISION", "ParameterCount", "WeightComponent", "attention_parameters", "bytes_read_per_step",
           "count_parameters", "indexer_parameters", "mla_down_parameters", "mla_kv_b_parameters",
           "replicated_attention_parameters", "weight_bytes"]

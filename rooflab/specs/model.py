"""A decoder-only model: its stack of layers (attention types, dense or MoE MLPs), its weights and their formats.

The stack is written compactly (see ModelSpec): named layer types, a pattern that repeats over the
layers by index, and the first layers where they differ; on the MLP side, the dense layers first and
which later layers are mixtures of experts. A YAML with only the flat fields (num_qo_heads, ...)
describes a model whose every layer is full attention with a dense MLP, as before.

Parameter counts and weight bytes (weights.py) follow each architecture's projections; tests check every bundled
model within 1% of its published count.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, Mapping, Optional

from ..errors import SpecError
from ..fields import FrozenDict, spec_field, validate_fields
from ..limits import MAX_TOKENS
from ..units import DType, WeightFormat, loaded_dtype
from ..vocab import _Named
from .heads import MAX_HEAD_DIM, MAX_HEADS, AttentionHeads
from .layers import FULL, LayerType
from . import weights
from .weights import ParameterCount, WeightComponent, count_parameters

#: Components whose format a checkpoint's quantization (or --weight-dtype) may set; embeddings, lm_head, norms
#: and the router always stay in the checkpoint's dtype as loaded (vLLM's quantization methods replace linear
#: layers only: the embedding and the LM head are VocabParallelEmbedding / ParallelLMHead, left unquantized by
#: every method rooflab reads, as are the norms and, by the checkpoints' own exclusion lists, the MoE router).
QUANTIZABLE = ("linear", "attention", "mlp", "experts", "shared_experts")
#: Components whose parameters a checkpoint's exclusion list may keep unquantized (unquantized_parameters).
UNQUANTIZED_KEYS = tuple(c.value for c in (WeightComponent.attention, WeightComponent.dense_mlp,
                                            WeightComponent.experts, WeightComponent.shared_experts))



class QuantMethod(_Named):
    """The quant_method a checkpoint's quantization_config names (the methods rooflab reads: rooflab.hf.quant);
    the engines' --quantization must name it (rooflab.deployment_words)."""

    fp8 = "fp8"
    mxfp4 = "mxfp4"
    gptq = "gptq"
    awq = "awq"
    bitsandbytes = "bitsandbytes"
    compressed_tensors = "compressed-tensors"
    modelopt = "modelopt"


#: The engines' other --quantization spellings of a method, each mapped to the method (the one table): vLLM's
#: kernels for a method (awq_marlin, gptq_marlin, gptq_marlin_24: the methods' override_quantization_method,
#: vllm/model_executor/layers/quantization/), modelopt's NVFP4 name (modelopt_fp4), SGLang's compressed-tensors
#: schemes (w8a8_fp8, w8a8_int8) and the underscore spelling of compressed-tensors.
QUANT_METHOD_ALIASES: dict[str, QuantMethod] = {
    "awq_marlin": QuantMethod.awq, "gptq_marlin": QuantMethod.gptq, "gptq_marlin_24": QuantMethod.gptq,
    "compressed_tensors": QuantMethod.compressed_tensors, "w8a8_fp8": QuantMethod.compressed_tensors,
    "w8a8_int8": QuantMethod.compressed_tensors, "modelopt_fp4": QuantMethod.modelopt}


@dataclass(frozen=True)
class ModelSpec:
    """One decoder-only transformer, as its config.json describes it.

    The layer stack: `layer_types` names the kinds of layers; layer i has type
    `layer_pattern[i % len(layer_pattern)]`, except the first len(`first_layers`) layers, which
    have the types listed there. MLP: a model with num_experts > 1 has MoE layers from layer
    `first_dense_layers` on, every `moe_layer_step`-th one ((i + 1) % step == 0, Llama 4's rule);
    the other layers are dense with `dense_ffn_size`.
    """

    name: str = spec_field(doc="short name, as `--model` takes it")
    display_name: str = spec_field()
    num_layers: int = spec_field(1, 100_000, "layers")
    hidden_size: int = spec_field(1, 1 << 20)
    num_qo_heads: int = spec_field(1, MAX_HEADS, "heads", "query (and output) heads")
    num_kv_heads: int = spec_field(1, MAX_HEADS, "heads", "key/value heads (GQA: fewer than query heads)")
    head_dim: int = spec_field(1, MAX_HEAD_DIM, doc="width of q and k per head")
    ffn_size: int = spec_field(1, 1 << 24, doc="MLP intermediate size (per routed expert in a MoE)")
    vocab_size: int = spec_field(1, 1 << 28)
    max_context_len: int = spec_field(1, MAX_TOKENS, "tokens")
    source: str = spec_field(doc="where the figures come from")
    num_parameters: Optional[int] = spec_field(1, 1e16, "parameters", "the published count", default=None)
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    num_experts: int = spec_field(1, 1 << 20, "experts", default=1)
    num_experts_per_token: int = spec_field(1, 1 << 20, "experts", default=1)
    v_head_dim: Optional[int] = spec_field(1, MAX_HEAD_DIM, doc="width of v and o per head, where not head_dim",
                                           default=None)
    layer_types: dict[str, LayerType] = spec_field(doc="the kinds of layers, by name", default=FrozenDict(full=FULL))
    layer_pattern: tuple[str, ...] = spec_field(doc="layer types repeating over the layers", default=())
    first_layers: tuple[str, ...] = spec_field(doc="types of the first layers, where they break the pattern",
                                               default=())
    first_dense_layers: int = spec_field(0, 100_000, "layers", "MoE: dense layers before the first MoE", default=0)
    moe_layer_step: int = spec_field(1, 100_000, doc="MoE: every k-th layer is a MoE ((i + 1) % k == 0)", default=1)
    dense_ffn_size: Optional[int] = spec_field(1, 1 << 24, doc="MoE: the dense layers' MLP size", default=None)
    num_shared_experts: int = spec_field(0, 1 << 10, "experts", "MoE: experts every token uses", default=0)
    shared_expert_ffn_size: Optional[int] = spec_field(1, 1 << 24, default=None)
    expert_groups: int = spec_field(1, 1 << 10, "groups", "MoE: groups the experts are routed in (n_group; "
                                    "DeepSeek-V3's grouped top-k scores each group and keeps the best topk_groups)",
                                    default=1)
    topk_groups: int = spec_field(1, 1 << 10, "groups", "MoE: expert groups a token's experts come from "
                                  "(topk_group)", default=1)
    weight_dtype: Optional[DType] = spec_field(doc="the checkpoint's dtype (torch_dtype)", default=None)
    quantization: dict[str, WeightFormat] = spec_field(doc="formats of quantized components, as shipped",
                                                      keys=QUANTIZABLE, default=FrozenDict())
    quant_method: Optional[QuantMethod] = spec_field(
        doc="the method the quantization is shipped in (quantization_config.quant_method: the engines' "
        "--quantization must name it); none where the spec does not say", default=None)
    unquantized_parameters: dict[str, int] = spec_field(
        0, 1e16, "parameters", "parameters of quantized components a checkpoint keeps in its dtype (the modules "
        "its ignored_layers / modules_to_not_convert / ignore list names)", keys=UNQUANTIZED_KEYS,
        default=FrozenDict())
    fp16_supported: bool = spec_field(doc="false for models vLLM refuses to run in fp16 (Gemma 2 and 3, GLM-4: "
                                      "_FLOAT16_NOT_SUPPORTED_MODELS); 'auto' then never picks fp16", default=True)
    mtp_layers: int = spec_field(0, 64, "layers", "multi-token-prediction layers the checkpoint ships (config.json "
                                 "num_nextn_predict_layers, mtp_num_hidden_layers or num_mtp_modules): what an "
                                 "engine's mtp method drafts with (0: none; the method is refused)", default=0)
    vision_parameters: int = spec_field(0, 1e16, "parameters", "a vision-language model's vision tower and "
                                        "projector, held in the checkpoint's dtype (the language model is what "
                                        "is planned)", default=0)
    image_tokens: int = spec_field(0, 1 << 20, "tokens", "a vision-language model's prompt tokens for one image at "
                                   "its largest, the placeholder vLLM's multimodal profiler counts "
                                   "(get_mm_max_contiguous_tokens; Gemma 3: mm_tokens_per_image + 4, hf/vision.py); "
                                   "0 where none is known (then no multimodal profile run is modelled)", default=0)
    image_input_elements: int = spec_field(0, 1 << 40, "elements", "a vision-language model's processed input for "
                                           "one image at its largest (pixel_values: num_channels x image_size^2 "
                                           "for Gemma 3's SigLIP, hf/vision.py), which vLLM's multimodal profile "
                                           "keeps on the GPU in the model's dtype; 0 where none is known",
                                           default=0)
    parameters_note: Optional[str] = spec_field(doc="what the published count includes", default=None)

    #: YAML keys read under their old spelling: old -> new.
    RENAMED: ClassVar[dict[str, str]] = {}

    def __post_init__(self) -> None:
        validate_fields(self)
        for name in ("image_tokens", "image_input_elements"):
            if getattr(self, name) and not self.vision_parameters:
                raise SpecError(self.name, name, getattr(self, name), "needs a vision tower (vision_parameters)")
        if not self.layer_pattern:
            if len(self.layer_types) != 1:
                raise SpecError(self.name, "layer_pattern", None, "needed when there are several layer_types")
            object.__setattr__(self, "layer_pattern", tuple(self.layer_types))
        self.check()

    def check(self) -> None:
        """Cross-field rules the annotations cannot express."""
        if self.num_qo_heads % self.num_kv_heads:
            raise SpecError(self.name, "num_kv_heads", self.num_kv_heads,
                            f"num_qo_heads ({self.num_qo_heads}) must be a multiple of num_kv_heads")
        if self.num_experts_per_token > self.num_experts:
            raise SpecError(self.name, "num_experts_per_token", self.num_experts_per_token,
                            f"cannot exceed num_experts ({self.num_experts})")
        for field in ("layer_pattern", "first_layers"):
            unknown = [t for t in getattr(self, field) if t not in self.layer_types]
            if unknown:
                raise SpecError(self.name, field, unknown[0],
                                f"is not one of the layer_types ({', '.join(self.layer_types)})")
        if self.num_parameters is not None and self.vision_parameters >= self.num_parameters:
            raise SpecError(self.name, "vision_parameters", self.vision_parameters,
                            f"must be below num_parameters ({self.num_parameters:,}), the published count it is part "
                            "of (the text model's share, num_parameters - vision_parameters, prices its weights)")
        if len(self.first_layers) > self.num_layers:
            raise SpecError(self.name, "first_layers", len(self.first_layers),
                            f"lists more layers than num_layers ({self.num_layers})")
        for name, t in self.layer_types.items():
            if t.is_latent and t.qk_nope_head_dim + t.qk_rope_head_dim != self.head_dim:
                raise SpecError(self.name, f"layer_types.{name}.qk_nope_head_dim", t.qk_nope_head_dim,
                                f"qk_nope_head_dim + qk_rope_head_dim ({t.qk_rope_head_dim}) must equal head_dim "
                                f"({self.head_dim}), the un-absorbed q.k width")
        used = set(self.first_layers) | set(self.layer_pattern[:max(0, self.num_layers - len(self.first_layers))])
        if used and all(not self.layer_types[t].is_attention for t in used if t in self.layer_types):
            raise SpecError(self.name, "layer_pattern", ", ".join(sorted(used)),
                            "every layer is linear attention; rooflab prices softmax attention and needs at least "
                            "one full, sliding, chunked or mla layer")
        if self.num_experts == 1 and (self.first_dense_layers or self.num_shared_experts):
            raise SpecError(self.name, "num_experts", 1, "first_dense_layers and num_shared_experts need a MoE")
        if self.num_experts % self.expert_groups:
            raise SpecError(self.name, "expert_groups", self.expert_groups,
                            f"must divide num_experts ({self.num_experts})")
        if self.topk_groups > self.expert_groups:
            raise SpecError(self.name, "topk_groups", self.topk_groups,
                            f"cannot exceed expert_groups ({self.expert_groups})")
        if self.num_experts == 1 and self.dense_ffn_size not in (None, self.ffn_size):
            raise SpecError(self.name, "dense_ffn_size", self.dense_ffn_size,
                            f"is a MoE's dense-layer MLP size; this model has no experts, so it would replace "
                            f"ffn_size ({self.ffn_size}) in every layer: give the size as ffn_size")
        if self.quant_method is not None and not self.quantization:
            raise SpecError(self.name, "quant_method", self.quant_method.value,
                            "names a checkpoint's quantization, but the spec gives no quantization formats")
        counts = self.parameters.by_component() if self.unquantized_parameters else {}
        for component, kept in self.unquantized_parameters.items():
            if kept > counts[component]:
                raise SpecError(self.name, f"unquantized_parameters.{component}", kept,
                                f"exceeds the component's {counts[component]:,} parameters")
        if self.num_experts > 1 and not any(self.is_moe_layer(i) for i in range(self.num_layers)):
            field = "first_dense_layers" if self.first_dense_layers >= self.num_layers else "moe_layer_step"
            raise SpecError(self.name, field, getattr(self, field),
                            f"leaves no MoE layer among the {self.num_layers} layers, though num_experts is "
                            f"{self.num_experts}")

    # --- the stack ---------------------------------------------------------------------------------------

    @cached_property
    def layer_type_names(self) -> tuple[str, ...]:
        """Each layer's type name, layer 0 first."""
        first = self.first_layers
        pattern = self.layer_pattern
        return first + tuple(pattern[i % len(pattern)] for i in range(len(first), self.num_layers))

    @cached_property
    def layer_counts(self) -> FrozenDict:
        """Layers of each type, in the order the types are listed (read-only: the spec is shared by its callers)."""
        names = self.layer_type_names
        return FrozenDict({name: names.count(name) for name in self.layer_types if name in names})

    @property
    def is_hybrid(self) -> bool:
        """Layers of more than one type (windows beside full attention, linear beside softmax...)."""
        return len(self.layer_counts) > 1

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    def is_moe_layer(self, index: int) -> bool:
        return self.is_moe and index >= self.first_dense_layers and (index + 1) % self.moe_layer_step == 0

    @cached_property
    def num_moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers))

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def heads(self) -> AttentionHeads:
        """The model's attention heads (a layer type may have its own: LayerType.heads)."""
        return AttentionHeads(self.num_qo_heads, self.num_kv_heads, self.head_dim, self.v_head_dim)

    @property
    def group_size(self) -> int:
        """Query heads served by one KV head (GQA); 1 for multi-head attention."""
        return self.heads.group_size

    # --- weights --------------------------------------------------------------------------------------------

    @cached_property
    def parameters(self) -> ParameterCount:
        """Parameters by component (weights.ParameterCount), every expert included."""
        return count_parameters(self)

    @property
    def derived_parameters(self) -> int:
        """Parameter count from the architecture, all experts (and a vision tower) included."""
        return self.parameters.total + self.vision_parameters

    @property
    def total_parameters(self) -> int:
        """The published count when the YAML gives one, otherwise the derived count."""
        return self.num_parameters if self.num_parameters is not None else self.derived_parameters

    @property
    def active_parameters(self) -> int:
        """Parameters a text token touches: for a mixture of experts only the routed experts' MLPs count; a vision
        tower (vision_parameters) never."""
        counts = self.parameters
        text = self.total_parameters - self.vision_parameters
        if not self.is_moe:
            return text
        inactive = counts.experts * (1 - self.num_experts_per_token / self.num_experts)
        return int(round(text - inactive))

    @property
    def expert_parameters(self) -> int:
        """Parameters of one routed expert's gated MLP: gate, up and down, 3 x hidden x ffn."""
        return 3 * self.hidden_size * self.ffn_size

    def weight_format(self, component: str, override: DType | WeightFormat | None = None) -> WeightFormat:
        """The format `component` is stored in: `override` for quantizable components where given, else the
        checkpoint's quantization, else its dtype. Embeddings, lm_head, norms and the router keep the checkpoint's
        dtype whatever `override` says (bf16 where the spec names none)."""
        own = WeightFormat.of(self.weight_dtype or DType.bf16)
        if component in QUANTIZABLE or component == "dense_mlp":
            if override is not None:
                return WeightFormat.of(override)
            key = {"dense_mlp": "mlp"}.get(component, component)
            for name in (key, "linear"):
                if name in self.quantization:
                    return self.quantization[name]
        return own

    def loaded_dtype(self, compute_capability: tuple[int, int] | None) -> DType:
        """The dtype vLLM's `--dtype auto` loads this checkpoint in on a GPU of `compute_capability`
        (units.loaded_dtype: fp32 checkpoints in bf16 from 8.0, in fp16 below unless fp16_supported is false)."""
        return loaded_dtype(self.weight_dtype, compute_capability, self.fp16_supported)

    def as_loaded(self, compute_capability: tuple[int, int] | None, dtype: DType | str | None = None) -> "ModelSpec":
        """This spec with the dtype its unquantized weights, activations and 'auto' KV cache take when served:
        `dtype` (an engine's --dtype) where given, else `loaded_dtype` (--dtype auto). The same spec where that
        is already its dtype."""
        chosen = DType.or_auto(dtype, "dtype") or self.loaded_dtype(compute_capability)
        if chosen is self.weight_dtype:
            return self
        import dataclasses

        return dataclasses.replace(self, weight_dtype=chosen)

    def weight_bytes(self, dtype: DType | WeightFormat | None = None, tensor_parallel: int = 1,
                     expert_parallel: int = 1, splits: Mapping[str, int] | None = None) -> int:
        """Bytes of every parameter (all experts) per GPU, each component in its format (weight_format); see
        weights.weight_bytes.

        `dtype` overrides the formats of the quantizable components only: embeddings, lm_head, norms and
        the router stay in the checkpoint's dtype, and so do the parameters a checkpoint's exclusion list
        keeps (unquantized_parameters; with an override every linear layer is converted). Split
        `tensor_parallel` ways, the routed experts also `expert_parallel` ways, a component named in `splits`
        ({component: ways}: data-parallel attention) its own number of ways; a vision tower whole on every GPU.
        Rounded up. A spec that gives a published count scales the derived components to it.
        """
        return weights.weight_bytes(self, dtype, tensor_parallel, expert_parallel, splits)

    # --- the KV cache --------------------------------------------------------------------------------------

    def layer_walk(self) -> tuple[tuple[str, LayerType, int], ...]:
        """(name, layer type, layers of that type) for each layer type, in the model's order: the one walk over a
        model's layers (cost.layers.layer_walk is the same walk for the cost side)."""
        return tuple((name, self.layer_types[name], count) for name, count in self.layer_counts.items())

    def kv_bytes_per_token(self, kv_dtype: DType, tensor_parallel: int = 1) -> int:
        """Cached bytes of one token across all layers, on one GPU of `tensor_parallel`, every layer keeping
        every token (windows ignored; capacity.py counts what each layer type keeps).

        Softmax layers: K and V per KV head (GQA heads sharded, replicated past h_kv); MLA: the latent,
        replicated on every rank; linear layers: none (a fixed state per sequence).
        """
        kv_dtype = DType.of(kv_dtype, "kv_dtype")
        total = 0
        for _, t, count in self.layer_walk():
            total += count * t.kv_bytes_per_token(t.cached_heads(self.heads, tensor_parallel), kv_dtype)
        return total


__all__ = ["QUANTIZABLE", "ModelSpec"]

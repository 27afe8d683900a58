"""What every architecture family shares: the layer stack, the MoE layout, the dtype and the weight formats.

Layer types take their kind's name in the spec ('full', 'sliding', 'chunked', 'mla', 'linear'), so a spec
read from a config.json and one written in YAML name them alike. Hugging Face's per-layer names:

    full_attention -> full    sliding_attention -> sliding    chunked_attention -> chunked
    linear_attention -> linear (Gated DeltaNet)                every layer of an MLA model -> mla

A per-layer list is stored compactly (ModelSpec's first_layers + a pattern repeating by index): the
shortest prefix plus period that reproduces it.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..errors import SpecError
from ..specs import LayerType, ModelSpec
from ..units import DType, WeightFormat
from ..vocab import LayerKind
from .read import Fields

#: model_type values vLLM refuses to run in fp16 (vllm/config/model.py, _FLOAT16_NOT_SUPPORTED_MODELS, main at
#: commit 0052a5b: "Numerical instability"); --dtype auto never picks fp16 for them (units.loaded_dtype).
FP16_NOT_SUPPORTED = ("gemma2", "gemma3", "gemma3_text", "plamo2", "glm4")

#: Hugging Face's layer_types values and the kinds they name.
HF_KINDS = {"full_attention": LayerKind.full, "sliding_attention": LayerKind.sliding,
            "chunked_attention": LayerKind.chunked, "linear_attention": LayerKind.linear}
HF_NAMES = {kind: name for name, kind in HF_KINDS.items()}

#: torch_dtype values and the element types they name.
TORCH_DTYPES = {"bfloat16": DType.bf16, "float16": DType.fp16, "float32": DType.fp32}

#: The module paths the exporter writes in modules_to_not_convert.
_MODULE_PATHS = {"attention": "model.layers.*.self_attn", "mlp": "model.layers.*.mlp",
                 "experts": "model.layers.*.mlp.experts", "shared_experts": "model.layers.*.mlp.shared_experts"}
#: Modules gpt-oss's mxfp4 quantization_config lists besides attention (unconverted whatever the list says).
_ALWAYS_KEPT = ["model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]
_LINEAR = ("attention", "mlp", "experts", "shared_experts")


# --- the layer stack ----------------------------------------------------------------------------------------

def layer_kinds(c: Fields, num_layers: int) -> Optional[list[LayerKind]]:
    """The config's own layer_types, checked (it wins over every family rule); None where it has none."""
    names = c.names("layer_types")
    if names is None:
        return None
    if len(names) != num_layers:
        raise c.error("layer_types", f"{len(names)} entries",
                      f"must list one type per layer (num_hidden_layers is {num_layers})")
    for i, name in enumerate(names):
        if name not in HF_KINDS:
            raise c.error(f"layer_types[{i}]", name, f"unknown layer type; rooflab reads {', '.join(HF_KINDS)}")
    return [HF_KINDS[name] for name in names]


#: Longest repeat `compress` looks for; real stacks repeat every 1 to 6 layers (a longer list is kept whole).
MAX_PERIOD = 64


def compress(names: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(first_layers, layer_pattern) reproducing the per-layer `names` with the fewest entries in all.

    Layer i >= len(first) has pattern[i % p]; for a period p the shortest prefix is one past the last layer
    that differs from the layer p after it. Periods up to MAX_PERIOD are tried (each costs one pass over
    the list), and the whole list as the pattern is always an answer.
    """
    n = len(names)
    best = ((), tuple(names))
    for p in range(1, min(n, MAX_PERIOD) + 1):
        if p >= len(best[0]) + len(best[1]):
            break
        f = next((i + 1 for i in range(n - p - 1, -1, -1) if names[i] != names[i + p]), 0)
        if f + p >= len(best[0]) + len(best[1]):
            continue
        pattern = [""] * p
        for i in range(f, n):
            pattern[i % p] = names[i]
        best = (tuple(names[:f]), tuple(pattern))
    return best


def stack(kinds: Sequence[LayerKind], types: dict[LayerKind, LayerType]) -> dict:
    """ModelSpec's layer_types, layer_pattern and first_layers for one kind per layer."""
    first, pattern = compress([kind.value for kind in kinds])
    return {"layer_types": {kind.value: types[kind] for kind in dict.fromkeys(kinds)},
            "layer_pattern": pattern, "first_layers": first}


def window_type(c: Fields, window: Optional[int], sinks: bool = False) -> LayerType:
    """A sliding layer of the config's window (sliding_window), which must be set."""
    if window is None:
        raise c.error("sliding_window", None, "sliding_attention layers need a window")
    return LayerType(LayerKind.sliding, window=window, sinks=sinks)


def chunk_type(c: Fields) -> LayerType:
    return LayerType(LayerKind.chunked, chunk=c.count("attention_chunk_size"))


def linear_type(c: Fields) -> LayerType:
    """A Gated DeltaNet layer (Qwen3-Next's linear_* fields)."""
    return LayerType(LayerKind.linear, linear_num_key_heads=c.count("linear_num_key_heads"),
                     linear_num_value_heads=c.count("linear_num_value_heads"),
                     linear_key_head_dim=c.count("linear_key_head_dim"),
                     linear_value_head_dim=c.count("linear_value_head_dim"),
                     linear_conv_kernel=c.count("linear_conv_kernel_dim"))


# --- mixture of experts -------------------------------------------------------------------------------------

def moe_layout(c: Fields, key: str, moe_layers: Sequence[int], num_layers: int) -> tuple[int, int]:
    """(first_dense_layers, moe_layer_step) whose rule (i >= first and (i + 1) % step == 0) gives exactly the
    MoE layers listed; a layout the rule cannot express is an error naming `key`."""
    wanted = sorted(set(moe_layers))
    if not wanted:
        return 0, 1
    steps = [wanted[1] - wanted[0]] if len(wanted) > 1 else [1, wanted[0] + 1]
    for step in steps:
        for first in (0, wanted[0]):
            if [i for i in range(first, num_layers) if (i + 1) % step == 0] == wanted:
                return first, step
    raise c.error(key, c.raw(key, None), "gives MoE layers other than every k-th one ((i + 1) % k == 0) after a "
                                         "run of dense layers, the only layout rooflab describes")


def sparse_step_layers(c: Fields, num_layers: int) -> list[int]:
    """Qwen's MoE layers: i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
    (Qwen2MoeDecoderLayer, Qwen3MoeDecoderLayer, Qwen3NextDecoderLayer in transformers)."""
    step = c.count("decoder_sparse_step", 1)
    dense = set(c.indices("mlp_only_layers") or ())
    past = sorted(i for i in dense if i >= num_layers)
    if past:
        raise c.error("mlp_only_layers", past[0], f"names a layer past the last (num_hidden_layers is {num_layers})")
    return [i for i in range(num_layers) if i not in dense and (i + 1) % step == 0]


def moe(c: Fields, num_layers: int, moe_layers: Sequence[int], key: str, *, experts: int, top_k: int,
        expert_ffn: int, dense_ffn: int, shared: int = 0, shared_ffn: Optional[int] = None) -> dict:
    """ModelSpec's MLP fields for a mixture of experts; sizes equal to the routed expert's are left unset."""
    if top_k > experts:
        raise c.error("num_experts_per_tok", top_k, f"cannot exceed the number of experts ({experts})")
    if not moe_layers:
        return {"ffn_size": dense_ffn}
    first, step = moe_layout(c, key, moe_layers, num_layers)
    has_dense = len(set(moe_layers)) < num_layers
    return {"ffn_size": expert_ffn, "num_experts": experts, "num_experts_per_token": top_k,
            "first_dense_layers": first, "moe_layer_step": step,
            "dense_ffn_size": dense_ffn if has_dense and dense_ffn != expert_ffn else None,
            "num_shared_experts": shared,
            "shared_expert_ffn_size": shared_ffn if shared and shared_ffn != expert_ffn else None}


# --- weights ------------------------------------------------------------------------------------------------

def weight_dtype(c: Fields) -> Optional[DType]:
    """The checkpoint's dtype: torch_dtype (or dtype, transformers 5's name), in the text model or around it."""
    for key in ("torch_dtype", "dtype"):
        value, name = c.either(key)
        if value is None:
            continue
        if not isinstance(value, str) or value not in TORCH_DTYPES:
            raise c.error_at(name, value, f"rooflab reads {', '.join(TORCH_DTYPES)}")
        return TORCH_DTYPES[value]
    return None


def quantization_config(m: ModelSpec) -> Optional[dict]:
    """The quantization_config of a spec's weight formats (the exporter's side of `quantization`)."""
    if not m.quantization:
        return None
    if m.unquantized_parameters:
        raise SpecError(m.name, "unquantized_parameters", dict(m.unquantized_parameters),
                        "the exporter writes exclusions of whole components only")
    given = dict(m.quantization)
    formats = set(given.values())
    if len(formats) > 1:
        raise SpecError(m.name, "quantization", given, "one quantization_config holds one format")
    fmt = formats.pop()
    if fmt is WeightFormat.mxfp4:
        if set(given) != {"experts"}:
            raise SpecError(m.name, "quantization", given, "mxfp4 checkpoints quantize the experts only")
        return _method({"quant_method": "mxfp4", "modules_to_not_convert": [_MODULE_PATHS["attention"],
                                                                              *_ALWAYS_KEPT]}, m)
    if fmt not in (WeightFormat.fp8, WeightFormat.fp8_block):
        raise SpecError(m.name, "quantization", fmt.value, "no quantization_config this exporter writes holds it")
    out: dict = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic"}
    if fmt is WeightFormat.fp8_block:
        out["weight_block_size"] = [128, 128]
    if "linear" not in given:
        left = [name for name in _LINEAR if name not in given]
        if "mlp" in left and "experts" not in left and m.is_moe:
            raise SpecError(m.name, "quantization", given, "no module path leaves the dense MLPs out but not "
                                                           "the experts")
        inside_mlp = ("experts", "shared_experts") if "mlp" in left else ()
        out["modules_to_not_convert"] = [_MODULE_PATHS[name] for name in left if name not in inside_mlp]
    return _method(out, m)


def _method(config: dict, m: ModelSpec) -> dict:
    """`config`, if its quant_method is the spec's own (ModelSpec.quant_method, where the spec names one)."""
    if m.quant_method is not None and m.quant_method.value != config["quant_method"]:
        raise SpecError(m.name, "quant_method", m.quant_method.value,
                        f"the exporter writes {config['quant_method']} quantization_configs for these formats only")
    return config


__all__ = ["HF_KINDS", "HF_NAMES", "MAX_PERIOD", "MTP_KEYS", "MTP_MODEL_TYPES", "mtp_layers", "TORCH_DTYPES", "chunk_type", "compress", "layer_kinds",
           "linear_type", "moe", "moe_layout", "quantization_config", "sparse_step_layers", "stack",
           "weight_dtype", "window_type"]


#: config.json's names of the multi-token-prediction layers a checkpoint ships (DeepSeek-V3, Kimi K2, GLM-4.5:
#: num_nextn_predict_layers, vllm 0.11.0 config/speculative.py:152-190; Qwen3-Next: mtp_num_hidden_layers;
#: MiniMax-M2: num_mtp_modules).
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")


#: model_types vLLM drafts MTP for whatever the config counts (qwen3_next -> qwen3_next_mtp, vllm 0.11.0
#: config/speculative.py:185-192; Qwen3-Next ships one MTP layer, its model card's "Multi-Token Prediction").
MTP_MODEL_TYPES = {"qwen3_next": 1}


def mtp_layers(c: Fields, model_type=None) -> int:
    """The MTP layers the config states (the first of MTP_KEYS it has), else its model_type's (MTP_MODEL_TYPES),
    else 0."""
    for key in MTP_KEYS:
        if c.raw(key, None) is not None:
            return c.count(key, lo=0, hi=64)
    return MTP_MODEL_TYPES.get(model_type, 0)

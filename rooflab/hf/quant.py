"""quantization_config -> weight formats by component, and the modules a checkpoint keeps unquantized.

Methods read, each as the checkpoint's own fields say (formats in units.WeightFormat):

    fp8                 fmt e4m3 (or float8_e4m3fn); weight_block_size [128, 128] -> fp8_block, else fp8 (per tensor or channel);
                        exclusions: modules_to_not_convert (transformers) or ignored_layers (vLLM's Fp8Config)
    mxfp4               the routed experts only (gpt-oss); modules_to_not_convert
    gptq                bits, group_size (-1: per channel); qzeros are always stored: int<b>_g<G>_zp
    awq                 w_bit / bits, q_group_size / group_size, zero_point (default true); modules_to_not_convert
    bitsandbytes        load_in_4bit: bnb_4bit_quant_type nf4 | fp4 (+ _dq with bnb_4bit_use_double_quant);
                        load_in_8bit: int8_ch; llm_int8_skip_modules
    compressed-tensors  config_groups targeting Linear: weights {num_bits, type, strategy, group_size, symmetric}
                        int group -> int<b>_g<G>[_zp unless symmetric], int channel/tensor -> int<b>_ch[_zp];
                        float 8 tensor/channel -> fp8, block [128, 128] -> fp8_block; float 4 group 16 -> nvfp4;
                        ignore (names, or 're:' regular expressions)
    modelopt            quant_algo FP8 -> fp8, NVFP4 -> nvfp4; exclude_modules

Every method converts the linear layers of the decoder blocks (attention, dense MLPs, experts): the
embeddings, LM head, norms and (by every exclusion list the checkpoints ship) the router stay in the
checkpoint's dtype. An exclusion names modules; it keeps exactly the parameters of the modules it matches
(ModelSpec.unquantized_parameters, counted by `modules`): a name matches a module path it equals, a
module under it, or a module whose dotted path contains it as whole parts (transformers' rule for
'self_attn' or 'lm_head'); '*' matches one path part; 're:' names are matched from the start of the path.
Sources: vLLM's quantization configs (vllm/model_executor/layers/quantization/: fp8.py, gptq.py, awq.py,
bitsandbytes.py, compressed_tensors/, modelopt.py) and transformers' quantizers.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Optional

from ..specs import ModelSpec, QuantMethod
from ..units import WeightFormat
from .read import Fields

_LINEAR = ("attention", "mlp", "experts", "shared_experts")
#: Longest exclusion list read (the largest real one names a few hundred modules).
MAX_EXCLUSIONS = 100_000


def quantization(c: Fields) -> tuple[dict[str, WeightFormat], tuple[str, ...], Optional[QuantMethod]]:
    """(formats by component, names of modules kept unquantized, the quant_method) from quantization_config;
    ({}, (), None) without one."""
    config, key = c.either("quantization_config")
    if config is None:
        return {}, (), None
    if not isinstance(config, dict):
        raise c.error_at(key, config, "must be a mapping")
    method = config.get("quant_method")
    readers = {"fp8": _fp8, "mxfp4": _mxfp4, "gptq": _gptq, "awq": _awq, "bitsandbytes": _bnb,
               "compressed-tensors": _compressed, "modelopt": _modelopt}
    if method not in readers:
        raise c.error_at(f"{key}.quant_method", method, f"rooflab reads {', '.join(readers)}")
    fmt, covered, names = readers[method](c, key, config)
    excluded = _names(c, key, names)
    if tuple(covered) == _LINEAR:
        return {"linear": fmt}, excluded, QuantMethod(method)
    return {name: fmt for name in covered}, excluded, QuantMethod(method)


def _names(c: Fields, key: str, found: tuple[str, Any]) -> tuple[str, ...]:
    field, names = found
    if names is None:
        return ()
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names) or len(names) > MAX_EXCLUSIONS:
        raise c.error_at(f"{key}.{field}", names, "must be a list of module names")
    for name in names:
        if name.startswith("re:"):
            try:
                re.compile(name[3:])
            except re.error as exc:
                raise c.error_at(f"{key}.{field}", name, f"is not a regular expression: {exc}") from None
    return tuple(names)


def _bits(c: Fields, key: str, field: str, value: Any, allowed=(2, 3, 4, 8)) -> int:
    if isinstance(value, bool) or value not in allowed:
        raise c.error_at(f"{key}.{field}", value, f"rooflab reads {', '.join(map(str, allowed))} bits")
    return int(value)


def _group(c: Fields, key: str, field: str, value: Any) -> Optional[int]:
    """A group size: None for -1 / null (per output channel); else a power of two from 8 to 16384."""
    if value is None or value == -1:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value not in [2**k for k in range(3, 15)]:
        raise c.error_at(f"{key}.{field}", value, "must be -1 (per channel) or a power of two from 8 to 16384")
    return value


#: fmt values naming e4m3 (MiniMax-M2's checkpoints write torch's name, float8_e4m3fn).
_E4M3 = ("e4m3", "float8_e4m3fn")


def _fp8(c: Fields, key: str, config: dict):
    if config.get("fmt", "e4m3") not in _E4M3:
        raise c.error_at(f"{key}.fmt", config.get("fmt"), "rooflab's fp8 weight formats are e4m3")
    block = config.get("weight_block_size")
    if block is not None and block != [128, 128]:
        raise c.error_at(f"{key}.weight_block_size", block, "rooflab's fp8_block has 128 x 128 blocks")
    fmt = WeightFormat.fp8 if block is None else WeightFormat.fp8_block
    field = "ignored_layers" if "ignored_layers" in config else "modules_to_not_convert"
    return fmt, _LINEAR, (field, config.get(field))


def _mxfp4(c: Fields, key: str, config: dict):
    return WeightFormat.mxfp4, ("experts",), ("modules_to_not_convert", config.get("modules_to_not_convert"))


def _gptq(c: Fields, key: str, config: dict):
    bits = _bits(c, key, "bits", config.get("bits"))
    group = _group(c, key, "group_size", config.get("group_size", 128))
    return WeightFormat.integer(bits, group, zero_point=True), _LINEAR, ("modules_to_not_convert",
                                                                          config.get("modules_to_not_convert"))


def _awq(c: Fields, key: str, config: dict):
    bits_field = "w_bit" if "w_bit" in config else "bits"
    group_field = "q_group_size" if "q_group_size" in config else "group_size"
    bits = _bits(c, key, bits_field, config.get(bits_field), (4,))
    group = _group(c, key, group_field, config.get(group_field, 128))
    zero = config.get("zero_point", True)
    if not isinstance(zero, bool):
        raise c.error_at(f"{key}.zero_point", zero, "must be true or false")
    return WeightFormat.integer(bits, group, zero), _LINEAR, ("modules_to_not_convert",
                                                              config.get("modules_to_not_convert"))


def _bnb(c: Fields, key: str, config: dict):
    four, eight = config.get("load_in_4bit", False), config.get("load_in_8bit", False)
    if four is eight or not isinstance(four, bool) or not isinstance(eight, bool):
        raise c.error_at(f"{key}.load_in_4bit", four, "exactly one of load_in_4bit and load_in_8bit must be true")
    skip = ("llm_int8_skip_modules", config.get("llm_int8_skip_modules"))
    if eight:
        return WeightFormat.integer(8, None, zero_point=False), _LINEAR, skip
    kind = config.get("bnb_4bit_quant_type", "fp4")
    if kind not in ("nf4", "fp4"):
        raise c.error_at(f"{key}.bnb_4bit_quant_type", kind, "bitsandbytes 4-bit types are nf4 and fp4")
    double = config.get("bnb_4bit_use_double_quant", False)
    if not isinstance(double, bool):
        raise c.error_at(f"{key}.bnb_4bit_use_double_quant", double, "must be true or false")
    return WeightFormat(kind + ("_dq" if double else "")), _LINEAR, skip


def _compressed(c: Fields, key: str, config: dict):
    groups = config.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise c.error_at(f"{key}.config_groups", groups, "must be a mapping of one or more scheme groups")
    formats = set()
    for name, group in groups.items():
        where = f"config_groups.{name}"
        if not isinstance(group, dict) or group.get("targets") != ["Linear"]:
            raise c.error_at(f"{key}.{where}.targets", group.get("targets") if isinstance(group, dict) else group,
                             "rooflab reads schemes that target every Linear layer")
        formats.add(_scheme(c, f"{key}.{where}.weights", group.get("weights")))
    if len(formats) > 1:
        raise c.error_at(f"{key}.config_groups", sorted(formats), "schemes of several formats over Linear layers")
    return formats.pop(), _LINEAR, ("ignore", config.get("ignore"))


def _scheme(c: Fields, where: str, w: Any) -> WeightFormat:
    if not isinstance(w, dict):
        raise c.error_at(where, w, "must be a mapping (num_bits, type, strategy, ...)")
    kind, strategy, symmetric = w.get("type", "int"), w.get("strategy"), w.get("symmetric", True)
    if not isinstance(symmetric, bool):
        raise c.error_at(f"{where}.symmetric", symmetric, "must be true or false")
    if kind == "float" and w.get("num_bits") == 8:
        if strategy in ("tensor", "channel"):
            return WeightFormat.fp8
        if strategy == "block" and w.get("block_structure") == [128, 128]:
            return WeightFormat.fp8_block
        raise c.error_at(f"{where}.strategy", strategy, "fp8 schemes rooflab reads: tensor, channel, block 128 x 128")
    if kind == "float" and w.get("num_bits") == 4:
        if strategy == "tensor_group" and w.get("group_size") == 16:
            return WeightFormat.nvfp4
        raise c.error_at(f"{where}.strategy", strategy, "4-bit float schemes rooflab reads: nvfp4 (tensor_group, 16)")
    if kind != "int":
        raise c.error_at(f"{where}.type", kind, "rooflab reads int and float schemes")
    bits = _bits(c, where, "num_bits", w.get("num_bits"))
    if strategy == "group":
        return WeightFormat.integer(bits, _group(c, where, "group_size", w.get("group_size")), not symmetric)
    if strategy in ("channel", "tensor"):
        return WeightFormat.integer(bits, None, not symmetric)
    raise c.error_at(f"{where}.strategy", strategy, "int schemes rooflab reads: group, channel, tensor")


def _modelopt(c: Fields, key: str, config: dict):
    algo = config.get("quant_algo")
    formats = {"FP8": WeightFormat.fp8, "NVFP4": WeightFormat.nvfp4}
    if algo not in formats:
        raise c.error_at(f"{key}.quant_algo", algo, f"rooflab reads {', '.join(formats)}")
    return formats[algo], _LINEAR, ("exclude_modules", config.get("exclude_modules"))


# --- which parameters an exclusion keeps --------------------------------------------------------------------

def modules(m: ModelSpec) -> Iterator[tuple[str, str, int]]:
    """(module path, component, parameters) of every quantizable linear module, Hugging Face's names
    (model.layers.<i>.self_attn.q_proj, ...mlp.experts.<e>.down_proj); MLA and linear-attention layers as one
    module each (model.layers.<i>.self_attn / .linear_attn)."""
    from ..specs.weights import attention_parameters

    h = m.hidden_size
    for i, name in enumerate(m.layer_type_names):
        t = m.layer_types[name]
        prefix = f"model.layers.{i}"
        if not t.has_qkv_projections:
            part = "self_attn" if t.is_attention else "linear_attn"
            yield f"{prefix}.{part}", "attention", attention_parameters(t, m.heads, h, m.attention_bias)
        else:
            own = t.heads(m.heads)
            q, kv, v = own.num_qo_heads * own.head_dim, own.num_kv_heads * own.head_dim, own.num_kv_heads * own.value_dim
            bias = m.attention_bias
            yield f"{prefix}.self_attn.q_proj", "attention", h * q + (q if bias else 0)
            yield f"{prefix}.self_attn.k_proj", "attention", h * kv + (kv if bias else 0)
            yield f"{prefix}.self_attn.v_proj", "attention", h * v + (v if bias else 0)
            yield f"{prefix}.self_attn.o_proj", "attention", own.num_qo_heads * own.value_dim * h
        if m.is_moe_layer(i):
            for e in range(m.num_experts):
                for proj in ("gate_proj", "up_proj", "down_proj"):
                    yield f"{prefix}.mlp.experts.{e}.{proj}", "experts", h * m.ffn_size
            shared_ffn = m.shared_expert_ffn_size or m.ffn_size
            for s in range(m.num_shared_experts):
                for proj in ("gate_proj", "up_proj", "down_proj"):
                    yield f"{prefix}.mlp.shared_expert.{proj}" if m.num_shared_experts == 1 else \
                        f"{prefix}.mlp.shared_experts.{s}.{proj}", "shared_experts", h * shared_ffn
        else:
            for proj in ("gate_proj", "up_proj", "down_proj"):
                yield f"{prefix}.mlp.{proj}", "dense_mlp", h * (m.dense_ffn_size or m.ffn_size)


def _matcher(name: str):
    if name.startswith("re:"):
        pattern = re.compile(name[3:])
        return lambda path: pattern.match(path) is not None
    parts = [re.escape(p) if p != "*" else r"[^.]+" for p in name.split(".")]
    pattern = re.compile(r"(?:^|.*\.)" + r"\.".join(parts) + r"(?:\..*)?$")
    return lambda path: pattern.match(path) is not None


def unquantized_parameters(m: ModelSpec, names: tuple[str, ...]) -> dict[str, int]:
    """Parameters of each quantized component that the exclusion `names` keep in the checkpoint's dtype."""
    if not names:
        return {}
    matchers = [_matcher(n) for n in names]
    kept: dict[str, int] = {}
    for path, component, n in modules(m):
        key = {"dense_mlp": "mlp"}.get(component, component)
        if key not in m.quantization and "linear" not in m.quantization:
            continue
        if any(match(path) for match in matchers):
            kept[component] = kept.get(component, 0) + n
    return kept


__all__ = ["MAX_EXCLUSIONS", "modules", "quantization", "unquantized_parameters"]

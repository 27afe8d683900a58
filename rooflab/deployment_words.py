"""A deployment as typed: rooflab's and the engines' spellings of one setting, resolved into one `Deployment`.

Every command that takes a deployment setting (`report`, `explain`, `plot`, `capacity`, `serve`) accepts both
rooflab's name and the engines' (vLLM: `vllm serve --help`, vllm/engine/arg_utils.py; SGLang:
`python -m sglang.launch_server --help`, python/sglang/srt/server_args.py):

    setting (Deployment field)  rooflab               the engines
    tensor_parallel             --tp, --tensor-parallel   -tp, --tensor-parallel-size (vLLM), --tp-size (SGLang)
    page_size                   --page-size (SGLang's)    --block-size (vLLM)
    kv_cache_dtype              --kv-dtype                --kv-cache-dtype: auto, fp8 (= fp8_e4m3), fp8_e5m2, ...
    dtype                       --dtype                   --dtype auto | bfloat16 | float16 | half | float32 | ...
    gpu_memory_utilization      --gpu-memory-utilization  --mem-fraction-static (SGLang)
    weight_format               --weight-dtype            --quantization (vLLM and SGLang), -q
    max_model_len (no field)    --max-model-len           --max-model-len (vLLM)

Two names of one setting given two values are an error naming both; a name given once is the setting. Which
fields the user set is kept (`given`): an engine mode gives the others the engine's defaults. SGLang's
`--kv-cache-dtype` takes only SGLang's names (engines/vocab.py, SGLANG_KV_CACHE_DTYPES): with `engine` SGLang,
`--kv-cache-dtype fp8` is refused as SGLang refuses it; with `engine` vLLM and a `release`, the names that release
takes only (`--kv-cache-dtype bfloat16` at 0.7.3 refused as its argparse refuses it).

The weights have one vocabulary on every command and under every name of the setting (`--weight-dtype`,
`--quantization`, `-q`; `weights_name` checks it): auto (as shipped), a weight format or dtype by name
(rooflab.dtypes.WeightFormat: bf16, fp8, fp8_block, mxfp4, nvfp4, int4_g128[_zp], nf4[_dq], ...), or an engine's
method for a checkpoint quantised ahead of time (CHECKPOINT_QUANTIZATION: awq, gptq, modelopt, ...). A name outside
it is refused with the same list everywhere. What a name means:

    a format that is no method (nvfp4, fp8_block, int4_g128, bf16, ...)   the linear layers priced in it
    a method that is no format (awq, gptq, modelopt, compressed-tensors, ...)   the checkpoint's own method: the
        model must ship quantised (vLLM refuses a mismatch: "Quantization method specified in the model config
        (...) does not match the quantization method specified in the `quantization` argument (...)",
        vllm/config/model.py, _verify_quantization), and the weights are priced as shipped
    fp8, mxfp4 (both)   under --weight-dtype the format; under --quantization / -q the engines' method: as
        shipped on a quantised checkpoint, and on an unquantised one the format, quantised at load (vLLM's
        `--quantization fp8`: Fp8Config with is_checkpoint_fp8_serialized false, one scale per tensor; mxfp4
        so is rooflab's what-if, the engines reading only mxfp4 checkpoints)

The embeddings and LM head stay in the checkpoint's dtype; rooflab reads a quantised checkpoint's formats from its
config.json (rooflab.hf.quant). `--quantization` and `--weight-dtype` name one setting.

Nothing here prints or reads the command line; the CLI (rooflab/cli/deployment_options.py) fills the words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Union

from .deployment import Deployment
from .errors import InputError, shown
from .limits import MAX_GPUS, MAX_PAGE_SIZE, MAX_TOKENS
from .dtypes import PARAMETRIC_FORMATS
from .specs.model import QUANT_METHOD_ALIASES, QuantMethod
from .units import DType, WeightFormat

#: The engines' --quantization names of a method for checkpoints quantised ahead of time -> the method
#: (specs.QuantMethod, the quant_method a config.json's quantization_config names): each method's own name and its
#: other spellings (specs.QUANT_METHOD_ALIASES: vLLM's kernels for a method count as the method).
CHECKPOINT_QUANTIZATION: dict[str, QuantMethod] = {**{m.value: m for m in QuantMethod}, **QUANT_METHOD_ALIASES}


@dataclass(frozen=True)
class DeploymentWords:
    """A deployment as typed, in rooflab's and the engines' words (module docstring); None: not given.

    Each value is as the option parser left it: counts as int, fractions as float, dtype names as text."""

    tensor_parallel: Optional[int] = None           # --tp, --tensor-parallel
    tensor_parallel_size: Optional[int] = None      # -tp, --tensor-parallel-size, --tp-size
    page_size: Optional[int] = None                 # --page-size
    block_size: Optional[int] = None                # --block-size
    kv_dtype: Optional[str] = None                  # --kv-dtype (rooflab's vocabulary, auto)
    kv_cache_dtype: Optional[str] = None            # --kv-cache-dtype (the engine's names)
    dtype: Optional[str] = None                     # --dtype (auto or a dtype)
    utilization: Optional[float] = None             # --gpu-memory-utilization
    mem_fraction_static: Optional[float] = None     # --mem-fraction-static
    weight_dtype: Optional[str] = None              # --weight-dtype (the weights' one vocabulary: weights_name)
    quantization: Optional[str] = None              # --quantization, -q (the same vocabulary, the engines' meaning)
    max_model_len: Optional[int] = None             # --max-model-len

    def resolve(self, engine=None, checkpoint_quantized: Optional[bool] = None, *, checkpoint=None, release=None,
                **fixed) -> tuple[Deployment, frozenset, "object"]:
        """(the Deployment, the fields the words set, the KV-cache dtype as the engine names it: a KvCacheDtype or
        None). `engine` (engines.vocab.Engine) applies its own refusals (SGLang's --kv-cache-dtype names), at
        `release` (the engine's release as numbers, (0, 7, 3); None: none known) the release's (vLLM's names by
        release, engines/vocab.py VLLM_KV_CACHE_DTYPES);
        `checkpoint` (the ModelSpec served) says whether the model ships quantised and in which method
        (ModelSpec.quantization, quant_method; `checkpoint_quantized` alone says only whether, None: not known):
        --quantization fp8 quantises an unquantised one at load, a method for a quantised checkpoint must be its
        own (_own_method); `fixed` are further Deployment fields."""
        method = None
        if checkpoint is not None:
            checkpoint_quantized, method = bool(checkpoint.quantization), checkpoint.quant_method
        rooflab_kv, engine_kv = self.kv_dtype, self.kv_cache_dtype
        if rooflab_kv or engine_kv:          # engines/ loaded only when a KV dtype is given (the report's start-up)
            from .engines.vocab import kv_cache_dtype_of, parse_kv_cache_dtype

            rooflab_kv = rooflab_kv and kv_cache_dtype_of(DType.or_auto(rooflab_kv, "--kv-dtype"))
            engine_kv = engine_kv and parse_kv_cache_dtype(_text(engine_kv, "--kv-cache-dtype"), engine,
                                                               release=release)
        kv = _one("--kv-dtype", rooflab_kv, "--kv-cache-dtype", engine_kv, key=lambda k: k.dtype)
        weights = _one("--weight-dtype", _weights(self.weight_dtype, "--weight-dtype", checkpoint_quantized, method),
                       "--quantization", _weights(self.quantization, "--quantization", checkpoint_quantized, method))
        values = {
            "tensor_parallel": _one("--tp", _count(self.tensor_parallel, "--tp", MAX_GPUS),
                                    "--tensor-parallel-size", _count(self.tensor_parallel_size,
                                                                     "--tensor-parallel-size", MAX_GPUS)),
            "page_size": _one("--page-size", _count(self.page_size, "--page-size", MAX_PAGE_SIZE),
                              "--block-size", _count(self.block_size, "--block-size", MAX_PAGE_SIZE)),
            "gpu_memory_utilization": _one("--gpu-memory-utilization", _fraction(self.utilization,
                                                                                 "--gpu-memory-utilization"),
                                           "--mem-fraction-static", _fraction(self.mem_fraction_static,
                                                                              "--mem-fraction-static")),
            "kv_cache_dtype": kv.dtype if kv else None,
            "mla_sparse_fp8": True if kv and kv.mla_sparse_fp8 else None,     # fp8_ds_mla: a layout, not a dtype
            "dtype": None if self.dtype is None else DType.or_auto(_text(self.dtype, "--dtype"), "--dtype"),
            "weight_format": None if weights is _AS_SHIPPED else weights,
        }
        chosen = {k: v for k, v in values.items() if v is not None}
        # 'auto' (and --quantization naming the checkpoint's method) is a setting given whose value is the default
        typed = {"kv_cache_dtype": kv, "dtype": self.dtype, "weight_format": weights}
        given = frozenset(chosen) | frozenset(k for k, v in typed.items() if v is not None)
        return Deployment(**{**fixed, **chosen}), given, kv

    @property
    def max_model_len_checked(self) -> Optional[int]:
        """--max-model-len checked (a whole number of tokens in [1, MAX_TOKENS]); None when not given."""
        return _count(self.max_model_len, "--max-model-len", MAX_TOKENS)


#: The result of --quantization naming the checkpoint's own method: weights as shipped.
_AS_SHIPPED = "as shipped"


def weights_name(text, option: str) -> str:
    """`text` checked against the weights' one vocabulary (the module docstring), stripped and lower-cased; an
    InputError naming `option` (none: the caller names it, as click does) and the list otherwise. The methods are
    listed by family (awq_marlin, vLLM's kernel for awq, is taken as awq)."""
    key = _text(text, option).lower()
    if key == "auto" or key in CHECKPOINT_QUANTIZATION:
        return key
    try:
        WeightFormat.of(key, option)
    except InputError:
        methods = ", ".join(sorted(m.value for m in QuantMethod))
        named = ", ".join(f.value for f in WeightFormat if f.value not in DType._value2member_map_)
        raise InputError(f"{option + ' ' if option else ''}{shown(text)} is no format or method rooflab prices: "
                         f"auto, a dtype (bf16, ...), {named}, {PARAMETRIC_FORMATS}; methods: "
                         f"{methods}") from None
    return key


def _weights(text, option: str, checkpoint_quantized: Optional[bool],
             checkpoint_method=None) -> Union[WeightFormat, str, None]:
    """The weights one name of the setting gives (the module docstring): a WeightFormat, _AS_SHIPPED, or None (not
    given). `checkpoint_quantized` None (not known) takes a name that is a format as the format;
    `checkpoint_method` (specs.QuantMethod; None where the spec names none) is the method a method must match."""
    if text is None:
        return None
    if isinstance(text, WeightFormat):
        return text
    if isinstance(text, DType):
        return WeightFormat.of(text)
    key = weights_name(text, option)
    if key == "auto":
        return _AS_SHIPPED
    method = key in CHECKPOINT_QUANTIZATION
    engines_word = option != "--weight-dtype"
    if not method or not engines_word or not checkpoint_quantized:
        try:
            return WeightFormat.of(key, option)
        except InputError:
            pass                                # a method that is no format
    if checkpoint_quantized is False:
        raise InputError(f"{option} {key} reads a checkpoint quantised with {CHECKPOINT_QUANTIZATION[key].value}, "
                         "but this model ships unquantised (no quantization_config): give a format to price it in (fp8, "
                         "nvfp4, int4_g128, ...)")
    _own_method(key, option, checkpoint_method)
    return _AS_SHIPPED


def _own_method(key: str, option: str, checkpoint_method) -> None:
    """Refuse a method that is not the checkpoint's own, as vLLM does (vllm/config/model.py,
    ModelConfig._verify_quantization, v0.11.2): the method is read from the checkpoint's quantization_config, a
    method's override_quantization_method may swap in its own kernels (gptq -> gptq_marlin, awq -> awq_marlin: here
    the family, CHECKPOINT_QUANTIZATION), and a --quantization that still differs raises "Quantization method
    specified in the model config ({quant_method}) does not match the quantization method specified in the
    `quantization` argument ({quantization})". An fp8 checkpoint under --quantization fp8 is the same method. One
    exception there: a modelopt checkpoint's override (ModelOptFp8Config / ModelOptNvFp4Config in modelopt.py)
    replaces any --quantization with modelopt / modelopt_fp4 silently; rooflab refuses that mismatch as well."""
    method = getattr(checkpoint_method, "value", checkpoint_method)
    if method is None or CHECKPOINT_QUANTIZATION[key].value == method:
        return
    short = " (-q)" if option == "--quantization" else ""
    raise InputError(f"{option}{short} {key} does not match the checkpoint's quantization method {method} (its "
                     f"quantization_config's quant_method); the engines refuse the mismatch (vLLM: \"Quantization "
                     f"method specified in the model config ({method}) does not match the quantization method "
                     f"specified in the `quantization` argument ({key})\"): give {method} or auto (as shipped), or "
                     f"price the weights, as rooflab's what-if, {_what_if_hint(key)}")


def _what_if_hint(key: str) -> str:
    """Where a format is priced on a quantised checkpoint (the module docstring): one that is no method under any
    name of the setting; fp8 and mxfp4, also methods, only under --weight-dtype (under -q they are the method)."""
    formats = "in a format that is no method (nvfp4, fp8_block, int4_g128, bf16, ...) under -q or --weight-dtype"
    try:
        WeightFormat.of(key, "")
    except InputError:
        return formats
    return f"{formats}; {key}, a method too, is the format only as --weight-dtype {key}"


def _text(value, option: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{option} must be a name, got {shown(value)}")
    if len(value) > 64:
        raise InputError(f"{option} must be a name of at most 64 characters, got {len(value):,}")
    return value.strip()


def _count(value, option: str, maximum: int) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{option} must be a whole number, got {shown(value)}")
    if not 1 <= value <= maximum:
        raise InputError(f"{option} must be in [1, {maximum:,}], got {value:,}")
    return value


def _fraction(value, option: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{option} must be a finite number in (0, 1], got {shown(value)}")
    if not 0 < value <= 1:
        raise InputError(f"{option} must be in (0, 1], got {value:g}")
    return float(value)


def _one(name_a: str, a, name_b: str, b, key=lambda v: v):
    """The value of a setting given under two names: either one, or both agreeing; else an error naming both."""
    if a is not None and b is not None and key(a) != key(b):
        def text(v):
            return getattr(v, "name", None) or getattr(v, "value", None) or str(v)

        raise InputError(f"{name_a} {text(a)} and {name_b} {text(b)} name one setting with two values; give one")
    return b if b is not None else a


__all__ = ["CHECKPOINT_QUANTIZATION", "DeploymentWords", "weights_name"]

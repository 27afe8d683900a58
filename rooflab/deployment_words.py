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
`--kv-cache-dtype fp8` is refused as SGLang refuses it.

`--quantization` as the engines mean it (vLLM's `--quantization`, vllm/model_executor/layers/quantization/
__init__.py QUANTIZATION_METHODS; SGLang's `--quantization`): `fp8` quantises an unquantised checkpoint's linear
layers to fp8 e4m3 at load (vLLM's Fp8Config with is_checkpoint_fp8_serialized false: one scale per tensor), the
embeddings and LM head left in the checkpoint's dtype; every other method (awq, gptq, gptq_marlin, awq_marlin,
bitsandbytes, compressed-tensors, modelopt, modelopt_fp4, mxfp4, ...) reads a checkpoint already quantised with
that method, whose format rooflab reads from its config.json (rooflab.hf.quant): the value must name the
checkpoint's own method (vLLM refuses a mismatch: "Quantization method specified in the model config (...) does
not match the quantization method specified in the `quantization` argument (...)", vllm/config/model.py,
_verify_quantization), and then the weights are priced as shipped. `--quantization` and rooflab's
`--weight-dtype` name one setting.

Nothing here prints or reads the command line; the CLI (rooflab/cli/deployment_options.py) fills the words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Union

from .deployment import Deployment
from .errors import InputError, shown
from .limits import MAX_GPUS, MAX_PAGE_SIZE, MAX_TOKENS
from .units import DType, WeightFormat

#: vLLM's --quantization values that quantise at load an unquantised checkpoint (the format they give); the
#: other methods read a checkpoint already quantised with them (the module docstring).
ONLINE_QUANTIZATION: dict[str, WeightFormat] = {"fp8": WeightFormat.fp8}
#: The engines' --quantization methods for checkpoints quantised ahead of time, by the quant_method their
#: config.json's quantization_config names (vLLM's kernels for one method count as the method).
CHECKPOINT_QUANTIZATION: dict[str, str] = {
    "awq": "awq", "awq_marlin": "awq", "gptq": "gptq", "gptq_marlin": "gptq", "gptq_marlin_24": "gptq",
    "bitsandbytes": "bitsandbytes", "compressed-tensors": "compressed-tensors", "compressed_tensors":
    "compressed-tensors", "modelopt": "modelopt", "modelopt_fp4": "modelopt", "mxfp4": "mxfp4", "fp8": "fp8",
    "w8a8_fp8": "compressed-tensors", "w8a8_int8": "compressed-tensors"}


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
    weight_dtype: Optional[str] = None              # --weight-dtype (auto, a dtype or a weight format)
    quantization: Optional[str] = None              # --quantization
    max_model_len: Optional[int] = None             # --max-model-len

    def resolve(self, engine=None, checkpoint_quantized: Optional[bool] = None,
                **fixed) -> tuple[Deployment, frozenset, "object"]:
        """(the Deployment, the fields the words set, the KV-cache dtype as the engine names it: a KvCacheDtype or
        None). `engine` (engines.vocab.Engine) applies its own refusals (SGLang's --kv-cache-dtype names);
        `checkpoint_quantized` says whether the model ships quantised (ModelSpec.quantization; None: not known):
        --quantization fp8 quantises an unquantised one at load, a method for a quantised checkpoint needs one
        (the spec keeps its formats, not the method's name, so the method itself is not matched); `fixed` are
        further Deployment fields."""
        rooflab_kv, engine_kv = self.kv_dtype, self.kv_cache_dtype
        if rooflab_kv or engine_kv:          # engines/ loaded only when a KV dtype is given (the report's start-up)
            from .engines.vocab import kv_cache_dtype_of, parse_kv_cache_dtype

            rooflab_kv = rooflab_kv and kv_cache_dtype_of(DType.or_auto(rooflab_kv, "--kv-dtype"))
            engine_kv = engine_kv and parse_kv_cache_dtype(_text(engine_kv, "--kv-cache-dtype"), engine)
        kv = _one("--kv-dtype", rooflab_kv, "--kv-cache-dtype", engine_kv, key=lambda k: k.dtype)
        weights = _one("--weight-dtype", _weight_dtype(self.weight_dtype), "--quantization",
                       _quantization(self.quantization, checkpoint_quantized))
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


def _weight_dtype(text: Optional[str]) -> Union[DType, WeightFormat, str, None]:
    """rooflab's --weight-dtype: auto (as shipped), a dtype, or a weight format by name."""
    if text is None:
        return None
    if isinstance(text, (DType, WeightFormat)):
        return text
    key = _text(text, "--weight-dtype").lower()
    if key == "auto":
        return _AS_SHIPPED
    return WeightFormat.of(key, "--weight-dtype")


def _quantization(text: Optional[str], checkpoint_quantized: Optional[bool]) -> Union[WeightFormat, str, None]:
    """The engines' --quantization (the module docstring): a format to quantise to at load, or _AS_SHIPPED."""
    if text is None:
        return None
    key = _text(text, "--quantization").lower()
    if key in ONLINE_QUANTIZATION and not checkpoint_quantized:
        return ONLINE_QUANTIZATION[key]
    if key not in CHECKPOINT_QUANTIZATION:
        names = ", ".join(sorted(set(ONLINE_QUANTIZATION) | set(CHECKPOINT_QUANTIZATION)))
        raise InputError(f"--quantization {shown(text)} is not a method rooflab prices; choose one of {names}")
    if checkpoint_quantized is False:
        raise InputError(f"--quantization {text} reads a checkpoint quantised with {CHECKPOINT_QUANTIZATION[key]}, "
                         "but this model ships unquantised (no quantization_config): vLLM quantises one at load "
                         "with --quantization fp8 only; rooflab's --weight-dtype prices any format")
    return _AS_SHIPPED


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


__all__ = ["CHECKPOINT_QUANTIZATION", "DeploymentWords", "ONLINE_QUANTIZATION"]

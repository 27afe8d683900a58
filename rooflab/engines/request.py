"""`rooflab capacity --engine ... / --engine-log ...`: the options as typed -> settings -> a Table.

rooflab's own option names and the engines' (vLLM's and SGLang's) are both accepted (rooflab/deployment_words.py,
`DeploymentWords`, which every command shares, resolves them into one Deployment):

    rooflab                      engines
    --kv-dtype bf16              --kv-cache-dtype auto | fp8 (= fp8_e4m3) | fp8_e5m2 | fp8_ds_mla | bfloat16 | ...
    --page-size N                --block-size N
    --tp N, --tensor-parallel    --tensor-parallel-size N, -tp N
    --gpu-memory-utilization X   --mem-fraction-static X (SGLang)

Two names for one setting given different values, options of the other mode (the bound's --shared-prefix with
--engine, --max-num-seqs without it), an engine version of the other engine: each is a one- or two-line error
naming the values. Nothing here prints; the CLI renders the Table.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Optional

from ..capacity.stages import parse_partition
from ..deployment import Deployment
from ..deployment_words import DeploymentWords
from ..errors import InputError
from ..load import load_gpu, load_model
from ..output import Table
from ..units import DType, GiB, parse_bytes, parse_count
from .profile import V1_FLASHINFER_SAMPLER_RELEASES
from .settings import EngineSettings
from .vocab import (Engine, KvCacheDtype, image_limit, label_release, parse_engine, parse_engine_version,
                    parse_kv_cache_dtype,
                    parse_mamba_cache_mode, span_text)

#: Options that only the engine modes read (as the CLI names its parameters).
ENGINE_ONLY = {"engine_version": "--engine-version", "what_if": "--what-if", "max_num_seqs": "--max-num-seqs",
               "max_num_batched_tokens": "--max-num-batched-tokens", "cuda_visible": "--cuda-visible-memory",
               "non_torch_gib": "--non-torch-gib", "activation_gib": "--activation-gib",
               "memory_in_use": "--memory-in-use", "mamba_ssm_dtype": "--mamba-ssm-dtype",
               "mamba_cache_mode": "--mamba-cache-mode", "max_mamba_cache_size": "--max-mamba-cache-size",
               "mamba_full_memory_ratio": "--mamba-full-memory-ratio", "enable_lora": "--enable-lora",
               "max_loras": "--max-loras", "max_lora_rank": "--max-lora-rank", "no_flashinfer": "--no-flashinfer",
               "vllm_use_v1": "--vllm-use-v1", "enforce_eager": "--enforce-eager / --disable-cuda-graph",
               "max_total_tokens": "--max-total-tokens", "num_gpu_blocks_override": "--num-gpu-blocks-override",
               "kv_cache_memory": "--kv-cache-memory-bytes", "limit_mm_per_prompt": "--limit-mm-per-prompt",
               "skip_mm_profiling": "--skip-mm-profiling"}
#: --what-if changes a logged run's settings: it needs --engine-log, where --engine alone is not enough.
WHAT_IF_NEEDS_LOG = ("--what-if applies with --engine-log only (FILE, a start-up log: it changes the logged run's "
                     "settings; with --engine give the options directly)")
#: The linear-attention options, and the engine each belongs to (None: both).
STATE_OPTIONS = {"mamba_ssm_dtype": ("--mamba-ssm-dtype", None), "mamba_cache_mode": ("--mamba-cache-mode", Engine.vllm),
                 "max_mamba_cache_size": ("--max-mamba-cache-size", Engine.sglang),
                 "mamba_full_memory_ratio": ("--mamba-full-memory-ratio", Engine.sglang)}
#: Options of rooflab's bound that an engine's accounting has no place for.
BOUND_ONLY = {"context_len": "--context-len", "reserve_gib": "--activation-reserve-gib",
              "shared_prefix": "--shared-prefix", "window_allocation": "--window-allocation",
              "weight_dtype": "--weight-dtype"}


@dataclass(frozen=True)
class EngineOptions:
    """The `capacity` options the engine modes read: the deployment, which of its fields the user set (the rest
    take the engine's defaults), and what only an engine has (None: not given)."""

    model: str
    gpu: str
    deployment: Deployment = Deployment()
    given: frozenset = frozenset()                  # Deployment fields set on the command line
    kv_cache: Optional[KvCacheDtype] = None         # the KV-cache dtype as the engine names it (fp8_ds_mla too)
    engine: Optional[str] = None
    engine_version: Optional[str] = None
    engine_log: Optional[str] = None
    what_if: tuple[str, ...] = ()
    max_model_len: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    cuda_visible: Optional[str] = None
    non_torch_gib: Optional[float] = None
    activation_gib: Optional[float] = None
    mem_fraction_static: Optional[float] = None     # SGLang's spelling of the utilisation, if that was typed
    memory_in_use: Optional[str] = None             # a size: GPU memory other processes hold at start
    mamba_ssm_dtype: Optional[str] = None
    mamba_cache_mode: Optional[str] = None
    max_mamba_cache_size: Optional[int] = None
    mamba_full_memory_ratio: Optional[float] = None
    enable_lora: bool = False
    max_loras: Optional[int] = None
    max_lora_rank: Optional[int] = None
    pp_layer_partition: Optional[str] = None        # --pp-layer-partition 40,40 (the engines' environment variable)
    no_flashinfer: bool = False                     # vLLM without FlashInfer installed (its sampler: profile.py)
    vllm_use_v1: Optional[bool] = None              # VLLM_USE_V1 (None: unset): V0 or V1 at a release that ships both
    enforce_eager: bool = False                     # vLLM --enforce-eager, SGLang --disable-cuda-graph
    max_total_tokens: Optional[int] = None          # SGLang --max-total-tokens
    num_gpu_blocks_override: Optional[int] = None   # vLLM --num-gpu-blocks-override
    kv_cache_memory: Optional[str] = None           # vLLM --kv-cache-memory-bytes, as typed (parse_kv_cache_memory)
    limit_mm_per_prompt: Optional[str] = None       # vLLM --limit-mm-per-prompt '{"image": N}' (parse_mm_limit)
    skip_mm_profiling: bool = False                 # vLLM --skip-mm-profiling


def wants_engine(given: set[str]) -> bool:
    """Whether the options given on the command line ask for an engine mode."""
    return bool({"engine", "engine_log"} & given)


def check_modes(given: set[str]) -> None:
    """Refuse options of the mode not asked for (names as the CLI spells them)."""
    if wants_engine(given):
        wrong = [flag for name, flag in BOUND_ONLY.items() if name in given]
        if wrong:
            raise InputError(f"{', '.join(wrong)} {_verb(wrong)} to rooflab's bound (no --engine) only; an engine "
                             "sizes its cache its own way (--max-model-len sets the request length it reports)")
        return
    if "what_if" in given:                  # the stricter need first: --engine alone is refused in turn
        raise InputError(WHAT_IF_NEEDS_LOG)
    wrong = [flag for name, flag in ENGINE_ONLY.items() if name in given]
    if wrong:
        raise InputError(f"{', '.join(wrong)} {_verb(wrong)} with --engine or --engine-log only")


def _verb(flags: list[str]) -> str:
    return "applies" if len(flags) == 1 else "apply"


def engine_table_for(o: EngineOptions, given: set[str]) -> Table:
    """The Table `rooflab capacity` prints in an engine mode (module docstring)."""
    from .tables import engine_table, explanation_table

    check_modes(given)
    model, gpu = load_model(o.model), load_gpu(o.gpu)
    if o.engine_log is None:
        _engine_names(o, parse_engine(o.engine), given)
        if o.what_if:
            raise InputError(WHAT_IF_NEEDS_LOG)
        _state_options(o, parse_engine(o.engine), model)
        from . import engine_capacity

        return engine_table(engine_capacity(model, gpu, _settings(o, parse_engine(o.engine))))
    if "model" not in given:
        raise InputError("--engine-log needs --model: the model the logged run served")
    if o.deployment.pipeline_parallel > 1 or o.pp_layer_partition is not None:
        raise InputError("--pp with --engine-log: a logged run's pipeline stages are not explained yet (each stage "
                         "has its own layers and blocks); --pp applies to --engine predictions")
    from .explain import check_generation, explain_log
    from .logs import read_log

    log = read_log(o.engine_log, accounting=_known_accounting(o, given))
    engine = parse_engine(o.engine) if o.engine else log.engine
    _engine_names(o, engine, given)
    _state_options(o, engine, model)
    settings = _settings(o, engine, "--engine" if o.engine else f"--engine-log {log.name}'s engine")
    if o.vllm_use_v1 is not None:
        check_generation(log, o.vllm_use_v1, f"--vllm-use-v1 {int(o.vllm_use_v1)}")
    fields = {"accounting": "engine_version", "tensor_parallel": ("tensor_parallel", "tensor_parallel_size"),
              "max_model_len": "max_model_len", "utilization": ("utilization", "mem_fraction_static"),
              "block_size": ("page_size", "block_size"), "kv_cache_dtype": ("kv_dtype", "kv_cache_dtype"),
              "enforce_eager": "enforce_eager", "max_total_tokens": "max_total_tokens",
              "num_gpu_blocks_override": "num_gpu_blocks_override", "kv_cache_memory_bytes": "kv_cache_memory",
              "flashinfer_installed": "no_flashinfer", "limit_mm_per_prompt": "limit_mm_per_prompt",
              "skip_mm_profiling": "skip_mm_profiling"}
    chosen = frozenset(f for f, names in fields.items() if set((names,) if isinstance(names, str) else names) & given)
    x = explain_log(log, model, gpu, settings, parse_what_if(o.what_if, engine), chosen)
    return explanation_table(dataclasses.replace(x, changes=tuple(o.what_if)) if o.what_if else x)


def _known_accounting(o: EngineOptions, given: set[str]):
    """The vLLM accounting --engine-version / --vllm-use-v1 name, for the log reader (logs.parse_startups: vLLM V1's
    concurrency line alone is read only with it); None without them, under --engine sglang, or where they do not
    name a vLLM version (the reader then refuses such a log, naming --engine-version)."""
    if not ({"engine_version", "vllm_use_v1"} & given) or (o.engine and parse_engine(o.engine) is not Engine.vllm):
        return None
    try:
        return parse_engine_version(Engine.vllm, o.engine_version, o.vllm_use_v1, "--engine-version").accounting
    except InputError:
        return None


def _engine_names(o: EngineOptions, engine: Engine, given: set[str]) -> None:
    """The engine's own refusals of its options' values, once the engine is known (from --engine or the log):
    SGLang's --kv-cache-dtype takes SGLang's names only (fp8, fp16, float16 refused: engines/vocab.py), and a vLLM
    release given (--engine-version: a release, or a label's, label_release) the names that release takes
    (vocab.VLLM_KV_CACHE_DTYPES: bfloat16 refused at 0.7.3)."""
    if o.kv_cache is not None and "kv_cache_dtype" in given:
        parse_kv_cache_dtype(o.kv_cache.name, engine, release=_given_release(o, engine))


def _given_release(o: EngineOptions, engine: Engine) -> "tuple[int, ...] | None":
    """The vLLM release --engine-version names (a label's: label_release), None without --engine-version or under
    another engine."""
    if o.engine_version is None or engine is not Engine.vllm:
        return None
    version = parse_engine_version(engine, o.engine_version, o.vllm_use_v1, "--engine-version")
    return version.release or label_release(version.accounting)


def _state_options(o: EngineOptions, engine: Engine, model) -> None:
    """The linear-attention options need a model with linear layers, and the engine they belong to."""
    for field, (flag, owner) in STATE_OPTIONS.items():
        if getattr(o, field) is None:
            continue
        if owner is not None and owner is not engine:
            raise InputError(f"{flag} is {owner.title}'s; {engine.title} has no such option")
        if all(t.is_attention for t in model.layer_types.values()):
            raise InputError(f"{flag} applies to models with linear-attention layers; {model.name} has none")


def parse_state_dtype(text: str):
    """--mamba-ssm-dtype: auto (None: the engine's default), float32, bfloat16 or float16 (and their short names)."""
    key = str(text).strip().lower()
    if key == "auto":
        return None
    try:
        dtype = DType.of(key, "--mamba-ssm-dtype")
    except InputError:
        dtype = None
    if dtype not in (DType.fp32, DType.bf16, DType.fp16):
        raise InputError(f"--mamba-ssm-dtype '{text}': choose auto, float32, bfloat16 or float16")
    return dtype


def _settings(o: EngineOptions, engine: Engine, engine_from: str = "--engine") -> EngineSettings:
    """EngineSettings from the options: the deployment's fields the user set, the engine's defaults for the rest;
    `engine_from` names where the engine came from (--engine, or the log's), for the errors."""
    version = parse_engine_version(engine, o.engine_version, o.vllm_use_v1, engine_from)
    if o.no_flashinfer and engine is not Engine.vllm:
        raise InputError(f"--no-flashinfer is vLLM's (its V1 sampler, {span_text(V1_FLASHINFER_SAMPLER_RELEASES)}); "
                         "SGLang has no such setting")
    if o.mem_fraction_static is not None and engine is Engine.vllm:
        raise InputError(f"--mem-fraction-static {o.mem_fraction_static:g} is SGLang's; vLLM's is "
                         "--gpu-memory-utilization")
    d = o.deployment
    return EngineSettings(
        accounting=version.accounting, release=version.release, tensor_parallel=d.tensor_parallel,
        kv_cache_dtype=o.kv_cache or KvCacheDtype("auto", None),
        block_size=d.page_size if "page_size" in o.given else None, max_model_len=o.max_model_len,
        utilization=d.gpu_memory_utilization if "gpu_memory_utilization" in o.given else None,
        max_num_batched_tokens=o.max_num_batched_tokens, cuda_visible_bytes=_size(o.cuda_visible),
        activation_bytes=None if o.activation_gib is None else int(o.activation_gib * GiB),
        non_torch_bytes=None if o.non_torch_gib is None else int(o.non_torch_gib * GiB),
        dtype=d.dtype if "dtype" in o.given else None,
        weight_format=d.weight_format if "weight_format" in o.given else None,
        expert_parallel=d.expert_parallel, attention_data_parallel=d.attention_data_parallel,
        memory_in_use_bytes=_size(o.memory_in_use, "--memory-in-use") or 0,
        mamba_ssm_dtype=None if o.mamba_ssm_dtype is None else parse_state_dtype(o.mamba_ssm_dtype),
        mamba_cache_mode=parse_mamba_cache_mode(o.mamba_cache_mode or "none"),
        max_mamba_cache_size=o.max_mamba_cache_size, mamba_full_memory_ratio=o.mamba_full_memory_ratio,
        enable_lora=o.enable_lora, max_loras=o.max_loras, max_lora_rank=o.max_lora_rank,
        pipeline_parallel=d.pipeline_parallel, pp_layer_partition=parse_partition(o.pp_layer_partition),
        flashinfer_installed=not o.no_flashinfer, enforce_eager=o.enforce_eager, max_total_tokens=o.max_total_tokens,
        num_gpu_blocks_override=o.num_gpu_blocks_override,
        kv_cache_memory_bytes=None if o.kv_cache_memory is None else parse_kv_cache_memory(o.kv_cache_memory),
        limit_mm_per_prompt=parse_mm_limit(o.limit_mm_per_prompt), skip_mm_profiling=o.skip_mm_profiling,
        **_seqs(o.max_num_seqs, engine))


def parse_mm_limit(text: str | None) -> int | None:
    """vLLM's --limit-mm-per-prompt as typed, a JSON object ('{"image": 0}'), to the images a prompt may hold
    (vocab.image_limit, which a log's stated limit is read by too; None where not given)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return image_limit(value, f"--limit-mm-per-prompt {text!r}")


#: vLLM's human_readable_int, the type of --kv-cache-memory-bytes (vllm/engine/arg_utils.py: get_kwargs gives
#: max_model_len, max_num_batched_tokens and kv_cache_memory_bytes that type): a whole number, or a number and one
#: suffix, k m g t decimal (10^3 - 10^12, decimals allowed: '25.6k' is 25,600), K M G T binary (2^10 - 2^40, whole
#: numbers only: '1.5G' is refused, '1K' is 1,024). v0.11.0's has no t or T; later ones do.
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kmgtKMGT]?)")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_kv_cache_memory(text: str) -> int:
    """--kv-cache-memory-bytes as vLLM reads it (_HUMAN_INT): '8G' is 8 GiB, '8g' 8 x 10^9 bytes, '8589934592' itself;
    anything else is an InputError naming the option."""
    value = str(text).strip()
    match = _HUMAN_INT.fullmatch(value)
    if match is None:
        raise InputError(f"--kv-cache-memory-bytes '{text}': give bytes as vLLM reads them: a whole number or one with "
                         "a suffix, k m g t (10^3 ...) or K M G T (2^10 ...): 8G, 8589934592, 25.6g")
    number, suffix = match.groups()
    if suffix in _DECIMAL:
        return int(float(number) * _DECIMAL[suffix])
    if "." in number:
        hint = f"with binary suffixes like {suffix}; did you mean {number}{suffix.lower()}?" if suffix else \
            "without a decimal suffix (k m g t)"
        raise InputError(f"--kv-cache-memory-bytes '{text}': vLLM takes no decimals {hint}")
    return int(number) * _BINARY.get(suffix, 1)


def _seqs(value: Optional[int], engine: Engine) -> dict:
    """--max-num-seqs is vLLM's profile-run sequences and SGLang's --max-running-requests."""
    return {"max_num_seqs": value} if engine is Engine.vllm else {"max_running_requests": value}


def _size(text: Optional[str], option: str = "--cuda-visible-memory") -> Optional[int]:
    if text is None:
        return None
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


#: --what-if keys: the engines' names and rooflab's, each to an EngineSettings field.
_WHAT_IF = {"kv-cache-dtype": "kv_cache_dtype", "kv-dtype": "kv_cache_dtype", "tp": "tensor_parallel",
            "tensor-parallel-size": "tensor_parallel", "tensor-parallel": "tensor_parallel",
            "block-size": "block_size", "page-size": "block_size", "max-model-len": "max_model_len",
            "gpu-memory-utilization": "utilization", "mem-fraction-static": "utilization",
            "memory-in-use": "memory_in_use_bytes", "enforce-eager": "enforce_eager",
            "disable-cuda-graph": "enforce_eager", "max-total-tokens": "max_total_tokens",
            "num-gpu-blocks-override": "num_gpu_blocks_override", "kv-cache-memory-bytes": "kv_cache_memory_bytes",
            "kv-cache-memory": "kv_cache_memory_bytes"}
#: --what-if enforce-eager=... : the words a flag's value may be.
_FLAG_WORDS = {"true": True, "1": True, "false": False, "0": False}


def parse_what_if(items: tuple[str, ...] | list[str], engine: Engine | None = None) -> dict:
    """['kv-cache-dtype=fp8', 'tp=2'] -> EngineSettings changes; unknown keys, bad values, a setting twice: errors.
    `engine` applies its refusals (SGLang's kv-cache-dtype names)."""
    changes: dict = {}
    for item in items or ():
        key, sep, value = str(item).partition("=")
        key = key.strip().lstrip("-").lower().replace("_", "-")
        if not sep or key not in _WHAT_IF:
            raise InputError(f"--what-if '{item}': give KEY=VALUE with KEY one of {', '.join(_WHAT_IF)}")
        field = _WHAT_IF[key]
        if field in changes:
            raise InputError(f"--what-if '{item}': {field.replace('_', '-')} is already set by another --what-if")
        changes[field] = _what_if_value(field, value.strip(), item, engine)
    return changes


def _what_if_value(field: str, value: str, item: str, engine: Engine | None = None):
    try:
        if field == "kv_cache_dtype":
            return parse_kv_cache_dtype(value, engine)
        if field == "memory_in_use_bytes":
            return parse_bytes(value)
        if field == "kv_cache_memory_bytes":
            return parse_kv_cache_memory(value)
        if field == "enforce_eager":
            if value.lower() not in _FLAG_WORDS:
                raise ValueError(f"{value!r} is not true, false, 1 or 0")
            return _FLAG_WORDS[value.lower()]
        if field == "utilization":
            number = float(value)
            if not 0 < number <= 1:
                raise ValueError(f"{value} is not in (0, 1]")
            return number
        number = parse_count(value)
        if number < 1:
            raise ValueError(f"{value} is below 1")
        return number
    except (ValueError, InputError) as exc:
        raise InputError(f"--what-if '{item}': {exc}") from None


#: The old names (they returned a text Table, not a pandas frame), kept for one release.
engine_frame_for = engine_table_for

__all__ = ["BOUND_ONLY", "ENGINE_ONLY", "DeploymentWords", "EngineOptions", "check_modes", "engine_table_for",
           "parse_kv_cache_memory", "parse_what_if",
           "wants_engine"]

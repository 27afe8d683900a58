"""An engine's settings as the user gives them (EngineSettings) and as the engine resolves them (Resolved).

Defaults follow the engines' source, per accounting (vocab.Accounting):

    block size               vLLM 16 (vllm v0.2.4 and v0.6.4 vllm/engine/arg_utils.py); SGLang page_size 1
    gpu_memory_utilization   0.9 up to vLLM v0.19.x; 0.92 in V1 from v0.20.0 (vllm v0.19.1 vllm/config/cache.py
                             CacheConfig.gpu_memory_utilization Field(default=0.9); v0.20.0, v0.22.1, v0.24.0 and
                             v0.29.0 default=0.92), where a release is given (vllm.py default_utilization)
    max_num_seqs             V0: 256 (vllm v0.2.4 arg_utils.py; "Set max_num_seqs to 256 for VLLM_V0" in
                             _set_default_args_v0); V1 (`vllm serve`): 1024 on GPUs of 70 GiB or more that are not
                             A100s, else 256 (vllm v0.10.0 vllm/engine/arg_utils.py, _set_default_args_v1;
                             v0.8.x: 70 GiB or more, A100s too, at 48cb2109b)
    max_num_batched_tokens   V0: max(max_model_len, 2048) (vllm v0.2.4 vllm/config.py); chunked prefill, switched on
                             for max_model_len > 32,768 without sliding windows (_set_default_args_v0), schedules
                             512 tokens in v0.6.4 and 2048 from v0.6.5 (_DEFAULT_MAX_NUM_BATCHED_TOKENS in
                             vllm/config.py); V1 (`vllm serve`): 8192 on GPUs of 70 GiB or more that are not A100s,
                             else 2048 (same function), and max_num_seqs at most max_num_batched_tokens
    CUDA-visible total       --cuda-visible-memory, else the GPU YAML's cuda_visible_bytes, else the nvidia-smi
                             total less 0.45 GiB (the gap on H100 (0.43), RTX 3090 (0.42) and RTX 4090 (0.44);
                             0.68 GiB on A100-80GB), marked as estimated
    mem_fraction_static      sglang.py (by version, TP size and GPU memory)
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, Optional

from ..cost.common import check_flag, real_number, whole_number
from ..errors import InputError, shown
from ..limits import MAX_GPUS, MAX_PAGE_SIZE, MAX_TOKENS
from ..specs import GpuSpec, ModelSpec
from ..capacity.stages import check_partition
from ..capacity.weight_split import check_dp_attention_engine
from ..dtypes import WeightFormat
from ..units import GiB, DType, fmt_bytes
from ..vocab import RELEASE_PART_LIMIT, release_of
from .vocab import (Accounting, Engine, KvCacheDtype, LogprobsMode, MambaCacheMode, in_range, label_release,
                    parse_logprobs_mode, parse_mamba_cache_mode, release_text)

#: nvidia-smi's total less this is the CUDA-visible total rooflab assumes when a GPU YAML gives none.
DRIVER_RESERVE_BYTES = int(0.45 * GiB)
#: The first vLLM release with --kv-cache-memory-bytes: vllm#21489 (commit 94e6b2d, 2025-09-11) landed after
#: v0.10.2 branched (released 2025-09-13), so v0.11.0 (2025-10-02) is the first to ship it.
KV_CACHE_MEMORY_RELEASE = (0, 11, 0)
#: The first vLLM release with --skip-mm-profiling: v0.10.1 (vllm 0.10.1 vllm/engine/arg_utils.py:354 the field,
#: :734 the option; 0.10.0's arg_utils.py has neither), read by V1's model runner only (0.10.1
#: vllm/v1/worker/gpu_model_runner.py:2569; nothing under V0's vllm/worker/ reads it).
SKIP_MM_PROFILING_RELEASE = (0, 10, 1)
#: vLLM V1's options that arrived after V1 did: the first release with each and where that is read from.
V1_OPTION_RELEASES = {"kv_cache_memory_bytes": (KV_CACHE_MEMORY_RELEASE, "vllm#21489"),
                      "skip_mm_profiling": (SKIP_MM_PROFILING_RELEASE, "vllm 0.10.1 arg_utils.py:354")}
#: V1's large-GPU defaults apply from this much device memory (vllm arg_utils.py: 70 * GiB_bytes).
LARGE_GPU_BYTES = 70 * GiB


@dataclass(frozen=True)
class EngineSettings:
    """What the user asked for; None means the engine's default (see the module docstring)."""

    accounting: Accounting
    tensor_parallel: int = 1
    kv_cache_dtype: KvCacheDtype = KvCacheDtype("auto", None)
    block_size: Optional[int] = None
    max_model_len: Optional[int] = None
    utilization: Optional[float] = None          # gpu_memory_utilization (vLLM) or mem_fraction_static (SGLang)
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    cuda_visible_bytes: Optional[int] = None
    activation_bytes: Optional[int] = None       # overrides the modelled profile-run peak
    non_torch_bytes: Optional[int] = None        # overrides the default non-torch memory
    dtype: Optional[DType] = None                # --dtype (None: auto, as the engine loads the checkpoint)
    #: GPUs an expert layer spans (vLLM --enable-expert-parallel: TP x DP; SGLang --ep-size); each GPU holds
    #: 1/EP of the routed experts, whole (vllm/model_executor/layers/fused_moe/layer.py, determine_expert_map)
    expert_parallel: int = 1
    #: SGLang's --enable-dp-attention with --dp N: attention runs N ways data-parallel inside the TP group, each
    #: rank with TP / N of the attention heads (python/sglang/srt/layers/dp_attention.py, compute_dp_attention_
    #: world_info: attn_tp_size = tp_size // dp_size); vLLM's --data-parallel-size needs no field here: every
    #: DP rank is an engine of its own with the same per-GPU cache
    attention_data_parallel: int = 1
    weight_format: Optional[object] = None       # --quantization fp8 on an unquantised checkpoint (None: as shipped)
    #: GPU memory other processes hold when the engine starts (--memory-in-use): vLLM V1 refuses to start when
    #: what is free is below u x total; SGLang's fraction applies to what is free (vllm.py, sglang.py)
    memory_in_use_bytes: int = 0
    #: Linear-attention state caches (states.py): the recurrent state's dtype (None: the engine's default),
    #: vLLM's --mamba-cache-mode, SGLang's --max-mamba-cache-size and --mamba-full-memory-ratio (None: 0.9)
    mamba_ssm_dtype: Optional[DType] = None
    mamba_cache_mode: MambaCacheMode = MambaCacheMode.none
    max_mamba_cache_size: Optional[int] = None
    mamba_full_memory_ratio: Optional[float] = None
    #: SGLang's --max-running-requests (None: derived from the pool, sglang.py)
    max_running_requests: Optional[int] = None
    #: --enable-lora: the adapters' preallocated buffers (lora.py), N slots (vLLM --max-loras, SGLang
    #: --max-loras-per-batch) of --max-lora-rank (None: the engine's defaults)
    enable_lora: bool = False
    max_loras: Optional[int] = None
    max_lora_rank: Optional[int] = None
    #: --pp: pipeline stages, each its own layers, weights and KV cache (vllm.py, sglang.py; capacity/stages.py);
    #: --pp-layer-partition: the layers of each stage (VLLM_PP_LAYER_PARTITION; None: the engine's rule)
    pipeline_parallel: int = 1
    pp_layer_partition: Optional[tuple[int, ...]] = None
    #: The engine's release inside the accounting's range ('0.15.0' or (0, 15, 0); vocab.RELEASE_RANGE; a numeric
    #: --engine-version sets it), where the terms differ inside it (profile.py: vLLM V1's sampler sorts before
    #: v0.17, its MoE workspaces are kept from v0.14; sglang.py: mem_fraction_static by release); None: the one
    #: release the accounting's label stands for (vocab.label_release: its newest, v1's v0.19.x, sglang-v0.4's v0.4.5)
    release: Optional[tuple[int, ...]] = None
    #: FlashInfer importable beside vLLM (--no-flashinfer: not): V1 v0.9.1 - v0.11.0 then sample with its top-k /
    #: top-p kernels on NVIDIA GPUs (profile.py); True as the official Docker image ships it (docker/Dockerfile
    #: installs FlashInfer on every platform but arm64), where `pip install vllm` leaves it an extra
    flashinfer_installed: bool = True
    #: vLLM's VLLM_USE_FLASHINFER_SAMPLER (None: unset): with FlashInfer installed, True samples with its top-k /
    #: top-p kernels from v0.9.1 to v0.16.x (v0.11.1 on it is opt-in: vllm 0.11.2 topk_topp_sampler.py:34), False
    #: never (0.10.0 topk_topp_sampler.py:40 `is not False`); profile.py. Unsloth sets it (1 from compute
    #: capability 8.0 or vLLM 0.11.0, else 0) wherever flashinfer imports (unsloth_zoo 2025.11.6 vllm_utils.py:
    #: 1806-1813). V0's sampler, which reads it too, is not modelled with it
    use_flashinfer_sampler: Optional[bool] = None
    #: vLLM V1's --logprobs-mode: a processed mode keeps the native sampler from v0.10.2 (vocab.LogprobsMode)
    logprobs_mode: LogprobsMode = LogprobsMode.raw_logprobs
    #: vLLM's --enforce-eager, SGLang's --disable-cuda-graph: no CUDA graphs are captured, so none is charged
    #: (vllm.py: V1's profiled graph estimate from v0.20.0 is 0; sglang.py: its fraction does not change)
    enforce_eager: bool = False
    #: SGLang's --max-total-tokens: the token pool capped at it, floored to the page (sglang.py)
    max_total_tokens: Optional[int] = None
    #: vLLM's --num-gpu-blocks-override: the KV blocks set to it once sized (vllm.py)
    num_gpu_blocks_override: Optional[int] = None
    #: vLLM V1's --kv-cache-memory-bytes (from KV_CACHE_MEMORY_RELEASE): the KV cache memory as given, profiling
    #: skipped and gpu_memory_utilization ignored for sizing (vllm.py)
    kv_cache_memory_bytes: Optional[int] = None
    #: vLLM's --limit-mm-per-prompt '{"image": N}': the images a prompt may hold (None: vLLM's 999); 0 runs a
    #: vision-language model text-only, with no multimodal profile run (profile.py encoder_cache)
    limit_mm_per_prompt: Optional[int] = None
    #: vLLM's --skip-mm-profiling: the profile run leaves the multimodal encoder and its cache out (profile.py);
    #: V1's, from SKIP_MM_PROFILING_RELEASE
    skip_mm_profiling: bool = False

    #: The option each setting comes from, named in its errors (a what-if sets the same ones).
    OPTIONS: ClassVar[dict[str, str]] = {
        "tensor_parallel": "--tp", "block_size": "--block-size", "max_model_len": "--max-model-len",
        "max_num_seqs": "--max-num-seqs", "max_num_batched_tokens": "--max-num-batched-tokens",
        "cuda_visible_bytes": "--cuda-visible-memory", "activation_bytes": "--activation-gib",
        "non_torch_bytes": "--non-torch-gib", "expert_parallel": "--ep / --enable-expert-parallel",
        "attention_data_parallel": "--enable-dp-attention --dp", "memory_in_use_bytes": "--memory-in-use",
        "max_mamba_cache_size": "--max-mamba-cache-size", "max_running_requests": "--max-running-requests",
        "max_loras": "--max-loras", "max_lora_rank": "--max-lora-rank", "pipeline_parallel": "--pp",
        "enable_lora": "--enable-lora", "pp_layer_partition": "--pp-layer-partition",
        "utilization": "--gpu-memory-utilization / --mem-fraction-static", "kv_cache_dtype": "--kv-cache-dtype",
        "dtype": "--dtype", "weight_format": "--quantization", "mamba_full_memory_ratio": "--mamba-full-memory-ratio",
        "mamba_cache_mode": "--mamba-cache-mode", "mamba_ssm_dtype": "--mamba-ssm-dtype",
        "release": "EngineSettings.release", "flashinfer_installed": "--no-flashinfer",
        "use_flashinfer_sampler": "VLLM_USE_FLASHINFER_SAMPLER", "logprobs_mode": "--logprobs-mode",
        "enforce_eager": "--enforce-eager / --disable-cuda-graph", "max_total_tokens": "--max-total-tokens",
        "num_gpu_blocks_override": "--num-gpu-blocks-override", "kv_cache_memory_bytes": "--kv-cache-memory-bytes",
        "limit_mm_per_prompt": "--limit-mm-per-prompt", "skip_mm_profiling": "--skip-mm-profiling"}

    def _label(self, name: str) -> str:
        return f"{name.replace('_', ' ')} ({self.OPTIONS[name]})"

    def __post_init__(self) -> None:
        self._check_kinds()
        whole_number(self.tensor_parallel, self._label("tensor_parallel"), maximum=MAX_GPUS)
        whole_number(self.expert_parallel, self._label("expert_parallel"), maximum=MAX_GPUS)
        whole_number(self.attention_data_parallel, self._label("attention_data_parallel"), maximum=MAX_GPUS)
        whole_number(self.pipeline_parallel, self._label("pipeline_parallel"), maximum=MAX_GPUS)
        if self.pp_layer_partition is not None and self.pipeline_parallel == 1:
            raise InputError("--pp-layer-partition applies with --pp 2 or more")
        if self.tensor_parallel % self.attention_data_parallel:
            raise InputError(f"--dp {self.attention_data_parallel} must divide --tp {self.tensor_parallel} with "
                             "--enable-dp-attention (SGLang's server_args.py check)")
        check_dp_attention_engine(self.accounting.engine, self.attention_data_parallel)
        for name, hi in (("block_size", MAX_PAGE_SIZE), ("max_model_len", MAX_TOKENS), ("max_num_seqs", MAX_TOKENS),
                         ("max_num_batched_tokens", MAX_TOKENS)):
            value = getattr(self, name)
            if value is not None:
                whole_number(value, self._label(name), maximum=hi)
        if self.utilization is not None:
            real_number(self.utilization, f"memory utilisation ({self.OPTIONS['utilization']})", 0, 1, lo_open=True)
        whole_number(self.memory_in_use_bytes, self._label("memory_in_use_bytes"), minimum=0, maximum=1 << 50)
        for name in ("cuda_visible_bytes", "activation_bytes", "non_torch_bytes"):
            value = getattr(self, name)
            if value is not None:
                whole_number(value, self._label(name), minimum=0, maximum=1 << 50)
        for name, hi in (("max_mamba_cache_size", MAX_TOKENS), ("max_running_requests", MAX_TOKENS),
                         ("max_loras", 1024), ("max_lora_rank", 4096)):
            if getattr(self, name) is not None:
                whole_number(getattr(self, name), self._label(name), maximum=hi)
        check_flag(self.enable_lora, self._label("enable_lora"))
        check_flag(self.skip_mm_profiling, self._label("skip_mm_profiling"))
        if self.limit_mm_per_prompt is not None:
            whole_number(self.limit_mm_per_prompt, self._label("limit_mm_per_prompt"), minimum=0, maximum=MAX_TOKENS)
        check_flag(self.flashinfer_installed, self._label("flashinfer_installed"))
        if self.use_flashinfer_sampler is not None:
            check_flag(self.use_flashinfer_sampler, self._label("use_flashinfer_sampler"))
        self._check_sizing_options()
        if not self.enable_lora and (self.max_loras is not None or self.max_lora_rank is not None):
            raise InputError("--max-loras and --max-lora-rank apply with --enable-lora")
        ratio = self.mamba_full_memory_ratio
        if ratio is not None:
            real_number(ratio, self._label("mamba_full_memory_ratio"), 0, 100, lo_open=True)
        if isinstance(self.logprobs_mode, str) and not isinstance(self.logprobs_mode, LogprobsMode):
            object.__setattr__(self, "logprobs_mode", parse_logprobs_mode(self.logprobs_mode))
        if not isinstance(self.logprobs_mode, LogprobsMode):
            raise InputError(f"logprobs mode (--logprobs-mode) must be a LogprobsMode or its name, got "
                             f"{shown(self.logprobs_mode)}")
        if isinstance(self.mamba_cache_mode, str) and not isinstance(self.mamba_cache_mode, MambaCacheMode):
            object.__setattr__(self, "mamba_cache_mode", parse_mamba_cache_mode(self.mamba_cache_mode))
        if not isinstance(self.mamba_cache_mode, MambaCacheMode):
            raise InputError(f"mamba cache mode (--mamba-cache-mode) must be none or align, got {shown(self.mamba_cache_mode)}")
        if isinstance(self.mamba_ssm_dtype, str) and not isinstance(self.mamba_ssm_dtype, DType):
            object.__setattr__(self, "mamba_ssm_dtype", DType.of(self.mamba_ssm_dtype, "--mamba-ssm-dtype"))
        if self.mamba_ssm_dtype is not None and not isinstance(self.mamba_ssm_dtype, DType):
            raise InputError(f"mamba ssm dtype (--mamba-ssm-dtype) must be a DType, got {shown(self.mamba_ssm_dtype)}")

    def _check_sizing_options(self) -> None:
        """--enforce-eager, --max-total-tokens, --num-gpu-blocks-override, --kv-cache-memory-bytes and the
        multimodal options: each in range, and each refused by the engine (or accounting, or release:
        V1_OPTION_RELEASES) that has no such option, naming it."""
        check_flag(self.enforce_eager, self._label("enforce_eager"))
        for name, lo, hi in (("max_total_tokens", 1, MAX_TOKENS), ("num_gpu_blocks_override", 1, MAX_TOKENS),
                             ("kv_cache_memory_bytes", 1, 1 << 50)):
            if getattr(self, name) is not None:
                whole_number(getattr(self, name), self._label(name), minimum=lo, maximum=hi)
        owners = {"max_total_tokens": Engine.sglang, "num_gpu_blocks_override": Engine.vllm,
                  "kv_cache_memory_bytes": Engine.vllm}
        for name, owner in owners.items():
            if getattr(self, name) is not None and self.engine is not owner:
                raise InputError(f"{self.OPTIONS[name]} is {owner.title}'s; {self.engine.title} has no such option"
                                 + ("" if owner is Engine.sglang else " (its pool follows --mem-fraction-static; "
                                    "--max-total-tokens caps it)"))
        for name, given in (("limit_mm_per_prompt", self.limit_mm_per_prompt is not None),
                            ("skip_mm_profiling", self.skip_mm_profiling)):
            if given and self.engine is not Engine.vllm:
                raise InputError(f"{self.OPTIONS[name]} is vLLM's; {self.engine.title} has no such option")
        for name, (release, source) in V1_OPTION_RELEASES.items():
            if getattr(self, name) is None or getattr(self, name) is False:
                continue
            first, option = release_text(release), self.OPTIONS[name]
            if self.accounting is not Accounting.vllm_v1:
                raise InputError(f"{option} arrived in vLLM V1 {first} ({source}); {self.accounting} "
                                 f"({self.accounting.releases}) has no such option")
            if self.release is not None and self.release < release:
                raise InputError(f"{option} arrived in vLLM {first} ({source}); {release_text(self.release)} has no "
                                 "such option")

    def _check_kinds(self) -> None:
        """The fields whose kind the range checks do not cover: an InputError naming the field and its option."""
        if not isinstance(self.accounting, Accounting):
            raise InputError(f"accounting must be a rooflab.engines.Accounting (parse_accounting('vllm', None) gives "
                             f"an engine's default), got {shown(self.accounting)}")
        if not isinstance(self.kv_cache_dtype, KvCacheDtype):
            raise InputError(f"{self._label('kv_cache_dtype')} must be a KvCacheDtype (parse_kv_cache_dtype('fp8')), "
                             f"got {shown(self.kv_cache_dtype)}")
        if self.dtype is not None and not isinstance(self.dtype, DType):
            raise InputError(f"{self._label('dtype')} must be a DType or None (auto), got {shown(self.dtype)}")
        if self.weight_format is not None and not isinstance(self.weight_format, (WeightFormat, DType)):
            raise InputError(f"{self._label('weight_format')} must be a WeightFormat or None (as shipped), got "
                             f"{shown(self.weight_format)}")
        if self.pp_layer_partition is not None:
            object.__setattr__(self, "pp_layer_partition",
                               check_partition(self.pp_layer_partition, self._label("pp_layer_partition")))
        if self.release is not None:
            object.__setattr__(self, "release", self._checked_release())

    def _checked_release(self) -> tuple[int, ...]:
        """`release` as numbers ('0.15.0' -> (0, 15, 0)), inside the accounting's range; else an InputError."""
        label, value = self._label("release"), self.release
        if isinstance(value, str):
            value = release_of(value, label)
        if not (isinstance(value, tuple) and value
                and all(type(n) is int and 0 <= n < RELEASE_PART_LIMIT for n in value)):
            raise InputError(f"{label} must be a release such as '0.15.0' or (0, 15, 0), got {shown(self.release)}")
        if not in_range(self.accounting, value):
            raise InputError(f"{label} {'.'.join(map(str, value))} is outside {self.accounting}'s releases "
                             f"({self.accounting.releases})")
        return value

    @property
    def engine(self) -> Engine:
        return self.accounting.engine


@dataclass(frozen=True)
class Resolved:
    """Every setting concrete, with where the CUDA-visible total came from."""

    accounting: Accounting
    tensor_parallel: int
    kv_cache_dtype: KvCacheDtype
    kv_dtype: DType
    block_size: int
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    cuda_visible_bytes: int
    cuda_visible_source: str
    utilization: Optional[float]
    expert_parallel: int = 1
    attention_data_parallel: int = 1
    memory_in_use_bytes: int = 0
    mamba_ssm_dtype: Optional[DType] = None
    mamba_cache_mode: MambaCacheMode = MambaCacheMode.none
    max_mamba_cache_size: Optional[int] = None
    mamba_full_memory_ratio: Optional[float] = None
    max_running_requests: Optional[int] = None
    enable_lora: bool = False
    max_loras: Optional[int] = None
    max_lora_rank: Optional[int] = None
    pipeline_parallel: int = 1
    pp_layer_partition: Optional[tuple[int, ...]] = None
    #: The release every release-dependent term is computed at: EngineSettings.release, else the one the
    #: accounting's label stands for (vocab.label_release); `release_given` says which
    release: Optional[tuple[int, ...]] = None
    release_given: bool = False
    #: vLLM can sample with FlashInfer here: it is installed and the GPU is NVIDIA's (vLLM's CUDA platform;
    #: topk_topp_sampler.py takes the native path on every other); profile.py applies it by release
    flashinfer_sampler: bool = False
    use_flashinfer_sampler: Optional[bool] = None      # VLLM_USE_FLASHINFER_SAMPLER as given
    logprobs_mode: LogprobsMode = LogprobsMode.raw_logprobs
    enforce_eager: bool = False
    max_total_tokens: Optional[int] = None
    num_gpu_blocks_override: Optional[int] = None
    kv_cache_memory_bytes: Optional[int] = None
    limit_mm_per_prompt: Optional[int] = None
    skip_mm_profiling: bool = False

    @property
    def releases(self) -> str:
        """The releases the accounting follows, and the one given ('vLLM V1 v0.9.1 - v0.20 at v0.10.1')."""
        return self.accounting.releases + (f" at {release_text(self.release)}" if self.release_given else "")

    @property
    def attention_tensor_parallel(self) -> int:
        """GPUs one rank's attention heads (and KV heads) are split over: TP / attention DP."""
        return self.tensor_parallel // self.attention_data_parallel


def model_dtype(model: ModelSpec) -> DType:
    """The activations' and 'auto' KV cache's dtype: the checkpoint's (bf16 where the spec names none)."""
    return model.weight_dtype or DType.bf16


def resolve(settings: EngineSettings, model: ModelSpec, gpu: GpuSpec) -> Resolved:
    """The settings with the engine's defaults filled in (module docstring)."""
    a = settings.accounting
    engine_default_block = 16 if a.engine is Engine.vllm else 1
    max_len = settings.max_model_len or model.max_context_len
    mnbt, seqs = _batch_defaults(settings, model, gpu, max_len)
    total, source = cuda_visible(gpu, settings.cuda_visible_bytes)
    computed = dict(accounting=a, kv_dtype=settings.kv_cache_dtype.resolve(model_dtype(model)),
                    block_size=settings.block_size or engine_default_block, max_model_len=max_len, max_num_seqs=seqs,
                    max_num_batched_tokens=mnbt, cuda_visible_bytes=total, cuda_visible_source=source,
                    flashinfer_sampler=settings.flashinfer_installed and (gpu.vendor or "nvidia").lower() == "nvidia",
                    release=settings.release if settings.release is not None else label_release(a),
                    release_given=settings.release is not None)
    # every other field is the setting as given, under the same name
    given = {f.name: getattr(settings, f.name) for f in fields(Resolved) if f.name not in computed}
    return Resolved(**computed, **given)


def cuda_visible(gpu: GpuSpec, override: int | None = None) -> tuple[int, str]:
    """The total engines multiply by their utilisation, and where it comes from; an override above the GPU's
    memory is an InputError (GpuSpec.cuda_visible_problem, the YAML's rule)."""
    if override is not None:
        problem = gpu.cuda_visible_problem(override)
        if problem:
            raise InputError(f"--cuda-visible-memory {fmt_bytes(override)} on {gpu.name} {problem}")
        return override, "--cuda-visible-memory"
    if gpu.cuda_visible_bytes is not None:
        return gpu.cuda_visible_bytes, f"{gpu.name} YAML cuda_visible_bytes"
    return (gpu.hbm_capacity_bytes - DRIVER_RESERVE_BYTES,
            f"estimated: {gpu.name}'s nvidia-smi total less 0.45 GiB (its YAML gives no cuda_visible_bytes; "
            f"pass --cuda-visible-memory)")


def _batch_defaults(settings: EngineSettings, model: ModelSpec, gpu: GpuSpec, max_len: int) -> tuple[int, int]:
    """max_num_batched_tokens and max_num_seqs of the profile run (module docstring)."""
    a = settings.accounting
    if a.engine is Engine.sglang:
        return settings.max_num_batched_tokens or 0, settings.max_num_seqs or 0
    if a.is_v1:
        a100 = "a100" in gpu.name.lower() and a is not Accounting.vllm_v0_8
        large = gpu.hbm_capacity_bytes >= LARGE_GPU_BYTES and not a100
        mnbt = settings.max_num_batched_tokens or (8192 if large else 2048)
        seqs = settings.max_num_seqs or min(1024 if large else 256, mnbt)
        return mnbt, seqs
    windowed = any(t.is_windowed for t in model.layer_types.values())
    chunked = a is not Accounting.vllm_v0_2 and max_len > 32768 and not windowed
    if settings.max_num_batched_tokens:
        mnbt = settings.max_num_batched_tokens
    elif chunked:
        mnbt = 512 if a is Accounting.vllm_v0_6_4 else 2048
    else:
        mnbt = max(max_len, 2048)
    return mnbt, settings.max_num_seqs or 256


__all__ = ["DRIVER_RESERVE_BYTES", "KV_CACHE_MEMORY_RELEASE", "SKIP_MM_PROFILING_RELEASE", "V1_OPTION_RELEASES",
           "EngineSettings", "Resolved", "cuda_visible", "model_dtype", "resolve"]

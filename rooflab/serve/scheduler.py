"""The engines' schedulers, in their own option names and defaults, as rooflab models them.

One frozen `Scheduler` holds what decides the shape of every step under load:

| field | vLLM V1 (`vllm serve`) | SGLang (`python -m sglang.launch_server`) | TensorRT-LLM (`trtllm-serve`, `trtllm-bench`) |
| --- | --- | --- | --- |
| max_num_seqs | --max-num-seqs | --max-running-requests | --max_batch_size |
| max_num_batched_tokens | --max-num-batched-tokens | --chunked-prefill-size | --max_num_tokens |
| mixed | chunked prefill: always on in V1 | --enable-mixed-chunk (off by default) | in-flight batching: on |
| prefix_cache_hit_rate | --enable-prefix-caching (on); the share of prompt tokens found cached | radix cache (on unless --disable-radix-cache) | --enable_block_reuse |

Defaults, read from the engines' source:

- vLLM (vllm-project/vllm, vllm/engine/arg_utils.py, `EngineArgs.get_batch_defaults`, at commit 99d7eb5d, the
  V1 engine): a GPU with at least 70 GiB that is not an A100 gets max_num_seqs 1024 and max_num_batched_tokens
  8192 for the OpenAI server (16384 for the offline `LLM` class); smaller GPUs and the A100 get 256 and 2048
  (8192 offline). Chunked prefill is on for generative models (`_set_default_chunked_prefill_and_prefix_caching_args`).
  The V1 scheduler (vllm/v1/core/sched/scheduler.py) spends one token budget a step: running requests first
  (a decode is one token, an unfinished prefill its next chunk), then waiting requests in arrival order while
  the budget, max_num_seqs and free KV blocks allow; when a running request cannot get a block, the request
  scheduled last is preempted (its blocks freed, recomputed later).
- vLLM V0 (an --engine-version before 0.8.0, V1's first default release; Scheduler.vllm_v0, read from the 0.7.3
  wheel): max_num_seqs 256; chunked prefill off unless max_model_len > 32,768, so by default a step holds
  prefills or decodes, never both (prefills first), up to max(max_model_len, 2048) tokens; with chunked prefill
  2048 tokens a step, decodes and prefill chunks mixed.
- SGLang (sgl-project/sglang, python/sglang/srt/server_args.py, `_handle_chunked_prefill_size`, v0.5):
  chunked_prefill_size 2048 below 35 GiB, 8192 below 160 GiB (H100, H200, A100), 16384 above (B200, MI300);
  --max-running-requests, when not given, follows the KV pool (rooflab: the KV limit), and is at most 4096
  (SGLANG_MAX_RUNNING: the request pool's size, min(max(KV tokens / context_len x 512, 2048), 4096),
  python/sglang/srt/model_executor/model_runner.py, v0.5). Without
  --enable-mixed-chunk a step is either a prefill (extend) batch or a decode batch, and a waiting request is
  prefilled first, so decodes wait while a prefill runs.
- TensorRT-LLM (trtllm-bench throughput, docs/source/performance/perf-overview.md at v1.0): in-flight batching
  with context chunks mixed into generation steps; max_batch_size and max_num_tokens are set by trtllm-bench
  per run; rooflab's defaults (2048 sequences, 8192 tokens) are TensorRT-LLM's `BuildConfig` defaults, stated.

What is modelled is exactly this: which requests and how many tokens each step holds. The step's time comes
from a step-time function (rooflab.serve.steptime).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from ..cost.common import real_number, whole_number
from ..errors import InputError, shown
from ..limits import MAX_TOKENS
from ..units import GiB
from ..vocab import ENGINE_RELEASES, Engine, check_engine_release, engine_release


#: Most requests SGLang runs at once when --max-running-requests is not given (its request pool's upper bound);
#: rooflab takes it for any scheduler whose max_num_seqs is None.
SGLANG_MAX_RUNNING = 4096

#: vLLM's first release whose default engine is V1 (VLLM_USE_V1 on by default; 0.7.3's envs.py:504 defaults it off);
#: a release before it takes V0's scheduler defaults (Scheduler.vllm_v0).
V1_DEFAULT_RELEASE = (0, 8)
#: V0 turns chunked prefill on by default above this max_model_len (vllm 0.7.3 engine/arg_utils.py:1164) from this
#: release (0.5.4 arg_utils.py:747 has the rule, 0.4.0's arg_utils.py has none; 0.5.0-0.5.3 not read).
V0_CHUNKED_PREFILL_ABOVE = 32768
V0_LONG_CONTEXT_CHUNKED_FROM = (0, 5)

#: SGLang's --max-running-requests where speculative decoding runs and none is given (sglang 0.5.12
#: srt/server_args.py:3742-3743, :3852-3853).
SGLANG_SPECULATIVE_RUNNING = 48

#: The version whose defaults each engine's scheduler follows (the module docstring's sources; defined in rooflab.vocab).
VERSIONS = ENGINE_RELEASES


@dataclass(frozen=True)
class Scheduler:
    """How an engine fills each step (the module docstring's table; counts per replica).

    max_num_seqs: most requests running at once (vLLM --max-num-seqs; SGLang --max-running-requests; None: the
        KV cache decides). max_num_batched_tokens: tokens a step may hold (vLLM --max-num-batched-tokens;
        SGLang --chunked-prefill-size: the prefill batch's budget). mixed: decodes and prefill chunks share a
        step (vLLM V1 always; SGLang --enable-mixed-chunk). prefix_cache_hit_rate: the share of each prompt's
        tokens found in the prefix cache, in [0, 1): those are not computed (KV is still held for them).
    """

    engine: Engine = Engine.vllm
    max_num_seqs: Optional[int] = 1024
    max_num_batched_tokens: int = 8192
    mixed: bool = True
    prefix_cache_hit_rate: float = 0.0
    version: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "engine", Engine.of(self.engine))
        if self.max_num_seqs is not None:
            object.__setattr__(self, "max_num_seqs", whole_number(self.max_num_seqs, _seqs_option(self.engine),
                                                                  maximum=MAX_TOKENS))
        object.__setattr__(self, "max_num_batched_tokens", whole_number(
            self.max_num_batched_tokens, _tokens_option(self.engine), maximum=MAX_TOKENS))
        if (self.engine is Engine.vllm and self.max_num_seqs is not None
                and self.max_num_batched_tokens < self.max_num_seqs):   # vllm/config/scheduler.py:298 (v0.29.0)
            raise InputError(f"--max-num-batched-tokens ({self.max_num_batched_tokens:,}) must be at least "
                             f"--max-num-seqs ({self.max_num_seqs:,}): vLLM refuses to start otherwise")
        if not isinstance(self.mixed, bool):
            raise InputError(f"mixed must be True or False, got {shown(self.mixed)}")
        object.__setattr__(self, "prefix_cache_hit_rate", real_number(
            self.prefix_cache_hit_rate, "prefix cache hit rate (--prefix-cache-hit-rate)", 0, 1))
        if self.prefix_cache_hit_rate >= 1:
            raise InputError("prefix cache hit rate (--prefix-cache-hit-rate) must be below 1: the last prompt "
                             "token is always computed")
        if isinstance(self.version, str) and not self.version.strip():
            object.__setattr__(self, "version", VERSIONS[self.engine])
        else:
            version = check_engine_release(self.version, "scheduler version (--engine-version)", self.engine)
            object.__setattr__(self, "version", version)

    @classmethod
    def vllm(cls, gpu_memory_bytes: float, max_num_seqs: Optional[int] = None,
             max_num_batched_tokens: Optional[int] = None, offline: bool = False,
             prefix_cache_hit_rate: float = 0.0, a100: bool = False, version: str = "",
             max_model_len: Optional[int] = None, chunkable: bool = True) -> "Scheduler":
        """vLLM V1's scheduler with `vllm serve`'s defaults for a GPU of `gpu_memory_bytes` (offline: the LLM
        class's); chunked prefill on. At a V0 `version` (before V1_DEFAULT_RELEASE) V0's defaults instead, for a
        model served at `max_model_len` (vllm_v0)."""
        release = engine_release(version) if version else None
        if release is not None and release < V1_DEFAULT_RELEASE:
            return cls.vllm_v0(max_model_len, max_num_seqs, max_num_batched_tokens, prefix_cache_hit_rate,
                               version, chunkable)
        big = gpu_memory_bytes >= 70 * GiB and not a100
        seqs = max_num_seqs if max_num_seqs is not None else (1024 if big else 256)
        tokens = max_num_batched_tokens if max_num_batched_tokens is not None else (
            (16384 if offline else 8192) if big else (8192 if offline else 2048))
        return cls(Engine.vllm, seqs, tokens, True, prefix_cache_hit_rate)

    @classmethod
    def vllm_v0(cls, max_model_len: Optional[int], max_num_seqs: Optional[int] = None,
                max_num_batched_tokens: Optional[int] = None, prefix_cache_hit_rate: float = 0.0,
                version: str = "0.7.3", chunkable: bool = True) -> "Scheduler":
        """vLLM V0's scheduler with its defaults (vllm 0.7.3 wheel: engine/arg_utils.py:222-224 max_num_seqs 256
        without VLLM_USE_V1, envs.py:503-504 VLLM_USE_V1 off by default; :1163-1194 chunked prefill on by default
        only for max_model_len > 32,768; config.py:1521-1536 max_num_batched_tokens 2,048 with chunked prefill, else
        max(max_model_len, 2,048)). Without chunked prefill core/scheduler.py:1440-1445 _schedule_default runs a
        step of prefills or a step of decodes (prefills first): steps apart; with it, decodes and prefill chunks
        share a step. `max_model_len` None: 2,048 (the length vLLM takes where a config gives none). `chunkable`
        False (v0_chunkable: a multimodal or sliding-window model, speculative decoding): never chunked."""
        length = 2048 if max_model_len is None else whole_number(max_model_len, "max_model_len",
                                                                 maximum=MAX_TOKENS)
        release = engine_release(version) if version else None
        long_rule = release is None or release >= V0_LONG_CONTEXT_CHUNKED_FROM
        chunked = chunkable and long_rule and length > V0_CHUNKED_PREFILL_ABOVE
        tokens = max_num_batched_tokens if max_num_batched_tokens is not None else (
            2048 if chunked else max(length, 2048))
        if not chunked and tokens < length:               # vllm 0.7.3 config.py:1574-1583
            raise InputError(f"--max-num-batched-tokens {tokens:,} is below max_model_len {length:,}: vLLM V0 without "
                             f"chunked prefill refuses to start so (it could not prefill a whole prompt); give at "
                             f"least {length:,}")
        return cls(Engine.vllm, 256 if max_num_seqs is None else max_num_seqs, tokens, chunked,
                   prefix_cache_hit_rate, version)

    @staticmethod
    def v0_chunkable(model, speculative: bool = False, gpu=None) -> bool:
        """Whether vLLM V0 may turn chunked prefill on by default for `model` (a ModelSpec) on `gpu` (a GpuSpec;
        None: an NVIDIA one): not for a multimodal model (a vision tower), a sliding-window one, under speculative
        decoding or on ROCm (vllm 0.7.3 engine/arg_utils.py:1171-1186; LoRA and pooling models, also excluded there,
        are not served here)."""
        from ..specs.layers import LayerKind

        sliding = any(spec.kind is LayerKind.sliding for spec in model.layer_types.values())
        rocm = gpu is not None and (gpu.vendor or "nvidia").lower() == "amd"
        return not (model.vision_parameters or sliding or speculative or rocm)

    @classmethod
    def sglang(cls, gpu_memory_bytes: float, max_running_requests: Optional[int] = None,
               chunked_prefill_size: Optional[int] = None, enable_mixed_chunk: bool = False,
               prefix_cache_hit_rate: float = 0.0, speculative: Optional[str] = None,
               dp_attention: bool = False) -> "Scheduler":
        """SGLang's scheduler with launch_server's defaults for a GPU of `gpu_memory_bytes`. Under speculative
        decoding (`speculative`: the rooflab.deployment.SpecMethod value) as SGLang 0.5.12 resets them
        (srt/server_args.py): EAGLE, EAGLE3, NEXTN (EAGLE inside) and STANDALONE run at most 48 requests unless
        --max-running-requests is given and turn --enable-mixed-chunk off (:3735-3776), NGRAM the same
        (:3852-3859); STANDALONE with DP attention is refused (:3736-3740)."""
        if speculative is not None:
            if speculative == "draft_model" and dp_attention:
                raise InputError("SGLang's STANDALONE speculative decoding does not run with --enable-dp-attention "
                                 "(sglang 0.5.12 server_args.py:3736-3740)")
            if max_running_requests is None:
                max_running_requests = SGLANG_SPECULATIVE_RUNNING
            enable_mixed_chunk = False
        if chunked_prefill_size is None:
            chunked_prefill_size = (2048 if gpu_memory_bytes < 35 * GiB else
                                    8192 if gpu_memory_bytes < 160 * GiB else 16384)
        return cls(Engine.sglang, max_running_requests, chunked_prefill_size, enable_mixed_chunk,
                   prefix_cache_hit_rate)

    @classmethod
    def trtllm(cls, max_batch_size: Optional[int] = None, max_num_tokens: Optional[int] = None,
               prefix_cache_hit_rate: float = 0.0) -> "Scheduler":
        """TensorRT-LLM's in-flight batching (context chunks mixed into generation steps)."""
        return cls(Engine.trtllm, 2048 if max_batch_size is None else max_batch_size,
                   8192 if max_num_tokens is None else max_num_tokens, True, prefix_cache_hit_rate)

    @classmethod
    def default(cls, engine, gpu_memory_bytes: float, **options) -> "Scheduler":
        """The engine's scheduler with its defaults; `options` in the engine's own names (underscored)."""
        engine = Engine.of(engine)
        build = {Engine.vllm: cls.vllm, Engine.sglang: cls.sglang, Engine.trtllm: cls.trtllm}[engine]
        if engine is Engine.trtllm:
            return build(**options)
        return build(gpu_memory_bytes, **options)

    @property
    def running_cap(self) -> int:
        """Most requests running at once: max_num_seqs, or SGLang's default pool bound where it is None."""
        return SGLANG_MAX_RUNNING if self.max_num_seqs is None else self.max_num_seqs

    def prefill_tokens(self, prompt_len: float) -> float:
        """Prompt tokens a request computes: those the prefix cache does not hold (at least one)."""
        return max(1.0, prompt_len * (1.0 - self.prefix_cache_hit_rate))

    def replace(self, **changes) -> "Scheduler":
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        seqs = "KV-limited" if self.max_num_seqs is None else f"{self.max_num_seqs:,}"
        return (f"{self.engine.value} {self.version}: {_seqs_option(self.engine)} {seqs}, "
                f"{_tokens_option(self.engine)} {self.max_num_batched_tokens:,}, "
                f"{'mixed' if self.mixed else 'prefill and decode steps apart'}"
                + (f", prefix hits {self.prefix_cache_hit_rate:.0%}" if self.prefix_cache_hit_rate else ""))

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["engine"] = self.engine.value
        return out


def _seqs_option(engine: Engine) -> str:
    return {Engine.vllm: "--max-num-seqs", Engine.sglang: "--max-running-requests",
            Engine.trtllm: "--max_batch_size"}[engine]


def _tokens_option(engine: Engine) -> str:
    return {Engine.vllm: "--max-num-batched-tokens", Engine.sglang: "--chunked-prefill-size",
            Engine.trtllm: "--max_num_tokens"}[engine]

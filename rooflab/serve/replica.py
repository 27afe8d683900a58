"""One replica of a deployment under load: model, GPU, deployment, the engine's scheduler, the workload, the
step-time function and the KV capacity, built once and shared by the closed form, the simulation and the sweeps.

The KV capacity is rooflab's bound (rooflab.capacity.plan_capacity with the Deployment): the pages the usable
memory holds after the weights, in tokens (num_blocks x page_size; with data-parallel attention, each attention
rank's pool). An engine's own accounting (rooflab.engines) is smaller by its activation and graph reserves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..deployment import Deployment
from ..errors import InputError, shown
from ..specs import GpuSpec, ModelSpec
from ..step import engine_kernels
from .scheduler import Engine, Scheduler
from .steptime import StepTimes, step_times
from .workload import Workload


def rank_scheduler(scheduler: Scheduler, ranks: int) -> Scheduler:
    """One attention rank's scheduler under SGLang's DP attention over `ranks`: a given --max-running-requests and the
    --chunked-prefill-size split over the ranks, as SGLang splits them (sglang 0.5.12 wheel: srt/server_args.py:3070
    chunked_prefill_size // dp_size under enable_dp_attention; srt/model_executor/model_runner_kv_cache_mixin.py:826
    max_running_requests // dp_size); unchanged at one rank."""
    if ranks == 1:
        return scheduler
    seqs = scheduler.max_num_seqs
    if scheduler.max_num_batched_tokens < ranks:              # SGLang's 0 turns chunking off: not modelled
        raise InputError(f"--chunked-prefill-size {scheduler.max_num_batched_tokens:,} over {ranks} attention ranks "
                         f"(--dp {ranks}) gives each rank {scheduler.max_num_batched_tokens // ranks} (SGLang divides "
                         f"it, server_args.py:3070): give at least {ranks}")
    if seqs is not None and seqs < ranks:
        raise InputError(f"--max-running-requests {seqs:,} over {ranks} attention ranks (--dp {ranks}) gives each "
                         f"rank {seqs // ranks} (SGLang divides it): give at least {ranks}")
    return scheduler.replace(max_num_seqs=None if seqs is None else seqs // ranks,
                             max_num_batched_tokens=scheduler.max_num_batched_tokens // ranks)


def _less_the_draft(kv_tokens: int, plan, model: ModelSpec, deployment: Deployment, context_len: int,
                    release: Optional[tuple] = None) -> int:
    """The target's KV tokens beside a draft model or head (rooflab.step.memory.draft_memory, the step's count, at SGLang's
    `release` for DP attention's layout): its weights come out of the KV budget and each token's KV is shared with
    the draft's, in proportion at `context_len` (the workload's longest request); unchanged without a draft model."""
    from ..step.memory import draft_memory
    from ..step.pricing import step_dtypes

    kv_dtype = step_dtypes(model, deployment)[1]
    _, weights, draft = draft_memory(deployment, kv_dtype, context_len, deployment.position_split, release,
                                     model=model)
    target = float(plan.kv_bytes_per_sequence)
    if not weights or not target:
        return kv_tokens
    left = max(0.0, plan.kv_budget_bytes - weights) / plan.kv_budget_bytes
    return int(kv_tokens * left * target / (target + draft))


@dataclass(frozen=True)
class Replica:
    """Everything a serving estimate needs for one replica (counts and tokens per replica)."""

    model: ModelSpec
    gpu: GpuSpec
    deployment: Deployment
    scheduler: Scheduler
    workload: Workload
    steps: StepTimes
    kv_tokens: int                     # tokens of KV the replica's pages hold
    page_size: int

    @classmethod
    def build(cls, model: ModelSpec, gpu: GpuSpec, deployment: Deployment, workload: Workload,
              scheduler: Optional[Scheduler] = None, engine: Engine | str = Engine.vllm,
              steps: Optional[StepTimes] = None, max_concurrency: Optional[int] = None) -> "Replica":
        """`scheduler` None: the engine's defaults for this GPU. `steps` None: rooflab's step (StepTable via
        steptime.step_times), tabulated up to the most decodes that can run at once (a rank's: the scheduler's
        limit or the requests of the shortest prompt the KV pages hold, at most 4096; `max_concurrency`, kept for
        callers, no longer narrows it: a concurrency's figure must not depend on the others a sweep asks for, and
        the lazy table prices only the points read), mean
        contexts from the shortest prompt to the longest request, prefill chunks up to the step's token budget,
        the decode attention and the experts priced as the kernels the scheduler's engine runs at its version
        (rooflab.step.engine_kernels: the step's defaults where the version names no release or no fact covers
        the shape)."""
        from ..capacity import plan_capacity

        for name, value, kind in (("model", model, ModelSpec), ("gpu", gpu, GpuSpec),
                                  ("deployment", deployment, Deployment), ("workload", workload, Workload)):
            if not isinstance(value, kind):
                raise InputError(f"{name} must be a {kind.__name__}, got {shown(value)}")
        if workload.max_len > model.max_context_len:
            raise InputError(f"a request of up to {workload.max_len:,} tokens (--input-len + --output-len) exceeds "
                             f"{model.name}'s max_context_len {model.max_context_len:,}: the engines refuse it")
        memory = gpu.cuda_visible_bytes or gpu.hbm_capacity_bytes
        scheduler = scheduler if scheduler is not None else Scheduler.default(engine, memory)
        if not isinstance(scheduler, Scheduler):
            raise InputError(f"scheduler must be a rooflab.serve.Scheduler, got {shown(scheduler)}")
        if deployment.data_parallel > 1:
            spelled = {Engine.vllm: "vLLM's --data-parallel-size", Engine.sglang: "SGLang's --dp-size without "
                       "--enable-dp-attention"}.get(scheduler.engine, "data parallelism")
            raise InputError(f"serving over {deployment.data_parallel} data-parallel replicas ({spelled}) is not "
                             "modelled: serve one replica's deployment (replicas without expert parallelism are "
                             "alike: multiply its throughput)")
        ranks = deployment.attention_data_parallel
        scheduler = rank_scheduler(scheduler, ranks)
        kernels = engine_kernels(model, gpu, deployment, scheduler.engine, scheduler.version)
        plan = plan_capacity(model, gpu, workload.max_len, max_model_len=workload.max_len,
                             deployment=deployment.replace(speculative=None),
                             dp_attention_release=kernels.layout_release)     # the step's weight layout
        kv_tokens = int(plan.num_blocks) * deployment.page_size           # one attention rank's pool
        kv_tokens = _less_the_draft(kv_tokens, plan, model, deployment, workload.max_len, kernels.layout_release)
        shortest = workload.input.low + 1                     # a running request holds at least its prompt
        most = [4096, kv_tokens // shortest + 1, scheduler.running_cap]
        top = max(1, min(most))
        if steps is None:
            steps = step_times(model, gpu, deployment, max_decodes=top, min_context=workload.input.low,
                               max_context=workload.max_len, max_prefill=scheduler.max_num_batched_tokens,
                               moe_kernel=kernels.moe_kernel, decode_attention=kernels.decode_attention,
                               routing=kernels.routing, mla_decode_splits=kernels.mla_decode_splits,
                               mla_layout=kernels.mla_layout, absorbed_bytes=kernels.absorbed_bytes,
                               sampler=kernels.sampler, dense_block=kernels.dense_block)
        return cls(model, gpu, deployment, scheduler, workload, steps, kv_tokens * ranks, deployment.page_size)

    @property
    def num_gpus(self) -> int:
        return self.deployment.num_gpus

    @property
    def ranks(self) -> int:
        """The attention ranks requests are dealt over (SGLang's --enable-dp-attention --dp N; 1 without): each
        schedules its own requests into its own KV pool, and their steps run together (the MoE's collectives)."""
        return self.deployment.attention_data_parallel

    @property
    def rank_kv_limit(self) -> int:
        """Requests one attention rank's KV pages hold at once at the mean context (whole pages each)."""
        per_request = self.mean_context_tokens + self.page_size / 2.0
        return max(0, int((self.kv_tokens // self.ranks) // per_request))

    @property
    def rank_running_limit(self) -> int:
        """Most requests one attention rank runs at once: its scheduler's limit and its KV limit."""
        return max(0, min(self.rank_kv_limit, self.scheduler.running_cap))

    @property
    def mean_context_tokens(self) -> float:
        """A running request's mean KV length over its decode steps: E[I] + E[O (O - 1) / 2] / E[O - 1]."""
        o = self.workload.output
        decodes = max(o.mean - 1.0, 1e-9)
        return self.workload.input.mean + (o.moment(2) - o.mean) / (2.0 * decodes)

    @property
    def kv_limit(self) -> int:
        """Requests the KV pages hold at once at the mean context (each rounded up to whole pages), over the ranks."""
        return self.rank_kv_limit * self.ranks

    @property
    def running_limit(self) -> int:
        """Most requests running at once over the ranks: the scheduler's limit and the KV limit of each."""
        return self.rank_running_limit * self.ranks

    def describe(self) -> str:
        spec = self.deployment.speculative
        drafts = "" if spec is None else (
            f", {spec.method.value} k {spec.num_speculative_tokens} at acceptance {spec.acceptance_rate:g} "
            f"({spec.tokens_per_step:.3g} tokens a decode step)")
        each = f" each of {self.ranks} attention ranks" if self.ranks > 1 else ""
        return (f"{self.model.display_name or self.model.name} on {self.gpu.display_name or self.gpu.name}, "
                f"{self.deployment.describe()}{drafts};{each} {self.scheduler.describe()}; {self.workload.describe()}")

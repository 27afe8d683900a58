"""`rooflab serve`'s and `rooflab plot serve`'s deployment and replica from their options: the step's parallelism,
graph and speculative spellings (read as `report --phase step` reads them) and the engines' scheduler options, into
one rooflab.serve.Replica. No arithmetic here."""

import dataclasses
from typing import Optional

import typer

from ..deployment import Speculative
from . import deployment_options as dopt
from .error_path import fail
from .report import _speculative_spelling, acceptance_needs_drafts, sglang_draft_tokens, speculative_of


@dataclasses.dataclass(frozen=True)
class Parallel:
    """serve's and plot serve's parallelism and graph options beside --tp, in the engines' spellings (the step's:
    deployment_options.parallel_degrees maps them as report --phase step and capacity do)."""

    dcp: int = 1
    dp: Optional[int] = None
    dp_attention: bool = False
    ep: int = 1
    enable_ep: bool = False
    pp: int = 1
    eager: bool = False
    speculative: Optional["Speculative"] = None      # speculative_of's, or None

    def fields(self, engine: str, tp: int) -> dict:
        """The Deployment's fields these set (the engines' EP spelling checked under `engine`)."""
        try:
            dopt.check_ep_spelling(engine, self.ep, self.enable_ep)
            replicas, attention, expert = dopt.parallel_degrees(tp, self.dp, self.dp_attention, self.enable_ep,
                                                                self.ep)
        except typer.BadParameter as exc:
            fail(str(exc))
        if self.pp > 1:
            fail(f"--pp {self.pp}: serving a pipeline (its micro-batches in flight under load) is not modelled; "
                 f"`rooflab report --phase step --pp {self.pp}` prices its step")
        return dict(decode_context_parallel=self.dcp, data_parallel=replicas, attention_data_parallel=attention,
                    expert_parallel=expert, pipeline_parallel=self.pp, cuda_graphs=not self.eager,
                    speculative=self.speculative)


def parallel_of(ctx: typer.Context, engine: str, dcp, dp, dp_attention, ep, enable_ep, pp, eager, spec_config,
                spec_algorithm, spec_tokens, draft_model, acceptance) -> Parallel:
    """serve's Parallel from its options; the speculative ones read as report --phase step reads them (that
    engine's spelling under --engine; --acceptance-rate only with drafts)."""
    spec_tokens = sglang_draft_tokens(ctx, spec_tokens)
    acceptance_needs_drafts(ctx, spec_config, spec_algorithm, spec_tokens)
    _speculative_spelling(engine, spec_config, spec_algorithm or spec_tokens,     # serve always has an engine
                          ctx.params.get("engine_version"))
    return Parallel(dcp, dp, dp_attention, ep, enable_ep, pp, eager,
                    speculative_of(spec_config, spec_algorithm, spec_tokens, draft_model, acceptance))


def replica_of(model, gpu, engine, tp, weight_words, kv_cache_dtype, input_len, output_len, range_ratio, style,
               page_size, utilization, max_num_seqs, max_tokens, mixed, hit_rate, top=None, version=None,
               parallel: Parallel = Parallel()):
    """The replica serve and plot serve price: the deployment from their options, the workload, the engine's
    scheduler at its release."""
    from ..deployment import Deployment
    from ..deployment_words import DeploymentWords
    from ..errors import InputError
    from ..load import load_gpu, load_model
    from ..serve import Engine, Lengths, Replica, Scheduler, Workload
    from ..units import DType
    from ..vocab import release_of

    eng = Engine.of(engine, "--engine")
    # the one KV-dtype vocabulary (engines.vocab.parse_kv_cache_dtype), with the engine's and release's refusals
    release = release_of(version, "--engine-version", eng) if version else None
    words = DeploymentWords(kv_cache_dtype=kv_cache_dtype).resolve(engine=eng, release=release)[0]
    kv = words.kv_cache_dtype
    spec, g = load_model(model), load_gpu(gpu)
    act = spec.weight_dtype if spec.weight_dtype in (DType.bf16, DType.fp16) else DType.bf16
    # --weight-dtype and -q as capacity and the step read them (DeploymentWords: a -q method must be the checkpoint's
    # own); the GEMMs' arithmetic follows the weights' format as in report --phase step (fp8 for fp8-stored weights)
    weights = weight_words.resolve(checkpoint=spec)[0].weight_format
    deployment = Deployment(tensor_parallel=tp, page_size=page_size, gpu_memory_utilization=utilization,
                            weight_format=weights, dtype=act, kv_cache_dtype=kv or act,
                            mla_sparse_fp8=words.mla_sparse_fp8, **parallel.fields(engine, tp))
    if style not in ("vllm", "inferencex"):
        raise InputError(f"--lengths: {style!r}; use vllm or inferencex")
    draw = Lengths.vllm_random if style == "vllm" else Lengths.inferencex_random
    workload = Workload(draw(input_len, range_ratio), draw(output_len, range_ratio)) if range_ratio else \
        Workload.fixed(input_len, output_len)
    if mixed and eng is not Engine.sglang:        # a switch of SGLang's; taken silently it changed nothing
        raise InputError(f"--enable-mixed-chunk is SGLang's; {eng.title} has no such switch (its own chunked prefill "
                         "decides): drop it, or --engine sglang")
    memory = g.cuda_visible_bytes or g.hbm_capacity_bytes
    options = {Engine.vllm: dict(max_num_seqs=max_num_seqs, max_num_batched_tokens=max_tokens,
                                 version=version or "", max_model_len=spec.max_context_len,
                                 chunkable=Scheduler.v0_chunkable(spec, parallel.speculative is not None, g)),
               Engine.sglang: dict(max_running_requests=max_num_seqs, chunked_prefill_size=max_tokens,
                                   enable_mixed_chunk=mixed, dp_attention=deployment.attention_data_parallel > 1,
                                   speculative=None if parallel.speculative is None
                                   else parallel.speculative.method.value),
               Engine.trtllm: dict(max_batch_size=max_num_seqs, max_num_tokens=max_tokens)}[eng]
    scheduler = Scheduler.default(eng, memory, prefix_cache_hit_rate=hit_rate, **options)
    if version is not None:                      # the release whose step kernels price the steps
        scheduler = scheduler.replace(version=version)
    return Replica.build(spec, g, deployment, workload, scheduler, max_concurrency=top)


__all__ = ["Parallel", "parallel_of", "replica_of"]

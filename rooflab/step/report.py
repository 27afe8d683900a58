"""A whole step on one GPU of the deployment: the StepReport, its rows (step_rows) and step_report, which checks
the deployment and the batch, prices the rows and says in notes what is transferred or missing."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

from ..cost.common import real_number, whole_number
from ..cost.dcp import check_dcp
from ..cost.layers import layer_heads, layer_walk
from ..cost.paged import check_page_size
from ..cost.ring import check_cp
from ..deployment import Deployment
from ..errors import InputError, shown
from ..limits import MAX_BATCH, MAX_GPUS, MAX_TOKENS
from ..specs import GpuSpec, ModelSpec
from ..units import DType
from .attention import decode_attention_of
from .moe_kernel import moe_kernel_of
from .communication import pipeline_send
from .draft import draft_rows
from .engine_kernels import EngineKernels, engine_kernels
from .memory import step_memory
from .pricing import Pricer, StepContext
from .rows import StepRow, overlapped_floor_s, scaled
from .sampler import outside_graph_words, sampler_of
from .small_ops import small_ops_note
from .work import STEPS, StepWork, layer_rows, sequence_rows, step_graphed


@dataclass(frozen=True)
class StepReport:
    """A whole step on one GPU of the deployment: rows per component (one pipeline stage, one micro-batch) and the
    step's floor and prediction."""

    model: str
    gpu: str
    step: str                                    # 'decode' or 'prefill'
    batch: int
    context_len: int
    dtype: str
    tp: int
    dcp: int                                     # KV parallelism (extra GPUs): rooflab 0.1's `dcp`, kept
    cp: int                                      # prefill context parallelism (ring)
    rows: tuple[StepRow, ...]
    weight_bytes_per_gpu: float
    kv_bytes_per_gpu: float
    usable_bytes_per_gpu: float
    notes: tuple[str, ...] = ()
    model_display_name: str = ""
    gpu_display_name: str = ""
    page_size: int = 16
    decode_context_parallel: int = 1             # DCP inside the TP group (vLLM / SGLang)
    num_gpus: int = 0                            # the deployment's GPUs (0: TP x KVP x PCP, rooflab 0.1's count)
    prefill_tokens: int = 0                      # a prefill chunk in the decode step (chunked prefill)
    q_len: int = 1                               # query tokens a decoding sequence scores (k + 1 verifying drafts)
    tokens_per_step: float = 1.0                 # tokens a sequence gains a step: (1 - a^(k+1)) / (1 - a)
    pipeline_parallel: int = 1
    micro_batches: int = 1
    stage_slots: float = 1.0                     # stage times a step takes: max(M, PP) decode, M + PP - 1 prefill
    kv_dtype: str = ""
    deployment: Optional[dict] = None
    decode_attention: str = "shared"             # how decode attention reads a GQA group's KV (step.attention)
    draft_weight_bytes_per_gpu: float = 0.0      # a draft model's weights, counted in weight_bytes_per_gpu
    draft_kv_bytes_per_gpu: float = 0.0          # its KV cache, counted in kv_bytes_per_gpu
    exp_per_s: Optional[float] = None            # the exp roof (Ceilings.exp_roof_per_s); None: the GPU's spec gives
                                                 # no exp rate, so every row's t_exp is unknown (null), not zero
    cuda_graph: bool = True                      # the step's model ran as a CUDA graph (work.step_graphed: the
                                                 # deployment's cuda_graphs, vLLM V0 only inside its captured batches)

    @property
    def gpus(self) -> int:
        """GPUs of the deployment (the engines' count: TP x PCP x PP x DP x KVP)."""
        return self.num_gpus or self.tp * self.dcp * self.cp

    @property
    def t_floor_s(self) -> float:
        """Everything overlapped (overlapped_floor_s), for the M micro-batches a GPU computes (no bubble)."""
        return self.micro_batches * overlapped_floor_s(self.rows)

    @property
    def t_floor_serial_s(self) -> float:
        """Each component at its own floor, one after another."""
        return self.micro_batches * sum(r.t_floor_s for r in self.rows)

    @property
    def t_predicted_s(self) -> Optional[float]:
        if any(r.t_predicted_s is None for r in self.rows):
            return None
        return self.stage_slots * sum(r.t_predicted_s for r in self.rows)

    @property
    def t_per_output_token_s(self) -> Optional[float]:
        """Predicted time per output token of a sequence: the step over the tokens it gains (decode)."""
        t = self.t_predicted_s
        return None if t is None else t / self.tokens_per_step

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("rows", "notes")}
        del out["dcp"], out["cp"]      # rooflab 0.1's names (KV and prefill context parallelism): the keys are the
        out.update(kv_parallel=self.dcp, prefill_context_parallel=self.cp)   # options' own, as --dcp means DCP
        out.update(phase="step", gpus=self.gpus, t_floor_s=self.t_floor_s, t_floor_serial_s=self.t_floor_serial_s,
                   t_predicted_s=self.t_predicted_s, t_per_output_token_s=self.t_per_output_token_s,
                   notes=list(self.notes), rows=[r.to_dict() for r in self.rows])
        if self.exp_per_s is None:               # no exp rate in the spec: the exp roof's times are unknown
            for row in out["rows"]:
                if "t_exp_s" in row:
                    row["t_exp_s"] = None
        return out


def step_rows(ctx: StepContext, work: StepWork) -> list[StepRow]:
    """All the rows of one data rank's step (one pipeline stage of the whole model: see step_report), timed as `ctx`
    says (its `graphs`: step_report builds it for the step, work.step_graphed)."""
    rows = layer_rows(ctx, work)
    if ctx.dep.speculative is not None and work.decodes:
        rows += draft_rows(ctx, work.decodes, work.context_len)
    return rows + sequence_rows(ctx, work.logit_rows)


def _check(model: ModelSpec, step: str, batch: int, context_len: int, tp: int, dcp: int, cp: int,
           page_size: int) -> tuple[int, int, int, int, int, int]:
    """Every problem of the deployment's shape as an InputError naming the value (heads, experts, pages); the
    counts as plain ints (batch, context_len, tp, dcp, cp, page_size)."""
    if not isinstance(model, ModelSpec):
        raise InputError(f"model must be a ModelSpec (rooflab.load_model), got {shown(model)}")
    if not isinstance(step, str) or step not in STEPS:
        raise InputError(f"step must be decode or prefill, got {shown(step)}")
    batch = whole_number(batch, "batch", maximum=MAX_BATCH)
    context_len = whole_number(context_len, "context length", maximum=MAX_TOKENS)
    tp = whole_number(tp, "--tp (tensor-parallel GPUs)", maximum=MAX_GPUS)
    page_size = check_page_size(page_size)
    dcp = check_dcp(dcp, context_len, page_size)
    cp = check_cp(cp, context_len)
    if step == "decode" and cp > 1:
        raise InputError(f"--cp {cp} splits a prefill (ring attention); a decode step splits its KV with --dcp")
    if step == "prefill" and dcp > 1:
        raise InputError(f"--dcp {dcp} splits a decode step's KV; a prefill is split by --cp (ring attention)")
    for _, layer, _ in layer_walk(model):
        layer_heads(model, layer, tp)                                # raises naming tp and the heads
    for what, width in (("MLP", model.dense_ffn_size or model.ffn_size), ("expert MLP", model.ffn_size)):
        if width % tp:
            raise InputError(f"--tp {tp} does not divide the {width:,}-wide {what} of {model.name}")
    return batch, context_len, tp, dcp, cp, page_size


def _one_name(value, name: str, old_value, old_name: str):
    """A degree given by its Deployment name or its old spelling (1 when neither), refused when given as both."""
    if value is None:
        return old_value
    if old_value != 1:
        raise InputError(f"give {name} or its old spelling {old_name}, not both ({name}={shown(value)}, "
                         f"{old_name}={shown(old_value)})")
    return value


def _deployment(tp, dcp, cp, dtype, page_size, gpu_memory_utilization, gemm_dtype, deployment) -> Deployment:
    if deployment is None:
        return Deployment(tensor_parallel=tp, kv_parallel=dcp, prefill_context_parallel=cp, page_size=page_size,
                          dtype=dtype, gemm_dtype=gemm_dtype, gpu_memory_utilization=gpu_memory_utilization)
    if not isinstance(deployment, Deployment):
        raise InputError(f"deployment must be a rooflab.Deployment, got {shown(deployment)}")
    given = [name for name, value, default in (("tp", tp, 1), ("dcp", dcp, 1), ("cp", cp, 1), ("dtype", dtype, None),
                                               ("page_size", page_size, 16), ("gemm_dtype", gemm_dtype, None),
                                               ("gpu_memory_utilization", gpu_memory_utilization, 0.9))
             if value is not default and value != default]
    if given:
        raise InputError(f"give {', '.join(given)} in the Deployment, not beside it (the deployment holds them)")
    return deployment


def _provenance_notes(pricer: Pricer) -> list[str]:
    """One note for each (implementation, provenance) a transferred prediction came from: its error band (held-out,
    and cross-GPU where checked) and what the transfer assumes (rooflab.transfer)."""
    out = []
    for (impl, provenance), p in sorted(pricer.provenance.items()):
        if p.fitted_on is None:
            continue
        band = f"error band +-{p.error_band:.1%} ({p.band_note})" if p.error_band is not None else p.band_note
        out.append(f"t_predicted {impl} {provenance}: {band}" + (f"; assumes {p.assumes}" if p.assumes else ""))
    return out


def _pipeline(ctx: StepContext, rows: list[StepRow], work: StepWork, micro: int, decode: bool
              ) -> tuple[list[StepRow], float, list[str]]:
    """One stage's rows (ceil(layers / PP) of the layers, the logits on the last, the send to the next stage), the
    stage times a step takes (max(M, PP) decode, M + PP - 1 prefill) and the note saying so."""
    model, pp = ctx.model, ctx.dep.pipeline_parallel
    stage_layers = math.ceil(model.num_layers / pp)
    rows = [r if r.part == "sequences" else scaled(r, stage_layers / model.num_layers) for r in rows]
    if ctx.gpu.interconnect is not None:
        rows.append(pipeline_send(ctx, math.ceil(work.tokens / ctx.cp)))
    slots = max(micro, pp) if decode else micro + pp - 1
    per_micro = work.decodes if decode else work.prefills
    note = (f"pipeline: {pp} stages of {stage_layers} layers, {micro} micro-batch(es) of {per_micro:,}; a step is "
            f"{slots} stage time(s)" + (f" (bubble {1 - micro / slots:.0%})" if slots > micro else ""))
    return rows, slots, [note]


def _notes(ctx: StepContext, spec, imbalance: float, rows: list[StepRow]) -> list[str]:
    """What the step's figures rest on: missing predictions, transfers and their bands, formats, drafts, experts."""
    pricer, gpu, dep, model = ctx.pricer, ctx.gpu, ctx.dep, ctx.model
    notes = [f"no prediction for {what}: {why}" for what, why in sorted(pricer.missing.items())]
    notes += _provenance_notes(pricer)
    if gpu.interconnect is None and dep.num_gpus > 1:
        notes.append(f"{gpu.name} has no interconnect: section; communication is not priced")
    notes += pricer.notes
    small = small_ops_note(ctx)
    if small is not None:
        notes.append(small)
    if spec is not None:
        notes.append(f"speculative: {spec.method.value}, k = {spec.num_speculative_tokens}, acceptance "
                     f"{spec.acceptance_rate:g}: {spec.tokens_per_step:.3f} tokens a step "
                     f"((1 - a^(k+1)) / (1 - a))")
    if ctx.decode_attention != "shared" and any("per query head" in r.label for r in rows):
        notes.append("decode attention: each GQA group's KV read once per query head (TensorRT-LLM's masked MHA "
                     "kernel, a model: rooflab's paged decode at one KV head a query head x the L2's measured share)")
    if imbalance != 1 and model.is_moe:
        notes.append(f"experts: the busiest GPU receives {imbalance:g} x the balanced token-expert pairs")
    return notes


def step_report(model: ModelSpec, gpu: GpuSpec, batch: int = 1, context_len: int = 8192, step: str = "decode",
                tp: int = 1, dcp: int = 1, cp: int = 1, dtype: DType | None = None, page_size: int = 16,
                gpu_memory_utilization: float = 0.9, check_memory: bool = True,
                gemm_dtype: DType | None = None, deployment: Deployment | None = None, prefill_tokens: int = 0,
                expert_imbalance: float = 1.0, micro_batches: int | None = None, *,
                decode_attention: str | None = None, moe_kernel: str | None = None, sampler: str | None = None,
                engine: str | None = None, engine_version: str | None = None,
                tensor_parallel: int | None = None, kv_parallel: int | None = None,
                prefill_context_parallel: int | None = None) -> StepReport:
    """One decode step (B sequences at `context_len`, and a prefill chunk of `prefill_tokens` when given) or one
    prefill (B prompts of `context_len`) of the whole model on one GPU of the deployment (rooflab.step).

    `deployment` (rooflab.Deployment) holds the parallelism, formats, page size, utilisation, speculative decoding
    and CUDA graphs; without it the keyword arguments (tensor_parallel; kv_parallel = KV parallelism over extra
    GPUs; prefill_context_parallel; dtype; page_size; gemm_dtype; gpu_memory_utilization) build one (the
    Deployment's names; `tp`, `dcp` and `cp` are their old spellings, kept for one release: `dcp` here is KV
    parallelism, not the engines' DCP, which only a Deployment spells) with the Deployment's defaults (CUDA graphs, fused
    elementwise work; rooflab's measured torch layer is Deployment(fused_elementwise=False)). B counts every data
    rank's sequences (ceil(B / ranks) a rank). A step the engine runs eagerly although the deployment has CUDA graphs
    (vLLM V0 outside a decode-only batch of at most 256 sequences of at most 8,192 tokens: work.step_graphed) is
    priced as without them (eager launches and collectives), noted; StepReport.cuda_graph says which.

    Formats: `dtype` (Deployment.dtype) is the activations' and attention's (default: the checkpoint's, else bf16);
    the KV cache is read in Deployment.kv_cache_dtype (default: dtype); the weights are read as shipped
    (ModelSpec.weight_format) or in Deployment.weight_format (the legacy `gemm_dtype` alone stores them in it too);
    each GEMM runs in Deployment.gemm_dtype, else fp8 for fp8 weights, else the activations' dtype.

    `expert_imbalance` f >= 1: the busiest GPU's experts receive f times the balanced share of token-expert pairs.
    `micro_batches` M (pipeline parallelism; default PP): micro-batches in flight.
    `engine` (vllm, sglang, tensorrt-llm) at `engine_version` (a release such as 0.9.0; default: the one
    rooflab.vocab.ENGINE_RELEASES names): price the decode attention and the experts as that engine's kernels
    (rooflab.step.engine_kernels; a note says which and why). Without an engine, rooflab's own step.
    `decode_attention` (rooflab.step.attention.DecodeAttention, or its name): how the decode kernel reads a GQA
    group's KV; "shared" (once for the group) or "per_query_head" (TensorRT-LLM's masked MHA kernel); default:
    the engine's, else shared.
    `moe_kernel` (rooflab.step.moe_kernel.MoeKernel, or its name): the kernel the experts' GEMMs are priced as;
    "torch_grouped" (torch's grouped GEMM as measured), "tuned" (a tuned fused kernel: the dense cuBLAS fit on the
    experts' work) or "default_config" (priced as torch_grouped); default: the engine's, else torch_grouped.
    `sampler` (rooflab.step.Sampler, or its name): what picks the tokens after the model's graph (rooflab.step.
    sampler); default: the engine's, else rooflab's own graphed greedy argmax; "unpriced" prices none.
    An explicit `decode_attention`, `moe_kernel` or `sampler` that contradicts the engine's is an InputError.

    A batch that does not fit (rooflab.capacity.plan_capacity's accounting at the deployment's utilisation, where it
    models the deployment; else the weights and the batch's KV against the usable memory) is an InputError saying
    so (unless `check_memory` is False: a measured run that shares one cache across layers).
    """
    tp = _one_name(tensor_parallel, "tensor_parallel", tp, "tp")
    dcp = _one_name(kv_parallel, "kv_parallel", dcp, "dcp")
    cp = _one_name(prefill_context_parallel, "prefill_context_parallel", cp, "cp")
    deployment = _deployment(tp, dcp, cp, dtype, page_size, gpu_memory_utilization, gemm_dtype, deployment)
    if not isinstance(model, ModelSpec):
        raise InputError(f"model must be a ModelSpec (rooflab.load_model), got {shown(model)}")
    deployment.check_model(model)
    kvp, inner = deployment.kv_parallel, deployment.decode_context_parallel
    if step == "prefill" and inner > 1:
        raise InputError(f"--dcp {inner} splits a decode step's KV; a prefill is split by --pcp (ring attention)")
    batch, context_len, _, _, cp, page_size = _check(model, step, batch, context_len,
                                                     deployment.attention_tensor_parallel, kvp * inner,
                                                     deployment.prefill_context_parallel, deployment.page_size)
    if not isinstance(gpu, GpuSpec):
        raise InputError(f"gpu must be a GpuSpec (rooflab.load_gpu), got {shown(gpu)}")
    if not isinstance(check_memory, bool):
        raise InputError(f"check_memory must be True or False, got {shown(check_memory)}")
    prefill_tokens = whole_number(prefill_tokens, "prefill tokens (--prefill-chunk)", minimum=0, maximum=MAX_TOKENS)
    imbalance = real_number(expert_imbalance, "expert imbalance (--expert-imbalance)", 1, 1e3)
    decode = step == "decode"
    if not decode and prefill_tokens:
        raise InputError("--prefill-chunk adds a prefill chunk to a decode step; a prefill step is --batch prompts")
    if prefill_tokens > model.max_context_len:      # one prompt's chunk: never longer than the prompt can be
        raise InputError(f"--prefill-chunk {prefill_tokens:,} is longer than {model.name}'s maximum context of "
                         f"{model.max_context_len:,} tokens (max_context_len, the max_position_embeddings vLLM "
                         "takes as max_model_len; it refuses a longer prompt: 'The decoder prompt ... is longer "
                         "than the maximum model length')")
    pp = deployment.pipeline_parallel
    micro = pp if micro_batches is None else whole_number(micro_batches, "micro-batches (--micro-batches)",
                                                          maximum=MAX_BATCH)
    if micro_batches is not None and pp == 1 and micro != 1:
        raise InputError(f"micro-batches (--micro-batches {micro}) are how a batch flows through pipeline stages; "
                         "give --pp N (pipeline_parallel > 1) or leave them out")
    if imbalance != 1 and not model.is_moe:
        raise InputError(f"expert imbalance (--expert-imbalance {imbalance:g}) applies to MoE layers; "
                         f"{model.name} has none")
    kernels = _kernels(model, gpu, deployment, engine, engine_version, decode_attention, moe_kernel, sampler)
    per_rank = math.ceil(batch / deployment.data_ranks)
    per_micro = math.ceil(per_rank / micro)
    spec = deployment.speculative if decode else None
    q_len = spec.query_tokens if spec is not None else 1
    work = (StepWork(decodes=per_micro, q_len=q_len, context_len=context_len, prefills=1 if prefill_tokens else 0,
                     prefill_len=prefill_tokens) if decode else StepWork(prefills=per_micro, prefill_len=context_len))
    graphs = step_graphed(kernels.sampler, deployment, work)
    ctx = kernels.context(model, gpu, deployment, imbalance, graphs=graphs)
    rows, notes = step_rows(ctx, work), []
    if pp > 1:
        rows, slots, notes = _pipeline(ctx, rows, work, micro, decode)
    else:
        slots, micro = 1, 1
    memory = step_memory(ctx, batch, context_len, per_rank, check_memory, decode)
    notes += _notes(ctx, spec, imbalance, rows) + ([kernels.note] if kernels.note else [])
    if deployment.cuda_graphs and not graphs:
        notes.append(f"the model runs eagerly this step (every launch and collective at eager times, as without CUDA "
                     f"graphs): {outside_graph_words()} (rooflab.step.sampler.graph_replayed)")
    notes += [memory.note] if memory.note else []
    return StepReport(
        model=model.name, gpu=gpu.name, step=step, batch=batch, context_len=context_len, dtype=ctx.dtype.value,
        tp=deployment.tensor_parallel, dcp=kvp, cp=cp, rows=tuple(rows),
        weight_bytes_per_gpu=float(memory.weights_bytes), kv_bytes_per_gpu=float(memory.kv_bytes),
        usable_bytes_per_gpu=float(memory.usable_bytes), notes=tuple(notes),
        model_display_name=model.display_name, gpu_display_name=gpu.display_name, page_size=page_size,
        decode_context_parallel=inner, num_gpus=deployment.num_gpus, prefill_tokens=prefill_tokens, q_len=q_len,
        tokens_per_step=spec.tokens_per_step if spec is not None else 1.0, pipeline_parallel=pp,
        micro_batches=micro, stage_slots=float(slots), kv_dtype=ctx.kv_dtype.value, deployment=deployment.to_dict(),
        decode_attention=ctx.decode_attention.value, draft_weight_bytes_per_gpu=float(memory.draft_weights_bytes),
        draft_kv_bytes_per_gpu=float(memory.draft_kv_bytes), exp_per_s=ctx.pricer.roofs.exp_roof_per_s,
        cuda_graph=graphs)


def _kernels(model, gpu, deployment, engine, version, decode_attention, moe_kernel, sampler=None) -> EngineKernels:
    """The step's kernel models: the engine's (engine_kernels), with explicit choices where given; a choice that
    contradicts the named engine's is an InputError."""
    kernels = engine_kernels(model, gpu, deployment, engine, version)
    attention = None if decode_attention is None else decode_attention_of(decode_attention)
    experts = None if moe_kernel is None else moe_kernel_of(moe_kernel)
    picker = None if sampler is None else sampler_of(sampler)
    if kernels.engine is not None:
        for given, own, what in ((attention, kernels.decode_attention, "decode_attention"),
                                 (experts, kernels.moe_kernel, "moe_kernel"),
                                 (picker, kernels.sampler, "sampler")):
            if given is not None and given is not own:
                raise InputError(f"{what} {given.value} contradicts {kernels.engine.value} {kernels.version}'s "
                                 f"kernel ({own.value}); give the engine or the kernel, not both")
        if deployment.speculative is not None:   # no sampler is priced (work.sampler_row's note): the note names none
            return dataclasses.replace(kernels, sampler_reason="")
        return kernels
    return dataclasses.replace(kernels, decode_attention=attention or kernels.decode_attention,
                               moe_kernel=experts or kernels.moe_kernel, sampler=picker or kernels.sampler)


__all__ = ["StepReport", "step_report", "step_rows"]

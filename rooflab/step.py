"""A whole model's step on a deployment, as the engines run it: decode (time per output token), a mixed step (a
prefill chunk with the decodes) or a prefill (time to first token).

One GPU of the deployment does, per step, for B sequences of context (or prompt) L spread over the deployment's
data ranks (vLLM's DP replicas, SGLang's data-parallel attention ranks: ceil(B / ranks) each):

    attention projections   per layer type: the QKV and O GEMMs over the GPU's heads (MLA and linear layers: one
                            GEMM of their projection weights), m = the rank's tokens (decodes x query tokens +
                            the prefill chunk); heads split by TP / attention-DP
    attention               per layer type (rooflab.cost.layers): paged decode (several query tokens when
                            verifying drafts), split-KV where it pays, KV read in the cache's dtype; DCP: the GPU's
                            share of the KV by position, then the merge of the gathered states; a prefill or a
                            prefill chunk: flash attention (PCP: ring attention)
    MLP / MoE               dense layers: gate/up and down GEMMs (with data-parallel attention, over the TP group's
                            gathered tokens); MoE layers: the router, the experts this GPU holds (E / EP) at the
                            token-expert pairs they receive, imbalance f x M k / EP (M the expert group's tokens),
                            weights read once for each touched expert; shared experts as a dense MLP
    norms and elementwise   fused (engines, CUDA graphs): fused add-RMSNorm x 2, SiLU-and-mul, one KV-cache write a
                            layer; unfused (eager, or rooflab's torch reference layer): 2 RMSNorms, 2 residual adds,
                            SiLU x up, the q copy and 2 KV appends; the floor counts the fused bytes either way
    communication           attention TP: an all-reduce a layer; dense MLP: an all-reduce (TP) or all-gather +
                            reduce-scatter (data-parallel attention); MoE: an all-reduce (tokens replicated), or
                            dispatch and combine all-to-alls over EP (tokens spread over data ranks); logits'
                            all-gather; DCP: the (o, lse) all-gather; PP: a send of the activations a stage
    logits                  the lm_head GEMM for each sequence's scored tokens (and the chunk's last)
    draft                   speculative decoding: k draft steps (an MTP / EAGLE head: one decoder layer and the
                            lm_head; a draft model: its own decode step), tokens per step (1 - a^(k+1)) / (1 - a)

Pipeline parallelism: the rows are one stage's (ceil(layers / PP) layers, the logits on the last) at one micro-batch
of ceil(B / M); a decode step in steady state takes max(M, PP) stage times (M < PP leaves stages idle: the bubble
1 - M / PP), a prefill (one flush) M + PP - 1. GPUs in all: TP x PCP x PP x DP x KVP.

Floors are physical: each row's launches at the datasheet roofs (fp8 GEMMs at the fp8 tensor rate), communication at
the link's datasheet bandwidth; the step's t_floor_s is the largest of its summed compute, memory and communication
times (everything overlapped). Predictions are models: the GPU's fitted GEMM family against the measured rate of the
GEMM's arithmetic (fp8: the measured fp8 GEMM rate where calibrated, else the bf16 fit's measured fraction of the
datasheet, said in a note), attention kernels, merge and collectives (graph or eager timings), summed launch by
launch; eager launches never faster than their measured host issue time (EAGER_HOST_S). Where a piece has no fit,
t_predicted_s is None and a note names it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .comm import collective_time
from .context_parallel import ring_time
from .cost.batch import DecodeBatch
from .cost.common import KernelCost, real_number, whole_number
from .deployment import Deployment, SpecMethod
from .cost.paged import check_page_size
from .cost.dcp import check_dcp, merge_pieces, shard_tokens
from .cost.gemm import GemmCost, gemm
from .cost.layers import layer_decode, layer_heads, layer_prefill, layer_splits, layer_walk
from .cost.model import experts_touched
from .cost.ring import check_cp, ring_prefill
from .errors import InputError, shown
from .kvcache import kv_layout, sequence_bytes
from .limits import MAX_BATCH, MAX_GPUS, MAX_TOKENS
from .predict import (MEASURED_HERE, OWN, PredictedTime, decode_kernel, no_prediction_reason, predict_time,
                      prefill_kernel)
from .roofline import Ceilings, predict_kernel
from .specs import GpuSpec, ModelSpec
from .specs.parameters import attention_parameters
from .units import FP32_BYTES, DType, WeightFormat, fmt_bytes
from .vocab import CeilingSource, Kernel, LayerKind, Pipe, StepKind

#: Seconds per call of the torch layer's small kernels inside a CUDA graph, at batch 1, 8 and 64, timed alone
#: (50 a graph) on an H200: measurements/h200x2-gemm.csv, its small_op_* metadata (2026-11-30). Other GPUs are
#: priced with the same launch times (an assumption); past batch 64 the extra bytes stream at the GPU's bandwidth.
SMALL_OPS = {"rms_norm": (4.42e-6, 4.49e-6, 4.57e-6), "residual_add": (1.25e-6, 1.28e-6, 1.40e-6),
             "silu_mul": (2.92e-6, 4.63e-6, 7.37e-6), "q_copy": (1.18e-6, 2.13e-6, 2.28e-6),
             "kv_append": (2.93e-6, 3.01e-6, 3.17e-6)}
#: The same kernels issued eagerly (200 back to back from Python, one synchronize, wall time a call) on an H200:
#: measurements/launch/h200-eager-launch.csv (benchmarks/eager_launch.py, 2026-12-01). PyTorch's dispatch and the launch
#: bound them: 9.5-30 us a call against 1.1-7.5 in a graph.
EAGER_SMALL_OPS = {"rms_norm": (1.486e-5, 1.437e-5, 1.498e-5), "residual_add": (9.64e-6, 9.47e-6, 1.001e-5),
                   "silu_mul": (2.846e-5, 2.878e-5, 3.046e-5), "q_copy": (1.604e-5, 1.679e-5, 1.679e-5),
                   "kv_append": (2.316e-5, 2.196e-5, 2.154e-5)}
#: Host issue time of one eager GEMM or attention launch: torch.mm of a [b, 4096] x [4096, 6144] bf16 GEMM issued
#: eagerly, 17.8-18.5 us a call against 13.3-15.3 us in a graph (measurements/launch/h200-eager-launch.csv, the largest of
#: batch 1, 8, 64). Attention and merge launches are given the GEMM's (a transfer: not measured apart); other GPUs
#: the H200's (an assumption: a host-bound time, of the CPU and driver more than the GPU).
EAGER_HOST_S = 1.848e-5
#: The GPU SMALL_OPS, EAGER_SMALL_OPS and EAGER_HOST_S were measured on (measurements/h200x2-gemm.csv,
#: measurements/launch/h200-eager-launch.csv): other GPUs take them as they are (transferred, an assumption).
SMALL_OPS_GPU = "h200-sxm"
SMALL_OP_BATCHES = (1, 8, 64)
#: The small kernels of rooflab's torch reference layer (unfused): (op, calls).
LAYER_SMALL_OPS = (("rms_norm", 2), ("residual_add", 2), ("silu_mul", 1), ("q_copy", 1), ("kv_append", 2))
#: A fused engine's: fused add-RMSNorm (priced at the RMSNorm's measured time) twice, SiLU-and-mul, and one write of
#: the new K and V into the cache (vLLM's reshape_and_cache, at the KV append's time); the q copy is gone (rotary
#: embedding in place) and the residual adds are inside the norms.
FUSED_SMALL_OPS = (("rms_norm", 2), ("silu_mul", 1), ("kv_append", 1))


@dataclass(frozen=True)
class StepRow:
    """One component of the step, for the whole step (all its layers), on one GPU: the row contract of
    `rooflab report` (flops, hbm_bytes, intensity_flop_per_byte, t_compute_s, t_memory_s, t_floor_s, bound,
    t_predicted_s, ...). Communication rows carry bus bytes and null intensity. `part` says what the row scales
    with (rooflab.step_table): tokens (the rank's rows through the GEMMs), sequences (logit rows), decode (the decodes
    and their context), prefill (the prompt tokens)."""

    variant: str
    label: str
    flops: float
    hbm_bytes: float
    t_compute_s: float
    t_memory_s: float
    t_floor_s: float
    bound: str
    t_predicted_s: Optional[float]
    predicted_impl: Optional[str] = None
    layer_type: Optional[str] = None
    num_layers: Optional[int] = None
    calls: int = 0
    weight_bytes: float = 0.0
    comm_bytes: float = 0.0                      # bus bytes per GPU (communication rows)
    t_exp_s: float = 0.0
    part: str = "tokens"
    source: str = ""                             # where the prediction comes from (rooflab explain)
    predicted_from: Optional[str] = None         # 'measured on this GPU' / 'transferred from <gpu>' (PredictedTime)

    @property
    def is_communication(self) -> bool:
        return self.bound == "communication"

    @property
    def intensity_flop_per_byte(self) -> Optional[float]:
        return None if self.is_communication or not self.hbm_bytes else self.flops / self.hbm_bytes

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["intensity_flop_per_byte"] = self.intensity_flop_per_byte
        return out


def overlapped_floor_s(rows) -> float:
    """Everything overlapped: the largest of the rows' summed compute, memory and communication floors."""
    compute = sum(max(r.t_compute_s, r.t_exp_s) for r in rows if not r.is_communication)
    memory = sum(r.t_memory_s for r in rows if not r.is_communication)
    comm = sum(r.t_floor_s for r in rows if r.is_communication)
    return max(compute, memory, comm)


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
        out.update(kv_parallel=self.dcp, prefill_context_parallel=self.cp)   # the old keys dcp, cp kept one release
        out.update(phase="step", gpus=self.gpus, t_floor_s=self.t_floor_s, t_floor_serial_s=self.t_floor_serial_s,
                   t_predicted_s=self.t_predicted_s, t_per_output_token_s=self.t_per_output_token_s,
                   notes=list(self.notes), rows=[r.to_dict() for r in self.rows])
        return out


# ------------------------------------------------------------------ pricing helpers

_FP8 = (DType.fp8_e4m3, DType.fp8_e5m2)


def gemm_ceilings(gpu: GpuSpec, dtype: DType) -> tuple[Ceilings, Optional[str]]:
    """The ceilings a GEMM of `dtype` arithmetic is predicted against, and a note where its rate is transferred.

    The calibrated ceilings (the datasheet's where the GPU has no measured: section). An fp8 GEMM runs at the measured
    fp8 GEMM rate (measured.fp8_gemm_flop_per_s, torch._scaled_mm) where calibrated; else at the datasheet fp8 rate
    times the measured bf16 GEMM rate's fraction of the datasheet bf16 rate (never above a measured fraction)."""
    source = CeilingSource.calibrated if gpu.measured is not None else CeilingSource.datasheet
    roofs = Ceilings.of(gpu, dtype, source)
    if dtype not in _FP8:
        return roofs, None
    m = gpu.measured
    if m is not None and m.fp8_gemm_flop_per_s:
        return dataclasses.replace(roofs, matmul_flop_per_s=float(m.fp8_gemm_flop_per_s)), None
    bf16 = (m.gemm_flop_per_s.get("bf16") or m.gemm_flop_per_s.get("fp16")) if m is not None else None
    if bf16:
        share = bf16 / gpu.matmul_flop_per_s(DType.bf16)
        rate = share * gpu.matmul_flop_per_s(dtype)
        return dataclasses.replace(roofs, matmul_flop_per_s=rate), (
            f"fp8 GEMMs at the bf16 GEMM's measured fraction ({share:.0%}) of the datasheet fp8 rate "
            f"({rate / 1e12:,.0f} TFLOP/s): {gpu.name} has no measured fp8 GEMM rate")
    return roofs, f"fp8 GEMMs at the datasheet fp8 rate: {gpu.name} has no measured GEMM rate"


@dataclass
class _Pricer:
    """Prices launches for one report: floors at the datasheet roofs, predictions from the fits (rooflab.predict.
    predict_time: the GPU's own, else a bundled GPU's transferred with its provenance, rooflab.transfer).

    `missing` names each piece without a prediction and why (the step's note); `provenance` each distinct
    (implementation, provenance) a prediction came from, with its error band and what it assumes."""

    gpu: GpuSpec
    dtype: DType
    eager: bool = False
    roofs: Ceilings = None
    missing: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    gemm_from: Optional[str] = None              # the GEMM fit's provenance, once a GEMM is predicted

    def __post_init__(self) -> None:
        self.roofs = Ceilings.of(self.gpu, self.dtype)

    def floors(self, kernels: list[KernelCost], times: float = 1.0, dtype: Optional[DType] = None):
        """(t_compute, t_memory, t_floor, t_exp) of launches run one after another, times `times`."""
        roofs = self.roofs if dtype is None or dtype is self.dtype else Ceilings.of(self.gpu, dtype)
        parts = [predict_kernel(k, roofs) for k in kernels]
        return (times * sum(float(p.t_compute_s) for p in parts), times * sum(float(p.t_memory_s) for p in parts),
                times * sum(float(p.t_floor_s) for p in parts), times * sum(float(p.t_exp_s) for p in parts))

    def launch(self, t: Optional[float]) -> Optional[float]:
        """One launch's time as issued: in a graph as fitted; eager never below the host's issue time."""
        return None if t is None else (max(t, EAGER_HOST_S) if self.eager else t)

    def miss(self, what: str, why: str) -> None:
        self.missing.setdefault(what, why)

    def predicted(self, kernel: Kernel, price: Callable, dtype: Optional[DType] = None,
                  impl: Optional[str] = None) -> Optional[PredictedTime]:
        """predict_time for `kernel` (transferred where the GPU has no fit of its own), its provenance recorded; None
        with the reason recorded where no fit predicts it here."""
        p = predict_time(self.gpu, kernel, price, dtype or self.dtype, impl, optional=True)
        if p is None:
            self.miss(kernel.value + (f" ({impl})" if impl and impl != OWN else ""),
                      no_prediction_reason(self.gpu, kernel, None if impl == OWN else impl))
            return None
        key = (p.impl, p.provenance)
        if key not in self.provenance:
            self.provenance[key] = p
        return p

    def fitted(self, kernel: Kernel, price: Callable, impl: Optional[str] = None) -> Optional[float]:
        p = self.predicted(kernel, price, impl=impl)
        return None if p is None else self.launch(p.t_predicted_s)

    def gemm_time(self, cost: GemmCost, arithmetic: DType) -> Optional[float]:
        """A GEMM's predicted time: the fitted GEMM family (torch_cublas) against its arithmetic's measured rate (the
        GPU's own fit, or a bundled GPU's transferred: rooflab.predict.predict_time)."""
        p = self.predicted(Kernel.gemm, lambda num_sms, units_per_sm: cost, arithmetic)
        if p is None:
            return None
        if p.fitted_on is None:
            _, note = gemm_ceilings(self.gpu, arithmetic)     # the own fit's roofs say how an fp8 rate was priced
            if note and note not in self.notes:
                self.notes.append(note)
        self.gemm_from = p.provenance
        return self.launch(p.t_predicted_s)

    @property
    def sources(self) -> str:
        """The provenance of every prediction made so far, one phrase ('transferred from h200-sxm'), or ''."""
        return ", ".join(sorted({p.provenance for p in self.provenance.values()}))

    def gemms(self, costs: list[GemmCost], times: float = 1.0, arithmetic: Optional[DType] = None) -> Optional[float]:
        total = 0.0
        for cost in costs:
            t = self.gemm_time(cost, arithmetic or self.dtype)
            if t is None:
                return None
            total += t
        return times * total


def _row(pricer: _Pricer, variant: str, label: str, kernels: list[KernelCost], times: float,
         predicted: Optional[float], impl: Optional[str] = None, dtype: Optional[DType] = None, **extra) -> StepRow:
    comp, mem, floor, exp = pricer.floors(kernels, times, dtype)
    flops = times * float(sum(k.flops for k in kernels))
    nbytes = times * float(sum(k.hbm_bytes for k in kernels))
    bound = "memory" if mem >= max(comp, exp) else ("exp" if exp >= comp else "compute")
    if variant == "gemm" and predicted is not None and "predicted_from" not in extra:
        extra["predicted_from"] = pricer.gemm_from
    return StepRow(variant, label, flops, nbytes, comp, mem, floor, bound, predicted, impl, t_exp_s=exp, **extra)


def _comm_row(gpu: GpuSpec, kernel: Kernel, label: str, bytes_per_rank: float, world: int, calls: float,
              missing: dict, timing: str = "graph", part: str = "tokens") -> StepRow:
    t = collective_time(gpu, kernel, bytes_per_rank, world, timing)
    if t.t_predicted_s is None:
        missing.setdefault(f"{kernel.value} (interconnect collectives)",
                           f"{gpu.name} has no {timing} {kernel.value} fit of its link (collectives are fitted per "
                           f"interconnect and not transferred)")
    predicted = None if t.t_predicted_s is None else calls * t.t_predicted_s
    source = (f"{kernel.value} fit over {t.fitted_world_size} GPUs ({timing})" + (", scaled" if t.scaled else "")
              if t.fitted_world_size else "no fit")
    return StepRow(kernel.value, label, 0.0, 0.0, 0.0, 0.0, calls * t.t_floor_s, "communication", predicted,
                   "nccl" if predicted is not None else None, calls=int(round(calls)), comm_bytes=calls * t.bus_bytes,
                   part=part, source=source, predicted_from=MEASURED_HERE if predicted is not None else None)


def _scaled(row: StepRow, share: float) -> StepRow:
    """A row for `share` of its layers (a pipeline stage)."""
    if share == 1:
        return row
    return dataclasses.replace(
        row, flops=row.flops * share, hbm_bytes=row.hbm_bytes * share, t_compute_s=row.t_compute_s * share,
        t_memory_s=row.t_memory_s * share, t_floor_s=row.t_floor_s * share, t_exp_s=row.t_exp_s * share,
        t_predicted_s=None if row.t_predicted_s is None else row.t_predicted_s * share,
        calls=int(round(row.calls * share)), weight_bytes=row.weight_bytes * share,
        comm_bytes=row.comm_bytes * share,
        num_layers=None if row.num_layers is None else math.ceil(row.num_layers * share))


def _interp(table, tokens: int) -> float:
    return float(np.interp(np.log(max(tokens, 1)), np.log(SMALL_OP_BATCHES), table))


def small_op_time(op: str, tokens: int, hidden: int, ffn: int, bw: float, eager: bool = False) -> float:
    """One small kernel's time at `tokens` rows: the measured table (graph, or eager issue), interpolated in
    log(batch); past its last batch, that time plus the extra bytes at bandwidth `bw`."""
    if not isinstance(op, str) or op not in SMALL_OPS:
        raise InputError(f"op must be one of {', '.join(SMALL_OPS)}, got {shown(op)}")
    tokens = whole_number(tokens, "tokens", maximum=MAX_BATCH * MAX_TOKENS)
    hidden = whole_number(hidden, "hidden")
    ffn = whole_number(ffn, "ffn")
    bw = real_number(bw, "bw (bytes per second)", 0, 1e18, lo_open=True)
    graph = SMALL_OPS[op]
    if tokens <= SMALL_OP_BATCHES[-1]:
        t = _interp(graph, tokens)
        return max(t, _interp(EAGER_SMALL_OPS[op], tokens)) if eager else t
    width = {"silu_mul": 5 * ffn}.get(op, 3 * hidden)        # elements moved per row (reads and writes)
    t = graph[-1] + (tokens - SMALL_OP_BATCHES[-1]) * width * 2 / bw
    return max(t, EAGER_SMALL_OPS[op][-1]) if eager else t


# ------------------------------------------------------------------ the step

STEPS = tuple(k.value for k in StepKind)


@dataclass(frozen=True)
class StepWork:
    """What one data rank of the deployment computes in a step (rooflab.step_table prices these directly).

    decodes       sequences decoding on the rank, each scoring `q_len` query tokens over `context_len` cached ones
    prefills      prompts (or prompt chunks) prefilled in the same step, `prefill_len` tokens each (fresh: the chunk
                  attends to itself, causal)
    """

    decodes: int = 0
    q_len: int = 1
    context_len: int = 0
    prefills: int = 0
    prefill_len: int = 0

    @property
    def prefill_tokens(self) -> int:
        return self.prefills * self.prefill_len

    @property
    def logit_rows(self) -> int:
        """Rows the lm_head scores: every query token of a decode (drafts verified), a prompt's last."""
        return self.decodes * self.q_len + self.prefills


@dataclass
class _Ctx:
    """One report's fixed parts: the model, GPU, deployment and formats, and the pricers."""

    model: ModelSpec
    gpu: GpuSpec
    dep: Deployment
    dtype: DType                                 # activations and attention
    kv_dtype: DType
    weights_as: object                           # DType / WeightFormat override of the quantizable weights, or None
    pricer: _Pricer
    imbalance: float = 1.0
    cp: int = 1

    def arithmetic(self, component: str) -> DType:
        """A component's GEMM arithmetic: --gemm-dtype, else fp8 for fp8-stored weights, else the activations'."""
        if self.dep.gemm_dtype is not None:
            return self.dep.gemm_dtype
        fmt = self.model.weight_format(component, self.weights_as)
        return DType.fp8_e4m3 if fmt in (WeightFormat.fp8, WeightFormat.fp8_block) else self.dtype

    def bits(self, component: str) -> float:
        return self.model.weight_format(component, self.weights_as).bits_per_weight

    @property
    def attn_tp(self) -> int:
        return self.dep.attention_tensor_parallel

    @property
    def timing(self) -> str:
        return "graph" if self.dep.cuda_graphs else "eager"


def _gemm_row(ctx: _Ctx, label: str, costs: list[GemmCost], count: int, component: str, **extra) -> StepRow:
    arith = ctx.arithmetic(component)
    t = ctx.pricer.gemms(costs, count, arith)
    calls = len(costs) * count
    return _row(ctx.pricer, "gemm", label, [c.kernel for c in costs], count, t, "torch_cublas", arith, calls=calls,
                weight_bytes=count * sum(float(c.weight_bytes) for c in costs),
                source=f"GEMM fit (torch_cublas) at the measured {arith.value} rate", **extra)


def _projections(ctx: _Ctx, tokens: int) -> list[StepRow]:
    """The attention projections of every layer: QKV and O GEMMs (one GEMM of the projection weights for MLA and
    linear layers), one row for the model; heads split over the attention TP (TP / attention DP)."""
    model, tp, dtype = ctx.model, ctx.attn_tp, ctx.arithmetic("attention")
    hidden, bits = model.hidden_size, ctx.bits("attention")
    kernels, predicted, calls, weight = [], 0.0, 0, 0.0
    for name, layer, count in layer_walk(model):
        if layer.kind in (LayerKind.mla, LayerKind.linear):
            params = attention_parameters(layer, model.heads, hidden, model.attention_bias) / tp
            costs = [gemm(tokens, math.ceil(params / hidden), hidden, dtype, "projections", bits)]
        else:
            h = layer_heads(model, layer, tp)
            qkv = h.num_qo_heads * h.head_dim + h.num_kv_heads * (h.head_dim + h.value_dim)
            costs = [gemm(tokens, qkv, hidden, dtype, "qkv", bits),
                     gemm(tokens, hidden, h.num_qo_heads * h.value_dim, dtype, "o", bits)]
        t = ctx.pricer.gemms(costs, count, dtype)
        predicted = None if t is None or predicted is None else predicted + t
        kernels += [c.kernel for c in costs for _ in range(count)]
        calls += len(costs) * count
        weight += count * sum(float(c.weight_bytes) for c in costs)
    return [_row(ctx.pricer, "gemm", "attention projections (QKV, O)", kernels, 1.0, predicted, "torch_cublas", dtype,
                 num_layers=model.num_layers, calls=calls, weight_bytes=weight,
                 source=f"GEMM fit (torch_cublas) at the measured {dtype.value} rate")]


def _mlp(ctx: _Ctx, tokens: int) -> list[StepRow]:
    """Dense MLP layers and MoE layers (router, this GPU's experts at the pairs they receive, shared experts)."""
    model, dep, dtype = ctx.model, ctx.dep, ctx.dtype
    hidden, rows, tp = model.hidden_size, [], dep.tensor_parallel
    dense_tokens = tokens * dep.attention_data_parallel          # SGLang gathers the TP group's tokens
    if model.num_dense_layers:
        width = (model.dense_ffn_size or model.ffn_size) // tp
        bits, a = ctx.bits("dense_mlp"), ctx.arithmetic("dense_mlp")
        costs = [gemm(dense_tokens, 2 * width, hidden, a, "gate_up", bits),
                 gemm(dense_tokens, hidden, width, a, "down", bits)]
        rows.append(_gemm_row(ctx, "MLP (gate/up, down)", costs, model.num_dense_layers, "dense_mlp",
                              num_layers=model.num_dense_layers))
    if model.num_moe_layers:
        e, k = model.num_experts, model.num_experts_per_token
        ep, etp = dep.expert_parallel, dep.expert_tensor_parallel
        group = tokens * dep.data_ranks                          # tokens the expert group routes
        pairs = math.ceil(ctx.imbalance * group * k / ep)        # token-expert pairs this GPU's experts receive
        touched = experts_touched(model, group) / ep
        width = model.ffn_size // etp
        bits, a = ctx.bits("experts"), ctx.arithmetic("experts")
        costs = [gemm(tokens, e, hidden, dtype, "router"),
                 gemm(pairs, 2 * width, hidden, a, "experts_gate_up", bits, touched),
                 gemm(pairs, hidden, width, a, "experts_down", bits, touched)]
        t = ctx.pricer.gemms(costs[:1], model.num_moe_layers, dtype)
        t2 = ctx.pricer.gemms(costs[1:], model.num_moe_layers, a)
        shared_row = None
        if model.num_shared_experts:
            shared = model.num_shared_experts * (model.shared_expert_ffn_size or model.ffn_size) // tp
            sb, sa = ctx.bits("shared_experts"), ctx.arithmetic("shared_experts")
            scosts = [gemm(dense_tokens, 2 * shared, hidden, sa, "shared_gate_up", sb),
                      gemm(dense_tokens, hidden, shared, sa, "shared_down", sb)]
            shared_row = _gemm_row(ctx, "shared experts (gate/up, down)", scosts, model.num_moe_layers,
                                   "shared_experts", num_layers=model.num_moe_layers)
        where = f" over EP {ep}" if ep > 1 else ""
        imb = f", imbalance {ctx.imbalance:g}" if ctx.imbalance != 1 else ""
        count = model.num_moe_layers
        rows.append(_row(ctx.pricer, "gemm", f"MoE ({touched:.1f} of {e // ep} experts touched{where}, {pairs:,} "
                                             f"token-expert pairs{imb})", [c.kernel for c in costs], count,
                         None if t is None or t2 is None else t + t2, "torch_cublas", a, num_layers=count,
                         calls=len(costs) * count, weight_bytes=count * sum(float(c.weight_bytes) for c in costs),
                         source=f"GEMM fit (torch_cublas) at the measured {a.value} rate; pairs f x M k / EP"))
        if shared_row is not None:
            rows.append(shared_row)
    return rows


def _small_ops(ctx: _Ctx, tokens: int) -> StepRow:
    """The small kernels of every layer: fused (FUSED_SMALL_OPS) or unfused (LAYER_SMALL_OPS), and the final
    RMSNorm; the floor counts the bytes the fused kernels move (what a fused engine must move)."""
    model, pricer, eager = ctx.model, ctx.pricer, not ctx.dep.cuda_graphs
    hidden, b = model.hidden_size, pricer.dtype.bytes
    heads = layer_heads(model, layer_walk(model)[0][1], ctx.attn_tp)
    ffn = (model.dense_ffn_size or model.ffn_size) // ctx.dep.tensor_parallel
    bw = pricer.gpu.measured.copy_bytes_per_s if pricer.gpu.measured else pricer.gpu.hbm_bandwidth_bytes_per_s
    kv_elems = 2 * heads.num_kv_heads * heads.head_dim
    fused_moved = {"rms_norm": 4 * hidden, "silu_mul": 3 * ffn, "kv_append": 2 * kv_elems}  # elements a row
    layers = model.num_layers
    kernels = []
    for op, per_layer in FUSED_SMALL_OPS + (("rms_norm", 1 / layers),):
        n = per_layer * layers
        kernels.append(KernelCost(op, np.float64(n * tokens * fused_moved[op] / 2),
                                  np.float64(n * tokens * fused_moved[op] * b), Pipe.vector))
    ops = FUSED_SMALL_OPS if ctx.dep.fused else LAYER_SMALL_OPS
    predicted, calls = 0.0, 0
    for op, per_layer in ops + (("rms_norm", 1 / layers),):
        n = per_layer * layers
        predicted += n * small_op_time(op, tokens, hidden, ffn, bw, eager)
        calls += round(n)
    what = ("fused add-RMSNorm, SiLU-and-mul, KV write" if ctx.dep.fused else
            "RMSNorm, adds, SiLU x up, q copy, KV append, unfused")
    source = ("measured small kernels " + ("issued eagerly (measurements/launch/h200-eager-launch.csv)" if eager else
                                           "in a CUDA graph (measurements/h200x2-gemm.csv)") + ", H200")
    return _row(pricer, "elementwise", f"norms and elementwise ({what})", kernels, 1.0, predicted,
                "torch_eager" if eager else "torch_graph", num_layers=layers, calls=calls, source=source,
                predicted_from=small_ops_from(pricer.gpu))


def small_ops_from(gpu: GpuSpec) -> str:
    """The provenance of the small kernels' times on `gpu`: measured on SMALL_OPS_GPU, transferred as they are
    to any other GPU (launch- and host-bound kernels; an assumption, said in the step's notes)."""
    return MEASURED_HERE if gpu.name == SMALL_OPS_GPU else f"transferred from {SMALL_OPS_GPU}"


def _communication(ctx: _Ctx, tokens: int) -> list[StepRow]:
    """The collectives that scale with the rank's tokens (the module docstring)."""
    model, dep, gpu = ctx.model, ctx.dep, ctx.gpu
    if gpu.interconnect is None:
        return []
    rows, b, hidden, timing, missing = [], ctx.dtype.bytes if ctx.dtype.bytes >= 2 else 2, model.hidden_size, \
        ctx.timing, ctx.pricer.missing
    tp, atp, adp = dep.tensor_parallel, ctx.attn_tp, dep.attention_data_parallel
    act = tokens * hidden * b
    layers = model.num_layers
    if atp > 1:
        rows.append(_comm_row(gpu, Kernel.all_reduce, f"attention TP: an all-reduce a layer of {tokens:,} x {hidden} "
                              f"over {atp} GPUs", act, atp, layers, missing, timing))
    dense = model.num_dense_layers
    if dense and tp > 1:
        if adp == 1:
            rows.append(_comm_row(gpu, Kernel.all_reduce, f"MLP TP: an all-reduce a dense layer over {tp} GPUs", act,
                                  tp, dense, missing, timing))
        else:
            for kernel in (Kernel.all_gather, Kernel.reduce_scatter):
                rows.append(_comm_row(gpu, kernel, f"dense MLP over the TP group: {kernel.value} of {tokens:,} x "
                                      f"{hidden} a rank over {tp} GPUs", act, tp, dense, missing, timing))
    moe = model.num_moe_layers
    group = tp * dep.prefill_context_parallel * dep.data_parallel
    if moe and group > 1:
        k = model.num_experts_per_token
        if dep.data_ranks == 1:
            rows.append(_comm_row(gpu, Kernel.all_reduce, f"MoE TP/EP: an all-reduce a MoE layer over {tp} GPUs", act,
                                  tp, moe, missing, timing))
        elif dep.expert_parallel > 1:
            per_gpu = math.ceil(tokens / atp) * k * hidden * b        # each of the GPU's tokens to its k experts
            for what in ("dispatch", "combine"):
                rows.append(_comm_row(gpu, Kernel.all_to_all, f"MoE {what}: all-to-all of {math.ceil(tokens / atp):,}"
                                      f" tokens x {k} experts x {hidden} over EP {dep.expert_parallel}", per_gpu,
                                      dep.expert_parallel, moe, missing, timing))
        else:
            for kernel in (Kernel.all_gather, Kernel.reduce_scatter):
                rows.append(_comm_row(gpu, kernel, f"MoE over the expert group: {kernel.value} over {group} GPUs",
                                      act, group, moe, missing, timing))
    return rows


def _logits(ctx: _Ctx, logit_rows: int) -> list[StepRow]:
    """The lm_head GEMM (vocabulary split over the attention TP) and the all-gather of the logits."""
    model, atp = ctx.model, ctx.attn_tp
    cost = gemm(logit_rows, math.ceil(model.vocab_size / atp), model.hidden_size, ctx.dtype, "lm_head",
                ctx.bits("lm_head"))
    rows = [_row(ctx.pricer, "gemm", f"logits (lm_head, {logit_rows:,} rows)", [cost.kernel], 1.0,
                 ctx.pricer.gemms([cost], 1, ctx.dtype), "torch_cublas", calls=1, weight_bytes=float(cost.weight_bytes),
                 part="sequences", source=f"GEMM fit (torch_cublas) at the measured {ctx.dtype.value} rate")]
    if atp > 1 and ctx.gpu.interconnect is not None:
        rows.append(_comm_row(ctx.gpu, Kernel.all_gather, f"logits: all-gather of {logit_rows:,} x "
                              f"{model.vocab_size:,} over {atp} GPUs",
                              logit_rows * math.ceil(model.vocab_size / atp) * 2, atp, 1, ctx.pricer.missing,
                              ctx.timing, "sequences"))
    return rows


def _decode_attention(ctx: _Ctx, decodes: int, q_len: int, context_len: int) -> list[StepRow]:
    """Every layer type's decode attention on one GPU, KV in the cache's dtype. With DCP inside the TP group a GPU
    computes the query heads of DCP TP ranks (gathered) over its 1 / DCP of the tokens, then merges; KVP the same
    over extra groups. The DCP all-gathers of the (o, lse) states follow."""
    model, dep, pricer, gpu = ctx.model, ctx.dep, ctx.pricer, ctx.gpu
    dtype, kv, page_size = ctx.dtype, ctx.kv_dtype, dep.page_size
    inner, split_ways = dep.decode_context_parallel, dep.position_split
    rows = []
    for name, layer, count in layer_walk(model):
        split = split_ways > 1 and layer.splits_by_position
        tp = ctx.attn_tp // inner if split else ctx.attn_tp
        tokens = shard_tokens(context_len, split_ways, page_size) if split else context_len
        lens = DecodeBatch.uniform(tokens, decodes)
        n, u = gpu.num_sms, gpu.units_per_sm
        splits = layer_splits(model, name, lens, n, page_size, dtype, kv, u, tensor_parallel=tp, q_len=q_len)

        def price(num_sms, units_per_sm, name=name, lens=lens, splits=splits, tp=tp):
            return layer_decode(model, name, lens, page_size, dtype, kv, splits, q_len, num_sms, units_per_sm,
                                tensor_parallel=tp)

        cost = price(n, u)
        kernels = list(cost.kernels)
        kernel = decode_kernel(layer, splits, q_len)
        p = pricer.predicted(kernel, price, impl=OWN) if layer.kind is not LayerKind.linear else None
        t = None if p is None else pricer.launch(p.t_predicted_s)
        if layer.kind is LayerKind.linear:
            pricer.miss(f"{name} (linear attention)", "no fitted model of a linear layer's state update")
        if split:                                                 # the gathered states' unpack and merge
            heads = layer_heads(model, layer, tp)
            d_v = layer.value_width(heads)
            unpack, merge = merge_pieces(decodes * q_len * heads.num_qo_heads, d_v, split_ways, dtype)
            kernels += [unpack.kernel, merge.kernel]
            for piece in (unpack, merge):
                m = pricer.fitted(Kernel.merge, lambda n_, u_, piece=piece: piece, OWN)
                t = None if t is None or m is None else t + m
        what = (f"attention [{name}], {splits} split(s)" + (f", {q_len} query tokens" if q_len > 1 else "")
                + (f", KV {kv.value}" if kv is not dtype else "") + (f", 1/{split_ways} of the KV + merge" if split else ""))
        rows.append(_row(pricer, cost.variant.value, what, kernels, count, None if t is None else count * t,
                         "rooflab" if t is not None else None, layer_type=name, num_layers=count,
                         calls=count * len(kernels), part="decode",
                         source=f"fitted {kernel.value} model (rooflab's kernels), {splits} split(s)",
                         predicted_from=None if t is None else p.provenance))
        if split and gpu.interconnect is not None:
            heads = layer_heads(model, layer, tp)
            d_v = layer.value_width(heads)
            state = decodes * q_len * heads.num_qo_heads * (d_v + 1) * FP32_BYTES
            label = "DCP" if inner > 1 else "KVP"
            rows.append(_comm_row(gpu, Kernel.all_gather, f"{label} [{name}]: all-gather of the (o, lse) states over "
                                  f"{split_ways} GPUs", state, split_ways, count, pricer.missing, ctx.timing, "decode"))
    return rows


def _prefill_attention(ctx: _Ctx, prompts: int, length: int) -> list[StepRow]:
    """Every layer type's prefill attention (causal flash; PCP: ring attention over PCP GPUs)."""
    model, pricer, gpu, dtype, cp = ctx.model, ctx.pricer, ctx.gpu, ctx.dtype, ctx.cp
    rows, tp = [], ctx.attn_tp
    for name, layer, count in layer_walk(model):
        label = f"attention [{name}], prefill of {prompts:,} x {length:,}"
        where = dict(layer_type=name, num_layers=count, part="prefill")
        if cp > 1 and layer.kind is not LayerKind.linear:
            ring = ring_prefill(layer_heads(model, layer, tp), length, cp, prompts, dtype, causal=True, gpu=gpu)
            t = ring_time(gpu, ring, dtype)
            if t.t_predicted_s is None:
                pricer.miss("flash / send_recv / merge (ring)", f"ring prefill needs {gpu.name}'s own flash, send_recv "
                                                                     f"and merge fits (not transferred)")
            comp = count * ring.flops / pricer.roofs.matmul_flop_per_s
            rows.append(StepRow("ring_prefill", f"{label} ring over {cp} GPUs (KV passes overlapped)",
                                count * ring.flops, 0.0, comp, count * t.t_floor_s, count * t.t_floor_s, "compute",
                                None if t.t_predicted_s is None else count * t.t_predicted_s, None,
                                calls=count * (2 * cp - 1), comm_bytes=count * (cp - 1) * ring.kv_bytes_per_step,
                                source="fitted flash model and send_recv fit (context_parallel.ring_time)", **where))
            continue
        cost = layer_prefill(model, name, length, prompts, dtype, True, gpu=gpu, tensor_parallel=tp)
        kernel = prefill_kernel(layer)
        price = (lambda n, u, name=name: layer_prefill(model, name, length, prompts, dtype, True, gpu=gpu,
                                                       tensor_parallel=tp, num_sms=n, units_per_sm=u))
        p = pricer.predicted(kernel, price) if layer.kind is not LayerKind.linear else None
        t = None if p is None else pricer.launch(p.t_predicted_s)
        if layer.kind is LayerKind.linear:
            pricer.miss(f"{name} (linear attention)", "no fitted model of a linear layer's scan")
        rows.append(_row(pricer, cost.variant.value, label, list(cost.kernels), count,
                         None if t is None else count * t, None if p is None else p.impl, calls=count,
                         source=f"fitted {kernel.value} model ({None if p is None else p.impl})",
                         predicted_from=None if p is None else p.provenance, **where))
    return rows


def _draft(ctx: _Ctx, decodes: int, context_len: int) -> list[StepRow]:
    """The k draft steps of speculative decoding, one row: an MTP / EAGLE head is one decoder layer of the target
    (its rows at one query token, over the layer count) and the lm_head, k times; a draft model is its own decode
    step (same deployment, bf16 unless it ships otherwise), k times; n-gram drafting costs no GPU work here."""
    spec = ctx.dep.speculative
    k = spec.num_speculative_tokens
    if spec.method is SpecMethod.ngram:
        return []
    if spec.method is SpecMethod.draft_model:
        from .load import load_model

        draft = load_model(spec.draft_model)
        sub = dataclasses.replace(ctx, model=draft, weights_as=None)
        one = _layer_rows(sub, StepWork(decodes, 1, context_len)) + _logits(sub, decodes)
        scale, what = k, f"draft model {draft.name}: {k} decode steps"
    else:
        sub = ctx
        layer_part = _layer_rows(ctx, StepWork(decodes, 1, context_len))
        per_layer = [_scaled(r, 1 / ctx.model.num_layers) for r in layer_part]
        one = per_layer + _logits(ctx, decodes)
        scale, what = k, f"{spec.method.value} head (one decoder layer + lm_head): {k} draft steps"
    comp = scale * sum(max(r.t_compute_s, r.t_exp_s) for r in one if not r.is_communication)
    mem = scale * sum(r.t_memory_s for r in one if not r.is_communication)
    floor = scale * sum(r.t_floor_s for r in one)
    pred = None if any(r.t_predicted_s is None for r in one) else scale * sum(r.t_predicted_s for r in one)
    return [StepRow("draft", what, scale * sum(r.flops for r in one), scale * sum(r.hbm_bytes for r in one), comp,
                    mem, floor, "memory" if mem >= comp else "compute", pred, "rooflab", calls=int(scale * sum(
                        r.calls for r in one)), weight_bytes=scale * sum(r.weight_bytes for r in one), part="decode",
                    source=f"the step's own rows for the draft ({sub.model.name}), {k} times",
                    predicted_from=None if pred is None else ", ".join(sorted({r.predicted_from for r in one
                                                                                if r.predicted_from})) or None)]


def _layer_rows(ctx: _Ctx, work: StepWork) -> list[StepRow]:
    """Every row that lives in the layers (not the logits): GEMMs, attention, elementwise, communication."""
    tokens = math.ceil((work.decodes * work.q_len + work.prefill_tokens) / ctx.cp)
    rows = _projections(ctx, tokens)
    if work.decodes:
        rows += _decode_attention(ctx, work.decodes, work.q_len, work.context_len)
    if work.prefills:
        rows += _prefill_attention(ctx, work.prefills, work.prefill_len)
    rows += _mlp(ctx, tokens)
    rows.append(_small_ops(ctx, tokens))
    rows += _communication(ctx, tokens)
    return rows


def step_rows(ctx: _Ctx, work: StepWork) -> list[StepRow]:
    """All the rows of one data rank's step (one pipeline stage of the whole model: see step_report)."""
    rows = _layer_rows(ctx, work)
    if ctx.dep.speculative is not None and work.decodes:
        rows += _draft(ctx, work.decodes, work.context_len)
    return rows + _logits(ctx, work.logit_rows)


def step_context(model: ModelSpec, gpu: GpuSpec, deployment: Deployment, expert_imbalance: float = 1.0) -> _Ctx:
    """The fixed parts of a step on `deployment` (formats, pricers) for step_rows; the deployment already checked."""
    dtype = deployment.dtype or model.weight_dtype or DType.bf16
    kv_dtype = deployment.kv_cache_dtype or dtype
    weights_as = deployment.weight_format if deployment.weight_format is not None else deployment.gemm_dtype
    pricer = _Pricer(gpu, dtype, eager=not deployment.cuda_graphs)
    return _Ctx(model, gpu, deployment, dtype, kv_dtype, weights_as, pricer, expert_imbalance,
                deployment.prefill_context_parallel)


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


def _provenance_notes(pricer: _Pricer) -> list[str]:
    """One note for each (implementation, provenance) a transferred prediction came from: its error band (held-out,
    and cross-GPU where checked) and what the transfer assumes (rooflab.transfer)."""
    out = []
    for (impl, provenance), p in sorted(pricer.provenance.items()):
        if p.fitted_on is None:
            continue
        band = f"error band +-{p.error_band:.1%} ({p.band_note})" if p.error_band is not None else p.band_note
        out.append(f"t_predicted {impl} {provenance}: {band}" + (f"; assumes {p.assumes}" if p.assumes else ""))
    return out


def step_report(model: ModelSpec, gpu: GpuSpec, batch: int = 1, context_len: int = 8192, step: str = "decode",
                tp: int = 1, dcp: int = 1, cp: int = 1, dtype: DType | None = None, page_size: int = 16,
                gpu_memory_utilization: float = 0.9, check_memory: bool = True,
                gemm_dtype: DType | None = None, deployment: Deployment | None = None, prefill_tokens: int = 0,
                expert_imbalance: float = 1.0, micro_batches: int | None = None) -> StepReport:
    """One decode step (B sequences at `context_len`, and a prefill chunk of `prefill_tokens` when given) or one
    prefill (B prompts of `context_len`) of the whole model on one GPU of the deployment (the module docstring).

    `deployment` (rooflab.Deployment) holds the parallelism, formats, page size, utilisation, speculative decoding
    and CUDA graphs; without it the keyword arguments (tp; dcp = KV parallelism over extra GPUs; cp = PCP; dtype;
    page_size; gemm_dtype; gpu_memory_utilization) build one with the Deployment's defaults (CUDA graphs, fused
    elementwise work; rooflab's measured torch layer is Deployment(fused_elementwise=False)). B counts every data rank's sequences (ceil(B / ranks) a rank).

    Formats: `dtype` (Deployment.dtype) is the activations' and attention's (default: the checkpoint's, else bf16);
    the KV cache is read in Deployment.kv_cache_dtype (default: dtype); the weights are read as shipped
    (ModelSpec.weight_format) or in Deployment.weight_format (the legacy `gemm_dtype` alone stores them in it too);
    each GEMM runs in Deployment.gemm_dtype, else fp8 for fp8 weights, else the activations' dtype.

    `expert_imbalance` f >= 1: the busiest GPU's experts receive f times the balanced share of token-expert pairs.
    `micro_batches` M (pipeline parallelism; default PP): micro-batches in flight.

    A batch that does not fit (rooflab.capacity.plan_capacity's accounting at the deployment's utilisation, where it
    models the deployment; else the weights and the batch's KV against the usable memory) is an InputError saying
    so (unless `check_memory` is False: a measured run that shares one cache across layers).
    """
    deployment = _deployment(tp, dcp, cp, dtype, page_size, gpu_memory_utilization, gemm_dtype, deployment)
    if not isinstance(model, ModelSpec):
        raise InputError(f"model must be a ModelSpec (rooflab.load_model), got {shown(model)}")
    deployment.check_model(model)
    tp, kvp, cp = deployment.tensor_parallel, deployment.kv_parallel, deployment.prefill_context_parallel
    inner, atp = deployment.decode_context_parallel, deployment.attention_tensor_parallel
    if step == "prefill" and inner > 1:
        raise InputError(f"--dcp {inner} splits a decode step's KV; a prefill is split by --pcp (ring attention)")
    batch, context_len, _, _, cp, page_size = _check(model, step, batch, context_len, atp, kvp * inner, cp,
                                                     deployment.page_size)
    if not isinstance(gpu, GpuSpec):
        raise InputError(f"gpu must be a GpuSpec (rooflab.load_gpu), got {shown(gpu)}")
    if not isinstance(check_memory, bool):
        raise InputError(f"check_memory must be True or False, got {shown(check_memory)}")
    prefill_tokens = whole_number(prefill_tokens, "prefill tokens (--prefill-chunk)", minimum=0, maximum=MAX_TOKENS)
    imbalance = real_number(expert_imbalance, "expert imbalance (--expert-imbalance)", 1, 1e3)
    decode = step == "decode"
    if not decode and prefill_tokens:
        raise InputError("--prefill-chunk adds a prefill chunk to a decode step; a prefill step is --batch prompts")
    pp = deployment.pipeline_parallel
    micro = pp if micro_batches is None else whole_number(micro_batches, "micro-batches (--micro-batches)",
                                                          maximum=MAX_BATCH)
    ctx = step_context(model, gpu, deployment, imbalance)
    dtype, kv_dtype, pricer = ctx.dtype, ctx.kv_dtype, ctx.pricer
    ranks = deployment.data_ranks
    per_rank = math.ceil(batch / ranks)
    per_micro = math.ceil(per_rank / micro)
    spec = deployment.speculative if decode else None
    q_len = spec.query_tokens if spec is not None else 1
    work = (StepWork(per_micro, q_len, context_len, 1 if prefill_tokens else 0, prefill_tokens) if decode
            else StepWork(prefills=per_micro, prefill_len=context_len))
    rows = step_rows(ctx, work)
    notes = []
    if pp > 1:
        share = math.ceil(model.num_layers / pp) / model.num_layers
        rows = [r if r.part == "sequences" else _scaled(r, share) for r in rows]
        if gpu.interconnect is not None:
            tokens = math.ceil((work.decodes * q_len + work.prefill_tokens) / cp)
            rows.append(_comm_row(gpu, Kernel.send_recv, f"pipeline: send of {tokens:,} x {model.hidden_size} to the "
                                  f"next stage", tokens * model.hidden_size * 2, 2, 1, pricer.missing, ctx.timing))
        slots = max(micro, pp) if decode else micro + pp - 1
        notes.append(f"pipeline: {pp} stages of {math.ceil(model.num_layers / pp)} layers, {micro} micro-batch(es) of "
                     f"{per_micro:,}; a step is {slots} stage time(s)"
                     + (f" (bubble {1 - micro / slots:.0%})" if slots > micro else ""))
    else:
        slots, micro = 1, 1
    weights, kv, usable = _memory(ctx, batch, context_len, per_rank, check_memory, decode)
    notes += [f"no prediction for {what}: {why}" for what, why in sorted(pricer.missing.items())]
    notes += _provenance_notes(pricer)
    if gpu.interconnect is None and deployment.num_gpus > 1:
        notes.append(f"{gpu.name} has no interconnect: section; communication is not priced")
    notes += pricer.notes
    tables = "SMALL_OPS" + (", EAGER_SMALL_OPS; eager launches at least EAGER_HOST_S" if not deployment.cuda_graphs
                            else "")
    notes.append(f"small kernels priced at the launch times measured on an H200 (rooflab.step.{tables})" +
                 ("" if gpu.name == SMALL_OPS_GPU else
                  f", transferred to {gpu.name} as measured: the same launch and host issue times assumed (not "
                  f"measured on {gpu.name}; past batch 64 the extra bytes stream at its bandwidth)"))
    if spec is not None:
        notes.append(f"speculative: {spec.method.value}, k = {spec.num_speculative_tokens}, acceptance "
                     f"{spec.acceptance_rate:g}: {spec.tokens_per_step:.3f} tokens a step "
                     f"((1 - a^(k+1)) / (1 - a))")
    if imbalance != 1 and model.is_moe:
        notes.append(f"experts: the busiest GPU receives {imbalance:g} x the balanced token-expert pairs")
    return StepReport(model.name, gpu.name, step, batch, context_len, dtype.value, tp, kvp, cp, tuple(rows),
                      float(weights), float(kv), float(usable), tuple(notes), model.display_name, gpu.display_name,
                      page_size, inner, deployment.num_gpus, prefill_tokens, q_len,
                      spec.tokens_per_step if spec is not None else 1.0, pp, micro, float(slots), kv_dtype.value,
                      deployment.to_dict())


def _capacity_models(dep: Deployment) -> bool:
    """Whether rooflab.capacity plans this deployment (one replica's TP group, attention DP over all of it)."""
    return (dep.pipeline_parallel == 1 and dep.prefill_context_parallel == 1 and dep.data_parallel == 1
            and dep.attention_data_parallel in (1, dep.tensor_parallel))


def _memory(ctx: _Ctx, batch: int, context_len: int, per_rank: int, check: bool, decode: bool):
    """(weights, KV, usable) bytes per GPU, and the one memory check: rooflab.capacity's plan where it models the
    deployment (the batch against its paged sequences), else the step's accounting (weights / PP + the rank's KV)."""
    from .capacity import plan_capacity

    model, gpu, dep = ctx.model, ctx.gpu, ctx.dep
    split = dep.position_split if decode else dep.prefill_context_parallel
    kv = _kv_bytes(model, per_rank, context_len, ctx.kv_dtype, dep.page_size, ctx.attn_tp, split)
    where = f"{dep.num_gpus} x {gpu.name}" if dep.num_gpus > 1 else gpu.name
    if _capacity_models(dep) and decode:
        plan_dep = dep.replace(weight_format=ctx.weights_as, kv_cache_dtype=ctx.kv_dtype, speculative=None)
        try:
            plan = plan_capacity(model, gpu, context_len, deployment=plan_dep)
        except InputError as exc:
            if not check:
                plan = None
            else:
                raise InputError(f"does not fit: {exc}") from None
        if plan is not None:
            if check and batch > plan.max_sequences_paged:
                raise InputError(f"does not fit: {model.name} on {where} holds {plan.max_sequences_paged:,} sequences "
                                 f"of {context_len:,} tokens (rooflab capacity: weights {fmt_bytes(plan.weights_bytes)}"
                                 f", KV budget {fmt_bytes(plan.kv_budget_bytes)} a GPU of {fmt_bytes(plan.usable_bytes)}"
                                 f" usable at {dep.gpu_memory_utilization:g}), not {batch:,}; add GPUs (--tp, --dcp, "
                                 f"--kv-parallel) or shorten the batch or context")
            return plan.weights_bytes, kv, plan.usable_bytes
    ep = dep.expert_parallel if model.is_moe else 1
    weights = model.weight_bytes(ctx.weights_as, dep.tensor_parallel, ep, dep.dp_attention) / dep.pipeline_parallel
    kv /= dep.pipeline_parallel
    usable = dep.gpu_memory_utilization * (gpu.cuda_visible_bytes or gpu.hbm_capacity_bytes)
    if check and weights + kv > usable:
        raise InputError(f"does not fit: {model.name} on {where} needs {fmt_bytes(weights)} of weights and "
                         f"{fmt_bytes(kv)} of KV cache per GPU ({batch} x {context_len:,} tokens), "
                         f"{fmt_bytes(weights + kv)} > {fmt_bytes(usable)} usable; add GPUs (--tp, --kv-parallel) or "
                         f"shorten the batch or context")
    return weights, kv, usable


def _kv_bytes(model: ModelSpec, batch: int, context_len: int, dtype: DType, page_size: int, tp: int,
              split: int) -> float:
    """KV cache one GPU holds: each layer type's pages for the batch, a 1 / split share of every sequence's
    (kvcache.sequence_bytes, the capacity plan's count)."""
    layout = kv_layout(model, context_len, dtype, page_size, tp)
    return batch * float(sequence_bytes(layout, model, [context_len], position_split=split)[0])


__all__ = ["EAGER_HOST_S", "EAGER_SMALL_OPS", "FUSED_SMALL_OPS", "LAYER_SMALL_OPS", "SMALL_OPS", "STEPS",
           "StepReport", "StepRow", "StepWork", "gemm_ceilings", "overlapped_floor_s", "small_op_time", "step_context",
           "step_report", "step_rows"]

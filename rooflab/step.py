"""A whole model's step on a deployment: decode (time per output token) or prefill (time to first token).

One GPU of the deployment does, per step, for a batch of B sequences of context (or prompt) L:

    attention projections   per layer type: the QKV and O GEMMs over the GPU's heads (MLA and linear
                            layers: one GEMM of their projection weights), m = B (decode) or the GPU's tokens
    attention               per layer type (rooflab.cost.layers): paged decode, split-KV where it pays; with
                            --dcp the GPU's share of the KV by position, then the merge of the gathered
                            states (cost/dcp.py); prefill: flash attention, with --cp ring attention (cost/ring.py)
    MLP / MoE               gate/up and down GEMMs; a MoE layer's router and the experts the batch touches
                            (cost/model.experts_touched), weights read once for each touched expert
    norms and elementwise   the torch layer's small kernels: 2 RMSNorms, the q copy, K and V appends, 2
                            residual adds, SiLU x up (9 launches a layer), and the final RMSNorm
    communication           tensor parallel: 2 all-reduces a layer of B x hidden (and the logits' all-gather);
                            DCP: the all-gather of B h (d_v + 1) fp32 values a layer; ring: the KV passes
    logits                  the lm_head GEMM for each sequence's last token

Deployment (rooflab.Deployment, the engines' words): TP GPUs split the heads (KV heads replicated past h_kv;
MLA's latent on every rank) and the weights. Decode context parallelism (DCP, inside the TP group, as vLLM
and SGLang mean it) splits each sequence's KV by position over DCP ranks of the group: each computes the
query heads of DCP ranks (gathered) over 1/DCP of the tokens, and the states are merged; no extra GPUs. KV
parallelism (KVP, Helix; rooflab 0.1's `dcp`) does the same over KVP extra groups of TP GPUs, each with its own
copy of the TP shard of the weights. Prefill context parallelism (PCP, widening the world) splits a prompt
by position: ring attention over PCP GPUs. GPUs in all: TP x KVP x PCP.

Floors are physical: each row's launches at the datasheet roofs, communication at the link's datasheet
bandwidth; the step's t_floor_s is the largest of its summed compute, memory and communication times
(everything overlapped). Predictions are models: the GPU's fitted GEMM family, attention kernels, merge
and collectives (graph timings: the step runs in a CUDA graph), summed launch by launch; the small kernels
at their measured times (SMALL_OPS). Where a piece has no fit, t_predicted_s is None and a note names it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .comm import collective_time, interconnect_of
from .context_parallel import ring_time
from .cost.batch import DecodeBatch
from .cost.common import KernelCost, real_number, whole_number
from .deployment import Deployment
from .cost.paged import check_page_size
from .cost.dcp import check_dcp, dcp_decode, merge_pieces, shard_tokens
from .cost.gemm import GemmCost, gemm
from .cost.layers import layer_decode, layer_heads, layer_prefill, layer_splits
from .cost.model import experts_touched
from .cost.ring import check_cp, ring_prefill
from .errors import InputError, shown
from .kvcache import kv_layout
from .limits import MAX_BATCH, MAX_GPUS, MAX_TOKENS
from .predict import OWN, decode_kernel, predict_time, prefill_kernel
from .roofline import Ceilings, predict_kernel
from .specs import GpuSpec, ModelSpec
from .specs.parameters import attention_parameters
from .units import FP32_BYTES, DType, fmt_bytes
from .vocab import Kernel, LayerKind, Pipe, StepKind

#: Seconds per call of the torch layer's small kernels inside a CUDA graph, at batch 1, 8 and 64, timed alone
#: (50 a graph) on an H200: measurements/h200x2-gemm.csv, its small_op_* metadata (2026-11-30). Other GPUs are
#: priced with the same launch times (an assumption); past batch 64 the extra bytes stream at the GPU's bandwidth.
SMALL_OPS = {"rms_norm": (4.42e-6, 4.49e-6, 4.57e-6), "residual_add": (1.25e-6, 1.28e-6, 1.40e-6),
             "silu_mul": (2.92e-6, 4.63e-6, 7.37e-6), "q_copy": (1.18e-6, 2.13e-6, 2.28e-6),
             "kv_append": (2.93e-6, 3.01e-6, 3.17e-6)}
SMALL_OP_BATCHES = (1, 8, 64)
#: The small kernels of one layer: (op, calls).
LAYER_SMALL_OPS = (("rms_norm", 2), ("residual_add", 2), ("silu_mul", 1), ("q_copy", 1), ("kv_append", 2))


@dataclass(frozen=True)
class StepRow:
    """One component of the step, for the whole step (all its layers), on one GPU: the row contract of
    `rooflab report` (flops, hbm_bytes, intensity_flop_per_byte, t_compute_s, t_memory_s, t_floor_s, bound,
    t_predicted_s, ...). Communication rows carry bus bytes and null intensity."""

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


@dataclass(frozen=True)
class StepReport:
    """A whole step on one GPU of the deployment: rows per component and the step's floor and prediction."""

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

    @property
    def gpus(self) -> int:
        """GPUs of the deployment: TP x KVP x PCP (DCP reuses the TP group's)."""
        return self.tp * self.dcp * self.cp

    @property
    def t_floor_s(self) -> float:
        """Everything overlapped: the largest of the summed compute, memory and communication floors."""
        compute = sum(max(r.t_compute_s, r.t_exp_s) for r in self.rows if not r.is_communication)
        memory = sum(r.t_memory_s for r in self.rows if not r.is_communication)
        comm = sum(r.t_floor_s for r in self.rows if r.is_communication)
        return max(compute, memory, comm)

    @property
    def t_floor_serial_s(self) -> float:
        """Each component at its own floor, one after another."""
        return sum(r.t_floor_s for r in self.rows)

    @property
    def t_predicted_s(self) -> Optional[float]:
        if any(r.t_predicted_s is None for r in self.rows):
            return None
        return sum(r.t_predicted_s for r in self.rows)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("rows", "notes")}
        out.update(kv_parallel=self.dcp, prefill_context_parallel=self.cp)   # the old keys dcp, cp kept one release
        out.update(phase="step", gpus=self.gpus, t_floor_s=self.t_floor_s, t_floor_serial_s=self.t_floor_serial_s,
                   t_predicted_s=self.t_predicted_s, notes=list(self.notes), rows=[r.to_dict() for r in self.rows])
        return out


# ------------------------------------------------------------------ pricing helpers

@dataclass
class _Pricer:
    """Prices launches for one report: floors at the datasheet roofs, predictions from the GPU's fits."""

    gpu: GpuSpec
    dtype: DType
    weights_as: Optional[DType] = None           # the weights' format where not the checkpoint's
    roofs: Ceilings = None
    missing: set = field(default_factory=set)

    def __post_init__(self) -> None:
        self.roofs = Ceilings.of(self.gpu, self.dtype)

    def floors(self, kernels: list[KernelCost], times: float = 1.0) -> tuple[float, float, float, float]:
        """(t_compute, t_memory, t_floor, t_exp) of launches run one after another, times `times`."""
        parts = [predict_kernel(k, self.roofs) for k in kernels]
        return (times * sum(float(p.t_compute_s) for p in parts), times * sum(float(p.t_memory_s) for p in parts),
                times * sum(float(p.t_floor_s) for p in parts), times * sum(float(p.t_exp_s) for p in parts))

    def fitted(self, kernel: Kernel, price: Callable, impl: Optional[str] = None) -> Optional[float]:
        p = predict_time(self.gpu, kernel, price, self.dtype, impl, optional=True) if self.gpu.fitted_for(kernel) \
            else None
        if p is None:
            self.missing.add(f"{kernel.value}" + (f" ({impl})" if impl else ""))
            return None
        return p.t_predicted_s

    def gemms(self, costs: list[GemmCost], times: float = 1.0) -> Optional[float]:
        total = 0.0
        for cost in costs:
            t = self.fitted(Kernel.gemm, lambda n, u, cost=cost: cost)
            if t is None:
                return None
            total += t
        return times * total


def _row(pricer: _Pricer, variant: str, label: str, kernels: list[KernelCost], times: float,
         predicted: Optional[float], impl: Optional[str] = None, **extra) -> StepRow:
    comp, mem, floor, exp = pricer.floors(kernels, times)
    flops = times * float(sum(k.flops for k in kernels))
    nbytes = times * float(sum(k.hbm_bytes for k in kernels))
    bound = "memory" if mem >= max(comp, exp) else ("exp" if exp >= comp else "compute")
    return StepRow(variant, label, flops, nbytes, comp, mem, floor, bound, predicted, impl, t_exp_s=exp, **extra)


def _comm_row(gpu: GpuSpec, kernel: Kernel, label: str, bytes_per_rank: float, world: int, calls: float,
              missing: set) -> StepRow:
    t = collective_time(gpu, kernel, bytes_per_rank, world, "graph")
    if t.t_predicted_s is None:
        missing.add(f"{kernel.value} (interconnect collectives)")
    predicted = None if t.t_predicted_s is None else calls * t.t_predicted_s
    return StepRow(kernel.value, label, 0.0, 0.0, 0.0, 0.0, calls * t.t_floor_s, "communication", predicted,
                   "nccl" if predicted is not None else None, calls=int(calls), comm_bytes=calls * t.bus_bytes)


def small_op_time(op: str, tokens: int, hidden: int, ffn: int, bw: float) -> float:
    """One small kernel's time at `tokens` rows: the measured table, interpolated in log(batch); past its last
    batch, that time plus the extra bytes at bandwidth `bw`."""
    if not isinstance(op, str) or op not in SMALL_OPS:
        raise InputError(f"op must be one of {', '.join(SMALL_OPS)}, got {shown(op)}")
    tokens = whole_number(tokens, "tokens", maximum=MAX_BATCH * MAX_TOKENS)
    hidden = whole_number(hidden, "hidden")
    ffn = whole_number(ffn, "ffn")
    bw = real_number(bw, "bw (bytes per second)", 0, 1e18, lo_open=True)
    table = SMALL_OPS[op]
    x = np.log(SMALL_OP_BATCHES)
    if tokens <= SMALL_OP_BATCHES[-1]:
        return float(np.interp(np.log(max(tokens, 1)), x, table))
    width = {"silu_mul": 5 * ffn}.get(op, 3 * hidden)        # elements moved per row (reads and writes)
    return table[-1] + (tokens - SMALL_OP_BATCHES[-1]) * width * 2 / bw


# ------------------------------------------------------------------ the step

STEPS = tuple(k.value for k in StepKind)


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
    for name in model.layer_counts:
        layer_heads(model, model.layer_types[name], tp)              # raises naming tp and the heads
    for what, width in (("MLP", model.dense_ffn_size or model.ffn_size), ("expert MLP", model.ffn_size)):
        if width % tp:
            raise InputError(f"--tp {tp} does not divide the {width:,}-wide {what} of {model.name}")
    return batch, context_len, tp, dcp, cp, page_size


def step_report(model: ModelSpec, gpu: GpuSpec, batch: int = 1, context_len: int = 8192, step: str = "decode",
                tp: int = 1, dcp: int = 1, cp: int = 1, dtype: DType | None = None, page_size: int = 16,
                gpu_memory_utilization: float = 0.9, check_memory: bool = True,
                gemm_dtype: DType | None = None, deployment: Deployment | None = None) -> StepReport:
    """One decode step (B sequences at `context_len`) or one prefill (B prompts of `context_len`) of the whole
    model on one GPU of a tp x dcp (decode) or tp x cp (prefill) deployment (the module docstring).

    A deployment whose weights and KV cache do not fit one GPU's usable memory is an InputError saying so
    and by how much (unless `check_memory` is False: a measured run that shares one cache across layers).
    `dtype` is the activations', attention's and KV cache's type (default: the checkpoint's, else bf16); the
    weights are read in the formats the checkpoint ships (ModelSpec.weight_format) unless `gemm_dtype` is given:
    then the projection and MLP GEMMs run in it and their weights are stored in it (fp8_e4m3: row-wise fp8).

    `deployment` (rooflab.Deployment) replaces tp, dcp, cp, page_size, dtype, gemm_dtype and the utilisation:
    its tensor_parallel, kv_parallel (the old `dcp`: extra GPUs), prefill_context_parallel (the old `cp`) and
    decode_context_parallel (inside TP: the engines' DCP). Without it the keyword arguments build one.
    """
    if deployment is None:
        deployment = Deployment(tensor_parallel=tp, kv_parallel=dcp, prefill_context_parallel=cp, page_size=page_size,
                                dtype=dtype, gemm_dtype=gemm_dtype, gpu_memory_utilization=gpu_memory_utilization)
    elif not isinstance(deployment, Deployment):
        raise InputError(f"deployment must be a rooflab.Deployment, got {shown(deployment)}")
    else:
        given = [name for name, value, default in (("tp", tp, 1), ("dcp", dcp, 1), ("cp", cp, 1), ("dtype", dtype, None),
                                                   ("page_size", page_size, 16), ("gemm_dtype", gemm_dtype, None),
                                                   ("gpu_memory_utilization", gpu_memory_utilization, 0.9))
                 if value is not default and value != default]
        if given:
            raise InputError(f"give {', '.join(given)} in the Deployment, not beside it (the deployment holds them)")
    if not isinstance(model, ModelSpec):
        raise InputError(f"model must be a ModelSpec (rooflab.load_model), got {shown(model)}")
    deployment.check_model(model)
    unmodelled = [what for what, n in (("pipeline", deployment.pipeline_parallel), ("data", deployment.data_parallel),
                                       ("data-parallel attention", deployment.attention_data_parallel),
                                       ("expert", deployment.expert_parallel)) if n > 1]
    if unmodelled:
        raise InputError(f"the step does not price {', '.join(unmodelled)} parallelism yet ({deployment.describe()})")
    tp, dcp, cp = deployment.tensor_parallel, deployment.kv_parallel, deployment.prefill_context_parallel
    inner = deployment.decode_context_parallel
    page_size, dtype, gemm_dtype = deployment.page_size, deployment.dtype, deployment.gemm_dtype
    gpu_memory_utilization = deployment.gpu_memory_utilization
    if step == "prefill" and inner > 1:
        raise InputError(f"--dcp {inner} splits a decode step's KV; a prefill is split by --pcp (ring attention)")
    batch, context_len, tp, dcp, cp, page_size = _check(model, step, batch, context_len, tp, dcp * inner, cp,
                                                        page_size)
    dcp //= inner
    if not isinstance(gpu, GpuSpec):
        raise InputError(f"gpu must be a GpuSpec (rooflab.load_gpu), got {shown(gpu)}")
    dtype = DType.of(dtype) if dtype is not None else (model.weight_dtype or DType.bf16)
    weights_as = DType.of(gemm_dtype, "gemm_dtype") if gemm_dtype is not None else None
    gpu_memory_utilization = real_number(gpu_memory_utilization, "GPU memory utilisation", 0, 1, lo_open=True)
    if not isinstance(check_memory, bool):
        raise InputError(f"check_memory must be True or False, got {shown(check_memory)}")
    pricer, gemms = _Pricer(gpu, dtype), _Pricer(gpu, weights_as or dtype, weights_as)
    gemms.missing = pricer.missing
    decode = step == "decode"
    tokens = batch if decode else math.ceil(batch * context_len / cp)
    rows = _projections(model, gemms, tokens, tp)
    rows += _attention(model, pricer, batch, context_len, decode, tp, dcp * inner, cp, page_size, inner)
    rows += _mlp(model, gemms, tokens, tp)
    rows.append(_small_ops(model, pricer, tokens, tp))
    rows += _communication(model, gpu, batch, tokens, decode, tp, dcp * inner, pricer.missing, inner)
    rows.append(_logits(model, gemms, batch, tp))
    weights = model.weight_bytes(weights_as, tp)
    kv = _kv_bytes(model, batch, context_len, dtype, page_size, tp, dcp * inner if decode else cp)
    usable = gpu_memory_utilization * (gpu.cuda_visible_bytes or gpu.hbm_capacity_bytes)
    where = f"{tp * dcp * cp} x {gpu.name}" if tp * dcp * cp > 1 else gpu.name
    if check_memory and weights + kv > usable:
        raise InputError(f"does not fit: {model.name} on {where} needs {fmt_bytes(weights)} of weights and "
                         f"{fmt_bytes(kv)} of KV cache per GPU ({batch} x {context_len:,} tokens), "
                         f"{fmt_bytes(weights + kv)} > {fmt_bytes(usable)} usable; add GPUs (--tp, --kv-parallel) or shorten "
                         f"the batch or context")
    notes = []
    if pricer.missing:
        notes.append("no prediction: the GPU has no fit for " + ", ".join(sorted(pricer.missing)))
    if gpu.interconnect is None and tp * dcp * cp > 1:
        notes.append(f"{gpu.name} has no interconnect: section; communication is not priced")
    notes.append("small kernels priced at the launch times measured on an H200 (rooflab.step.SMALL_OPS)")
    return StepReport(model.name, gpu.name, step, batch, context_len, dtype.value, tp, dcp, cp, tuple(rows),
                      float(weights), float(kv), float(usable), tuple(notes), model.display_name, gpu.display_name,
                      page_size, inner)


def _kv_bytes(model: ModelSpec, batch: int, context_len: int, dtype: DType, page_size: int, tp: int,
              split: int) -> float:
    """KV cache one GPU holds: each layer type's pages for the batch, a 1 / split share of every sequence's."""
    layout = kv_layout(model, context_len, dtype, page_size, tp)
    total = 0.0
    for k in layout.layers:
        pages = k.pages_per_sequence if k.kind is LayerKind.linear else math.ceil(k.pages_per_sequence / split)
        total += k.num_layers * (pages * page_size * k.bytes_per_token + k.state_bytes)
    return batch * total


def _bits(model: ModelSpec, component: str, pricer: "_Pricer") -> float:
    """Bits of one weight of `component` as the step reads it: shipped, or in the pricer's weights_as."""
    return model.weight_format(component, pricer.weights_as).bits_per_weight


def _projections(model: ModelSpec, pricer: _Pricer, tokens: int, tp: int) -> list[StepRow]:
    """The attention projections of every layer: QKV and O GEMMs (one GEMM of the projection weights for MLA and
    linear layers), one row for the model."""
    hidden, dtype = model.hidden_size, pricer.dtype
    bits = _bits(model, "attention", pricer)
    kernels, predicted, calls, weight = [], 0.0, 0, 0.0
    for name, count in model.layer_counts.items():
        layer = model.layer_types[name]
        if layer.kind in (LayerKind.mla, LayerKind.linear):
            params = attention_parameters(layer, model.heads, hidden, model.attention_bias) / tp
            costs = [gemm(tokens, math.ceil(params / hidden), hidden, dtype, "projections", bits)]
        else:
            h = layer_heads(model, layer, tp)
            qkv = h.num_qo_heads * h.head_dim + h.num_kv_heads * (h.head_dim + h.value_dim)
            costs = [gemm(tokens, qkv, hidden, dtype, "qkv", bits),
                     gemm(tokens, hidden, h.num_qo_heads * h.value_dim, dtype, "o", bits)]
        t = pricer.gemms(costs, count)
        predicted = None if t is None or predicted is None else predicted + t
        kernels += [c.kernel for c in costs for _ in range(count)]
        calls += len(costs) * count
        weight += count * sum(float(c.weight_bytes) for c in costs)
    return [_row(pricer, "gemm", "attention projections (QKV, O)", kernels, 1.0, predicted, "torch_cublas",
                 num_layers=model.num_layers, calls=calls, weight_bytes=weight)]


def _attention(model: ModelSpec, pricer: _Pricer, batch: int, context_len: int, decode: bool, tp: int, dcp: int,
               cp: int, page_size: int, inner: int = 1) -> list[StepRow]:
    """Attention rows, one a layer type; `dcp` ways of position split of which `inner` inside the TP group."""
    rows = []
    gpu, dtype = pricer.gpu, pricer.dtype
    for name, count in model.layer_counts.items():
        layer = model.layer_types[name]
        label = f"attention [{name}]"
        where = dict(layer_type=name, num_layers=count)
        if decode:
            rows.append(_decode_attention(model, pricer, name, layer, batch, context_len, tp, dcp, page_size,
                                          label, count, inner))
        elif cp > 1 and layer.kind is not LayerKind.linear:
            ring = ring_prefill(layer_heads(model, layer, tp), context_len, cp, batch, dtype, causal=True, gpu=gpu)
            t = ring_time(gpu, ring, dtype)
            if t.t_predicted_s is None:
                pricer.missing.add("flash / send_recv / merge (ring)")
            comp = count * ring.flops / pricer.roofs.matmul_flop_per_s
            rows.append(StepRow("ring_prefill", f"{label} ring over {cp} GPUs (KV passes overlapped)",
                                count * ring.flops, 0.0, comp, count * t.t_floor_s, count * t.t_floor_s, "compute",
                                None if t.t_predicted_s is None else count * t.t_predicted_s, None,
                                calls=count * (2 * cp - 1), comm_bytes=count * (cp - 1) * ring.kv_bytes_per_step,
                                **where))
        else:
            cost = layer_prefill(model, name, context_len, batch, dtype, True, gpu=gpu, tensor_parallel=tp)
            kernel = prefill_kernel(layer)
            price = (lambda n, u, name=name: layer_prefill(model, name, context_len, batch, dtype, True, gpu=gpu,
                                                           tensor_parallel=tp, num_sms=n, units_per_sm=u))
            t, impl = None, None
            if layer.kind is not LayerKind.linear:
                p = predict_time(gpu, kernel, price, dtype, optional=True)
                t, impl = (None, None) if p is None else (p.t_predicted_s, p.impl)
                if p is None:
                    pricer.missing.add(kernel.value)
            rows.append(_row(pricer, cost.variant.value, label, list(cost.kernels), count,
                             None if t is None else count * t, None if t is None else impl, calls=count, **where))
    return rows


def _decode_attention(model, pricer: _Pricer, name: str, layer, batch: int, context_len: int, tp: int, dcp: int,
                      page_size: int, label: str, count: int, inner: int = 1) -> StepRow:
    """One layer type's decode attention on one GPU. With DCP inside the TP group (`inner`) a GPU computes the
    query heads of `inner` TP ranks (gathered: the heads of TP / inner ranks) over its 1 / dcp of the tokens."""
    gpu, dtype = pricer.gpu, pricer.dtype
    split = dcp > 1 and layer.kind in (LayerKind.full, LayerKind.mla)
    tp = tp // inner if split else tp
    tokens = shard_tokens(context_len, dcp, page_size) if split else context_len
    lens = DecodeBatch.uniform(tokens, batch)
    n, u = gpu.num_sms, gpu.units_per_sm
    splits = layer_splits(model, name, lens, n, page_size, dtype, dtype, u, tensor_parallel=tp)

    def price(num_sms, units_per_sm):
        return layer_decode(model, name, lens, page_size, dtype, dtype, splits, 1, num_sms, units_per_sm,
                            tensor_parallel=tp)

    cost = price(n, u)
    kernels = list(cost.kernels)
    t = None
    if layer.kind is not LayerKind.linear:
        t = pricer.fitted(decode_kernel(layer, splits), price, OWN)
    if split:                                                 # the gathered states' unpack and merge
        heads = layer_heads(model, layer, tp)
        d_v = layer.kv_lora_rank if layer.kind is LayerKind.mla else heads.value_dim
        unpack, merge = merge_pieces(batch * heads.num_qo_heads, d_v, dcp, dtype)
        kernels += [unpack.kernel, merge.kernel]
        for piece in (unpack, merge):
            m = pricer.fitted(Kernel.merge, lambda n_, u_, piece=piece: piece, OWN)
            t = None if t is None or m is None else t + m
    what = f"{label}, {splits} split(s)" + (f", 1/{dcp} of the KV + merge" if split else "")
    return _row(pricer, cost.variant.value, what, kernels, count, None if t is None else count * t,
                "rooflab" if t is not None else None, layer_type=name, num_layers=count,
                calls=count * len(kernels))


def _mlp(model: ModelSpec, pricer: _Pricer, tokens: int, tp: int) -> list[StepRow]:
    """Dense MLP layers (gate/up, down) and MoE layers (router, the touched experts' grouped GEMMs, shared experts)."""
    hidden, dtype, rows = model.hidden_size, pricer.dtype, []
    if model.num_dense_layers:
        width = (model.dense_ffn_size or model.ffn_size) // tp
        bits = _bits(model, "dense_mlp", pricer)
        costs = [gemm(tokens, 2 * width, hidden, dtype, "gate_up", bits), gemm(tokens, hidden, width, dtype, "down", bits)]
        count = model.num_dense_layers
        rows.append(_row(pricer, "gemm", "MLP (gate/up, down)", [c.kernel for c in costs], count,
                         pricer.gemms(costs, count), "torch_cublas", num_layers=count, calls=2 * count,
                         weight_bytes=count * sum(float(c.weight_bytes) for c in costs)))
    if model.num_moe_layers:
        k, width = model.num_experts_per_token, model.ffn_size // tp
        touched = experts_touched(model, tokens)
        bits = _bits(model, "experts", pricer)
        costs = [gemm(tokens, model.num_experts, hidden, dtype, "router"),
                 gemm(tokens * k, 2 * width, hidden, dtype, "experts_gate_up", bits, touched),
                 gemm(tokens * k, hidden, width, dtype, "experts_down", bits, touched)]
        if model.num_shared_experts:
            shared = model.num_shared_experts * (model.shared_expert_ffn_size or model.ffn_size) // tp
            sbits = _bits(model, "shared_experts", pricer)
            costs += [gemm(tokens, 2 * shared, hidden, dtype, "shared_gate_up", sbits),
                      gemm(tokens, hidden, shared, dtype, "shared_down", sbits)]
        count = model.num_moe_layers
        rows.append(_row(pricer, "gemm", f"MoE ({touched:.1f} of {model.num_experts} experts touched, {k} a token)",
                         [c.kernel for c in costs], count, pricer.gemms(costs, count), "torch_cublas",
                         num_layers=count, calls=len(costs) * count,
                         weight_bytes=count * sum(float(c.weight_bytes) for c in costs)))
    return rows


def _small_ops(model: ModelSpec, pricer: _Pricer, tokens: int, tp: int) -> StepRow:
    """The torch layer's small kernels (LAYER_SMALL_OPS) in every layer, and the final RMSNorm."""
    hidden, b = model.hidden_size, pricer.dtype.bytes
    heads = layer_heads(model, model.layer_types[next(iter(model.layer_counts))], tp)
    ffn = (model.dense_ffn_size or model.ffn_size) // tp
    bw = pricer.gpu.measured.copy_bytes_per_s if pricer.gpu.measured else pricer.gpu.hbm_bandwidth_bytes_per_s
    moved = {"rms_norm": 2 * hidden, "residual_add": 3 * hidden, "silu_mul": 5 * ffn,
             "q_copy": 2 * heads.num_qo_heads * heads.head_dim, "kv_append": 2 * heads.num_kv_heads * heads.head_dim}
    kernels, predicted, calls = [], 0.0, 0
    layers = model.num_layers
    for op, per_layer in LAYER_SMALL_OPS + (("rms_norm", 1 / layers),):
        n = per_layer * layers
        kernels.append(KernelCost(op, np.float64(tokens * moved[op] / 2), np.float64(n * tokens * moved[op] * b),
                                  Pipe.vector))
        predicted += n * small_op_time(op, tokens, hidden, ffn, bw)
        calls += round(n)
    return _row(pricer, "elementwise", "norms and elementwise (RMSNorm, adds, SiLU x up, q copy, KV append)",
                kernels, 1.0, predicted, "torch_graph", num_layers=layers, calls=calls)


def _communication(model: ModelSpec, gpu: GpuSpec, batch: int, tokens: int, decode: bool, tp: int, dcp: int,
                   missing: set, inner: int = 1) -> list[StepRow]:
    rows, b = [], None
    if gpu.interconnect is None:
        return rows
    dtype_bytes = 2
    if tp > 1:
        rows.append(_comm_row(gpu, Kernel.all_reduce, f"tensor parallel: 2 all-reduces a layer of {tokens:,} x "
                                                      f"{model.hidden_size} over {tp} GPUs",
                              tokens * model.hidden_size * dtype_bytes, tp, 2 * model.num_layers, missing))
        rows.append(_comm_row(gpu, Kernel.all_gather, f"logits: all-gather of {batch} x {model.vocab_size:,} over "
                                                      f"{tp} GPUs", batch * math.ceil(model.vocab_size / tp)
                              * dtype_bytes, tp, 1, missing))
    if decode and dcp > 1:
        for name, count in model.layer_counts.items():
            layer = model.layer_types[name]
            if layer.kind not in (LayerKind.full, LayerKind.mla):
                continue
            heads = layer_heads(model, layer, tp // inner)
            d_v = layer.kv_lora_rank if layer.kind is LayerKind.mla else heads.value_dim
            state = batch * heads.num_qo_heads * (d_v + 1) * FP32_BYTES
            rows.append(_comm_row(gpu, Kernel.all_gather, f"DCP [{name}]: all-gather of the (o, lse) states over "
                                                          f"{dcp} GPUs", state, dcp, count, missing))
    return rows


def _logits(model: ModelSpec, pricer: _Pricer, batch: int, tp: int) -> StepRow:
    cost = gemm(batch, math.ceil(model.vocab_size / tp), model.hidden_size, pricer.dtype, "lm_head",
                _bits(model, "lm_head", pricer))
    return _row(pricer, "gemm", "logits (lm_head, last token of each sequence)", [cost.kernel], 1.0,
                pricer.gemms([cost]), "torch_cublas", calls=1, weight_bytes=float(cost.weight_bytes))


__all__ = ["LAYER_SMALL_OPS", "SMALL_OPS", "STEPS", "StepReport", "StepRow", "small_op_time", "step_report"]

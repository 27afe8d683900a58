"""Specs + workload -> the numbers each chart draws. No matplotlib here, and no formula of its own.

Every series comes from rooflab's cost functions and roofline (cost/, roofline.py, report.py,
capacity.py); this module only chooses the points and sweeps them over a length. Each
function returns a frozen dataclass that a chart function in this package turns into a
Figure, so a notebook can inspect or change the numbers before drawing them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..bench.validate import MeasuredPoint  # noqa: F401  (a chart input, defined beside the validation it comes from)
from ..capacity import plan_capacity
from ..cost.common import KernelCost
from ..cost.flash import flash_prefill
from ..cost.merge import merge_pair
from ..cost.model import decode_step
from ..cost.naive import naive_ceiling, naive_max_seq_len, naive_prefill
from ..cost.paged import paged_decode_uniform
from ..errors import InputError
from ..predict import model_time
from ..roofline import Ceilings, predict, predict_kernel
from ..vocab import CeilingSource, Pipe
from ..specs import GpuSpec, ModelSpec
from ..units import DType, WeightFormat

#: Tokens of the merge point on the roofline chart: two partial states of a 16k-token prefill.
MERGE_TOKENS = 16384
#: Batches the decode chart draws by default.
DECODE_BATCHES = (1, 8, 32, 128)


@dataclass(frozen=True)
class GpuRoofs:
    """One GPU's roofs for one dtype: the datasheet's, and the measured ones where the YAML has them."""

    name: str
    display_name: str
    datasheet: Ceilings
    measured: Optional[Ceilings] = None
    measured_date: Optional[str] = None


@dataclass(frozen=True)
class RooflinePoint:
    """A kernel (or a variant's total) at its intensity and the FLOP rate its time floor implies.

    `kind` picks the marker: naive, naive_kernel, naive_softmax, flash, flash_tiled, paged,
    paged_launched, merge. `pipe` says which roof its FLOPs sit under; `ridge_ratio` is I / I*
    against the tensor ridge (Prediction.ridge_ratio).
    """

    label: str
    kind: str
    intensity_flop_per_byte: float
    flop_per_s: float
    pipe: Pipe = Pipe.tensor
    ridge_ratio: float = float("nan")


@dataclass(frozen=True)
class RooflineData:
    """What the roofline chart draws: the roofs of one or more GPUs and the points on the first."""

    model: str
    dtype: DType
    seq_len: int
    batch: int
    causal: bool
    decode_batch: int
    merge_tokens: int
    roofs: tuple[GpuRoofs, ...]
    points: tuple[RooflinePoint, ...]


def gpu_roofs(gpu: GpuSpec, dtype: DType) -> GpuRoofs:
    """Datasheet ceilings for `dtype`, and the calibrated ones when the spec has a measured: section."""
    measured = Ceilings.of(gpu, dtype, CeilingSource.calibrated) if gpu.measured is not None else None
    return GpuRoofs(gpu.name, gpu.display_name, Ceilings.of(gpu, dtype), measured,
                    gpu.measured.date if gpu.measured is not None else None)


def _point(label: str, kind: str, kernel: KernelCost, roofs: Ceilings) -> RooflinePoint:
    p = predict_kernel(kernel, roofs)
    return RooflinePoint(label, kind, float(p.intensity_flop_per_byte), float(p.achieved_flop_per_s), kernel.pipe,
                         float(p.ridge_ratio))


def roofline_data(model: ModelSpec, gpus: Sequence[GpuSpec], seq_len: int = 8192, dtype: DType = DType.fp16,
                  batch: int = 1, causal: bool = True, decode_batch: int = 1,
                  merge_tokens: int = MERGE_TOKENS, flash_tiled: bool = False) -> RooflineData:
    """Roofs of every GPU in `gpus`; the points are placed against the first GPU's datasheet roofs.

    Points: naive attention (whole, and its QK^T, softmax and PV kernels), flash (compulsory bytes;
    with `flash_tiled` also the tiled upper bound on bytes, which lands next to the naive kernels),
    paged decode of `decode_batch` sequences of `seq_len` tokens (on an ideal launch, and as
    launched with the parallelism model when that cannot fill the GPU), and the LSE merge of two
    partial states of `merge_tokens` tokens. Each sits at F / t_floor, the FLOP rate at its floor; the
    launched decode point at F / t_model, the parallelism model's rate (a model, marked so).
    """
    if not gpus:
        raise InputError("give at least one GPU")
    gpu = gpus[0]
    roofs = Ceilings.of(gpu, dtype)
    naive = naive_prefill(model, seq_len, batch, dtype, causal)
    flash = flash_prefill(model, seq_len, batch, dtype, causal, gpu=gpu)
    decode = paged_decode_uniform(model, seq_len, decode_batch, dtype=dtype)
    launched = paged_decode_uniform(model, seq_len, decode_batch, dtype=dtype, num_sms=gpu.num_sms,
                                    units_per_sm=gpu.units_per_sm)
    merge = merge_pair(merge_tokens, model.num_qo_heads, model.head_dim, dtype)
    whole = predict(naive, roofs)
    tiled = KernelCost("flash_tiled", flash.flops, flash.hbm_bytes_tiled, exp_ops=flash.kernel.exp_ops)
    fraction = float(launched.parallel_fraction)
    points = (
        RooflinePoint("naive attention (3 kernels)", "naive", float(whole.intensity_flop_per_byte),
                      float(whole.achieved_flop_per_s), Pipe.tensor, float(whole.ridge_ratio)),
        _point("naive QK\u1d40 kernel", "naive_kernel", naive.qk, roofs),
        _point("naive PV kernel", "naive_kernel", naive.pv, roofs),
        _point("naive softmax kernel (fp32 vector FLOPs)", "naive_softmax", naive.softmax, roofs),
        _point("flash attention (compulsory bytes)", "flash", flash.kernel, roofs),
        _point(f"flash, tiled bytes (K, V re-read per {flash.tile.block_q}-row query tile)", "flash_tiled",
               tiled, roofs),
        _point(f"paged decode, batch {decode_batch}, context {seq_len:,}", "paged", decode.attention, roofs),
        RooflinePoint(f"paged decode as launched (model): {fraction:.0%} of bandwidth "
                      f"({int(launched.work_units)} work units, {gpu.num_sms} SMs)", "paged_launched",
                      float(launched.attention.intensity_flop_per_byte),
                      float(launched.flops / model_time(launched, roofs)), Pipe.tensor,
                      float(launched.attention.intensity_flop_per_byte / roofs.ridge_flop_per_byte)),
        _point(f"LSE merge of two states ({merge_tokens:,} tokens, fp32 vector FLOPs)", "merge",
               merge.kernel, roofs),
    )
    if fraction >= 1:
        points = tuple(p for p in points if p.kind != "paged_launched")
    if not flash_tiled:
        points = tuple(p for p in points if p.kind != "flash_tiled")
    return RooflineData(model.display_name, dtype, int(seq_len), int(batch), causal, int(decode_batch),
                        int(merge_tokens), tuple(gpu_roofs(g, dtype) for g in gpus), points)


# --- sweeps over a length ------------------------------------------------------------

def length_grid(lo: int, hi: int, per_octave: int = 16) -> np.ndarray:
    """Whole token counts from `lo` to `hi`, evenly spaced on a log axis (powers of two included)."""
    if lo < 1 or hi <= lo:
        raise InputError(f"length range must satisfy 1 <= low < high, got {lo} and {hi}")
    octaves = math.log2(hi / lo)
    grid = np.unique(np.round(lo * 2.0 ** np.linspace(0, octaves, int(math.ceil(octaves * per_octave)) + 1)))
    return grid.astype(np.float64)


def _pow2_at_least(n: float) -> int:
    return 2 ** int(math.ceil(math.log2(max(n, 2))))


@dataclass(frozen=True)
class MemoryLine:
    """One GPU's room for S and P: capacity minus the weights, and the longest T naive prefill fits."""

    gpu: str
    capacity_bytes: float
    weights_bytes: float
    naive_max_seq_len: int

    @property
    def free_bytes(self) -> float:
        return self.capacity_bytes - self.weights_bytes


@dataclass(frozen=True)
class MemorySweep:
    """Bytes of S and P of one layer against sequence length, and each GPU's room for them."""

    model: str
    dtype: DType
    batch: int
    seq_lens: np.ndarray
    sp_bytes: np.ndarray
    lines: tuple[MemoryLine, ...]


def memory_sweep(model: ModelSpec, gpus: Sequence[GpuSpec], batch: int = 1, dtype: DType = DType.fp16,
                 max_seq_len: Optional[int] = None) -> MemorySweep:
    """S + P of naive prefill from 256 tokens to past the point where the first GPU runs out."""
    if not gpus:
        raise InputError("give at least one GPU")
    lines = []
    for gpu in gpus:
        ceiling = naive_ceiling(model, gpu, batch, dtype)
        lines.append(MemoryLine(gpu.display_name, float(ceiling.capacity_bytes), float(ceiling.weights_bytes),
                                ceiling.max_seq_len))
    longest = max(line.naive_max_seq_len for line in lines)
    hi = max_seq_len if max_seq_len is not None else max(_pow2_at_least(4 * longest), 4 * _pow2_at_least(model.max_context_len))
    lens = length_grid(256, hi)
    naive = naive_prefill(model, lens, batch, dtype)
    return MemorySweep(model.display_name, dtype, int(batch), lens, naive.peak_extra_bytes, tuple(lines))


@dataclass(frozen=True)
class TimeSweep:
    """Time floors of naive and flash prefill for all layers against sequence length, on one GPU."""

    model: str
    gpu: str
    dtype: DType
    batch: int
    causal: bool
    num_layers: int
    seq_lens: np.ndarray
    naive_s: np.ndarray
    flash_s: np.ndarray
    naive_max_seq_len: int
    marked_seq_len: Optional[int] = None


def time_sweep(model: ModelSpec, gpu: GpuSpec, batch: int = 1, dtype: DType = DType.fp16, causal: bool = True,
               max_seq_len: Optional[int] = None, marked_seq_len: Optional[int] = 8192) -> TimeSweep:
    """predict(naive) and predict(flash) over a length grid, times the number of layers."""
    roofs = Ceilings.of(gpu, dtype)
    limit = naive_max_seq_len(model, gpu, batch, dtype)
    hi = max_seq_len if max_seq_len is not None else max(_pow2_at_least(4 * limit), 4 * _pow2_at_least(model.max_context_len))
    lens = length_grid(256, hi)
    naive = predict(naive_prefill(model, lens, batch, dtype, causal), roofs)
    flash = predict(flash_prefill(model, lens, batch, dtype, causal, gpu=gpu), roofs)
    layers = model.num_layers
    return TimeSweep(model.display_name, gpu.display_name, dtype, int(batch), causal, layers, lens,
                     layers * naive.t_floor_s, layers * flash.t_floor_s, limit, marked_seq_len)


@dataclass(frozen=True)
class DecodeSweep:
    """Attention time of one decode step, all layers, against context length, one line per batch."""

    model: str
    gpu: str
    dtype: DType
    kv_dtype: DType
    page_size: int
    num_layers: int
    num_sms: int
    context_lens: np.ndarray
    batches: tuple[int, ...]
    launched_s: tuple[np.ndarray, ...]
    ideal_s: tuple[np.ndarray, ...]
    weights_s: float


def decode_sweep(model: ModelSpec, gpu: GpuSpec, batches: Sequence[int] = DECODE_BATCHES, page_size: int = 16,
                 dtype: DType = DType.fp16, kv_dtype: Optional[DType] = None,
                 max_context_len: Optional[int] = None) -> DecodeSweep:
    """Paged decode (one launch, no splits) as launched on this GPU (the parallelism model: rooflab.predict's
    t_model on datasheet roofs, a model) and on an ideal launch that fills it (the floor).

    `weights_s` is the time to read the weights once at full bandwidth, for scale: every step pays it.
    """
    if not batches:
        raise InputError("give at least one batch size")
    kv_dtype = kv_dtype or dtype
    roofs = Ceilings.of(gpu, dtype)
    lens = length_grid(256, max_context_len if max_context_len is not None else 4 * _pow2_at_least(model.max_context_len))
    launched, ideal = [], []
    for b in batches:
        as_launched = paged_decode_uniform(model, lens, b, page_size, dtype, kv_dtype, num_sms=gpu.num_sms,
                                           units_per_sm=gpu.units_per_sm)
        filled = paged_decode_uniform(model, lens, b, page_size, dtype, kv_dtype)
        launched.append(model.num_layers * model_time(as_launched, roofs))
        ideal.append(model.num_layers * predict(filled, roofs).t_floor_s)
    weights = KernelCost("weights", np.float64(0.0), np.float64(decode_step(model, 1, 1, dtype).weight_bytes_per_step))
    return DecodeSweep(model.display_name, gpu.display_name, dtype, kv_dtype, int(page_size), model.num_layers,
                       gpu.num_sms, lens, tuple(int(b) for b in batches), tuple(launched), tuple(ideal),
                       float(predict_kernel(weights, roofs).t_floor_s))


@dataclass(frozen=True)
class CapacitySweep:
    """Concurrent sequences against context length: paged blocks against a contiguous reservation."""

    model: str
    gpu: str
    weight_dtype: str          # the formats the weights are counted in ('bf16', 'bf16, experts mxfp4')
    kv_dtype: str
    page_size: int
    max_model_len: int
    gpu_memory_utilization: float
    kv_budget_bytes: float
    context_lens: np.ndarray
    paged: np.ndarray
    contiguous: np.ndarray
    longest_context: int
    tensor_parallel: int = 1


def capacity_sweep(model: ModelSpec, gpu: GpuSpec, page_size: int = 16, weight_dtype: DType | WeightFormat | None = None,
                   kv_dtype: Optional[DType] = None, gpu_memory_utilization: float = 0.9,
                   max_model_len: Optional[int] = None, tensor_parallel: int = 1) -> CapacitySweep:
    """plan_capacity at each context length, from 256 tokens to the longest single context that fits."""
    first = plan_capacity(model, gpu, 256, weight_dtype, kv_dtype, gpu_memory_utilization,
                          page_size=page_size, max_model_len=max_model_len, tensor_parallel=tensor_parallel)
    hi = max(_pow2_at_least(first.max_context_len), 2 * _pow2_at_least(first.max_model_len))
    lens = length_grid(256, hi, per_octave=32)
    plans = [plan_capacity(model, gpu, int(n), weight_dtype, kv_dtype, gpu_memory_utilization,
                           page_size=page_size, max_model_len=max_model_len, tensor_parallel=tensor_parallel)
             for n in lens]
    return CapacitySweep(model.display_name, gpu.display_name, first.weight_dtype, first.kv_dtype,
                         int(page_size), first.max_model_len, gpu_memory_utilization,
                         float(first.kv_budget_bytes), lens,
                         np.array([p.max_sequences_paged for p in plans], dtype=np.float64),
                         np.array([p.max_sequences_contiguous for p in plans], dtype=np.float64),
                         first.max_context_len, tensor_parallel)

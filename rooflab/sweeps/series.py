"""Specs + workload -> the numbers each sweep chart draws. No matplotlib here, and no formula of its own.

Every series comes from rooflab's cost functions and floors (cost/, floors.py, capacity/), each model
priced through rooflab.cost.layers (model_prefill / model_decode, every layer type as itself, summed by
model_total), the same code the reports use, so a chart's point equals the report's total for the same
workload. This module only chooses the lengths (grid.py: the default grid, or the user's) and sweeps them.
Floors and predictions are apart: a series is one or the other (the frames' `estimate` column), never both.
Each function returns a frozen dataclass that a chart function in rooflab.plot turns into a
Figure, and whose to_frame() gives the numbers as a pandas DataFrame, so a notebook can inspect
or change them before drawing. The roofline chart's numbers are in points.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..capacity import CapacityPlan, capacity_curve, plan_capacity
from ..deployment import Deployment
from ..cost.batch import DecodeBatch
from ..cost.common import KernelCost
from ..cost.layers import layer_decode, layer_prefill, main_attention, model_decode, model_prefill, model_total
from ..cost.model import decode_step
from ..cost.naive import naive_ceiling, naive_max_seq_len
from ..errors import InputError
from ..predict import model_time
from ..floors import Ceilings, floor, floor_kernel
from ..specs import GpuSpec, ModelSpec
from ..units import DType, WeightFormat
from .frames import long_frame
from .grid import batch_sizes, length_grid, pow2_at_least, user_lengths

#: Batches the decode chart draws by default.
DECODE_BATCHES = (1, 8, 32, 128)

#: The frames' `estimate` of a series: a physical floor, or a prediction (a model of how a kernel runs).
FLOOR, PREDICTION = "floor", "prediction"


# --- sweeps over a length ------------------------------------------------------------

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
    """Bytes of S and P of one layer (of the model's main softmax layer type) against sequence length, and each
    GPU's room for them."""

    model: str
    dtype: DType
    batch: int
    seq_lens: np.ndarray
    sp_bytes: np.ndarray
    lines: tuple[MemoryLine, ...]

    def to_frame(self):
        """Long format, one row per (series, seq_len): columns model, gpu, series, seq_len (tokens), bytes.

        Series: 'sp_bytes' (S and P of one layer alive together, the report's naive peak_extra_bytes; gpu None)
        and, per GPU, 'free_bytes' (its capacity minus the weights, the same at every length). Each GPU's naive
        limit is in `lines`.
        """
        import pandas as pd

        parts = [long_frame("seq_len", self.seq_lens, {"sp_bytes": self.sp_bytes}, "bytes", model=self.model,
                            gpu=None)]
        parts += [long_frame("seq_len", self.seq_lens, {"free_bytes": line.free_bytes}, "bytes", model=self.model,
                             gpu=line.gpu) for line in self.lines]
        return pd.concat(parts, ignore_index=True)


def memory_sweep(model: ModelSpec, gpus: Sequence[GpuSpec], batch: int = 1, dtype: DType = DType.fp16,
                 max_seq_len: Optional[int] = None, seq_lens: Optional[Sequence[int]] = None) -> MemorySweep:
    """S + P of naive prefill at `seq_lens`, or from 256 tokens to past the point where the first GPU runs out."""
    if not gpus:
        raise InputError("give at least one GPU")
    lines = []
    for gpu in gpus:
        ceiling = naive_ceiling(model, gpu, batch, dtype)
        lines.append(MemoryLine(gpu.display_name, float(ceiling.capacity_bytes), float(ceiling.weights_bytes),
                                ceiling.max_seq_len))
    lens = user_lengths(seq_lens, "seq_lens", max_seq_len, "max_seq_len")
    if lens is None:
        longest = max(line.naive_max_seq_len for line in lines)
        hi = max_seq_len if max_seq_len is not None else max(pow2_at_least(4 * longest),
                                                             4 * pow2_at_least(model.max_context_len))
        lens = length_grid(256, hi)
    naive = layer_prefill(model, main_attention(model), lens, batch, dtype, naive=True)
    return MemorySweep(model.display_name, dtype, int(batch), lens, naive.peak_extra_bytes, tuple(lines))


@dataclass(frozen=True)
class TimeSweep:
    """Time floors of naive and flash prefill for all layers against sequence length, on one GPU: at each length
    the prefill report's naive and flash totals (every layer type priced as itself, linear layers' scans in
    both)."""

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

    def to_frame(self):
        """Long format, one row per (series, seq_len): columns model, gpu, series ('naive', 'flash'), estimate ('floor':
        both are physical floors), seq_len (tokens), time_s (the floor of all layers, seconds: the report's total)
        and fits (whether that variant's prefill fits in memory: naive's S and P beside the weights; flash
        always)."""
        frame = long_frame("seq_len", self.seq_lens, {"naive": self.naive_s, "flash": self.flash_s}, "time_s",
                           model=self.model, gpu=self.gpu)
        frame.insert(frame.columns.get_loc("series") + 1, "estimate", FLOOR)
        frame["fits"] = (frame["series"] == "flash") | (frame["seq_len"] <= self.naive_max_seq_len)
        return frame


def _time_upper(model: ModelSpec, gpu: GpuSpec, batch: int, dtype: DType) -> int:
    """The default grid's right end: well past where naive stops fitting and past the model's context window."""
    limit = naive_max_seq_len(model, gpu, batch, dtype)
    return max(pow2_at_least(4 * limit), 4 * pow2_at_least(model.max_context_len))


def time_sweep(model: ModelSpec, gpu: GpuSpec, batch: int = 1, dtype: DType = DType.fp16, causal: bool = True,
               max_seq_len: Optional[int] = None, marked_seq_len: Optional[int] = 8192,
               seq_lens: Optional[Sequence[int]] = None) -> TimeSweep:
    """The naive and flash floors of the whole model over a length grid: model_prefill (every layer type as
    itself) summed by model_total, as prefill_report's totals.

    The grid is `seq_lens` (whole token counts, sorted and without repeats), or from 256 tokens to
    `max_seq_len` (default: past both naive's memory limit and the model's context window) with
    `marked_seq_len` added, so the mark is a computed point. With `seq_lens`, the mark is kept only
    when it is one of them.
    """
    roofs = Ceilings.of(gpu, dtype)
    limit = naive_max_seq_len(model, gpu, batch, dtype)
    lens = user_lengths(seq_lens, "seq_lens", max_seq_len, "max_seq_len")
    if lens is None:
        lens = length_grid(256, max_seq_len if max_seq_len is not None else _time_upper(model, gpu, batch, dtype))
        if marked_seq_len is not None and lens[0] <= marked_seq_len <= lens[-1]:
            lens = np.union1d(lens, [float(marked_seq_len)])
    elif marked_seq_len not in lens:
        marked_seq_len = None
    def t_floor(cost):
        return floor(cost, roofs).t_floor_s

    naive = model_total(model_prefill(model, lens, batch, dtype, causal, naive=True), t_floor)
    flash = model_total(model_prefill(model, lens, batch, dtype, causal, gpu=gpu), t_floor)
    return TimeSweep(model.display_name, gpu.display_name, dtype, int(batch), causal, model.num_layers, lens,
                     naive, flash, limit, marked_seq_len)


def time_sweeps(model: ModelSpec, gpus: Sequence[GpuSpec], batch: int = 1, dtype: DType = DType.fp16,
                causal: bool = True, max_seq_len: Optional[int] = None, marked_seq_len: Optional[int] = 8192,
                seq_lens: Optional[Sequence[int]] = None) -> tuple[TimeSweep, ...]:
    """time_sweep on each GPU over one grid: the user's, or the default running to the widest GPU's right end."""
    if not gpus:
        raise InputError("give at least one GPU")
    if seq_lens is None and max_seq_len is None:
        max_seq_len = max(_time_upper(model, gpu, batch, dtype) for gpu in gpus)
    return tuple(time_sweep(model, gpu, batch, dtype, causal, max_seq_len, marked_seq_len, seq_lens) for gpu in gpus)


@dataclass(frozen=True)
class DecodeSweep:
    """Attention time of one decode step, all layers, against context length, one line per batch.

    At each (batch, context) the decode report's paged totals: `floor_s` its floor, `predicted_s` its
    predicted time (the fitted models; None where the GPU lacks a fit for some layer type), and `launched_s`
    the parallelism model at the datasheet roofs (rooflab.predict.model_time of the same costs: a model, not a
    floor).
    """

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
    floor_s: tuple[np.ndarray, ...]
    weights_s: float
    predicted_s: Optional[tuple[np.ndarray, ...]] = None

    @property
    def ideal_s(self) -> tuple[np.ndarray, ...]:
        """The floors under their old name (the 'ideal' launch that fills every SM)."""
        return self.floor_s

    def to_frame(self):
        """Long format, one row per (batch, series, context_len): columns model, gpu, batch, series ('floor': the
        physical floor, every SM busy; 'launched': the parallelism model as launched; 'predicted': the fitted
        models, where the GPU has them), estimate ('floor' or 'prediction'), context_len (tokens per sequence) and
        time_s (attention of one decode step, all layers, seconds: the decode report's paged total). `weights_s`,
        the same for every row, is an attribute."""
        import pandas as pd

        parts = []
        for i, b in enumerate(self.batches):
            series = {"floor": self.floor_s[i], "launched": self.launched_s[i]}
            if self.predicted_s is not None:
                series["predicted"] = self.predicted_s[i]
            parts.append(long_frame("context_len", self.context_lens, series, "time_s", model=self.model,
                                    gpu=self.gpu, batch=b))
        frame = pd.concat(parts, ignore_index=True)
        frame.insert(frame.columns.get_loc("series") + 1, "estimate",
                     np.where(frame["series"] == "floor", FLOOR, PREDICTION))
        return frame


def decode_sweep(model: ModelSpec, gpu: GpuSpec, batches: Sequence[int] = DECODE_BATCHES, page_size: int = 16,
                 dtype: DType = DType.fp16, kv_dtype: Optional[DType] = None,
                 max_context_len: Optional[int] = None, context_lens: Optional[Sequence[int]] = None) -> DecodeSweep:
    """Paged decode (one launch, no splits) of the whole model, every layer type as itself (model_decode): its
    floor, the parallelism model as launched on this GPU (rooflab.predict's t_model on datasheet roofs, a model)
    and, where the GPU has fitted models for every layer type, the predicted time: each the decode report's
    paged total for that batch and context.

    The grid is `context_lens` (whole token counts), or from 256 tokens to `max_context_len` (default four
    times the model's context window). `batches` are sorted and repeats dropped. `weights_s` is the time to
    read the weights once at full bandwidth, for scale: every step pays it.
    """
    batches = batch_sizes(batches)
    kv_dtype = kv_dtype or dtype
    roofs = Ceilings.of(gpu, dtype)
    lens = user_lengths(context_lens, "context_lens", max_context_len, "max_context_len")
    if lens is None:
        lens = length_grid(256, max_context_len if max_context_len is not None
                           else 4 * pow2_at_least(model.max_context_len))
    launched, floors, predicted = [], [], []
    for b in batches:
        points = [_decode_point(model, gpu, DecodeBatch.uniform(int(n), b), page_size, dtype, kv_dtype, roofs)
                  for n in lens]
        floors.append(np.array([p[0] for p in points]))
        launched.append(np.array([p[1] for p in points]))
        predicted.append(None if any(p[2] is None for p in points) else np.array([p[2] for p in points]))
    weights = KernelCost("weights", np.float64(0.0), np.float64(decode_step(model, 1, 1, dtype).weight_bytes_per_step))
    return DecodeSweep(model.display_name, gpu.display_name, dtype, kv_dtype, int(page_size), model.num_layers,
                       gpu.num_sms, lens, batches, tuple(launched), tuple(floors),
                       float(floor_kernel(weights, roofs).t_floor_s),
                       None if any(p is None for p in predicted) else tuple(predicted))


def _decode_point(model: ModelSpec, gpu: GpuSpec, batch: DecodeBatch, page_size: int, dtype: DType,
                  kv_dtype: DType, roofs: Ceilings) -> tuple[float, float, Optional[float]]:
    """One (batch, context): the paged floor, the parallelism model as launched and the predicted time (None
    without a fit for every layer type) of the whole model, from one model_decode."""
    from ..report import decode_prediction      # here, so a capacity chart does not load the report modules

    layers = model_decode(model, batch, page_size, dtype, kv_dtype, num_sms=gpu.num_sms,
                          units_per_sm=gpu.units_per_sm)
    t_floor = float(model_total(layers, lambda c: floor(c, roofs).t_floor_s))
    launched = float(model_total(layers, lambda c: model_time(c, roofs)))
    predicted = 0.0
    for item in layers:
        def price(n, u, item=item):
            if (n, u) == (gpu.num_sms, gpu.units_per_sm):
                return item.cost
            return layer_decode(model, item.name, batch, page_size, dtype, kv_dtype, 1, 1, n, u)
        p = decode_prediction(gpu, item.layer, price, dtype) if item.layer.is_attention else None
        if p is None:
            return t_floor, launched, None
        predicted += item.num_layers * p.t_predicted_s
    return t_floor, launched, predicted


def decode_sweeps(model: ModelSpec, gpus: Sequence[GpuSpec], batches: Sequence[int] = DECODE_BATCHES,
                  page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: Optional[DType] = None,
                  max_context_len: Optional[int] = None,
                  context_lens: Optional[Sequence[int]] = None) -> tuple[DecodeSweep, ...]:
    """decode_sweep on each GPU (the default grid depends on the model only, so they share it)."""
    if not gpus:
        raise InputError("give at least one GPU")
    return tuple(decode_sweep(model, gpu, batches, page_size, dtype, kv_dtype, max_context_len, context_lens)
                 for gpu in gpus)


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

    def to_frame(self):
        """Long format, one row per (series, context_len): columns model, gpu, tensor_parallel, series ('paged',
        'contiguous': a max-length reservation per sequence), context_len (tokens per sequence) and sequences
        (how many fit at once, a count)."""
        frame = long_frame("context_len", self.context_lens, {"paged": self.paged, "contiguous": self.contiguous},
                           "sequences", model=self.model, gpu=self.gpu, tensor_parallel=self.tensor_parallel)
        frame["sequences"] = frame["sequences"].astype(np.int64)
        return frame


def _capacity_upper(first: CapacityPlan) -> int:
    """The default grid's right end: past the longest single context and twice the max model length."""
    return max(pow2_at_least(first.max_context_len), 2 * pow2_at_least(first.max_model_len))


def capacity_sweep(model: ModelSpec, gpu: GpuSpec, page_size: int = 16, weight_dtype: DType | WeightFormat | None = None,
                   kv_dtype: Optional[DType] = None, gpu_memory_utilization: float = 0.9,
                   max_model_len: Optional[int] = None, tensor_parallel: int = 1,
                   context_lens: Optional[Sequence[int]] = None, max_context_len: Optional[int] = None,
                   deployment: Optional[Deployment] = None) -> CapacitySweep:
    """plan_capacity's sequences at each context length of `context_lens`, or from 256 tokens to `max_context_len`
    (default: past the longest single context that fits and twice the max model length), in closed form
    (capacity.capacity_curve: the same figures as plan_capacity point by point). `deployment` replaces page_size,
    weight_dtype, kv_dtype, gpu_memory_utilization and tensor_parallel."""
    if deployment is None:
        deployment = Deployment(tensor_parallel=tensor_parallel, page_size=page_size, weight_format=weight_dtype,
                                kv_cache_dtype=kv_dtype, gpu_memory_utilization=gpu_memory_utilization)
    first = plan_capacity(model, gpu, 256, max_model_len=max_model_len, deployment=deployment)
    lens = user_lengths(context_lens, "context_lens", max_context_len, "max_context_len")
    if lens is None:
        lens = length_grid(256, max_context_len if max_context_len is not None else _capacity_upper(first),
                           per_octave=32)
    curve = capacity_curve(model, gpu, lens, deployment, max_model_len=max_model_len)
    return CapacitySweep(model.display_name, gpu.display_name, first.weight_dtype, first.kv_dtype,
                         deployment.page_size, first.max_model_len, deployment.gpu_memory_utilization,
                         float(first.kv_budget_bytes), lens, curve.paged.astype(np.float64),
                         curve.contiguous.astype(np.float64), first.max_context_len, deployment.tensor_parallel)


def capacity_sweeps(model: ModelSpec, gpus: Sequence[GpuSpec], page_size: int = 16,
                    weight_dtype: DType | WeightFormat | None = None, kv_dtype: Optional[DType] = None,
                    gpu_memory_utilization: float = 0.9, max_model_len: Optional[int] = None,
                    tensor_parallel: int = 1, context_lens: Optional[Sequence[int]] = None,
                    max_context_len: Optional[int] = None) -> tuple[CapacitySweep, ...]:
    """capacity_sweep on each GPU over one grid: the user's, or the default running to the widest GPU's right end."""
    if not gpus:
        raise InputError("give at least one GPU")
    options = dict(page_size=page_size, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                   gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                   tensor_parallel=tensor_parallel)
    if context_lens is None and max_context_len is None:
        max_context_len = max(_capacity_upper(plan_capacity(model, gpu, 256, **options)) for gpu in gpus)
    return tuple(capacity_sweep(model, gpu, context_lens=context_lens, max_context_len=max_context_len, **options)
                 for gpu in gpus)

"""Measurements x predictions: how close each kernel comes to its floor, and how well a calibrated model predicts it.

For every measured row rooflab recomputes the cost of the same configuration
(naive_prefill, flash_prefill, paged_decode, merge_pair) and its floor against the
datasheet and against the calibrated ceilings (the GPU YAML's `measured:` section).
It reports, per kernel and implementation:

    fraction of floor   t_floor / t_measured        (1.0 = at the roofline)
    achieved            bytes / t and FLOP / t

(both floors are the pure roofline: an ideal launch), and fits a calibrated model on half
of the configurations (alternate rows of each kernel in sweep order), reporting its error
only on the other, held-out half:

    t_predicted = c0 + t_floor_calibrated(k) / eta

c0 >= 0 is a fixed launch overhead, eta the efficiency the kernel reaches against the
calibrated roof, and k the units_per_sm of the parallelism model (cost/parallel.py) that
limits launches with too few work units (flash and decode), chosen from a grid. Decode rows
of other implementations (PyTorch's dense decode) are predicted as if they split the KV
the way rooflab recommends, since those libraries choose their own split counts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..cost.common import Cost, LaunchCost
from ..cost.flash import flash_prefill
from ..cost.merge import merge_pair
from ..cost.naive import naive_prefill
from ..cost.paged import paged_decode, recommend_splits
from ..errors import InputError
from ..load import load_gpu
from ..roofline import Ceilings, Prediction, predict
from ..specs import AttentionHeads, GpuSpec
from ..units import DType
from ..vocab import CeilingSource, Kernel, Variant
from .device import spec_for_device
from .records import Measurement, read_measurements

#: units_per_sm values tried for the parallelism model of flash and decode kernels.
UNITS_PER_SM_GRID = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
#: Kernels whose launches the parallelism model limits.
PARALLEL_KERNELS = (Kernel.flash, Kernel.paged, Kernel.split_kv)
#: A group needs this many rows to fit (c0, eta) on half and test on the other half.
MIN_ROWS_TO_FIT = 4


@dataclass(frozen=True)
class _Workload:
    """What every kernel's cost needs from a measurement row, checked once."""

    m: Measurement
    heads: AttentionHeads
    dtype: DType
    kv_dtype: DType
    gpu: GpuSpec
    num_sms: Optional[int]      # None: an ideal launch (no parallelism model)
    units_per_sm: float


def _naive(w: _Workload) -> Cost:
    return naive_prefill(w.heads, w.m.seq_len, w.m.batch, w.dtype, w.m.causal)


def _naive_softmax(w: _Workload) -> Cost:
    return LaunchCost(_naive(w).softmax, Variant.naive)


def _flash(w: _Workload) -> Cost:
    return flash_prefill(w.heads, w.m.seq_len, w.m.batch, w.dtype, w.m.causal, gpu=w.gpu, num_sms=w.num_sms,
                         units_per_sm=w.units_per_sm)


def _decode(w: _Workload) -> Cost:
    """rooflab's rows at their measured split count; other implementations (which choose their own) as if they
    split the way rooflab recommends."""
    lens, splits = w.m.lengths(), w.m.splits
    if not w.m.impl.startswith("rooflab") and w.num_sms is not None:
        splits = recommend_splits(w.heads, lens, w.num_sms, w.m.page_size, w.dtype, w.kv_dtype, w.units_per_sm)
    return paged_decode(w.heads, lens, w.m.page_size, w.dtype, w.kv_dtype, splits, w.num_sms, w.units_per_sm)


def _merge(w: _Workload) -> Cost:
    return merge_pair(w.m.tokens, w.m.num_qo_heads, w.m.head_dim, w.dtype)


#: The cost function each measured kernel is predicted with.
COST_OF: dict[Kernel, Callable[[_Workload], Cost]] = {
    Kernel.naive: _naive, Kernel.naive_softmax: _naive_softmax, Kernel.flash: _flash, Kernel.paged: _decode,
    Kernel.split_kv: _decode, Kernel.merge: _merge,
}


def predict_measurement(m: Measurement, gpu: GpuSpec, source: CeilingSource,
                        units_per_sm: float | None = None) -> Prediction:
    """The roofline prediction for the configuration a measurement row describes.

    units_per_sm None: an ideal launch (the pure roofline); a number: the parallelism model with it.
    """
    try:
        dtype = DType(m.dtype)
        kv_dtype = DType(m.kv_dtype) if m.kv_dtype else dtype
        heads = AttentionHeads(m.num_qo_heads, m.num_kv_heads, m.head_dim)
    except Exception as exc:
        raise InputError(f"measurement '{m.describe()}': {exc}") from None
    roofs = Ceilings.of(gpu, dtype, source)
    num_sms = None if units_per_sm is None else gpu.num_sms
    workload = _Workload(m, heads, dtype, kv_dtype, gpu, num_sms, 1.0 if units_per_sm is None else units_per_sm)
    return predict(COST_OF[m.kernel](workload), roofs)


@dataclass(frozen=True)
class Fit:
    """t = overhead_s + floor / efficiency, with units_per_sm for decode kernels."""

    overhead_s: float
    efficiency: float
    units_per_sm: Optional[float] = None

    def __call__(self, floor_s: np.ndarray) -> np.ndarray:
        return self.overhead_s + floor_s / self.efficiency


def fit_overhead_efficiency(floor_s: np.ndarray, measured_s: np.ndarray) -> Fit:
    """Least squares on relative error: minimise sum((c0 + a x_i) / y_i - 1)^2 with c0 >= 0, a > 0.

    Where the unconstrained solution breaks either bound (c0 < 0; or a <= 0, which two nearly
    proportional points can give: a large overhead and a negative efficiency), c0 = 0 and a alone
    is fitted, which is always positive.
    """
    x, y = np.asarray(floor_s, float), np.asarray(measured_s, float)
    design = np.column_stack([1 / y, x / y])
    (c0, a), *_ = np.linalg.lstsq(design, np.ones_like(y), rcond=None)
    if c0 < 0 or a <= 0:
        c0 = 0.0
        a = float(np.sum(x / y) / np.sum((x / y) ** 2))
    return Fit(float(c0), float(1 / a))


#: The workload fields of a Measurement that Validation.rows_frame adds to each row.
WORKLOAD_COLUMNS = ("dtype", "kv_dtype", "batch", "num_qo_heads", "num_kv_heads", "head_dim", "seq_len",
                    "context_lens", "causal", "page_size", "splits", "tokens")


@dataclass(frozen=True)
class RowResult:
    """One measurement beside its predictions."""

    config: str
    kernel: str
    impl: str
    measured_s: float
    flops: float
    hbm_bytes: float
    floor_datasheet_s: float
    floor_calibrated_s: float
    held_out: bool
    predicted_s: Optional[float] = None
    shape: str = ""
    measurement: Optional[Measurement] = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "measurement"}
        out["error"] = self.error
        return out

    @property
    def error(self) -> Optional[float]:
        if self.predicted_s is None:
            return None
        return abs(self.predicted_s - self.measured_s) / self.measured_s


@dataclass(frozen=True)
class GroupSummary:
    """Per (kernel, implementation): how close to the floor, and the held-out error of the calibrated model."""

    kernel: str
    impl: str
    rows: int
    fraction_of_floor_datasheet: float
    fraction_of_floor_calibrated: float
    achieved_bytes_per_s: float
    achieved_flop_per_s: float
    fit: Optional[Fit]
    held_out_rows: int
    median_error: Optional[float]
    worst_error: Optional[float]


@dataclass(frozen=True)
class Validation:
    gpu: str
    ceilings: str
    meta: dict
    groups: tuple[GroupSummary, ...]
    rows: tuple[RowResult, ...] = field(repr=False)

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu, "ceilings": self.ceilings, "meta": self.meta,
            "groups": [asdict(g) for g in self.groups],
            "rows": [r.to_dict() for r in self.rows],
        }

    def summary_frame(self):
        """One row per (kernel, impl) as a pandas DataFrame: floor fractions, fit and held-out errors."""
        import pandas as pd

        records = []
        for g in self.groups:
            record = {k: v for k, v in asdict(g).items() if k != "fit"}
            record.update(overhead_s=g.fit.overhead_s if g.fit else None,
                          efficiency=g.fit.efficiency if g.fit else None,
                          units_per_sm=g.fit.units_per_sm if g.fit else None)
            records.append(record)
        return pd.DataFrame(records).set_index(["kernel", "impl"])

    def rows_frame(self):
        """Every measurement beside its floors and prediction, as a pandas DataFrame.

        Columns: RowResult's fields and error, then the measurement's workload (WORKLOAD_COLUMNS).
        """
        import pandas as pd

        records = []
        for r in self.rows:
            record = r.to_dict()
            if r.measurement is not None:
                record.update({k: getattr(r.measurement, k) for k in WORKLOAD_COLUMNS})
            records.append(record)
        return pd.DataFrame(records)


def check_gpu(meta: dict, gpu_ref: Optional[str], where: str) -> str:
    """The spec to validate against: --gpu if given (it must describe the measured device), else the file's."""
    recorded = meta.get("gpu_spec")
    device = meta.get("device_name", "")
    if gpu_ref is None:
        if not recorded:
            raise InputError(f"{where}: the file names no gpu_spec in its metadata; pass --gpu")
        return recorded
    if recorded and gpu_ref != recorded:
        expected = spec_for_device(device) if device else None
        if expected != gpu_ref:
            raise InputError(f"{where}: measured on {device or recorded} (spec {recorded}), "
                             f"not on {gpu_ref}; validate against --gpu {recorded}")
    return gpu_ref


def validate(path: Path, gpu_ref: Optional[str] = None, fit: bool = True) -> Validation:
    """Join a measurement file with rooflab's predictions and fit the calibrated model per kernel.

    `fit=False` skips the calibrated model (no predicted times or errors): enough for plotting points.
    """
    meta, rows = read_measurements(path)
    gpu = load_gpu(check_gpu(meta, gpu_ref, str(path)))
    source = CeilingSource.calibrated if gpu.measured is not None else CeilingSource.datasheet
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in rows:
        groups.setdefault((m.kernel, m.impl), []).append(m)
    summaries, results = [], []
    for (kernel, impl), members in groups.items():
        summary, group_rows = _validate_group(kernel, impl, members, gpu, source, fit)
        summaries.append(summary)
        results += group_rows
    return Validation(gpu.name, source.value, meta, tuple(summaries), tuple(results))


def _validate_group(kernel: str, impl: str, members: list[Measurement], gpu: GpuSpec,
                    source: CeilingSource, with_fit: bool = True) -> tuple[GroupSummary, list[RowResult]]:
    measured = np.array([m.time_s for m in members])
    held = np.arange(len(members)) % 2 == 1
    datasheet = [predict_measurement(m, gpu, CeilingSource.datasheet) for m in members]
    calibrated = [predict_measurement(m, gpu, source) for m in members]
    fit, modelled = _fit(kernel, members, measured, held, gpu, source) if with_fit else (None, calibrated)
    floors_ds = np.array([float(p.t_floor_s) for p in datasheet])
    floors_cal = np.array([float(p.t_floor_s) for p in calibrated])
    flops = np.array([float(p.flops) for p in datasheet])
    nbytes = np.array([float(p.hbm_bytes) for p in datasheet])
    predicted = fit(np.array([float(p.t_floor_s) for p in modelled])) if fit is not None else None
    results = [
        RowResult(m.describe(), kernel, impl, float(measured[i]), float(flops[i]), float(nbytes[i]),
                  float(floors_ds[i]), float(floors_cal[i]), bool(held[i]),
                  None if predicted is None else float(predicted[i]), m.shape(), m)
        for i, m in enumerate(members)
    ]
    errors = np.array([r.error for r in results if r.held_out and r.error is not None])
    summary = GroupSummary(
        kernel=kernel, impl=impl, rows=len(members),
        fraction_of_floor_datasheet=float(np.median(floors_ds / measured)),
        fraction_of_floor_calibrated=float(np.median(floors_cal / measured)),
        achieved_bytes_per_s=float(np.median(nbytes / measured)),
        achieved_flop_per_s=float(np.median(flops / measured)),
        fit=fit, held_out_rows=int(errors.size),
        median_error=float(np.median(errors)) if errors.size else None,
        worst_error=float(np.max(errors)) if errors.size else None,
    )
    return summary, results


def _fit(kernel: str, members: list[Measurement], measured: np.ndarray, held: np.ndarray, gpu: GpuSpec,
         source: CeilingSource) -> tuple[Optional[Fit], list[Prediction]]:
    """Fit on the rows not held out; for flash and decode kernels also pick units_per_sm from the grid."""
    grid = UNITS_PER_SM_GRID if kernel in PARALLEL_KERNELS else (None,)
    best: tuple[float, Optional[Fit], list[Prediction]] = (np.inf, None, [])
    for k in grid:
        preds = [predict_measurement(m, gpu, source, k) for m in members]
        floors = np.array([float(p.t_floor_s) for p in preds])
        if len(members) < MIN_ROWS_TO_FIT:
            return None, preds
        fit = fit_overhead_efficiency(floors[~held], measured[~held])
        loss = float(np.sum((fit(floors[~held]) / measured[~held] - 1) ** 2))
        if loss < best[0]:
            chosen = Fit(fit.overhead_s, fit.efficiency, k)
            best = (loss, chosen, preds)
    return best[1], best[2]


@dataclass(frozen=True)
class MeasuredPoint:
    """A timed kernel on the roofline: its intensity (predicted FLOPs over predicted bytes) and the FLOP rate
    it reached.

    Points with the same label are one group on the chart (one marker, one legend entry). `kernel`
    and `impl`, as a measurement file names them, pick the marker: colour by kernel, filled for
    rooflab's own kernels, hollow for others' (PyTorch's backends).
    """

    label: str
    intensity_flop_per_byte: float
    achieved_flop_per_s: float
    kernel: str = ""
    impl: str = ""

    def __post_init__(self) -> None:
        for name in ("intensity_flop_per_byte", "achieved_flop_per_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InputError(f"measured point '{self.label}': {name} must be a positive number, got {value!r}")


def measured_points(validation: Validation) -> list[MeasuredPoint]:
    """Every measured row as a point for the roofline chart (rooflab.plot.roofline_chart)."""
    return [MeasuredPoint(f"{r.kernel} ({r.impl})", r.flops / r.hbm_bytes, r.flops / r.measured_s, r.kernel, r.impl)
            for r in validation.rows]

"""Measurements x predictions: how close each kernel comes to its floor, and how well its time model predicts it.

For every measured row rooflab recomputes the cost of the same configuration (bench/costs.py)
and its floor against the datasheet and against the calibrated ceilings (the GPU YAML's
`measured:` section). It reports, per kernel and implementation:

    fraction of floor   t_floor / t_measured        (1.0 = at the roofline)
    achieved            bytes / t and FLOP / t

and fits the time model (rooflab/predict.py; bench/fitting.py) on some rows, reporting its error
only on rows it did not see:

    within a campaign   fitted on alternate rows of each kernel in sweep order, tested on the others
    across campaigns    fitted on every row of other files (`--fit-from`), tested on every row of this one

    t_predicted = c0 + t_model(units_per_sm, exp_overlap, unit_overhead_tiles) / eta
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..errors import InputError, RooflabError
from ..load import load_gpu
from ..floors import Ceilings, Floors, floor
from ..specs import FittedModel, GpuSpec
from ..units import DType
from ..vocab import CeilingSource, Kernel
from .costs import measurement_cost
from .cudnn_fit import kernel_model, kernel_model_times
from .fitting import Fit, fit_group, fit_model_times, fit_overhead_efficiency, model_times  # noqa: F401  (Fit, fit_overhead_efficiency: API)
from .records import Measurement, read_measurements, spec_for_device


def predict_measurement(m: Measurement, gpu: GpuSpec, source: CeilingSource,
                        units_per_sm: float | None = None) -> Floors:
    """The roofline of the configuration a measurement row describes against `source` ceilings (no parallelism
    model unless `units_per_sm` is given)."""
    roofs = Ceilings.of(gpu, DType(m.dtype), source)
    return floor(measurement_cost(m, gpu, gpu.num_sms if units_per_sm else None, units_per_sm or 1.0), roofs)


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
    fitted_rows: int = 0
    #: A kernel model's group (cudnn_kernel.KERNEL_MODELS): `model` its entry, which predicts here (`fit`: its terms,
    #: c0 this group's fit's); `campaign_fit` and its errors: the campaigns' own fit, what `rooflab fit` stores.
    model: str = ""
    campaign_fit: Optional[Fit] = None
    campaign_median_error: Optional[float] = None
    campaign_worst_error: Optional[float] = None


@dataclass(frozen=True)
class Validation:
    gpu: str
    ceilings: str
    meta: dict
    groups: tuple[GroupSummary, ...]
    rows: tuple[RowResult, ...] = field(repr=False)
    fit_from: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu, "ceilings": self.ceilings, "meta": self.meta, "fit_from": list(self.fit_from),
            "groups": [asdict(g) for g in self.groups],
            "rows": [r.to_dict() for r in self.rows],
        }

    def to_frame(self, rows: bool = False):
        """summary_frame() (one row per kernel and implementation), or with `rows` rows_frame() (one per measurement)."""
        return self.rows_frame() if rows else self.summary_frame()

    def summary_frame(self):
        """One row per (kernel, impl) as a pandas DataFrame: floor fractions, fit and held-out errors."""
        import pandas as pd

        records = []
        for g in self.groups:
            record = {k: v for k, v in asdict(g).items() if k not in ("fit", "campaign_fit")}
            record.update(overhead_s=g.fit.overhead_s if g.fit else None,
                          efficiency=g.fit.efficiency if g.fit else None,
                          units_per_sm=g.fit.units_per_sm if g.fit else None,
                          exp_overlap=g.fit.exp_overlap if g.fit else None,
                          unit_overhead_tiles=g.fit.unit_overhead_tiles if g.fit else None)
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
        if recorded.endswith((".yaml", ".yml")):
            path = Path(recorded) if Path(recorded).is_absolute() else Path(where).parent / recorded
            if not path.is_file():
                raise InputError(f"{where}: its gpu_spec {recorded!r} is no file (read beside the measurements: "
                                 f"{path}); pass --gpu")
            return str(path)
        return recorded
    if recorded and gpu_ref != recorded:
        expected = spec_for_device(device) if device else None
        if expected != gpu_ref:
            raise InputError(f"{where}: measured on {device or recorded} (spec {recorded}), "
                             f"not on {gpu_ref}; validate against --gpu {recorded}")
    return gpu_ref


def spec_files(files: Sequence, gpu_ref: Optional[str] = None) -> list[Path]:
    """The GPU YAML each measurement file is validated against (check_gpu's: --gpu or the file's gpu_spec, a path
    beside it or a bundled name), for a command that writes to keep its outputs off them."""
    from ..load import gpu_file

    return [gpu_file(check_gpu(read_measurements(Path(f))[0], gpu_ref, str(f))) for f in files]


#: The bundled dataset `rooflab validate` reads with no file: the H200 sweep, the new kernels' campaign and the
#: seesaw MLA kernel's (the MLA kernel that ships since the new kernels' campaign).
BUNDLED_DATASET = ("h200-sweep.csv", "h200-new-kernels.csv", "h200-mla-seesaw.csv")


def bundled_dataset() -> tuple[Path, ...]:
    """The files of the bundled dataset, where the package keeps them."""
    from ..load import data_dir

    return tuple(data_dir("measurements") / name for name in BUNDLED_DATASET)


def read_campaigns(files: Sequence[Path], gpu_ref: Optional[str] = None) -> tuple[dict, list[Measurement], str]:
    """The rows of several campaigns measured on one GPU spec (`gpu_ref` where given), the first file's
    metadata, and the spec's name; campaigns of different GPUs are an InputError naming both."""
    if not files:
        raise InputError("give at least one measurement file")
    rows: list[Measurement] = []
    meta: dict = {}
    spec = None
    seen: dict[Measurement, Path] = {}            # each row read so far, and the file it came from
    for path in files:
        file_meta, file_rows = read_measurements(Path(path))
        this = check_gpu(file_meta, gpu_ref, str(path))
        if spec is not None and this != spec:
            raise InputError(f"{path}: measured on {file_meta.get('device_name', this)} (spec {this}), but "
                             f"{files[0]} on {spec}: one GPU at a time")
        _refuse_shared_rows(Path(path), file_rows, seen)
        spec, meta = this, meta or file_meta
        rows += file_rows
        seen.update((m, Path(path)) for m in file_rows)
    return meta, rows, spec


def _refuse_shared_rows(path: Path, rows: Sequence[Measurement], seen: dict[Measurement, Path]) -> None:
    """InputError naming both files where rows of `path` were already read from another input (the same file given
    twice, a copy or a link): counted twice, they weigh double in the fit and its held-out half holds rows it fitted."""
    shared = [seen[m] for m in rows if m in seen]
    if shared:
        first = shared[0]
        same = " (the same file given twice)" if first.resolve() == path.resolve() else " (a copy or a link of it?)"
        raise InputError(f"{path}: {len(shared):,} of its {len(rows):,} rows are rows of {first}{same}; give each "
                         f"campaign once")


def validate(path: Path | Sequence[Path] | None = None, gpu_ref: Optional[str] = None, fit: bool = True,
             fit_from: Sequence[Path] = ()) -> Validation:
    """Join measurements with rooflab's predictions and fit the time model per kernel and implementation.

    `path` is one measurement file, several campaigns of one GPU validated together, or None for the
    bundled dataset (BUNDLED_DATASET). `fit=False` skips the model (no predicted times or errors):
    enough for plotting points. With `fit_from`, each group's model is fitted on every row of those files
    (measured on the same GPU spec) and every row of `path` is held out: the out-of-campaign error.
    """
    files = bundled_dataset() if path is None else ((Path(path),) if isinstance(path, (str, Path)) else
                                                     tuple(Path(p) for p in path))
    meta, rows, spec = read_campaigns(files, gpu_ref)
    gpu = load_gpu(spec)
    others = _campaign_rows(fit_from, gpu.name, files, rows) if fit_from else None
    try:
        return validate_rows(meta, rows, gpu, fit, others, tuple(str(p) for p in fit_from))
    except RooflabError as exc:       # a row rooflab cannot price: say which file
        raise InputError(f"{', '.join(map(str, files))}: {exc}") from None


def validate_rows(meta: dict, rows: Sequence[Measurement], gpu: GpuSpec, fit: bool = True,
                  others: dict[tuple[Kernel, str], list[Measurement]] | None = None,
                  fit_from: tuple[str, ...] = ()) -> Validation:
    """validate() on rows already read: fitted on alternate rows, or on `others` (rows of other campaigns by group)."""
    source = CeilingSource.calibrated if gpu.measured is not None else CeilingSource.datasheet
    summaries, results = [], []
    for (kernel, impl), members in _groups(rows).items():
        train = (others or {}).get((kernel, impl), [])
        summary, group_rows = _validate_group(kernel, impl, members, train, gpu, source, fit, others is not None)
        summaries.append(summary)
        results += group_rows
    return Validation(gpu.name, source.value, meta, tuple(summaries), tuple(results), fit_from)


def _groups(rows: Sequence[Measurement]) -> dict[tuple[Kernel, str], list[Measurement]]:
    groups: dict[tuple[Kernel, str], list[Measurement]] = {}
    for m in rows:
        groups.setdefault((m.kernel, m.impl), []).append(m)
    return groups


def _campaign_rows(paths: Sequence[Path], gpu_name: str, targets: Sequence[Path],
                   target_rows: Sequence[Measurement] = ()) -> dict[tuple[Kernel, str], list[Measurement]]:
    """Every row of the other campaigns, by group; each must be measured on `gpu_name` and share no row with the
    files being validated (`targets`): a copy or a hard link of a target under another name is the same campaign,
    and fitting on it would hold out the very rows it fitted (compared by rows, not by path)."""
    own = set(target_rows)
    out: dict[tuple[Kernel, str], list[Measurement]] = {}
    for other in paths:
        if any(Path(other).resolve() == Path(t).resolve() for t in targets):
            raise InputError(f"--fit-from {other}: is the file being validated; fit on other campaigns")
        meta, rows = read_measurements(Path(other))
        spec = check_gpu(meta, None, str(other))
        if spec != gpu_name:
            raise InputError(f"--fit-from {other}: measured on {meta.get('device_name', spec)} (spec {spec}), "
                             f"not on {gpu_name}")
        shared = sum(1 for m in rows if m in own)
        if shared:
            raise InputError(f"--fit-from {other}: {shared:,} of its {len(rows):,} rows are rows of "
                             f"{', '.join(map(str, targets))} (a copy or a link of it?); fit on other campaigns")
        for key, members in _groups(rows).items():
            out.setdefault(key, []).extend(members)
    return out


def _validate_group(kernel: Kernel, impl: str, members: list[Measurement], train: list[Measurement],
                    gpu: GpuSpec, source: CeilingSource, with_fit: bool, across: bool
                    ) -> tuple[GroupSummary, list[RowResult]]:
    measured = np.array([m.time_s for m in members])
    datasheet = [predict_measurement(m, gpu, CeilingSource.datasheet) for m in members]
    calibrated = [predict_measurement(m, gpu, source) for m in members]
    fit, predicted, held = None, None, np.zeros(len(members), dtype=bool)
    if with_fit and across:
        held = np.ones(len(members), dtype=bool)
        fit, _ = fit_group(kernel, train, np.ones(len(train), dtype=bool), gpu) if train else (None, None)
        if fit is not None:
            predicted = fit(fit_model_times(fit, members, gpu))
    elif with_fit:
        held = np.arange(len(members)) % 2 == 1
        fit, t_model = fit_group(kernel, members, ~held, gpu)
        predicted = fit(t_model) if fit is not None else None
    model = kernel_model(kernel, impl, gpu) if with_fit and fit is not None else None
    campaign, campaign_errors = None, np.array([])
    if model is not None:
        campaign, campaign_errors = fit, np.abs(predicted[held] / measured[held] - 1)
        fit, predicted = kernel_model_times(model, fit.overhead_s, members, gpu)
    floors_ds = np.array([float(p.t_floor_s) for p in datasheet])
    floors_cal = np.array([float(p.t_floor_s) for p in calibrated])
    flops = np.array([float(p.flops) for p in datasheet])
    nbytes = np.array([float(p.hbm_bytes) for p in datasheet])
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
        fitted_rows=len(train) if across else int(np.sum(~held)),
        model=model.impl if model is not None else "", campaign_fit=campaign,
        campaign_median_error=float(np.median(campaign_errors)) if campaign_errors.size else None,
        campaign_worst_error=float(np.max(campaign_errors)) if campaign_errors.size else None,
    )
    return summary, results


def fitted_models(v: Validation, campaigns: Sequence[str]) -> tuple[FittedModel, ...]:
    """The groups' fits as the GPU YAML's `fitted:` entries (groups without a fit are left out)."""
    out = []
    for g in v.groups:
        fit = g.campaign_fit if g.model else g.fit          # a kernel model's group: the campaigns' own fit
        if fit is None:
            continue
        median, worst = (g.campaign_median_error, g.campaign_worst_error) if g.model else (g.median_error,
                                                                                            g.worst_error)
        out.append(FittedModel(kernel=g.kernel, impl=g.impl, overhead_s=fit.overhead_s,
                               efficiency=fit.efficiency, exp_overlap=fit.exp_overlap,
                               units_per_sm=fit.units_per_sm, unit_overhead_tiles=fit.unit_overhead_tiles,
                               memory_efficiency=fit.memory_efficiency, fp8_overhead_rows=fit.fp8_overhead_rows,
                               rows=g.fitted_rows, held_out_rows=g.held_out_rows,
                               median_error=median, worst_error=worst, campaigns=tuple(campaigns)))
    return tuple(out)


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
    measured_s: Optional[float] = None     # the row's time, and its floor at the GPU's floor roofs (the chart's):
    floor_s: Optional[float] = None        # a row faster than its floor is named on the chart (beats_floor)
    row: str = ""                          # the row itself, as validate describes it

    @property
    def beats_floor(self) -> bool:
        """Faster than its physical floor: a spec or measurement defect to name, never a point among others."""
        return self.measured_s is not None and self.floor_s is not None and self.measured_s < self.floor_s

    def __post_init__(self) -> None:
        for name in ("intensity_flop_per_byte", "achieved_flop_per_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InputError(f"measured point '{self.label}': {name} must be a positive number, got {value!r}")


def measured_points(validation: Validation) -> list[MeasuredPoint]:
    """Every measured row as a point for the roofline chart (rooflab.plot.roofline_chart)."""
    gpu = load_gpu(validation.gpu)
    return [MeasuredPoint(f"{r.kernel} ({r.impl})", r.flops / r.hbm_bytes, r.flops / r.measured_s, r.kernel, r.impl,
                          r.measured_s, _floor_s(r, gpu), r.config)
            for r in validation.rows]


def _floor_s(r: RowResult, gpu: GpuSpec) -> float:
    """A row's floor at the GPU's floor roofs (CeilingSource.floor: the roofline chart's), from its measurement."""
    if r.measurement is None:
        return r.floor_datasheet_s
    return float(predict_measurement(r.measurement, gpu, CeilingSource.floor).t_floor_s)

"""Predictions -> rows: plain scalars, one row per variant, ready to render or dump as JSON.

Each row has at least variant, flops, hbm_bytes, intensity_flop_per_byte, t_compute_s,
t_memory_s, t_floor_s and bound, all per layer in SI units: the row contract of
`rooflab report`'s JSON (report/ builds the Report around them).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .cost.common import Cost, KernelCost
from .floors import Ceilings, Floors, floor, floor_kernel


def _bound(p: Floors) -> str:
    return str(np.asarray(p.bound).reshape(()))


def _scalar(x: Any) -> float:
    arr = np.asarray(x, dtype=np.float64)
    if arr.size != 1:
        raise ValueError("rows are built from scalar workloads; got an array of size %d" % arr.size)
    return float(arr.reshape(()))


@dataclass(frozen=True)
class KernelRow:
    """One launch inside a variant (naive attention's QK^T, softmax and PV)."""

    kernel: str
    pipe: str
    flops: float
    hbm_bytes: float
    intensity_flop_per_byte: float
    t_compute_s: float
    t_memory_s: float
    t_floor_s: float
    bound: str
    t_exp_s: float = 0.0


@dataclass(frozen=True)
class Row:
    """One variant's per-layer figures. Optional fields apply to some variants only."""

    variant: str
    flops: float
    hbm_bytes: float
    intensity_flop_per_byte: float
    t_compute_s: float
    t_memory_s: float
    t_floor_s: float
    bound: str
    ridge_ratio: float
    t_exp_s: float = 0.0
    label: Optional[str] = None
    layer_type: Optional[str] = None          # the model's layer type this row prices (one layer of it)
    num_layers: Optional[int] = None          # layers of that type: the model's total multiplies by it
    intensity_compulsory_flop_per_byte: Optional[float] = None
    s_bytes: Optional[float] = None
    p_bytes: Optional[float] = None
    peak_extra_bytes: Optional[float] = None
    hbm_bytes_tiled: Optional[float] = None
    intensity_tiled_flop_per_byte: Optional[float] = None
    tile: Optional[tuple[int, int]] = None
    rescale_overhead: Optional[float] = None
    kv_bytes: Optional[float] = None
    splits: Optional[int] = None
    parallel_fraction: Optional[float] = None
    t_predicted_s: Optional[float] = None         # a named implementation's modelled time (rooflab/predict.py)
    predicted_impl: Optional[str] = None
    predicted_error_median: Optional[float] = None  # that model's held-out error where it was fitted
    predicted_from: Optional[str] = None          # 'measured on this GPU' / 'transferred from h200-sxm' (rooflab.transfer)
    predicted_note: Optional[str] = None          # the error band and what the prediction assumes, or why there is none
    kernels: tuple[KernelRow, ...] = ()

    #: Fields written to JSON even when empty (null): the prediction, so a reader sees where there is none.
    ALWAYS = ("t_predicted_s", "predicted_impl", "predicted_error_median")

    @property
    def model_t_floor_s(self) -> float:
        """This row's floor for all its layers (t_floor_s x num_layers)."""
        return self.t_floor_s * (self.num_layers or 1)

    def predicted(self, prediction) -> "Row":
        """This row with a PredictedTime (rooflab.predict) filled in; unchanged for None."""
        if prediction is None:
            return self
        return dataclasses.replace(self, t_predicted_s=prediction.t_predicted_s, predicted_impl=prediction.impl,
                                   predicted_error_median=prediction.median_error,
                                   predicted_from=getattr(prediction, "provenance", None),
                                   predicted_note=_prediction_note(prediction))

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if (value is None and f.name not in self.ALWAYS) or (f.name == "kernels" and not value):
                continue
            if f.name == "kernels":
                value = [dataclasses.asdict(k) for k in value]
            elif f.name == "tile":
                value = {"block_q": value[0], "block_kv": value[1]}
            out[f.name] = value
        return out


def _prediction_note(prediction) -> Optional[str]:
    """'error band +-5.2% (held-out ...); assumes ...' of a PredictedTime (rooflab.predict)."""
    band = getattr(prediction, "error_band", None)
    if band is None and not getattr(prediction, "assumes", ""):
        return None
    text = (f"error band +-{band:.1%} ({prediction.band_note})" if band is not None else
            f"no error band: {prediction.band_note}")
    return text + (f"; assumes {prediction.assumes}" if prediction.assumes else "")


def kernel_row(kernel: KernelCost, ceilings: Ceilings) -> KernelRow:
    p = floor_kernel(kernel, ceilings)
    return KernelRow(kernel.name, kernel.pipe.value, _scalar(p.flops), _scalar(p.hbm_bytes),
                     _scalar(p.intensity_flop_per_byte), _scalar(p.t_compute_s), _scalar(p.t_memory_s),
                     _scalar(p.t_floor_s), _bound(p), _scalar(p.t_exp_s))


def make_row(cost: Cost, ceilings: Ceilings, breakdown: bool = False, **extras: Any) -> Row:
    """A row from a scalar cost; `extras` fills the variant-specific optional fields."""
    p: Floors = floor(cost, ceilings)
    kernels = tuple(kernel_row(k, ceilings) for k in cost.kernels) if breakdown else ()
    extras = {k: (_scalar(v) if isinstance(v, (np.ndarray, np.floating)) else v) for k, v in extras.items()}
    return Row(
        variant=cost.variant.value,
        flops=_scalar(p.flops),
        hbm_bytes=_scalar(p.hbm_bytes),
        intensity_flop_per_byte=_scalar(p.intensity_flop_per_byte),
        t_compute_s=_scalar(p.t_compute_s),
        t_memory_s=_scalar(p.t_memory_s),
        t_floor_s=_scalar(p.t_floor_s),
        bound=_bound(p),
        ridge_ratio=_scalar(p.ridge_ratio),
        t_exp_s=_scalar(p.t_exp_s),
        kernels=kernels,
        **extras,
    )

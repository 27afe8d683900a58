"""Predictions -> rows: plain scalars, one row per variant, ready to render or dump as JSON.

A Report is the JSON contract of `rooflab report`: top-level workload fields and
`rows`, each with at least variant, flops, hbm_bytes, intensity_flop_per_byte,
t_compute_s, t_memory_s, t_floor_s and bound, all per layer in SI units.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .cost.common import Cost, KernelCost
from .roofline import Ceilings, Prediction, predict, predict_kernel


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
    label: Optional[str] = None
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
    kernels: tuple[KernelRow, ...] = ()

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None or (f.name == "kernels" and not value):
                continue
            if f.name == "kernels":
                value = [dataclasses.asdict(k) for k in value]
            elif f.name == "tile":
                value = {"block_q": value[0], "block_kv": value[1]}
            out[f.name] = value
        return out


def kernel_row(kernel: KernelCost, ceilings: Ceilings) -> KernelRow:
    p = predict_kernel(kernel, ceilings)
    return KernelRow(kernel.name, kernel.pipe.value, _scalar(p.flops), _scalar(p.hbm_bytes),
                     _scalar(p.intensity_flop_per_byte), _scalar(p.t_compute_s), _scalar(p.t_memory_s),
                     _scalar(p.t_floor_s), "memory" if _scalar(p.t_memory_s) >= _scalar(p.t_compute_s)
                     else "compute")


def make_row(cost: Cost, ceilings: Ceilings, breakdown: bool = False, **extras: Any) -> Row:
    """A row from a scalar cost; `extras` fills the variant-specific optional fields."""
    p: Prediction = predict(cost, ceilings)
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
        bound="memory" if _scalar(p.t_memory_s) >= _scalar(p.t_compute_s) else "compute",
        ridge_ratio=_scalar(p.ridge_ratio),
        kernels=kernels,
        **extras,
    )


@dataclass(frozen=True)
class Report:
    """Everything `rooflab report` prints: the workload, the ceilings and one row per variant."""

    model: str
    gpu: str
    phase: str
    seq_len: Optional[int]
    batch: int
    dtype: str
    causal: bool
    num_layers: int
    ceilings: str
    ridge_flop_per_byte: float
    bandwidth_bytes_per_s: float
    matmul_flop_per_s: float
    rows: tuple[Row, ...]
    model_display_name: str = ""
    gpu_display_name: str = ""
    context_lens: Optional[tuple[int, ...]] = None
    kv_dtype: Optional[str] = None
    page_size: Optional[int] = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    facts: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("rows", "notes", "facts") and getattr(self, f.name) is not None}
        if self.context_lens is not None:
            out["context_lens"] = list(self.context_lens)
        out["facts"] = dict(self.facts)
        out["notes"] = list(self.notes)
        out["rows"] = [r.to_dict() for r in self.rows]
        return out

    def to_frame(self, breakdown: bool = False):
        """The rows as a pandas DataFrame indexed by variant label; `breakdown` gives one row per launch.

        Columns are the Row (or KernelRow) fields that some row fills, in SI units, per layer.
        """
        import pandas as pd  # pandas is slow to import and only notebooks need it

        if breakdown:
            records = [dict(variant=r.label or r.variant, **dataclasses.asdict(k)) for r in self.rows for k in r.kernels]
            return pd.DataFrame(records).set_index(["variant", "kernel"])
        records = []
        for r in self.rows:
            record = r.to_dict()
            record.pop("kernels", None)
            if "tile" in record:
                record["tile"] = "{block_q}x{block_kv}".format(**record["tile"])
            record["variant"] = r.label or r.variant
            records.append(record)
        return pd.DataFrame(records).drop(columns="label", errors="ignore").set_index("variant")

"""The GEMM family's fitted time model: rooflab.predict's t = c0 + max(F / pi, Q / beta) / eta against the
calibrated ceilings (cost/gemm.py prices F and Q), fitted on the rows the distributed bench's gemm section
measures (rooflab.measure.distributed.gemm), with held-out errors on alternate rows."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..cost.gemm import gemm
from ..predict import model_time
from ..floors import Ceilings
from ..specs import FittedModel, GpuSpec
from ..units import DType
from ..vocab import CeilingSource, Kernel
from .fitting import fit_overhead_efficiency
from .records import Measurement

#: The implementation the gemm section measures (torch's cuBLAS).
IMPL = "torch_cublas"


def model_times(rows: Sequence[Measurement], gpu: GpuSpec) -> np.ndarray:
    """t_model of each GEMM row (rooflab.predict.model_time of cost/gemm.py's cost) against the calibrated ceilings."""
    source = CeilingSource.calibrated if gpu.measured is not None else CeilingSource.datasheet
    return np.array([float(model_time(gemm(m.m, m.n, m.k, DType(m.dtype)), Ceilings.of(gpu, DType(m.dtype), source)))
                     for m in rows])


def fit_gemm(rows: Sequence[Measurement], gpu: GpuSpec, campaign: str = "") -> Optional[FittedModel]:
    """The family's FittedModel (c0 + t_model / eta, fitted on every row) with the held-out errors of the fit on
    alternate rows (sweep order: alternate m within each shape); None with fewer than 4 rows."""
    rows = [m for m in rows if m.kernel is Kernel.gemm]
    if len(rows) < 4:
        return None
    t = model_times(rows, gpu)
    y = np.array([m.time_s for m in rows])
    held = np.arange(len(rows)) % 2 == 1
    half = fit_overhead_efficiency(t[~held], y[~held])
    errors = np.abs(half(t[held]) / y[held] - 1)
    full = fit_overhead_efficiency(t, y)
    return FittedModel(kernel=Kernel.gemm, impl=rows[0].impl, overhead_s=full.overhead_s, efficiency=full.efficiency,
                       rows=len(rows), held_out_rows=int(held.sum()), median_error=float(np.median(errors)),
                       worst_error=float(errors.max()), campaigns=(campaign,) if campaign else ())


__all__ = ["IMPL", "fit_gemm", "model_times"]

"""MoE expert GEMMs as grouped GEMMs: the fitted time model of one launch over a GPU's experts (issue 29).

    t = c0 + max(F / pi, Q / (r beta)) / eta

F = 2 P n k (P the token-expert pairs the GPU's experts receive), Q = G_touched n k b_w + (P k + P n) b (every
touched expert's weight read once; cost/gemm.py's gemm with groups = the experts touched), pi and beta the
calibrated roofs of the arithmetic (the measured bf16 or fp8 GEMM rate, the measured copy bandwidth): rooflab.predict's
model_time with a memory ratio. Three fitted constants, each physical: c0 the launch's fixed time, eta the share of
the tensor roof the grouped kernel reaches when compute-bound, eta_mem = r eta the share of the copy bandwidth its
weight reads reach when memory-bound (a few tokens an expert). They are stored as a FittedModel (kernel gemm, the
grouped kernel's impl; memory_efficiency = eta_mem) in the GPU YAML's fitted list, beside the dense cuBLAS fit.

Fitted on benchmarks/moe_gemm.py's rows (measurements/moe/h200-moe-gemm.csv: torch._grouped_mm in bf16,
torch._scaled_grouped_mm in fp8 e4m3 with rowwise scales; Mixtral-8x7B TP 1 / TP 2 and DeepSeek-V3 EP 8 shards,
T = 1 .. 8192 balanced), one fit an implementation; held-out errors on alternate rows (every other T of each shape).
The memory ratio r is chosen on a grid (the fit with the least squared relative error), c0 and eta by
fit_overhead_efficiency at each r. These are torch's grouped kernels (CUTLASS on sm90), not vLLM's fused_moe
Triton kernel: the engines' own expert kernels are priced as this measured stand-in.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..cost.gemm import GemmCost, gemm
from ..errors import InputError
from ..predict import model_time
from ..floors import Ceilings
from ..specs import FittedModel, GpuSpec
from ..transfer import GROUPED_GEMM_IMPL
from ..units import DType
from ..vocab import CeilingSource, Kernel
from .fitting import fit_overhead_efficiency

#: The grouped-GEMM implementation measured for each arithmetic (benchmarks/moe_gemm.py's impl grouped_mm).
GROUPED_IMPL = GROUPED_GEMM_IMPL
#: Where the fit's rows live (the repository's measurements/ folder).
CAMPAIGN = "moe/h200-moe-gemm.csv"
#: The memory ratios r = eta_mem / eta tried (0.25 .. 4, log-spaced).
MEMORY_RATIOS = np.geomspace(0.25, 4.0, 97)


def read_moe_csv(path: Path) -> tuple[dict[str, str], list[dict]]:
    """The '# key: value' metadata and the rows of a benchmarks/moe_gemm.py CSV (numbers as int / float)."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise InputError(f"MoE GEMM measurements {path}: {exc.strerror or exc}") from None
    meta = dict(line[2:].split(": ", 1) for line in lines if line.startswith("# ") and ": " in line)
    rows = []
    for raw in csv.DictReader(line for line in lines if not line.startswith("#")):
        row = dict(raw)
        for key in ("tokens", "pairs", "experts_local", "experts_touched", "max_pairs_per_expert", "n", "k"):
            row[key] = int(row[key])
        row["seconds"] = float(row["seconds"])
        rows.append(row)
    return meta, rows


def grouped_cost(pairs: int, n: int, k: int, dtype: DType, touched: float, name: str = "experts",
                 weight_bits: Optional[float] = None) -> GemmCost:
    """The grouped GEMM of `pairs` rows over `touched` experts' [n, k] weights (cost/gemm.py, groups = touched)."""
    return gemm(pairs, n, k, dtype, name, weight_bits, touched)


def model_times(rows: Sequence[dict], gpu: GpuSpec, memory_ratio: float = 1.0) -> np.ndarray:
    """max(F / pi, Q / (r beta)) of each grouped row against the GPU's calibrated roofs of its dtype."""
    source = CeilingSource.calibrated if gpu.measured is not None else CeilingSource.datasheet
    out = []
    for r in rows:
        dtype = DType(r["dtype"])
        cost = grouped_cost(r["pairs"], r["n"], r["k"], dtype, r["experts_touched"], r["gemm"])
        out.append(float(model_time(cost, Ceilings.of(gpu, dtype, source), memory_ratio=memory_ratio)))
    return np.array(out)


def _best_fit(rows: Sequence[dict], y: np.ndarray, gpu: GpuSpec):
    """(fit, r) with the least squared relative error over MEMORY_RATIOS."""
    best = None
    for ratio in MEMORY_RATIOS:
        t = model_times(rows, gpu, float(ratio))
        fit = fit_overhead_efficiency(t, y)
        if fit.efficiency * ratio > 1.0:                          # eta_mem above the measured copy bandwidth
            continue
        err = float(np.sum((fit(t) / y - 1) ** 2))
        if best is None or err < best[0]:
            best = (err, fit, float(ratio))
    return best[1], best[2]


def fit_grouped(rows: Sequence[dict], gpu: GpuSpec, dtype: DType, campaign: str = CAMPAIGN) -> Optional[FittedModel]:
    """The grouped GEMM's FittedModel for `dtype`'s implementation (c0, eta, eta_mem fitted on every row of it),
    with the held-out errors of the fit on alternate rows (every other T of each shape); None with under 4 rows."""
    dtype = DType.of(dtype)
    rows = [r for r in rows if r["impl"] == "grouped_mm" and r["dtype"] == dtype.value]
    if len(rows) < 4 or dtype not in GROUPED_IMPL:
        return None
    y = np.array([r["seconds"] for r in rows])
    held = np.array([i % 2 == 1 for i in range(len(rows))])       # rows come T-ascending within each shape
    sub = [r for r, h in zip(rows, held) if not h]
    half, ratio = _best_fit(sub, y[~held], gpu)
    out = [r for r, h in zip(rows, held) if h]
    errors = np.abs(half(model_times(out, gpu, ratio)) / y[held] - 1)
    full, ratio = _best_fit(rows, y, gpu)
    return FittedModel(kernel=Kernel.gemm, impl=GROUPED_IMPL[dtype], overhead_s=full.overhead_s,
                       efficiency=full.efficiency, memory_efficiency=full.efficiency * ratio,
                       rows=len(rows), held_out_rows=int(held.sum()), median_error=float(np.median(errors)),
                       worst_error=float(errors.max()), campaigns=(campaign,))


def fit_moe_campaign(path: Path, gpu: GpuSpec) -> tuple[FittedModel, ...]:
    """Every grouped implementation's fit from one benchmarks/moe_gemm.py CSV."""
    _, rows = read_moe_csv(path)
    fits = (fit_grouped(rows, gpu, dtype) for dtype in GROUPED_IMPL)
    return tuple(f for f in fits if f is not None)


def predicted_s(row: dict, fitted: FittedModel, gpu: GpuSpec) -> float:
    """A fit's time for one measured row: c0 + model_time(r = eta_mem / eta) / eta."""
    t = model_times([row], gpu, fitted.memory_ratio)[0]
    return fitted.overhead_s + t / fitted.efficiency


__all__ = ["CAMPAIGN", "GROUPED_IMPL", "fit_grouped", "fit_moe_campaign", "grouped_cost", "model_times",
           "predicted_s", "read_moe_csv"]

"""MoE expert GEMMs as grouped GEMMs: the fitted time model of one launch over a GPU's experts (issue 29).

    t = c0 + max(F / pi, Q / (r beta)) / eta

F = 2 P n k (P the token-expert pairs the GPU's experts receive), Q = G_touched n k b_w + (P k + P n) b (every
touched expert's weight read once; cost/gemm.py's gemm with groups = the experts touched), pi and beta the
calibrated roofs of the arithmetic (the measured bf16 or fp8 GEMM rate, the measured copy bandwidth): rooflab.predict's
model_time with a memory ratio. Three fitted constants, each physical: c0 the launch's fixed time, eta the share of
the tensor roof the grouped kernel reaches when compute-bound, eta_mem = r eta the share of the copy bandwidth its
weight reads reach when memory-bound (a few tokens an expert). They are stored as a FittedModel (kernel gemm, the
grouped kernel's impl; memory_efficiency = eta_mem) in the GPU YAML's fitted list, beside the dense cuBLAS fit.

The Triton fused_moe kernel over block-fp8 experts, as vLLM 0.7.x and SGLang 0.4.x ran DeepSeek (fit_fused, on our own
kernel of that algorithm at their shipped H200 config: measurements/moe/h200-fused-moe-block-fp8.csv), has another
form, t = c0 + Q / (eta_mem beta) + tiles tau (rooflab.predict.fused_moe_time; tiles its live programs,
cost/fused_moe.py), stored the same way: a FittedModel of impl triton_fused_moe with tile_s = tau and max_tokens its
measured range (efficiency 1.0, unused: the form has no compute term; errors leave-one-out over every row). A
program's fixed cost (prologue, scales, the [BLOCK_M, BLOCK_N] bf16 store) is why the down GEMM
(K 256, 56 programs an expert) runs at ~2.5 TB/s where the gate/up GEMM (K 7168, 4 programs an expert) runs at ~3.7.

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

from ..cost.fused_moe import fused_tiles
from ..cost.gemm import GemmCost, gemm
from ..errors import InputError
from ..predict import FUSED_MOE_IMPL, fused_moe_time, model_time, own_roofs
from ..floors import Ceilings
from ..specs import FittedModel, GpuSpec
from ..transfer import GROUPED_GEMM_IMPL
from ..units import DType
from ..vocab import Kernel
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
    out = []
    for r in rows:
        dtype = DType(r["dtype"])
        cost = grouped_cost(r["pairs"], r["n"], r["k"], dtype, r["experts_touched"], r["gemm"])
        out.append(float(model_time(cost, _roofs(gpu, dtype), memory_ratio=memory_ratio)))
    return np.array(out)


def best_fit(rows: Sequence[dict], y: np.ndarray, gpu: GpuSpec):
    """(fit, r) with the least squared relative error over MEMORY_RATIOS (rows in this module's columns; a dense
    GEMM is one group: rooflab.fit.gemm_fit.fit_dense_fp8)."""
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
    half, ratio = best_fit(sub, y[~held], gpu)
    out = [r for r, h in zip(rows, held) if h]
    errors = np.abs(half(model_times(out, gpu, ratio)) / y[held] - 1)
    full, ratio = best_fit(rows, y, gpu)
    return FittedModel(kernel=Kernel.gemm, impl=GROUPED_IMPL[dtype], overhead_s=full.overhead_s,
                       efficiency=full.efficiency, memory_efficiency=full.efficiency * ratio,
                       rows=len(rows), held_out_rows=int(held.sum()), median_error=float(np.median(errors)),
                       worst_error=float(errors.max()), campaigns=(campaign,))


def fit_moe_campaign(path: Path, gpu: GpuSpec) -> tuple[FittedModel, ...]:
    """Every fit one CSV in benchmarks/moe_gemm.py's columns holds: each grouped implementation's (fit_grouped), and
    the fused MoE fit where it has triton_fused_moe rows (fit_fused: benchmarks/h200_early2025_decode_kernels.py's
    campaign, FUSED_CAMPAIGN), as the GPU YAML's fitted list stores them (rooflab.fit.fitting_io.fitted_yaml)."""
    _, rows = read_moe_csv(path)
    fits = [fit_grouped(rows, gpu, dtype) for dtype in GROUPED_IMPL]
    if any(r["impl"] == FUSED_MOE_IMPL for r in rows):
        fits.append(fit_fused(rows, gpu))
    return tuple(f for f in fits if f is not None)


def predicted_s(row: dict, fitted: FittedModel, gpu: GpuSpec) -> float:
    """A fit's time for one measured row: c0 + model_time(r = eta_mem / eta) / eta."""
    t = model_times([row], gpu, fitted.memory_ratio)[0]
    return fitted.overhead_s + t / fitted.efficiency


#: The fused block-fp8 kernel's campaign (benchmarks/h200_early2025_decode_kernels.py: our own Triton kernel of
#: the engines' fused_moe algorithm at their shipped H200 config), fitted on hardware/h200-sxm.yaml's GPU.
FUSED_CAMPAIGN = "moe/h200-fused-moe-block-fp8.csv"


def _roofs(gpu: GpuSpec, dtype: DType) -> Ceilings:
    """The roofs a row is fitted against: the ones the step prices the fit against (rooflab.predict.own_roofs: the
    calibrated ceilings, the fp8 matrix rate as measured; the datasheet's without a calibration)."""
    return own_roofs(gpu, dtype)[0]


def _fused_cost(row: dict) -> GemmCost:
    """A fused row's grouped GEMM in fp8 (cost/gemm.py: the touched experts' weights once, activations in and out)."""
    return grouped_cost(row["pairs"], row["n"], row["k"], DType.fp8_e4m3, row["experts_touched"], row["gemm"])


def _fused_terms(rows: Sequence[dict], beta: float) -> np.ndarray:
    """[1, Q / beta, tiles] of each fused row: the columns whose coefficients are c0, 1 / eta_mem and tau."""
    return np.array([[1.0, float(_fused_cost(r).hbm_bytes) / beta,
                      fused_tiles(r["tokens"], r["pairs"], r["experts_touched"], r["n"])] for r in rows])


def _relative_lstsq(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Coefficients minimising sum ((x c) / y - 1)^2."""
    return np.linalg.lstsq(x / y[:, None], np.ones_like(y), rcond=None)[0]


#: A fused MoE fit's `efficiency`: unused (its form, fused_moe_time, has no compute term), stored as 1.0 so that no
#: reader takes it for a measured compute share.
FUSED_UNUSED_EFFICIENCY = 1.0


def _fused_model(coef: np.ndarray, rows: Sequence[dict], campaign: str, **errors) -> FittedModel:
    """The FittedModel of coefficients [c0, 1 / eta_mem, tau] (FittedModel's fused MoE form); a constant out of its
    physical range (c0 or tau negative, eta_mem not positive) is an InputError. `efficiency` is stored as 1.0: the
    form has no compute term, so no compute share was measured, and fused_moe_time never reads it."""
    c0, inv_eta_mem, tau = (float(c) for c in coef)
    if c0 < 0 or tau < 0 or inv_eta_mem <= 0:
        raise InputError(f"fused MoE campaign {campaign}: unphysical fit c0 {c0:.3g} s, 1 / memory efficiency "
                         f"{inv_eta_mem:.3g}, tau {tau:.3g} s")
    return FittedModel(kernel=Kernel.gemm, impl=FUSED_MOE_IMPL, overhead_s=c0, efficiency=FUSED_UNUSED_EFFICIENCY,
                       memory_efficiency=1 / inv_eta_mem, tile_s=tau, max_tokens=max(int(r["tokens"]) for r in rows),
                       rows=len(rows), campaigns=(campaign,), **errors)


def fit_fused(rows: Sequence[dict], gpu: GpuSpec, campaign: str = FUSED_CAMPAIGN) -> FittedModel:
    """The fused MoE fit of `gpu` (t = c0 + Q / (eta_mem beta) + tiles tau: rooflab.predict.fused_moe_time, beta the
    calibrated copy bandwidth): c0, eta_mem and tau by relative least squares on every triton_fused_moe row;
    max_tokens the largest step measured. Its errors are leave-one-out: every row predicted by the fit on all the
    others (held_out_rows = rows), the median and the worst over every row the form claims to cover (1 ..
    max_tokens, every shipped tile class; an alternate-rows split kept the 16-token gate/up row, the one BLOCK_K 64
    / BLOCK_N 256 tile, always in the fitted half, and reported a worst error that row's 35% miss was not in).
    Under 6 rows, or a constant out of its physical range, is an InputError."""
    rows = sorted((r for r in rows if r["impl"] == FUSED_MOE_IMPL), key=lambda r: (r["gemm"], r["tokens"]))
    if len(rows) < 6:
        raise InputError(f"fused MoE campaign {campaign}: {len(rows)} {FUSED_MOE_IMPL} rows, at least 6 needed")
    roofs = _roofs(gpu, DType.fp8_e4m3)
    x, y = _fused_terms(rows, roofs.bandwidth_bytes_per_s), np.array([r["seconds"] for r in rows])
    errors = []
    for i, row in enumerate(rows):
        others = np.arange(len(rows)) != i
        fit = _fused_model(_relative_lstsq(x[others], y[others]), [r for j, r in enumerate(rows) if j != i], campaign)
        t = fused_moe_time(fit, roofs, row["tokens"], row["pairs"], row["experts_touched"], row["n"],
                           float(_fused_cost(row).hbm_bytes))
        errors.append(abs(t / y[i] - 1))
    return _fused_model(_relative_lstsq(x, y), rows, campaign, held_out_rows=len(rows),
                        median_error=float(np.median(errors)), worst_error=float(max(errors)))


__all__ = ["CAMPAIGN", "FUSED_CAMPAIGN", "FUSED_UNUSED_EFFICIENCY", "GROUPED_IMPL", "fit_fused", "fit_grouped",
           "fit_moe_campaign", "grouped_cost", "model_times", "predicted_s", "read_moe_csv"]

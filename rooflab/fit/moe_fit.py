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
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..cost.fused_moe import fused_tiles
from ..cost.gemm import GemmCost, gemm
from ..errors import InputError
from ..load import data_dir
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


#: The fused block-fp8 kernel's campaign (benchmarks/h200_early2025_decode_kernels.py: our own Triton kernel of
#: the engines' fused_moe algorithm at their shipped H200 config) and the rooflab GPU it was measured on.
FUSED_CAMPAIGN, FUSED_GPU = "moe/h200-fused-moe-block-fp8.csv", "h200-sxm"


@dataclass(frozen=True)
class FusedMoeFit:
    """The Triton fused_moe kernel over block-fp8 experts at the engines' shipped config, fitted on our own
    kernel's measured launches (rooflab.fit.moe_fit.fit_fused):

        t = c0 + Q / B + tiles x tau

    Q the grouped GEMM's bytes (the touched experts' fp8 weights once, the pairs' activations in and out:
    cost/gemm.py), tiles its live programs (cost/fused_moe.py), c0 the launch's fixed time in a CUDA graph, B the
    bandwidth its weight stream reaches, tau each program's fixed cost over the whole chip (prologue, scales, the
    [BLOCK_M, BLOCK_N] bf16 store): why the down GEMM (K 256, two K steps a program, n / BLOCK_N = 56 programs an
    expert) runs at ~2.5 TB/s where the gate/up GEMM (K 7168, 4 programs an expert) runs at ~3.7. Memory-bound
    rows only (up to 512 tokens, 4096 pairs): it says nothing of the compute-bound kernel."""

    overhead_s: float                  # c0
    bytes_per_s: float                 # B
    tile_s: float                      # tau
    rows: int
    held_out_rows: int
    median_error: float                # |fit on the other rows / measured - 1| over the held-out rows
    worst_error: float
    campaign: str
    gpu: str
    max_tokens: int                    # the largest step measured (tokens): the fit's range

    def time_s(self, tokens: float, pairs: float, touched: float, n: int, hbm_bytes: float) -> float:
        """One launch's time: c0 + Q / B + tiles tau."""
        return self.overhead_s + hbm_bytes / self.bytes_per_s + fused_tiles(tokens, pairs, touched, n) * self.tile_s


def _fused_terms(rows: Sequence[dict]) -> np.ndarray:
    """[1, Q, tiles] of each fused row (Q of cost/gemm.py's grouped GEMM in fp8)."""
    out = []
    for r in rows:
        cost = grouped_cost(r["pairs"], r["n"], r["k"], DType.fp8_e4m3, r["experts_touched"], r["gemm"])
        out.append([1.0, float(cost.hbm_bytes), fused_tiles(r["tokens"], r["pairs"], r["experts_touched"], r["n"])])
    return np.array(out)


def _relative_lstsq(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Coefficients minimising sum ((x c) / y - 1)^2."""
    return np.linalg.lstsq(x / y[:, None], np.ones_like(y), rcond=None)[0]


def fit_fused(rows: Sequence[dict], campaign: str = FUSED_CAMPAIGN, gpu: str = FUSED_GPU) -> FusedMoeFit:
    """c0, B and tau by relative least squares on every row; held-out errors of the fit on alternate token
    counts (each GEMM's rows, tokens ascending) against the others. A constant out of its physical range
    (c0 or tau negative, B not positive) is an InputError."""
    rows = sorted((r for r in rows if r["impl"] == "triton_fused_moe"), key=lambda r: (r["gemm"], r["tokens"]))
    if len(rows) < 6:
        raise InputError(f"fused MoE campaign {campaign}: {len(rows)} triton_fused_moe rows, at least 6 needed")
    x, y = _fused_terms(rows), np.array([r["seconds"] for r in rows])
    held = np.array([i % 2 == 1 for i in range(len(rows))])
    half = _relative_lstsq(x[~held], y[~held])
    errors = np.abs(x[held] @ half / y[held] - 1)
    c0, inv_b, tau = _relative_lstsq(x, y)
    if c0 < 0 or tau < 0 or inv_b <= 0:
        raise InputError(f"fused MoE campaign {campaign}: unphysical fit c0 {c0:.3g} s, 1/B {inv_b:.3g} s/B, "
                         f"tau {tau:.3g} s")
    return FusedMoeFit(float(c0), float(1 / inv_b), float(tau), len(rows), int(held.sum()),
                       float(np.median(errors)), float(errors.max()), campaign, gpu,
                       max(int(r["tokens"]) for r in rows))


@functools.lru_cache(maxsize=None)
def fused_moe_fit(gpu_name: str) -> Optional[FusedMoeFit]:
    """The bundled fused-kernel fit for the GPU it was measured on (FUSED_GPU), else None (no transfer: the kernel
    is Triton's code for one architecture, measured on one GPU)."""
    if gpu_name != FUSED_GPU:
        return None
    _, rows = read_moe_csv(data_dir("measurements") / FUSED_CAMPAIGN)
    return fit_fused(rows)


__all__ = ["CAMPAIGN", "FUSED_CAMPAIGN", "FUSED_GPU", "FusedMoeFit", "GROUPED_IMPL", "fit_fused", "fit_grouped",
           "fit_moe_campaign", "fused_moe_fit", "grouped_cost", "model_times", "predicted_s", "read_moe_csv"]

"""The GEMM family's fitted time models against the calibrated ceilings (cost/gemm.py prices F and Q), with
held-out errors on alternate rows:

    torch_cublas     t = c0 + max(F / pi, Q / beta) / eta: torch.mm in bf16 / fp16, fitted on the rows the
                     distributed bench's gemm section measures (rooflab.measure.distributed.gemm)
    torch_scaled_mm  t = c0 + max(F / pi, Q / (r beta)) / eta (rooflab.fit.moe_fit's two-share form, one group):
                     torch._scaled_mm in fp8 e4m3 with per-tensor scales (cuBLASLt), fitted on
                     benchmarks/dense_fp8_gemm.py's scaled_mm rows (measurements/gemm/h200-dense-fp8-gemm.csv). pi is
                     the measured fp8 GEMM rate; eta_mem = r eta the share of the copy bandwidth its weight reads
                     reach. On the H200 an fp8 GEMM streams its weights slower than a bf16 one of the same shape
                     (m = 1: 1.8-4.0 TB/s against 2.3-4.3), so the bf16 fit does not price fp8.
    torch_scaled_mm_block  the same form on torch._scaled_mm with blockwise scales (1 x 128 activation, 128 x 128
                     weight; cuBLASLt), fitted on benchmarks/dense_fp8_block_gemm.py's scaled_mm_block rows
                     (measurements/gemm/h200-dense-fp8-block-gemm.csv): a block-fp8 checkpoint's GEMMs. Rows whose
                     weight scales ran in the 'plain' layout (k / 128 not a multiple of 4: DeepSeek-V3's TP 8 down
                     and shared-expert down, Llama-2-7B's down) are left out: torch accepted that layout and cuBLASLt computed wrong
                     results with it (rel_error 0.4-0.7 against 1.7e-3 elsewhere), so their times are of no GEMM.
    deepgemm         the same form on DeepGEMM's fp8_gemm_nt (sgl-deep-gemm 0.1.0) called as SGLang 0.5.12 calls it
                     on compute capability 9.0 (float32 1 x 128 activation and 128 x 128 weight scales), fitted on
                     benchmarks/deepgemm_block_gemm.py's rows (measurements/gemm/h200-deepgemm-block-gemm.csv): SGLang
                     0.5.x's dense block-fp8 GEMMs (rooflab.step.dense_block_fp8).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..cost.gemm import gemm
from ..predict import model_time
from ..floors import Ceilings
from ..specs import FittedModel, GpuSpec
from ..transfer import DENSE_FP8_BLOCK_GEMM_IMPL, DENSE_FP8_DEEPGEMM_IMPL, DENSE_FP8_GEMM_IMPL, DENSE_GEMM_IMPL
from ..units import DType
from ..vocab import CeilingSource, Kernel
from .fitting import fit_overhead_efficiency
from .moe_fit import best_fit, model_times as grouped_model_times
from .records import Measurement

#: The implementation the gemm section measures (torch's cuBLAS).
IMPL = DENSE_GEMM_IMPL
#: The dense fp8 GEMM's implementation: torch._scaled_mm, per-tensor scales (benchmarks/dense_fp8_gemm.py's
#: scaled_mm rows).
FP8_IMPL = DENSE_FP8_GEMM_IMPL
#: Where the dense fp8 fit's rows live (the repository's measurements/ folder).
FP8_CAMPAIGN = "gemm/h200-dense-fp8-gemm.csv"
#: The block-fp8 GEMM's implementation and campaign (benchmarks/dense_fp8_block_gemm.py's scaled_mm_block rows).
BLOCK_IMPL = DENSE_FP8_BLOCK_GEMM_IMPL
BLOCK_CAMPAIGN = "gemm/h200-dense-fp8-block-gemm.csv"
#: DeepGEMM's block-fp8 GEMM: implementation and campaign (benchmarks/deepgemm_block_gemm.py's deepgemm rows).
DEEPGEMM_IMPL = DENSE_FP8_DEEPGEMM_IMPL
DEEPGEMM_CAMPAIGN = "gemm/h200-deepgemm-block-gemm.csv"
#: A block row's note when its weight scales ran in the layout cuBLASLt computed wrong results with (left out).
WRONG_LAYOUT = "scale_b layout plain"


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


def fit_dense_fp8(rows: Sequence[dict], gpu: GpuSpec, campaign: str = FP8_CAMPAIGN, measured: str = "scaled_mm",
                  impl: str = FP8_IMPL) -> Optional[FittedModel]:
    """The dense fp8 GEMM's FittedModel `impl` (c0, eta, eta_mem fitted on every `measured` row of a
    benchmarks/dense_fp8_gemm.py-style CSV, read by rooflab.fit.moe_fit.read_moe_csv), with the held-out errors of
    the fit on alternate rows (every other m of each shape); None with under 4 rows."""
    rows = [r for r in rows if r["impl"] == measured and r["dtype"] == DType.fp8_e4m3.value]
    if len(rows) < 4:
        return None
    y = np.array([r["seconds"] for r in rows])
    held = np.array([i % 2 == 1 for i in range(len(rows))])       # rows come m-ascending within each shape
    half, ratio = best_fit([r for r, h in zip(rows, held) if not h], y[~held], gpu)
    out = [r for r, h in zip(rows, held) if h]
    errors = np.abs(half(grouped_model_times(out, gpu, ratio)) / y[held] - 1)
    full, ratio = best_fit(rows, y, gpu)
    return FittedModel(kernel=Kernel.gemm, impl=impl, overhead_s=full.overhead_s, efficiency=full.efficiency,
                       memory_efficiency=full.efficiency * ratio, rows=len(rows), held_out_rows=int(held.sum()),
                       median_error=float(np.median(errors)), worst_error=float(errors.max()), campaigns=(campaign,))


def fit_dense_fp8_block(rows: Sequence[dict], gpu: GpuSpec, campaign: str = BLOCK_CAMPAIGN
                        ) -> Optional[FittedModel]:
    """The block-fp8 GEMM's FittedModel (torch_scaled_mm_block): fit_dense_fp8 on benchmarks/dense_fp8_block_gemm.py's
    scaled_mm_block rows, less those run in the weight-scale layout cuBLASLt computed wrong results with."""
    rows = [r for r in rows if WRONG_LAYOUT not in r.get("note", "")]
    return fit_dense_fp8(rows, gpu, campaign, measured="scaled_mm_block", impl=BLOCK_IMPL)


def fit_dense_fp8_deepgemm(rows: Sequence[dict], gpu: GpuSpec, campaign: str = DEEPGEMM_CAMPAIGN
                           ) -> Optional[FittedModel]:
    """DeepGEMM's block-fp8 GEMM FittedModel (deepgemm): fit_dense_fp8 on benchmarks/deepgemm_block_gemm.py's
    deepgemm rows."""
    return fit_dense_fp8(rows, gpu, campaign, measured=DEEPGEMM_IMPL, impl=DEEPGEMM_IMPL)


__all__ = ["BLOCK_CAMPAIGN", "BLOCK_IMPL", "DEEPGEMM_CAMPAIGN", "DEEPGEMM_IMPL", "FP8_CAMPAIGN", "FP8_IMPL", "IMPL",
           "fit_dense_fp8", "fit_dense_fp8_block", "fit_dense_fp8_deepgemm", "fit_gemm", "model_times"]

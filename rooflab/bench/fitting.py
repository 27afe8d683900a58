"""Fitting a kernel implementation's time model to measurements (the model: rooflab/predict.py).

    t_predicted = c0 + t_model(units_per_sm, exp_overlap, unit_overhead_tiles) / eta

(MLA decode also: its own memory efficiency, MLA_MEMORY_RATIO_GRID, and an fp8 latent's rows, MLA_FP8_ROWS_GRID).

For each (kernel, implementation) the parallelism model's units per SM (kernels whose launches it
limits; the paged decode kernel's variants take the GPU's decode value instead), the exp overlap (kernels
whose exps compete with their matrix work) and the tile term (windowed flash: TILE_KERNELS) are chosen from
grids; for each choice, c0 >= 0 and eta > 0 come from least squares on the relative error
(fit_overhead_efficiency); the choice with the smallest loss on the fitted rows wins. Which rows are
fitted and which held out is the caller's choice (validate.py: alternate rows of one campaign, or
every row of other campaigns).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..predict import model_time
from ..roofline import Ceilings
from ..specs import GpuSpec
from ..units import DType
from ..vocab import CeilingSource, Kernel
from .costs import measurement_cost
from .records import Measurement

#: units_per_sm values tried for the parallelism model of flash and decode kernels.
UNITS_PER_SM_GRID = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
#: exp_overlap values tried where exps compete with matrix work (0: hidden; 1: serial).
EXP_OVERLAP_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Kernels whose launches the parallelism model limits.
PARALLEL_KERNELS = (Kernel.flash, Kernel.flash_window, Kernel.paged, Kernel.split_kv, Kernel.paged_window,
                    Kernel.paged_multi, Kernel.mla_decode)
#: Variants of the paged decode kernel (windows and sinks; several query tokens): the same launch (a block a
#: sequence x KV head x split) and the same registers as paged decode, so their units per SM is the GPU's decode
#: value (`GpuSpec.units_per_sm`, fitted on the paged and split-KV campaigns), not one refitted on their own
#: dozen rows, where the grid's choice is noise (on the H200's 6 fitted windowed rows it picked 0.5, and the
#: held-out batch of 16 sequences came out 34% fast).
DECODE_VARIANTS = (Kernel.paged_window, Kernel.paged_multi)
#: Flash kernels whose query tiles visit few key tiles (a window or chunk): their model prices whole tiles and a
#: fixed cost a query tile (FlashCost.tile_work) where that fits better than the visible pairs alone, the count of
#: key tiles that cost is worth chosen from UNIT_OVERHEAD_GRID. On the H200's windowed rows (W 1024 runs 20% slower per visible pair than W 4096) this
#: took the held-out error from 6.3% / 11.2% to the figures RESULTS.md 8c gives. Full flash keeps its model
#: (many key tiles a query tile: the efficiency absorbs these few per cent).
#: Session 7 added full flash (short causal prefills in batches: the diagonal's whole tiles are a large share of a
#: short sequence's work, and the gap campaign's causal T 256-1024 rows ran 20-50% slower than the visible pairs
#: priced) and MLA decode, whose units compute whole 16-, 32- or 64-row tiles plus a fixed cost a cached token
#: (MlaDecodeCost.tile_work: the mma.sync kernel's time per token and wave is 38 / 54 / 80 ns for 16 / 32 / 64 rows
#: with a bf16 latent, measurements/h200-mla-sweep.csv, not proportional to its rows).
TILE_KERNELS = (Kernel.flash_window, Kernel.flash, Kernel.mla_decode)
#: Key tiles' worth of fixed cost a query tile, tried for TILE_KERNELS (None: no tile term, visible pairs only).
UNIT_OVERHEAD_GRID = (None, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)
#: For MLA decode the tile term counts rows: a unit's fixed cost a cached token in rows' worth of its work.
MLA_ROW_OVERHEAD_GRID = (None, 0.0, 8.0, 12.0, 16.0, 20.0, 24.0, 32.0, 48.0)
#: MLA decode's own memory efficiency, as the ratio eta_mem / eta tried (None: one efficiency for memory and compute;
#: a candidate whose eta_mem = eta x ratio passes 1, faster than the calibrated copy, is refused). The mma.sync kernel
#: streams the latent near the copy bandwidth at 16 rows a unit (38 ns a token and wave against 35 at the copy rate,
#: bf16) while its 32- and 64-row units reach well under half the MMA rate: one efficiency for both held out at
#: 14.6% / 60.0%, the 16-head bf16 rows 42-62% slow.
MLA_MEMORY_RATIO_GRID = (None, 1.5, 2.0, 2.25, 2.5, 3.0)
#: An fp8 latent's extra fixed cost a cached token, in rows' worth of a unit's work (its widening to bf16: the
#: mma.sync kernel takes 7-10 ns more a token and wave with fp8 than bf16 at 16, 32 and 64 rows), tried for MLA.
MLA_FP8_ROWS_GRID = (None, 4.0, 8.0, 12.0, 16.0)
#: The most memory efficiency a fit may have: the calibrated copy bandwidth is the memory roof.
MAX_MEMORY_EFFICIENCY = 1.0
#: Kernels whose exp work is large against their matrix work (an exp per visible pair).
EXP_KERNELS = (Kernel.flash, Kernel.flash_window, Kernel.mla_decode)
#: A group needs this many fitted rows.
MIN_ROWS_TO_FIT = 2


@dataclass(frozen=True)
class Fit:
    """t = overhead_s + t_model / efficiency, with the parallelism and exp terms it was fitted with."""

    overhead_s: float
    efficiency: float
    units_per_sm: Optional[float] = None
    exp_overlap: float = 0.0
    unit_overhead_tiles: Optional[float] = None
    memory_ratio: Optional[float] = None         # eta_mem / eta (MLA decode); None: one efficiency
    fp8_overhead_rows: Optional[float] = None    # MLA decode: an fp8 latent's extra rows a cached token

    def __call__(self, model_s: np.ndarray) -> np.ndarray:
        return self.overhead_s + model_s / self.efficiency

    @property
    def memory_efficiency(self) -> Optional[float]:
        """eta_mem, the share of the copy bandwidth the bytes reach (None: the efficiency divides both)."""
        return None if self.memory_ratio is None else self.efficiency * self.memory_ratio


def fit_overhead_efficiency(model_s: np.ndarray, measured_s: np.ndarray) -> Fit:
    """Least squares on relative error: minimise sum((c0 + a x_i) / y_i - 1)^2 with c0 >= 0, a > 0.

    Where the unconstrained solution breaks either bound (c0 < 0; or a <= 0, which two nearly
    proportional points can give: a large overhead and a negative efficiency), c0 = 0 and a alone
    is fitted, which is always positive.
    """
    x, y = np.asarray(model_s, float), np.asarray(measured_s, float)
    design = np.column_stack([1 / y, x / y])
    (c0, a), *_ = np.linalg.lstsq(design, np.ones_like(y), rcond=None)
    if c0 < 0 or a <= 0:
        c0 = 0.0
        a = float(np.sum(x / y) / np.sum((x / y) ** 2))
    return Fit(float(c0), float(1 / a))


def priced_rows(members: Sequence[Measurement], gpu: GpuSpec, units_per_sm: Optional[float]) -> list:
    """(cost, ceilings) of each row, priced once for the units per SM, against the GPU's calibrated ceilings
    (datasheet where none were measured)."""
    source = CeilingSource.calibrated if gpu.measured is not None else CeilingSource.datasheet
    return [(measurement_cost(m, gpu, gpu.num_sms if units_per_sm else None, units_per_sm or 1.0),
             Ceilings.of(gpu, DType(m.dtype), source)) for m in members]


def model_times(members: Sequence[Measurement], gpu: GpuSpec, units_per_sm: Optional[float],
                exp_overlaps: Sequence[float] = (0.0,), unit_overhead_tiles: Optional[float] = None,
                memory_ratio: Optional[float] = None, fp8_overhead_rows: Optional[float] = None,
                priced: Optional[list] = None) -> list[np.ndarray]:
    """t_model of each row, one array per exp overlap, with the tile term, memory ratio and fp8 rows where given
    (`priced`: priced_rows for these units per SM, to price the rows once for many terms)."""
    priced = priced_rows(members, gpu, units_per_sm) if priced is None else priced
    ratio = 1.0 if memory_ratio is None else memory_ratio
    return [np.array([float(np.asarray(model_time(cost, roofs, alpha, unit_overhead_tiles, ratio,
                                                  fp8_overhead_rows)))
                      for cost, roofs in priced]) for alpha in exp_overlaps]


def fit_model_times(fit: Fit, members: Sequence[Measurement], gpu: GpuSpec) -> np.ndarray:
    """t_model of each row under every term of `fit` (to predict rows the fit was not fitted on)."""
    return model_times(members, gpu, fit.units_per_sm, (fit.exp_overlap,), fit.unit_overhead_tiles,
                       fit.memory_ratio, fit.fp8_overhead_rows)[0]


def fit_group(kernel: Kernel, members: Sequence[Measurement], fitted: np.ndarray, gpu: GpuSpec
              ) -> tuple[Optional[Fit], np.ndarray]:
    """The best Fit on the rows where `fitted` is True, and every row's t_model under it.

    None (and the plain calibrated model times) when fewer than MIN_ROWS_TO_FIT rows are fitted.
    """
    measured = np.array([m.time_s for m in members])
    ks = ((gpu.units_per_sm,) if kernel in DECODE_VARIANTS
          else UNITS_PER_SM_GRID if kernel in PARALLEL_KERNELS else (None,))
    alphas = EXP_OVERLAP_GRID if kernel in EXP_KERNELS else (0.0,)
    tiles = (MLA_ROW_OVERHEAD_GRID if kernel is Kernel.mla_decode else UNIT_OVERHEAD_GRID) if kernel in TILE_KERNELS \
        else (None,)
    mla = kernel is Kernel.mla_decode
    if int(np.sum(fitted)) < MIN_ROWS_TO_FIT:
        return None, model_times(members, gpu, None)[0]
    best: tuple[float, Optional[Fit], np.ndarray] = (np.inf, None, np.array([]))
    for k in ks:
        priced = priced_rows(members, gpu, k)
        for n in tiles:
            extra = [(r, f8) for r in MLA_MEMORY_RATIO_GRID for f8 in MLA_FP8_ROWS_GRID] if mla and n is not None \
                else [(None, None)]
            for ratio, f8 in extra:
                for alpha, t in zip(alphas, model_times(members, gpu, k, alphas, n, ratio, f8, priced)):
                    fit = fit_overhead_efficiency(t[fitted], measured[fitted])
                    if ratio is not None and fit.efficiency * ratio > MAX_MEMORY_EFFICIENCY:
                        continue
                    loss = float(np.sum((fit(t[fitted]) / measured[fitted] - 1) ** 2))
                    if loss < best[0] * (1 - 1e-12):
                        best = (loss, Fit(fit.overhead_s, fit.efficiency, k, alpha, n, ratio, f8), t)
    return best[1], best[2]


__all__ = ["DECODE_VARIANTS", "EXP_KERNELS", "EXP_OVERLAP_GRID", "Fit", "MAX_MEMORY_EFFICIENCY", "MLA_FP8_ROWS_GRID",
           "MLA_MEMORY_RATIO_GRID", "MLA_ROW_OVERHEAD_GRID", "PARALLEL_KERNELS", "fit_model_times", "priced_rows",
           "TILE_KERNELS",
           "UNIT_OVERHEAD_GRID", "UNITS_PER_SM_GRID", "fit_group",
           "fit_overhead_efficiency", "model_times"]

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

The search is exact and quick (issue 24: the bundled dataset's 22 groups weigh about 40,000 choices): each row is
priced once a units-per-SM value, every other term of the grid for every row in one NumPy pass (PricedGroup: the
operations of predict.model_time, so its floats), and only the choices whose loss could be the smallest are fitted
by least squares (_contenders), in the grid's order, as a search choice by choice would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..cost.common import real_number
from ..cost.flash import FlashCost
from ..cost.mla import MlaDecodeCost
from ..floors import Ceilings
from ..specs import GpuSpec
from ..units import DType
from ..vocab import CeilingSource, Kernel, Pipe
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
    ceilings = {dtype: Ceilings.of(gpu, DType(dtype), source) for dtype in {m.dtype for m in members}}
    return [(measurement_cost(m, gpu, gpu.num_sms if units_per_sm else None, units_per_sm or 1.0), ceilings[m.dtype])
            for m in members]


@dataclass(frozen=True)
class PricedGroup:
    """A group's rows priced for one units-per-SM value, as arrays [launch, row] for model_time's terms, so that the
    grid's exp overlaps, tile terms and memory ratios are priced for every row at once (rows with fewer launches
    padded with launches of no work, which add exactly 0). The same operations in the same order as
    predict.launch_model_time and predict.model_time, so the same floats (tests/bench/test_fitting.py)."""

    priced: tuple                  # (cost, ceilings) a row, from priced_rows
    flops: np.ndarray              # [L, R] F
    exp_ops: np.ndarray            # [L, R] E
    hbm_bytes: np.ndarray          # [L, R] Q
    rate: np.ndarray               # [L, R] pi: the rate of the launch's pipe
    exp_rate: np.ndarray           # [L, R] eps (1 where the ceilings have none: has_exp False)
    has_exp: np.ndarray            # [L, R] bool
    bandwidth: np.ndarray          # [L, R] beta
    busy: np.ndarray               # [L, R] Ceilings.busy_share(f)
    tiled: np.ndarray              # [L, R] bool: the launches a tile term scales (predict.priced_launches)

    @classmethod
    def of(cls, priced: Sequence) -> "PricedGroup":
        launches = max(len(cost.kernels) for cost, _ in priced)
        shape = (launches, len(priced))
        flops, exp_ops, hbm = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        rate, exp_rate, bandwidth, busy = np.ones(shape), np.ones(shape), np.ones(shape), np.ones(shape)
        has_exp, tiled = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        for r, (cost, roofs) in enumerate(priced):
            scaled = _tiled_launch(cost)
            for j, k in enumerate(cost.kernels):
                flops[j, r], exp_ops[j, r], hbm[j, r] = float(k.flops), float(k.exp_ops), float(k.hbm_bytes)
                rate[j, r] = roofs.matmul_flop_per_s if k.pipe is Pipe.tensor else roofs.vector_flop_per_s
                if roofs.exp_per_s:
                    exp_rate[j, r], has_exp[j, r] = roofs.exp_per_s, True
                bandwidth[j, r] = roofs.bandwidth_bytes_per_s
                busy[j, r] = float(roofs.busy_share(k.parallel_fraction))
                tiled[j, r] = scaled is not None and (scaled is True or k is scaled)
        return cls(tuple(priced), flops, exp_ops, hbm, rate, exp_rate, has_exp, bandwidth, busy, tiled)

    def tile_scale(self, unit_overhead_tiles: Optional[float], fp8_overhead_rows: Optional[float] = None
                   ) -> np.ndarray:
        """[L, R] the factor predict.priced_launches scales each launch's FLOPs and exps by (1: none)."""
        if unit_overhead_tiles is None:
            return np.ones(self.flops.shape)
        work = np.array([_tile_work(cost, unit_overhead_tiles, fp8_overhead_rows)
                         if isinstance(cost, (MlaDecodeCost, FlashCost)) else 1.0 for cost, _ in self.priced])
        return np.where(self.tiled, work, 1.0)

    def times(self, exp_overlaps: Sequence[float], scales: np.ndarray, memory_ratios: Sequence[float]) -> np.ndarray:
        """t_model [ratio, scale, overlap, row]: each memory ratio x each tile scale ([S, L, R], tile_scale) x each
        exp overlap, every row."""
        t_mat = self.flops * scales / self.rate                                        # [S, L, R]
        t_exp = np.where(self.has_exp, self.exp_ops * scales / self.exp_rate, 0.0)
        alpha = np.asarray(exp_overlaps, dtype=np.float64)[:, None, None, None]        # [A, 1, 1, 1]
        compute = np.maximum(t_mat, t_exp) + alpha * np.minimum(t_mat, t_exp)          # [A, S, L, R]
        ratio = np.asarray(memory_ratios, dtype=np.float64)[:, None, None, None, None]  # [Q, 1, 1, 1, 1]
        launch = np.maximum(self.hbm_bytes / self.bandwidth / ratio, compute) / self.busy   # [Q, A, S, L, R]
        total = launch[:, :, :, 0]
        for j in range(1, launch.shape[3]):         # launch by launch, as model_time's sum adds them
            total = total + launch[:, :, :, j]
        return np.swapaxes(total, 1, 2)             # [Q, S, A, R]


#: Tile work remembered by cost (the object itself, held so that its id names no other) and term: rows of one
#: workload share one cost across groups (fit/costs.py: peers timed on one shape), and each group's grid asks for it
#: at every term.
_tile_works: dict[tuple, tuple[object, float]] = {}
_TILE_WORKS_SIZE = 1 << 16


def _tile_work(cost, unit_overhead_tiles: float, fp8_overhead_rows: Optional[float]) -> float:
    """cost.tile_work for the term (MlaDecodeCost's with the fp8 rows), computed once a (cost, term)."""
    key = (id(cost), unit_overhead_tiles, fp8_overhead_rows)
    held = _tile_works.get(key)
    if held is not None and held[0] is cost:
        return held[1]
    value = float(cost.tile_work(unit_overhead_tiles, fp8_overhead_rows) if isinstance(cost, MlaDecodeCost)
                  else cost.tile_work(unit_overhead_tiles))
    if len(_tile_works) >= _TILE_WORKS_SIZE:
        del _tile_works[next(iter(_tile_works))]        # the oldest
    _tile_works[key] = (cost, value)
    return value


def _tiled_launch(cost) -> object:
    """Which launches of `cost` a tile term scales (predict.priced_launches): True (all: flash), the MLA
    attention launch, or None (no tile term for this cost)."""
    if isinstance(cost, MlaDecodeCost):
        return cost.attention
    return True if isinstance(cost, FlashCost) else None


def model_times(members: Sequence[Measurement], gpu: GpuSpec, units_per_sm: Optional[float],
                exp_overlaps: Sequence[float] = (0.0,), unit_overhead_tiles: Optional[float] = None,
                memory_ratio: Optional[float] = None, fp8_overhead_rows: Optional[float] = None,
                priced: Optional[list] = None) -> list[np.ndarray]:
    """t_model of each row, one array per exp overlap, with the tile term, memory ratio and fp8 rows where given
    (`priced`: priced_rows for these units per SM, to price the rows once for many terms)."""
    alphas = [real_number(a, "exp_overlap", 0.0, 1.0) for a in exp_overlaps]
    ratio = 1.0 if memory_ratio is None else real_number(memory_ratio, "memory_ratio (memory_efficiency / "
                                                                        "efficiency)", 0.0, 100.0)
    group = PricedGroup.of(priced_rows(members, gpu, units_per_sm) if priced is None else priced)
    scale = group.tile_scale(unit_overhead_tiles, fp8_overhead_rows)[None]
    return list(group.times(alphas, scale, (ratio,))[0, 0])


def fit_model_times(fit: Fit, members: Sequence[Measurement], gpu: GpuSpec) -> np.ndarray:
    """t_model of each row under every term of `fit` (to predict rows the fit was not fitted on)."""
    return model_times(members, gpu, fit.units_per_sm, (fit.exp_overlap,), fit.unit_overhead_tiles,
                       fit.memory_ratio, fit.fp8_overhead_rows)[0]


def _grid(kernel: Kernel, gpu: GpuSpec) -> tuple[tuple, tuple, tuple]:
    """The units per SM, exp overlaps and tile terms the fit of `kernel` tries."""
    ks = ((gpu.units_per_sm,) if kernel in DECODE_VARIANTS
          else UNITS_PER_SM_GRID if kernel in PARALLEL_KERNELS else (None,))
    alphas = EXP_OVERLAP_GRID if kernel in EXP_KERNELS else (0.0,)
    tiles = (MLA_ROW_OVERHEAD_GRID if kernel is Kernel.mla_decode else UNIT_OVERHEAD_GRID) if kernel in TILE_KERNELS \
        else (None,)
    return ks, alphas, tiles


def _candidates(kernel: Kernel, members: Sequence[Measurement], gpu: GpuSpec) -> tuple[list, np.ndarray]:
    """Every choice the grid tries, in the order fit_group weighs them (units per SM, tile term, memory ratio, fp8
    rows, exp overlap), as (k, alpha, n, ratio, f8) a choice and t_model [choice, row]."""
    ks, alphas, tiles = _grid(kernel, gpu)
    choices, times = [], []
    for k in ks:
        group = PricedGroup.of(priced_rows(members, gpu, k))
        for n in tiles:
            mla = kernel is Kernel.mla_decode and n is not None
            ratios = MLA_MEMORY_RATIO_GRID if mla else (None,)
            fp8s = MLA_FP8_ROWS_GRID if mla else (None,)
            scales = np.stack([group.tile_scale(n, f8) for f8 in fp8s])
            t = group.times(alphas, scales, [1.0 if r is None else r for r in ratios])   # [Q, F, A, R]
            times.append(t.reshape(-1, len(members)))
            choices += [(k, alpha, n, ratio, f8) for ratio in ratios for f8 in fp8s for alpha in alphas]
    return choices, np.concatenate(times)


#: Candidates whose least-squares loss is surely this much (relative, then absolute) above the best one's are not
#: refitted exactly (_contenders): the sums of squares a QR of the two columns gives are within about 1e-13 of
#: np.linalg.lstsq's, so this margin leaves out no choice that could win, and the winner is the same one.
_LOSS_MARGIN = (1e-6, 1e-9)


def _contenders(t: np.ndarray, measured: np.ndarray, memory_ratios: np.ndarray) -> np.ndarray:
    """Which candidates (rows of t: model times of the fitted rows) could have the smallest loss, in one vectorised
    pass: each one's least-squares minimum without bounds, a lower bound on its fit's loss (by QR of the columns
    1 / y and x / y); the best loss among those whose fit is clearly inside the bounds and clearly allowed (their
    loss is the estimate); every candidate whose bound is not above that by _LOSS_MARGIN, or not clear, stays."""
    u = 1 / measured                                            # [n]
    v = t / measured                                            # [C, n]
    norm_u = np.sqrt(np.sum(u * u))
    q1 = u / norm_u
    p = v @ q1
    w = v - p[:, None] * q1
    r22 = np.sqrt(np.sum(w * w, axis=1))
    norm_v = np.sqrt(np.sum(v * v, axis=1))
    with np.errstate(all="ignore"):
        b1, b2 = np.sum(q1), np.sum(w, axis=1) / r22
        residual = 1 - b1 * q1 - (b2 / r22)[:, None] * w
        lower = np.sum(residual ** 2, axis=1)                   # min over (c0, a) free: <= the bounded fit's loss
        a = b2 / r22
        c0 = (b1 - p * a) / norm_u
        bounded = (c0 < 0) | (a <= 0)
        a_alone = np.sum(v, axis=1) / np.sum(v * v, axis=1)     # c0 = 0 (fit_overhead_efficiency's fallback)
        loss_alone = np.sum((a_alone[:, None] * v - 1) ** 2, axis=1)
        estimate = np.where(bounded, loss_alone, lower)
        efficiency = 1 / np.where(bounded, a_alone, a)
        clear = ((np.abs(c0) * u.max() > 1e-6) & (np.abs(a) * np.abs(v).max(axis=1) > 1e-6)
                 & (r22 > 1e-6 * norm_v) & np.isfinite(estimate) & np.isfinite(lower))
        lower = np.where(r22 > 1e-12 * norm_v, lower, -np.inf)
        memory = efficiency * memory_ratios                     # NaN where no memory ratio
        refused = clear & (memory > MAX_MEMORY_EFFICIENCY * (1 + _LOSS_MARGIN[0]))
        allowed = np.isnan(memory_ratios) | (clear & (memory < MAX_MEMORY_EFFICIENCY * (1 - _LOSS_MARGIN[0])))
    sure = clear & allowed
    best = float(np.min(estimate[sure])) if np.any(sure) else np.inf
    beaten = lower > best * (1 + _LOSS_MARGIN[0]) + _LOSS_MARGIN[1]
    return ~refused & ~beaten


def fit_group(kernel: Kernel, members: Sequence[Measurement], fitted: np.ndarray, gpu: GpuSpec
              ) -> tuple[Optional[Fit], np.ndarray]:
    """The best Fit on the rows where `fitted` is True, and every row's t_model under it.

    None (and the plain calibrated model times) when fewer than MIN_ROWS_TO_FIT rows are fitted. Every choice of the
    grid is priced at once (_candidates); those that could win (_contenders) are fitted by least squares
    (fit_overhead_efficiency) in the grid's order, the first with the smallest loss kept.
    """
    measured = np.array([m.time_s for m in members])
    if int(np.sum(fitted)) < MIN_ROWS_TO_FIT:
        return None, model_times(members, gpu, None)[0]
    choices, times = _candidates(kernel, members, gpu)
    ratios = np.array([np.nan if c[3] is None else c[3] for c in choices])
    contenders = np.flatnonzero(_contenders(times[:, fitted], measured[fitted], ratios))
    best: tuple[float, Optional[Fit], np.ndarray] = (np.inf, None, np.array([]))
    weighed = set()             # (fitted rows' times, ratio) fitted already: the same fit and loss, never lower
    for i in contenders:
        (k, alpha, n, ratio, f8), t = choices[i], times[i]
        seen = (t[fitted].tobytes(), ratio)
        if seen in weighed:
            continue
        weighed.add(seen)
        fit = fit_overhead_efficiency(t[fitted], measured[fitted])
        if ratio is not None and fit.efficiency * ratio > MAX_MEMORY_EFFICIENCY:
            continue
        loss = float(np.sum((fit(t[fitted]) / measured[fitted] - 1) ** 2))
        if loss < best[0] * (1 - 1e-12):
            best = (loss, Fit(fit.overhead_s, fit.efficiency, k, alpha, n, ratio, f8), t)
    return best[1], best[2]


__all__ = ["DECODE_VARIANTS", "EXP_KERNELS", "EXP_OVERLAP_GRID", "Fit", "MAX_MEMORY_EFFICIENCY", "MLA_FP8_ROWS_GRID",
           "MLA_MEMORY_RATIO_GRID", "MLA_ROW_OVERHEAD_GRID", "PARALLEL_KERNELS", "PricedGroup", "TILE_KERNELS",
           "UNIT_OVERHEAD_GRID", "UNITS_PER_SM_GRID", "fit_group", "fit_model_times", "fit_overhead_efficiency",
           "model_times", "priced_rows"]

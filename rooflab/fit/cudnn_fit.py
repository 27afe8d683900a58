"""cuDNN's fused attention on the H200, modelled as the kernel it launches and fitted on our own runs (issue 27).

The flash model of predict.py (t = c0 + t_model / eta, a tile term, an exp overlap), priced as the kernel cuDNN 9.19
launches on the H200 and fitted on every sdpa_cudnn row of measurements/shapes/ (ours: the published rows are
fitted on by nothing). What the H200 showed, each from a run of our own:

- the tile (rooflab.cudnn_kernel): the profiler names one kernel a call, `cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7
  _64x128x{64,128,192,256}_4x1x1_cga1x1x1` (h200-cudnn-kernels.csv): 64 query rows by 128 keys at every head dim
  (`CUDNN_TILE`; the spec's shared-memory rule gives the model 128 x 128 up to d 128), the head dim padded to the
  kernel's 64, 128, 192 or 256 (`cudnn_head_dim`: d 96 runs the 128 kernel);
- two units an SM: with batch 1 at T 4096 the non-causal time steps at 4, 8, 12 and 16 heads (84, 139-148, 197, 251
  us at d 128; h200-cudnn-schedule.csv), every 256 query tiles, the 264 slots of 132 SMs x 2;
- the order: a causal launch's query tiles are issued in row order, lightest first (`causal_fraction`), not heaviest
  first as cost/flash.py assumes. Predicted before the schedule run: row order 16.4% median over its 52 causal rows,
  heaviest first 22.0%;
- the host: the shapes runs synchronise after every call, so each time includes the host dispatching the call (the
  stream is empty when the start event is recorded). Their fitted c0 (`call_s`, about 36 us) is that and the
  GPU's fixed cost together; a benchmark that queues calls back to back (the published ones, the campaigns)
  hides the dispatch, so the prediction's c0 is the campaigns' torch_cudnn overhead (hardware/h200-sxm.yaml, timed
  back to back). With it the model predicts the campaigns' own torch_cudnn rows (B 1, GQA; never fitted here) at
  4.6% median.

The error stored with the model (its median and worst, what `rooflab report` prints as its band) is the model's
exactly as stored and used (that c0, priced as rooflab.predict prices it) on the campaigns' torch_cudnn rows that
`rooflab fit` holds out (campaign_held_out: 46 rows, 3.25% / 53.2%; the worst a 35 us causal T 512 row).
The shapes variant (c0 the runs' own call_s, which no prediction uses) held out across shapes
(tests/fit/test_cudnn_fit.py): by file 2.4% / 18.7%, by kernel head dim 4.3% / 20.8%, by T 2.6% / 18.4% (the same
tile with one unit an SM, heaviest first and c0 at most 10 us: 8.6% / 59.9% by file): how well the terms fit the
kernel, not a prediction's error.

The model is stored as hardware/h200-sxm.yaml's `torch_cudnn_shapes` entry (tests/fit/test_cudnn_fit.py holds it equal
to this fit, as fitting_io.fitted_yaml writes it), and rooflab.predict prices torch_cudnn's flash prefills with it
everywhere (report, explain, the step, plots, validate --published; rooflab.cudnn_kernel.KERNEL_MODELS): the
campaigns' torch_cudnn entry stays in the YAML for its back-to-back overhead, this model's c0. The launch
(tile, padded head dim, causal order) lives in rooflab/cudnn_kernel.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Optional, Sequence

import numpy as np

from ..cudnn_kernel import (KERNEL_MODELS, CUDNN_HEAD_DIMS, CUDNN_SHAPES_IMPL, CUDNN_TILE, CUDNN_UNITS_PER_SM, causal_fraction,
                            cudnn_cost, cudnn_head_dim)
from ..floors import Ceilings
from ..load import load_gpu
from ..cost.common import KernelCost, Pipe
from ..errors import RooflabError
from ..predict import launch_model_time, model_time, prediction_model_time, priced_cost
from ..specs import AttentionHeads, FittedModel, GpuSpec
from ..units import DType
from ..vocab import CeilingSource, Kernel
from .costs import measurement_cost
from .fitting import EXP_OVERLAP_GRID, Fit, fit_overhead_efficiency
from .records import Measurement, read_measurements
from .shapes_fit import MEASUREMENTS, SHAPES_CSV, SHAPES_GPU, ShapeRow, read_shapes

#: More sdpa_cudnn rows (benchmarks/h200_cudnn_shapes.py, benchmarks/h200_cudnn_schedule.py).
CUDNN_CSV = MEASUREMENTS / "shapes" / "h200-cudnn-shapes.csv"
SCHEDULE_CSV = MEASUREMENTS / "shapes" / "h200-cudnn-schedule.csv"
CUDNN_FILES = (SHAPES_CSV, CUDNN_CSV, SCHEDULE_CSV)
#: The campaigns' fit whose per-call overhead (timed back to back) the prediction takes.
CAMPAIGN_IMPL = "torch_cudnn"
#: Key tiles' worth of fixed cost a query tile tried by the fit.
CUDNN_OVERHEAD_TILES = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)


@dataclass(frozen=True)
class CudnnFit:
    """The fit on the shapes rows: `model` (its overhead the campaigns' back-to-back one) and `call_s`, the fixed
    cost a call the shapes rows themselves carry (the host's dispatch included)."""

    model: FittedModel
    call_s: float

    def shapes_time(self, r: ShapeRow, gpu: GpuSpec, roofs: Ceilings) -> float:
        """A shapes row's time as its run measured it (each call synchronised: call_s, not the model's c0)."""
        m = self.model
        return self.call_s + float(model_time(_row_cost(r, gpu), roofs, m.exp_overlap, m.unit_overhead_tiles)) / \
            m.efficiency


_ROW_COSTS: dict = {}


def _row_cost(r: ShapeRow, gpu: GpuSpec):
    """cudnn_cost of a shapes row, priced once a process (the held-out folds refit on the same rows)."""
    key = (r.heads, r.head_dim, r.seq_len, r.batch, r.causal, gpu.name, gpu.num_sms)
    if key not in _ROW_COSTS:
        _ROW_COSTS[key] = cudnn_cost(AttentionHeads(r.heads, r.heads, r.head_dim), r.seq_len, r.batch, DType.fp16,
                                     r.causal, gpu)
    return _ROW_COSTS[key]


def _roofs(gpu: GpuSpec) -> Ceilings:
    return Ceilings.of(gpu, DType.fp16, CeilingSource.calibrated)


@dataclass(frozen=True)
class _Terms:
    """The rows' one-launch costs stacked as one KernelCost of arrays (a row an element), so that the fit's grid
    prices every row at once through predict.launch_model_time itself, the tile term scaling FLOPs and exps as
    predict.priced_launches does (FlashCost.tile_work)."""

    costs: tuple
    launch: KernelCost
    roofs: Ceilings

    @classmethod
    def of(cls, costs, roofs: Ceilings) -> "_Terms":
        ks = [c.kernels[0] for c in costs]
        if any(len(c.kernels) != 1 or k.pipe is not Pipe.tensor for c, k in zip(costs, ks)):
            raise RooflabError("cudnn_fit prices one tensor-pipe launch a row (cudnn_cost's)")
        stack = lambda field: np.array([float(getattr(k, field)) for k in ks])
        launch = KernelCost("cudnn_rows", stack("flops"), stack("hbm_bytes"), Pipe.tensor, stack("exp_ops"),
                            stack("parallel_fraction"))
        return cls(tuple(costs), launch, roofs)

    def times(self, exp_overlap: float, unit_overhead_tiles: float) -> np.ndarray:
        scale = np.array([float(c.tile_work(unit_overhead_tiles)) for c in self.costs])
        k = self.launch
        return np.asarray(launch_model_time(replace(k, flops=k.flops * scale, exp_ops=k.exp_ops * scale),
                                            self.roofs, exp_overlap))


def _fit_on(rows, gpu: GpuSpec, back_to_back_s: Optional[float] = None) -> CudnnFit:
    """The (exp overlap, tile term) of the grid with the least squared relative error on `rows`, c0 and eta by least
    squares; the model's overhead `back_to_back_s` (default: the campaigns' torch_cudnn fit's)."""
    terms = _Terms.of([_row_cost(r, gpu) for r in rows], _roofs(gpu))
    y = np.array([r.time_s for r in rows])
    best = None
    for n in CUDNN_OVERHEAD_TILES:
        for a in EXP_OVERLAP_GRID:
            t = terms.times(a, n)
            fit = fit_overhead_efficiency(t, y)
            loss = float(np.sum((fit(t) / y - 1) ** 2))
            if best is None or loss < best[0] * (1 - 1e-12):
                best = (loss, fit, a, n)
    _, fit, a, n = best
    if back_to_back_s is None:
        back_to_back_s = gpu.fitted_model(Kernel.flash, CAMPAIGN_IMPL).overhead_s
    model = FittedModel(Kernel.flash, CUDNN_SHAPES_IMPL, back_to_back_s, fit.efficiency, a, CUDNN_UNITS_PER_SM, n,
                        rows=len(rows), campaigns=tuple(f"measurements/{p.relative_to(MEASUREMENTS).as_posix()}" for p in CUDNN_FILES))
    return CudnnFit(model, fit.overhead_s)


def cudnn_rows(paths=CUDNN_FILES) -> tuple[tuple[str, ShapeRow], ...]:
    """(file name, row) of every sdpa_cudnn row of the shapes files."""
    return tuple((p.name, r) for p in paths for r in read_shapes(p) if r.impl == "sdpa_cudnn")


def cudnn_held_out(key) -> np.ndarray:
    """|error| of each sdpa_cudnn row predicted (as its run measured it: c0 the runs' call_s, not the stored model's)
    by a fit on the rows of the other values of `key(file, row)` (leave-shapes-out): the terms' fit, not the band."""
    rows, gpu = cudnn_rows(), load_gpu(SHAPES_GPU)
    errs = []
    for v in sorted({key(f, r) for f, r in rows}, key=str):
        fit = _fit_on([r for f, r in rows if key(f, r) != v], gpu)
        errs += [abs(fit.shapes_time(r, gpu, _roofs(gpu)) / r.time_s - 1) for f, r in rows if key(f, r) == v]
    return np.array(errs)


def campaign_held_out(model: FittedModel, gpu: GpuSpec) -> np.ndarray:
    """|error| of `model` exactly as stored and used (its c0, eta and terms, priced as rooflab.predict prices
    torch_cudnn: kernel_model_times) on the campaigns' torch_cudnn rows that no constant of it has seen: the rows
    `rooflab fit` holds out of the campaigns' (flash, torch_cudnn) group (every other row; c0 is the campaigns' fit
    on the others, eta and the terms the shapes rows'). Ours, never the published rows."""
    campaign = gpu.fitted_model(Kernel.flash, CAMPAIGN_IMPL)
    members = [m for n in campaign.campaigns for m in read_measurements(MEASUREMENTS / n)[1]
               if m.kernel is Kernel.flash and m.impl == CAMPAIGN_IMPL]    # validate's group, in its order
    _, predicted = kernel_model_times(model, model.overhead_s, members, gpu)
    measured = np.array([m.time_s for m in members])
    held = np.arange(len(members)) % 2 == 1                 # validate's held-out rows of the group
    return np.abs(predicted[held] / measured[held] - 1)


@functools.lru_cache(maxsize=1)
def cudnn_fit() -> CudnnFit:
    """The fit on every sdpa_cudnn row, its model carrying as its median and worst error the model's own, as stored
    (the campaigns' c0), on the campaigns' held-out torch_cudnn rows (campaign_held_out)."""
    rows = [r for _, r in cudnn_rows()]
    gpu = load_gpu(SHAPES_GPU)
    fit = _fit_on(rows, gpu)
    held = campaign_held_out(fit.model, gpu)
    return CudnnFit(replace(fit.model, held_out_rows=len(held), median_error=float(np.median(held)),
                            worst_error=float(held.max())), fit.call_s)


def cudnn_shapes_fit() -> FittedModel:
    """cudnn_fit's model: what predicts a back-to-back benchmark's cuDNN call."""
    return cudnn_fit().model


def kernel_model(kernel: Kernel, impl: str, gpu: GpuSpec) -> Optional[FittedModel]:
    """The GPU YAML's model of the kernel `impl` launches (cudnn_kernel.KERNEL_MODELS), or None."""
    entry = KERNEL_MODELS.get((kernel, impl))
    return gpu.fitted_model(kernel, entry) if entry is not None else None


def kernel_model_times(model: FittedModel, overhead_s: float, members: Sequence[Measurement], gpu: GpuSpec
                        ) -> tuple[Fit, np.ndarray]:
    """The kernel model's prediction of each row, as rooflab.predict makes it (priced_cost, prediction_model_time)
    but with c0 `overhead_s` (fitted on this group's fitted rows: no constant has seen a held-out row), and its
    constants as a Fit."""
    fit = Fit(overhead_s, model.efficiency, model.units_per_sm, model.exp_overlap, model.unit_overhead_tiles)
    times = [float(np.asarray(prediction_model_time(priced_cost(model, lambda n, k, m=m: measurement_cost(m, gpu, n, k),
                                                                gpu), model, gpu, DType(m.dtype))[0]))
             for m in members]
    return fit, fit(np.array(times))


__all__ = ["CAMPAIGN_IMPL", "CUDNN_CSV", "campaign_held_out", "CUDNN_FILES", "CUDNN_HEAD_DIMS", "CUDNN_OVERHEAD_TILES", "CUDNN_SHAPES_IMPL",
           "CUDNN_TILE", "CUDNN_UNITS_PER_SM", "CudnnFit", "SCHEDULE_CSV", "causal_fraction", "cudnn_cost",
           "cudnn_fit", "cudnn_head_dim", "cudnn_held_out", "cudnn_rows", "cudnn_shapes_fit", "kernel_model",
           "kernel_model_times"]

"""Predicted time: the model of how long a named implementation takes, beside the physical floor.

A floor (floors.py) is a bound no measurement beats: datasheet roofs, perfect overlap, every SM
busy. A prediction is a model of one implementation on one GPU, its constants fitted to
measurements (`rooflab fit`, stored in the GPU YAML's `fitted:` list):

    t_mat   = F / pi                 pi: the calibrated rate of the kernel's pipe
    t_exp   = E / eps                eps: the calibrated exp rate (the SFU; no emulation assumed)
    t_mem   = Q / beta               beta: the calibrated copy bandwidth
    t_model = sum over the launches of max(t_mem, max(t_mat, t_exp) + a min(t_mat, t_exp)) / f
    t_pred  = c0 + t_model / eta

where f <= 1 is the share of the GPU the launch keeps busy under the parallelism model with u work
units per SM (cost/parallel.py; priced by the cost function given num_sms and units_per_sm), turned into
a share of the bandwidth by the per-SM streaming curve `rooflab calibrate` measured where the GPU YAML has
one (Ceilings.busy_share: a few SMs draw more than their 1/SMs share),
a in [0, 1] how much of the exp work adds to the matrix work (0: hidden under it, 1: after it;
cuDNN's forward on Hopper measured close to 1), c0 a fixed overhead per call and eta the efficiency.
A flash kernel fitted with a tile term (bench/fitting.TILE_KERNELS: windowed and chunked prefill, where a
query tile visits few key tiles) prices F and E at the work its tiles do: whole B_r x B_c tiles, plus a
fixed cost of n key tiles a query tile (FlashCost.tile_work; n fitted, `unit_overhead_tiles`).
MLA decode's fit counts rows instead (MlaDecodeCost.tile_work: whole 16-, 32- or 64-row tiles, n rows' worth a
cached token, and `fp8_overhead_rows` more with an fp8 latent), and may have a memory efficiency of its own:

    t_pred = c0 + max(t_mem / eta_mem, max(t_mat, t_exp) + a min(t_mat, t_exp)) / (eta f)     (eta_mem <= 1)

(t_mem divided by the ratio eta_mem / eta inside the max): the mma.sync MLA kernel streams its latent at close to
the copy bandwidth where the memory binds (16 rows a unit) but reaches well under half the bf16 MMA rate where
the compute does (32 and 64 rows), which one efficiency dividing both cannot hold.

The Triton fused_moe kernel over block-fp8 experts (a fused MoE fit: FittedModel.tile_s) adds a fixed cost a program
instead (fused_moe_time), memory-bound launches only:

    t_pred = c0 + Q / (eta_mem beta) + tiles tau      (tiles: cost/fused_moe.fused_tiles)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from .cost.common import Cost, KernelCost, Visibility, check_flag, check_layer, real_number, whole_number
from .cost.flash import FlashCost
from .cost.fused_moe import fused_tiles
from .cost.mla import MlaDecodeCost
from .cost.paged import MAX_Q_LEN
from .cudnn_kernel import KERNEL_MODELS, kernel_cost, modelled_impl
from .errors import InputError
from .limits import MAX_SPLITS
from .floors import Ceilings
from .specs import FittedModel, GpuSpec, LayerType
from .units import DType
from .vocab import CeilingSource, Kernel, Pipe


def launch_model_time(kernel: KernelCost, ceilings: Ceilings, exp_overlap: float = 0.0,
                      memory_ratio: float = 1.0) -> np.ndarray:
    """One launch's modelled time before efficiency and overhead (the module docstring's max(...)); the memory
    term divided by `memory_ratio` (a fit's memory_efficiency / efficiency: 1 where one efficiency divides both)."""
    if not isinstance(kernel, KernelCost) or not isinstance(ceilings, Ceilings):
        raise InputError(f"launch_model_time takes a KernelCost and Ceilings, got {type(kernel).__name__} and "
                         f"{type(ceilings).__name__}")
    exp_overlap = real_number(exp_overlap, "exp_overlap", 0.0, 1.0)
    memory_ratio = real_number(memory_ratio, "memory_ratio (memory_efficiency / efficiency)", 0.0, 100.0)
    rate = ceilings.matmul_flop_per_s if kernel.pipe is Pipe.tensor else ceilings.vector_flop_per_s
    t_mat = kernel.flops / rate
    t_exp = kernel.exp_ops / ceilings.exp_per_s if ceilings.exp_per_s else np.zeros_like(np.asarray(t_mat))
    compute = np.maximum(t_mat, t_exp) + exp_overlap * np.minimum(t_mat, t_exp)
    return np.maximum(kernel.hbm_bytes / ceilings.bandwidth_bytes_per_s / memory_ratio, compute) / \
        ceilings.busy_share(kernel.parallel_fraction)


def priced_launches(cost: Cost, unit_overhead_tiles: float | None = None,
                    fp8_overhead_rows: float | None = None) -> tuple[KernelCost, ...]:
    """The launches a model prices: the cost's own, or, for a flash kernel fitted with a tile term, its launch with
    FLOPs and exps scaled to the work its tiles do (FlashCost.tile_work: whole tiles and a fixed cost of
    `unit_overhead_tiles` key tiles a query tile; MLA decode's MlaDecodeCost.tile_work in rows, with
    `fp8_overhead_rows` more a cached token of an fp8 latent)."""
    if not hasattr(cost, "kernels"):
        raise InputError(f"a model prices a Cost (a cost function's result), got {type(cost).__name__}")
    if unit_overhead_tiles is None or not isinstance(cost, (FlashCost, MlaDecodeCost)):
        return cost.kernels
    scale = (cost.tile_work(unit_overhead_tiles, fp8_overhead_rows) if isinstance(cost, MlaDecodeCost)
             else cost.tile_work(unit_overhead_tiles))
    tiled = cost.attention if isinstance(cost, MlaDecodeCost) else None       # MLA: the attention launch, not the merge
    return tuple(replace(k, flops=k.flops * scale, exp_ops=k.exp_ops * scale) if tiled is None or k is tiled else k
                 for k in cost.kernels)


def model_time(cost: Cost, ceilings: Ceilings, exp_overlap: float = 0.0, unit_overhead_tiles: float | None = None,
               memory_ratio: float = 1.0, fp8_overhead_rows: float | None = None) -> np.ndarray:
    """Every launch of `cost`, one after another (with a tile term: priced_launches; a fit's own memory efficiency
    as `memory_ratio`, launch_model_time)."""
    return sum(launch_model_time(k, ceilings, exp_overlap, memory_ratio)
               for k in priced_launches(cost, unit_overhead_tiles, fp8_overhead_rows))


def fitted_model_time(cost: Cost, ceilings: Ceilings, fitted: FittedModel) -> np.ndarray:
    """model_time with every term of the fit `fitted` (its exp overlap, tile term, memory ratio, fp8 rows)."""
    return model_time(cost, ceilings, fitted.exp_overlap, fitted.unit_overhead_tiles, fitted.memory_ratio,
                      fitted.fp8_overhead_rows)


#: The implementation of a fused MoE fit (FittedModel.tile_s): our Triton kernel of vLLM's and SGLang's fused_moe
#: over block-fp8 experts (benchmarks/h200_early2025_decode_kernels.py; its rows' impl column).
FUSED_MOE_IMPL = "triton_fused_moe"


def fused_moe_time(fitted: FittedModel, ceilings: Ceilings, tokens: float, pairs: float, touched: float, n: int,
                   hbm_bytes: float) -> float:
    """One fused_moe launch's time under a fused MoE fit: c0 + Q / (eta_mem beta) + tiles tau (the module docstring).

    `hbm_bytes` Q the grouped GEMM's bytes (cost/gemm.py: the touched experts' weights once, the pairs' activations in
    and out), `tokens` the step's tokens (the engine's config key), `pairs` the token-expert pairs over `touched`
    experts' [n, k] weights; beta the copy bandwidth of `ceilings`. The fit's `efficiency` is not read (no compute
    term: a fused fit stores 1.0 there); `memory_efficiency` is eta_mem. The one place the form is written: the fit
    (rooflab.fit.moe_fit.fit_fused) measures its held-out errors with it, the step prices with it."""
    if not fitted.fused_moe:
        raise InputError(f"fused_moe_time takes a fused MoE fit (tile_s set), got {fitted.kernel.value}/{fitted.impl}")
    memory_s = hbm_bytes / (fitted.memory_efficiency * ceilings.bandwidth_bytes_per_s)
    return fitted.overhead_s + memory_s + fused_tiles(tokens, pairs, touched, n) * fitted.tile_s


#: PredictedTime.provenance of a fit measured on the GPU it predicts.
MEASURED_HERE = "measured on this GPU"


@dataclass(frozen=True)
class PredictedTime:
    """A named implementation's predicted time, and how well its model held on held-out measurements.

    `provenance`: MEASURED_HERE or 'transferred from <gpu>' (rooflab.transfer); `assumes`: what the prediction takes
    for granted (a transfer's roofs, an fp8 rate at a measured precision's fraction), '' where nothing;
    `error_band`: the relative error to expect (rooflab.transfer.error_band: held-out, and cross-GPU where
    transferred), with `band_note` saying where it comes from."""

    t_predicted_s: float
    impl: str
    median_error: float | None
    kernel: Kernel
    provenance: str = MEASURED_HERE
    assumes: str = ""
    error_band: float | None = None
    band_note: str = ""
    worst_error: float | None = None
    fitted_on: GpuSpec | None = None          # the GPU the fit was measured on, where transferred (None: this one)


def model_fits(owner: GpuSpec, kernel: Kernel) -> tuple[FittedModel, ...]:
    """The fits of `kernel` that predict on `owner`'s behalf: its `fitted:` entries, each implementation with a model
    of the kernel it launches (cudnn_kernel.KERNEL_MODELS) in `owner`'s list taking that model's entry instead of
    the campaigns' fit (one prediction an implementation; PredictedTime.impl names the implementation). A fused MoE
    fit is left out: its form is fused_moe_time's, which the step calls itself."""
    fits = tuple(f for f in owner.fitted_for(kernel) if not f.fused_moe)
    models = {m for (k, _), m in KERNEL_MODELS.items() if k is kernel}
    out = []
    for f in fits:
        if f.impl in models:
            continue
        model = KERNEL_MODELS.get((kernel, f.impl))
        out.append(owner.fitted_model(kernel, model) or f if model is not None else f)
    return tuple(out)


def prediction_fit(gpu: GpuSpec, kernel: Kernel, p: PredictedTime) -> FittedModel:
    """The fit that priced the prediction `p` of `kernel` on `gpu` (explain's derivation takes its terms)."""
    return next(f for f in model_fits(p.fitted_on or gpu, kernel) if modelled_impl(f.impl) == p.impl)


def priced_cost(fitted: FittedModel, price: Callable[[int | None, float], Cost], gpu: GpuSpec) -> Cost:
    """The cost a fit prices on `gpu`: `price(num_sms, units_per_sm)` with the fit's parallelism model, as the kernel
    its entry models launches it (cudnn_kernel.kernel_cost: cuDNN's tile and padded head dim, its own launch model,
    from the workload of the cost without one, which a report builds for its row anyway)."""
    k = fitted.units_per_sm
    if fitted.impl in KERNEL_MODELS.values():
        return kernel_cost(fitted.impl, price(None, 1.0), gpu)
    return price(gpu.num_sms if k else None, k or 1.0)


def predict_with(fitted: FittedModel, price: Callable[[int | None, float], Cost], gpu: GpuSpec,
                 dtype: DType, source: GpuSpec | None = None) -> PredictedTime:
    """`fitted`'s time for the workload `price(num_sms, units_per_sm)` prices (the cost function, with the
    parallelism model where the fit has one), against the GPU's calibrated ceilings (an fp8 matrix rate never above
    a measured fraction: transfer.calibrated_ceilings); with `source`, the GPU the fit was measured on, against the
    roofs it transfers to `gpu` (transfer.transferred_ceilings)."""
    from .transfer import error_band

    cost = priced_cost(fitted, price, gpu)
    t_model, _, assumes = prediction_model_time(cost, fitted, gpu, dtype, source)
    t = fitted.overhead_s + float(np.asarray(t_model)) / fitted.efficiency
    band, band_note = error_band(fitted, source, gpu)
    return PredictedTime(t, modelled_impl(fitted.impl), fitted.median_error, fitted.kernel,
                         MEASURED_HERE if source is None else f"transferred from {source.name}", assumes, band,
                         band_note, fitted.worst_error, source)


def prediction_roofs(fitted: FittedModel, gpu: GpuSpec, dtype: DType,
                     source: GpuSpec | None = None) -> tuple[Ceilings, str]:
    """(the roofs a fit's time is priced against on `gpu`, what they assume): the GPU's calibrated ceilings (an fp8
    matrix rate never above a measured fraction), its datasheet's where it has no calibration, or with `source`
    (the GPU the fit was measured on) the roofs it transfers to `gpu` (transfer.transferred_ceilings)."""
    from .transfer import IMPL_PATH, transferred_ceilings

    if source is not None:
        moved = transferred_ceilings(source, gpu, dtype, IMPL_PATH[fitted.impl], fitted.impl)
        return moved.ceilings, moved.assumes
    return own_roofs(gpu, dtype)


def own_roofs(gpu: GpuSpec, dtype: DType) -> tuple[Ceilings, str]:
    """(the roofs a fit measured on `gpu` is fitted and priced against there, what they assume): its calibrated
    ceilings (transfer.calibrated_ceilings: the fp8 matrix rate as measured, never above a measured fraction), its
    datasheet's where it has no calibration. A fit (rooflab.fit) takes its roofs here, so that its constants are
    shares of the same roofs the step prices them against."""
    from .transfer import calibrated_ceilings

    if gpu.measured is not None:
        ceilings, note = calibrated_ceilings(gpu, dtype)
        return ceilings, note or ""
    return Ceilings.of(gpu, dtype, CeilingSource.datasheet), ""


def prediction_model_time(cost: Cost, fitted: FittedModel, gpu: GpuSpec, dtype: DType,
                          source: GpuSpec | None = None) -> tuple[np.ndarray, Ceilings, str]:
    """(t_model, the roofs, what they assume): fitted_model_time at prediction_roofs; with `source` (a transfer),
    each launch the fit's implementation runs SM-bound (transfer.SM_BOUND_LAUNCHES) at its time at the source's roofs
    x the SM ratio, never under its time at the target's roofs at full speed (x eta here, since t_pred divides by
    eta), the rest at the target's roofs (transfer's module docstring). On the source itself (ratio 1) every launch
    keeps its fitted time.
    The one place predict_with and explain take a fit's modelled time from."""
    from .transfer import IMPL_PATH, sm_bound_launches, transferred_ceilings

    if source is None:
        ceilings, assumes = prediction_roofs(fitted, gpu, dtype)
        return fitted_model_time(cost, ceilings, fitted), ceilings, assumes
    moved = transferred_ceilings(source, gpu, dtype, IMPL_PATH[fitted.impl], fitted.impl)
    if moved.source_ceilings is None:
        return fitted_model_time(cost, moved.ceilings, fitted), moved.ceilings, moved.assumes
    bound = sm_bound_launches(fitted.impl)
    total = 0.0
    for k in priced_launches(cost, fitted.unit_overhead_tiles, fitted.fp8_overhead_rows):
        here = launch_model_time(k, moved.ceilings, fitted.exp_overlap, fitted.memory_ratio)
        if k.name in bound:        # the SMs' time, scaled; never under the launch at the target's roofs at full speed
            there = launch_model_time(k, moved.source_ceilings, fitted.exp_overlap, fitted.memory_ratio)
            here = np.maximum(here * fitted.efficiency, there * moved.sm_ratio)
        total = total + here
    return total, moved.ceilings, moved.assumes


#: rooflab's own kernels, whichever is fastest: the ids "rooflab" (mma.sync) and "rooflab_hopper" (wgmma).
OWN = "rooflab*"

#: A fit whose held-out median error is larger is not chosen automatically while another fit of the kernel
#: is within it (`--impl` still names it): the fastest prediction should come from a model that held.
MAX_AUTO_ERROR = 0.25


def predict_time(gpu: GpuSpec, kernel: Kernel, price: Callable[[int | None, float], Cost], dtype: DType,
                 impl: str | None = None, optional: bool = False) -> PredictedTime | None:
    """The predicted time of `impl` (or of the fitted implementation that is fastest here, among those whose
    held-out median error is within MAX_AUTO_ERROR where any is), or None where the GPU has no fit for `kernel`.
    An `impl` with no fit is an InputError naming the ones there are, unless `optional` (a report row of a
    kernel `impl` does not implement: None). `impl=OWN` means rooflab's own kernels, whichever of them
    (mma.sync or wgmma) is fastest here."""
    source = None
    fits = model_fits(gpu, kernel)
    if not fits and not any(f.impl == impl for f in gpu.fitted):
        from .transfer import transfer_source, why_not

        source, _ = transfer_source(gpu, kernel)
        fits = () if source is None else tuple(f for f in model_fits(source, kernel)
                                               if why_not(source, gpu, f) is None)
    if impl == OWN:
        fits = tuple(f for f in fits if f.impl.startswith(OWN.rstrip("*")))
        impl = None
    if impl is not None:
        chosen = [f for f in fits if modelled_impl(f.impl) == impl]
        owner = gpu if source is None else source
        if not chosen and optional and any(modelled_impl(f.impl) == impl for f in owner.fitted):
            return None
        if not chosen:
            known = sorted({modelled_impl(f.impl) for f in owner.fitted})
            raise InputError(f"--impl {impl}: {gpu.name} has no fitted {kernel.value} model for it; fitted "
                             f"implementations: {', '.join(known) or 'none (run rooflab fit)'}")
        fits = tuple(chosen)
    else:
        trusted = tuple(f for f in fits if f.median_error is None or f.median_error <= MAX_AUTO_ERROR)
        fits = trusted or fits
    if not fits:
        return None
    return min((predict_with(f, price, gpu, dtype, source) for f in fits), key=lambda p: p.t_predicted_s)


def no_prediction_reason(gpu: GpuSpec, kernel: Kernel, impl: str | None = None) -> str:
    """Why predict_time gives `gpu` no time for `kernel` (a report's note beside a blank t_predicted)."""
    from .transfer import transfer_source, why_not

    if gpu.fitted_for(kernel):
        return f"{impl or 'the implementation'} has no fitted {kernel.value} model on {gpu.name}"
    source, fits = transfer_source(gpu, kernel, keep_refused=True)
    if source is None:
        return f"no bundled GPU has a fitted {kernel.value} model to transfer"
    reasons = sorted({why_not(source, gpu, f) or "" for f in fits if impl is None or f.impl == impl} - {""})
    if not reasons:
        return f"{impl} has no fitted {kernel.value} model on {source.name} to transfer"
    return f"no {kernel.value} fit transfers from {source.name}: " + "; ".join(reasons)




def decode_kernel(layer: LayerType, splits: int = 1, q_len: int = 1) -> Kernel:
    """The measured kernel whose fitted model predicts a decode step of this layer type."""
    layer = check_layer(layer)
    splits = whole_number(splits, "splits", maximum=MAX_SPLITS)
    q_len = whole_number(q_len, "q_len (new tokens a sequence)", maximum=MAX_Q_LEN)
    if layer.is_latent:
        return Kernel.mla_decode
    if not Visibility.of(layer).is_full:
        return Kernel.paged_window
    if q_len > 1:
        return Kernel.paged_multi
    return Kernel.paged if splits == 1 else Kernel.split_kv


def prefill_kernel(layer: LayerType, naive: bool = False) -> Kernel:
    """The measured kernel whose fitted model predicts a prefill of this layer type."""
    layer = check_layer(layer)
    if check_flag(naive, "naive"):
        return Kernel.naive
    return Kernel.flash if Visibility.of(layer).is_full else Kernel.flash_window


__all__ = ["FUSED_MOE_IMPL", "MAX_AUTO_ERROR", "MEASURED_HERE", "fused_moe_time", "OWN", "own_roofs", "PredictedTime", "no_prediction_reason", "decode_kernel", "fitted_model_time", "launch_model_time",
           "model_fits", "model_time", "prediction_fit", "priced_cost",
           "priced_launches",
           "prediction_model_time", "predict_time", "predict_with", "prefill_kernel"]

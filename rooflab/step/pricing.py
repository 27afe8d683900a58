"""Pricing a step's launches: floors at the datasheet roofs, predictions from the fits, and one report's fixed parts.

Floors are physical: each row's launches at the datasheet roofs (fp8 GEMMs at the fp8 tensor rate), communication at
the link's datasheet bandwidth. Predictions are models: the GPU's fitted GEMM family against the measured rate of the
GEMM's arithmetic (gemm_ceilings), attention kernels, merge and collectives (graph or eager timings), summed launch
by launch; eager launches never faster than the GPU's measured host issue time (its measured.launch.eager_host_s,
launch_times). Where a piece has no fit, its prediction is None and the Pricer records why.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..comm import collective_time
from ..cost.common import KernelCost, real_number, whole_number
from ..cost.paged import MAX_SPLITS_ALLOWED
from ..capacity.weight_split import dp_attention_splits
from ..cost.gemm import GemmCost
from ..deployment import Deployment
from ..floors import Ceilings, Floors, floor_kernel
from ..load import available, data_dir, load_gpu
from ..predict import (FUSED_MOE_IMPL, MEASURED_HERE, OWN, PredictedTime, fused_moe_time, no_prediction_reason,
                       predict_time, prediction_roofs)
from ..transfer import (DENSE_FP8_BLOCK_GEMM_IMPL, DENSE_FP8_DEEPGEMM_IMPL, DENSE_FP8_GEMM_IMPL,
                        DENSE_GEMM_IMPL,
                        GROUPED_GEMM_IMPL as GROUPED_IMPL, transfer_source)
from ..specs import GpuSpec, LaunchTimes, ModelSpec
from ..units import DType, WeightFormat
from ..vocab import CeilingSource, Kernel
from .dense_block_fp8 import DenseBlockFp8Kernel
from .moe_kernel import DEFAULT_MOE_KERNEL, MoeKernel
from .mla_layout import MlaLayout
from .routing import Routing
from .sampler import Sampler
from .rows import StepRow, floor_row, link_row

_FP8 = (DType.fp8_e4m3, DType.fp8_e5m2)
#: The implementation name a fused block-fp8 expert row carries (our Triton kernel of the engines' fused_moe).
FUSED_IMPL = FUSED_MOE_IMPL


def gemm_ceilings(gpu: GpuSpec, dtype: DType) -> tuple[Ceilings, Optional[str]]:
    """The ceilings a GEMM of `dtype` arithmetic is predicted against, and a note where its rate is transferred.

    The calibrated ceilings (the datasheet's where the GPU has no measured: section). An fp8 GEMM runs at the measured
    fp8 GEMM rate (measured.fp8_gemm_flop_per_s, torch._scaled_mm) where calibrated; else at the datasheet fp8 rate
    times the measured bf16 GEMM rate's fraction of the datasheet bf16 rate (never above a measured fraction)."""
    source = CeilingSource.calibrated if gpu.measured is not None else CeilingSource.datasheet
    roofs = Ceilings.of(gpu, dtype, source)
    if dtype not in _FP8:
        return roofs, None
    m = gpu.measured
    if m is not None and m.fp8_gemm_flop_per_s:
        return dataclasses.replace(roofs, matmul_flop_per_s=float(m.fp8_gemm_flop_per_s)), None
    bf16 = (m.gemm_flop_per_s.get("bf16") or m.gemm_flop_per_s.get("fp16")) if m is not None else None
    if bf16:
        share = bf16 / gpu.matmul_flop_per_s(DType.bf16)
        rate = share * gpu.matmul_flop_per_s(dtype)
        return dataclasses.replace(roofs, matmul_flop_per_s=rate), (
            f"fp8 GEMMs at the bf16 GEMM's measured fraction ({share:.0%}) of the datasheet fp8 rate "
            f"({rate / 1e12:,.0f} TFLOP/s): {gpu.name} has no measured fp8 GEMM rate")
    return roofs, f"fp8 GEMMs at the datasheet fp8 rate: {gpu.name} has no measured GEMM rate"


@functools.lru_cache(maxsize=1)
def _measured_launch_gpus() -> tuple[GpuSpec, ...]:
    """The bundled GPUs whose YAML holds a measured.launch section (loaded once; only files that mention it)."""
    names = [n for n in available("hardware")
             if "\n  launch:" in (data_dir("hardware") / f"{n}.yaml").read_text(encoding="utf-8", errors="replace")]
    return tuple(g for g in map(load_gpu, names) if g.measured is not None and g.measured.launch is not None)


@dataclass(frozen=True)
class Launches:
    """The launch times a step prices `gpu`'s small kernels and eager launches at: its own measured.launch, else a
    bundled NVIDIA GPU's (one of the same architecture first) as measured, a transfer said so; none for other
    vendors (another driver and launch path: no launch time transfers), `why` saying so."""

    times: Optional[LaunchTimes]
    measured_on: Optional[str]                   # the GPU the times were measured on
    provenance: Optional[str]                    # 'measured on this GPU' / 'transferred from <gpu>' (PredictedTime)
    why: str = ""                                # why there are none


def launch_times(gpu: GpuSpec) -> Launches:
    """`gpu`'s launch times and where they come from (Launches)."""
    if gpu.measured is not None and gpu.measured.launch is not None:
        return Launches(gpu.measured.launch, gpu.name, MEASURED_HERE)
    if (gpu.vendor or "").lower() != "nvidia":
        return Launches(None, None, None, f"no launch times transfer to {gpu.vendor or 'this vendor'}'s {gpu.name} "
                                          f"(another driver and launch path), and none are measured on it")
    arch = (gpu.architecture or "").lower()
    sources = sorted((g for g in _measured_launch_gpus() if g.name != gpu.name),
                     key=lambda g: ((g.architecture or "").lower() != arch, g.name))
    if not sources:
        return Launches(None, None, None, f"no bundled GPU has measured launch times, nor has {gpu.name}")
    return Launches(sources[0].measured.launch, sources[0].name, f"transferred from {sources[0].name}")


@dataclass
class Pricer:
    """Prices launches for one report: floors at the datasheet roofs, predictions from the fits (rooflab.predict.
    predict_time: the GPU's own, else a bundled GPU's transferred with its provenance, rooflab.transfer).

    `missing` names each piece without a prediction and why (the step's note); `provenance` each distinct
    (implementation, provenance) a prediction came from, with its error band and what it assumes."""

    gpu: GpuSpec
    dtype: DType
    eager: bool = False
    roofs: Ceilings = None
    launches: Launches = None
    missing: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    gemm_from: Optional[str] = None              # the GEMM fit's provenance, once a GEMM is predicted
    floors_only: bool = False                    # StepTable: the step has no prediction, so none is priced
    dense_block: DenseBlockFp8Kernel = DenseBlockFp8Kernel.scaled_mm_block   # what prices dense block-fp8 GEMMs

    def __post_init__(self) -> None:
        self.roofs = Ceilings.of(self.gpu, self.dtype)
        self.launches = launch_times(self.gpu)

    def floors(self, kernels: list[KernelCost], times: float = 1.0, dtype: Optional[DType] = None) -> Floors:
        """The floors of launches run one after another, times `times`: each launch's (rooflab.floors.floor_kernel)
        summed, FLOPs and bytes too."""
        roofs = self.roofs if dtype is None or dtype is self.dtype else Ceilings.of(self.gpu, dtype)
        parts = [floor_kernel(k, roofs) for k in kernels]
        return Floors(np.float64(times * float(sum(k.flops for k in kernels))),
                      np.float64(times * float(sum(k.hbm_bytes for k in kernels))),
                      times * sum(float(p.t_compute_s) for p in parts), times * sum(float(p.t_memory_s) for p in parts),
                      times * sum(float(p.t_floor_s) for p in parts), roofs.ridge_flop_per_byte,
                      times * sum(float(p.t_exp_s) for p in parts))

    def launch(self, t: Optional[float]) -> Optional[float]:
        """One launch's time as issued: in a graph as fitted; eager never below the host's issue time."""
        if t is None or not self.eager:
            return t
        if self.launches.times is None:
            self.miss("eager launches", self.launches.why)
            return None
        return max(t, self.launches.times.eager_host_s)

    def miss(self, what: str, why: str) -> None:
        self.missing.setdefault(what, why)

    def note(self, text: Optional[str]) -> None:
        """Add `text` to the step's notes once (nothing for an empty one)."""
        if text and text not in self.notes:
            self.notes.append(text)

    def predicted(self, kernel: Kernel, price: Callable, dtype: Optional[DType] = None,
                  impl: Optional[str] = None) -> Optional[PredictedTime]:
        """predict_time for `kernel` (transferred where the GPU has no fit of its own), its provenance recorded; None
        with the reason recorded where no fit predicts it here; None at once with `floors_only` (a table whose step
        has no prediction: its rows' would be thrown away)."""
        if self.floors_only:
            return None
        p = predict_time(self.gpu, kernel, price, dtype or self.dtype, impl, optional=True)
        if p is None:
            self.miss(kernel.value + (f" ({impl})" if impl and impl != OWN else ""),
                      no_prediction_reason(self.gpu, kernel, None if impl == OWN else impl))
            return None
        key = (p.impl, p.provenance)
        if key not in self.provenance:
            self.provenance[key] = p
        return p

    def fitted(self, kernel: Kernel, price: Callable, impl: Optional[str] = None) -> Optional[float]:
        p = self.predicted(kernel, price, impl=impl)
        return None if p is None else self.launch(p.t_predicted_s)

    def gemm_time(self, cost: GemmCost, arithmetic: DType, block: bool = False) -> Optional[float]:
        """A GEMM's predicted time: the fitted dense GEMM of its arithmetic (dense_gemm_impl; `block` for block-fp8
        weights) against that arithmetic's measured rate (the GPU's own fit, or a bundled GPU's transferred:
        rooflab.predict.predict_time)."""
        p = self.predicted(Kernel.gemm, lambda num_sms, units_per_sm: cost, arithmetic,
                           self.dense_gemm_impl(arithmetic, block, cost))
        if p is None:
            return None
        if p.fitted_on is None:
            _, note = gemm_ceilings(self.gpu, arithmetic)     # the own fit's roofs say how an fp8 rate was priced
            self.note(note)
        self.gemm_from = p.provenance
        return self.launch(p.t_predicted_s)

    def dense_gemm_impl(self, arithmetic: DType, block: bool = False, cost: Optional[GemmCost] = None) -> str:
        """The dense GEMM fit that prices `arithmetic`: for fp8 with `block` (1 x 128 activation, 128 x 128 weight
        scales) DeepGEMM's fit (deepgemm, rooflab.fit.gemm_fit.fit_dense_fp8_deepgemm) where the engine runs DeepGEMM
        (`dense_block`, rooflab.step.dense_block_fp8) and it takes `cost`'s shape, else the block-fp8 fit
        (torch_scaled_mm_block, rooflab.fit.gemm_fit.fit_dense_fp8_block), for other fp8
        the per-tensor fp8 fit (torch._scaled_mm, fit_dense_fp8), each where the GPU, or the GPU a fit transfers
        from, has one; block fp8 without a block fit falls to the per-tensor fit, fp8 without either to the cuBLAS
        fit (torch_cublas, fitted on bf16 / fp16) at the fp8 rate, each noted; every other arithmetic the cuBLAS fit."""
        if not arithmetic.is_fp8:
            return DENSE_GEMM_IMPL
        fits = self.gpu.fitted_for(Kernel.gemm) or transfer_source(self.gpu, Kernel.gemm)[1]
        impls = {f.impl for f in fits}
        deep = self.dense_block is DenseBlockFp8Kernel.deepgemm
        if block and deep and cost is not None and self.dense_block.takes(cost.n, cost.k):
            fit = next((f for f in fits if f.impl == DENSE_FP8_DEEPGEMM_IMPL), None)
            if fit is not None:
                self.note(f"block-fp8 GEMMs the engine runs with DeepGEMM priced by the {DENSE_FP8_DEEPGEMM_IMPL} "
                          f"fit (deep_gemm.fp8_gemm_nt as SGLang 0.5.12 calls it, measured on one H200: "
                          f"measurements/{fit.campaigns[0] if fit.campaigns else ''}); the per-token-group "
                          f"activation quantisation before each, one launch a GEMM input, at its measured launch "
                          f"time (rooflab.step.small_ops.act_quant_time)")
                return DENSE_FP8_DEEPGEMM_IMPL
            self.note(f"block-fp8 GEMMs the engine runs with DeepGEMM priced by the {DENSE_FP8_BLOCK_GEMM_IMPL} "
                      f"fit: no {DENSE_FP8_DEEPGEMM_IMPL} fit predicts {self.gpu.name}")
        if block and DENSE_FP8_BLOCK_GEMM_IMPL in impls:
            fit = next(f for f in fits if f.impl == DENSE_FP8_BLOCK_GEMM_IMPL)
            self.note(f"block-fp8 GEMMs (1 x 128 activation, 128 x 128 weight scales) priced by the "
                      f"{DENSE_FP8_BLOCK_GEMM_IMPL} fit (torch._scaled_mm with blockwise scales, cuBLASLt, measured "
                      f"on one H200: measurements/{fit.campaigns[0] if fit.campaigns else ''}); the per-token-group "
                      f"activation quantisation before each, one launch a GEMM input, at its measured launch time "
                      f"(rooflab.step.small_ops.act_quant_time)")
            return DENSE_FP8_BLOCK_GEMM_IMPL
        if DENSE_FP8_GEMM_IMPL in impls:
            if block:
                self.note(f"block-fp8 GEMMs priced as the per-tensor fp8 fit ({DENSE_FP8_GEMM_IMPL}): no block-fp8 "
                          f"fit ({DENSE_FP8_BLOCK_GEMM_IMPL}) predicts {self.gpu.name}")
            return DENSE_FP8_GEMM_IMPL
        if DENSE_GEMM_IMPL not in impls:                          # nothing prices a GEMM here: no claim of how
            return DENSE_GEMM_IMPL
        note = (f"fp8 GEMMs priced as the bf16 cuBLAS fit at the fp8 rate: no dense fp8 GEMM fit "
                f"({DENSE_FP8_GEMM_IMPL}) predicts {self.gpu.name}")
        self.note(note)
        return DENSE_GEMM_IMPL

    def grouped_gemm_time(self, cost: GemmCost, arithmetic: DType) -> tuple[Optional[float], str]:
        """A MoE layer's expert GEMM as one grouped launch: the grouped-GEMM fit of its arithmetic (rooflab.fit.
        moe_fit: c0 + max(F / pi, Q / (r beta)) / eta over the touched experts' weights; the GPU's own, else the
        H200's transferred), and the implementation that priced it. Where no grouped fit predicts it here (fp4 or
        int arithmetic, a GPU whose own GEMM fits have none, a refused transfer): the dense cuBLAS fit, noted."""
        impl = GROUPED_IMPL.get(arithmetic, GROUPED_IMPL[DType.bf16] if arithmetic.bytes == 2 else None)
        own = {f.impl for f in self.gpu.fitted_for(Kernel.gemm)}
        p = None
        if impl is not None and (not own or impl in own):
            p = predict_time(self.gpu, Kernel.gemm, lambda num_sms, units_per_sm: cost, arithmetic, impl,
                             optional=True)
        if p is None:
            note = (f"MoE experts priced as dense cuBLAS GEMMs: no grouped-GEMM fit ({impl or arithmetic.value}) "
                    f"predicts {self.gpu.name}")
            self.note(note)
            return self.gemm_time(cost, arithmetic), self.dense_gemm_impl(arithmetic)
        self.provenance.setdefault((p.impl, p.provenance), p)
        self.gemm_from = p.provenance
        return self.launch(p.t_predicted_s), impl

    def expert_gemm_time(self, cost: GemmCost, arithmetic: DType, kernel: MoeKernel, tokens: float, pairs: float,
                         touched: float, n: int) -> tuple[Optional[float], str]:
        """A MoE layer's expert GEMM (`cost`: `pairs` rows over `touched` experts' [n, k] weights; `tokens` the
        step's tokens, the engine's config key) as `kernel` prices it (rooflab.step.moe_kernel), and the
        implementation that priced it: `tuned` the dense cuBLAS fit on the experts' whole work in one launch
        (2 P n k FLOPs over the touched experts' weights: a tuned kernel assumed as efficient as cuBLAS on them);
        `fused_block_fp8` the larger of that and our fused kernel's measured fit (fused_time); `torch_grouped`
        and `default_config` (not measured: priced as torch's) the grouped-GEMM fit (grouped_gemm_time)."""
        if kernel is MoeKernel.fused_block_fp8:
            return self.fused_time(cost, arithmetic, tokens, pairs, touched, n)
        if kernel is MoeKernel.tuned:
            return self.gemm_time(cost, arithmetic), self.dense_gemm_impl(arithmetic)
        return self.grouped_gemm_time(cost, arithmetic)

    def fused_time(self, cost: GemmCost, arithmetic: DType, tokens: float, pairs: float, touched: float, n: int
                   ) -> tuple[Optional[float], str]:
        """The fused block-fp8 kernel: max(tuned's price, c0 + Q / (eta_mem beta) + tiles tau) with this GPU's fused
        MoE fit (its YAML's gemm / triton_fused_moe entry: rooflab.predict.fused_moe_time), or tuned's price, noted,
        where this GPU has no such fit (it is not transferred), the arithmetic is not fp8 or the step's tokens are
        past the fit's measured range (its per-tile term would extrapolate into compute-bound launches it never
        saw). The max rests on the measurement: every one of the 26 measured launches
        (measurements/moe/h200-fused-moe-block-fp8.csv, both GEMMs at 1 .. 512 tokens) ran slower than tuned's price
        of the same work, the least by 6.1% (gate/up at 512 tokens; down at least 1.40x); the fit itself prices
        every measured row at least 10% over tuned, so the max guards the range between the rows, not a row."""
        tuned = self.gemm_time(cost, arithmetic)
        fit = self.gpu.fitted_model(Kernel.gemm, FUSED_IMPL) if arithmetic.is_fp8 else None
        why = (f"{self.gpu.name} has no fitted {FUSED_IMPL} model (our kernel is measured on one GPU; its fit is "
               f"not transferred)" if arithmetic.is_fp8 else
               f"it is measured for fp8 arithmetic, not {arithmetic.value}")
        if fit is not None and tokens > fit.max_tokens:
            fit, why = None, f"{tokens:,.0f} tokens a step is past the {fit.max_tokens:,} it is measured to"
        if fit is None:
            note = f"MoE experts' fused block-fp8 kernel priced as tuned: {why}"
            self.note(note)
            return tuned, self.dense_gemm_impl(arithmetic)
        roofs, _ = prediction_roofs(fit, self.gpu, arithmetic)
        fused = self.launch(fused_moe_time(fit, roofs, tokens, pairs, touched, n, float(cost.hbm_bytes)))
        if tuned is None or fused is None:
            return None, FUSED_IMPL
        return max(tuned, fused), FUSED_IMPL

    @property
    def sources(self) -> str:
        """The provenance of every prediction made so far, one phrase ('transferred from h200-sxm'), or ''."""
        return ", ".join(sorted({p.provenance for p in self.provenance.values()}))

    def gemms(self, costs: list[GemmCost], times: float = 1.0, arithmetic: Optional[DType] = None,
              block: bool = False) -> Optional[float]:
        total = 0.0
        for cost in costs:
            t = self.gemm_time(cost, arithmetic or self.dtype, block)
            if t is None:
                return None
            total += t
        return times * total


@dataclass
class StepContext:
    """One report's fixed parts: the model, GPU, deployment and formats, and the pricer."""

    model: ModelSpec
    gpu: GpuSpec
    dep: Deployment
    dtype: DType                                 # activations and attention
    kv_dtype: DType
    weights_as: object                           # DType / WeightFormat override of the quantizable weights, or None
    pricer: Pricer
    imbalance: float = 1.0
    cp: int = 1
    decode_attention: str = "shared"             # how decode attention reads a GQA group's KV (step.attention)
    moe_kernel: MoeKernel = DEFAULT_MOE_KERNEL   # how the experts' GEMMs are priced (step.moe_kernel)
    dp_attention_release: Optional[tuple] = None  # SGLang's release for DP attention's weight layout (None: newest)
    routing: Routing = Routing.unpriced          # how the experts are picked between router and experts (step.routing)
    mla_decode_splits: Optional[int] = None      # the engine's MLA decode split count (step.mla_decode; None: searched)
    mla_layout: MlaLayout = MlaLayout.separate   # the MLA projections' GEMMs (step.mla_layout)
    absorbed_bytes: Optional[float] = None       # bytes a W_UK / W_UV parameter (step.mla_layout; None: activations')
    sampler: Sampler = Sampler.graphed_greedy    # the token pick after the model's graph (step.sampler)
    graphs: bool = True                          # the step's model runs as a CUDA graph (step.sampler.graph_replayed)

    @property
    def weight_splits(self) -> dict[str, int]:
        """{component: ways} under data-parallel attention at the release (capacity.weight_split, the rule capacity
        counts the weights with); {} without it."""
        return dp_attention_splits(self.dep.tensor_parallel, self.dep.attention_data_parallel,
                                   self.dp_attention_release)

    def arithmetic(self, component: str) -> DType:
        """A component's GEMM arithmetic: --gemm-dtype, else fp8 for fp8-stored weights on a GPU with fp8 tensor
        cores, else the activations' (weight_only_fp8: fp8 weights where the GPU has no fp8 rate)."""
        if self.dep.gemm_dtype is not None:
            return self.dep.gemm_dtype
        fmt = self.model.weight_format(component, self.weights_as)
        fp8 = fmt in (WeightFormat.fp8, WeightFormat.fp8_block) and not self.weight_only_fp8(component)
        return DType.fp8_e4m3 if fp8 else self.dtype

    def weight_only_fp8(self, component: str) -> bool:
        """Whether a component's fp8-stored weights run weight-only: the GPU has no fp8 tensor-core rate (compute
        capability below 8.9, A100), so the weights are read at their fp8 bytes and the GEMM runs in the
        activations' dtype, as vLLM's FP8 Marlin kernel does ("For GPUs that lack FP8 hardware support, we can
        leverage the Marlin kernel for fast weight-only FP8 quantization", vllm 0.29.0 model_executor/layers/
        quantization/fp8.py:257-258; the Marlin kernel model_executor/kernels/linear/scaled_mm/marlin.py:29-33,
        fp8 hardware = CC 8.9 in platforms/cuda.py:571-572; vllm 0.10.0 fp8.py:197 use_marlin = not
        has_device_capability(89)). Not where --gemm-dtype names the arithmetic."""
        if self.dep.gemm_dtype is not None:
            return False
        fmt = self.model.weight_format(component, self.weights_as)
        return fmt in (WeightFormat.fp8, WeightFormat.fp8_block) and not self.gpu.has_rate(DType.fp8_e4m3)

    def block_scaled(self, component: str) -> bool:
        """Whether a component's GEMMs run block-scaled fp8: block-fp8 weights (128 x 128 scales) at fp8
        arithmetic (not where --gemm-dtype makes them another arithmetic)."""
        fmt = self.model.weight_format(component, self.weights_as)
        return fmt is WeightFormat.fp8_block and self.arithmetic(component).is_fp8

    def bits(self, component: str) -> float:
        return self.model.weight_format(component, self.weights_as).bits_per_weight

    @property
    def attn_tp(self) -> int:
        return self.dep.attention_tensor_parallel

    @property
    def timing(self) -> str:
        """The collectives' fit timing: the step's (`graphs`), not the deployment's alone."""
        return "graph" if self.graphs else "eager"


def weights_as_of(deployment: Deployment):
    """The format a step prices the quantizable weights in (StepContext.weights_as): the deployment's weight format,
    else its GEMM dtype (None: as shipped)."""
    return deployment.weight_format if deployment.weight_format is not None else deployment.gemm_dtype


def step_dtypes(model: ModelSpec, deployment: Deployment) -> tuple[DType, DType]:
    """(the activations' dtype, the KV cache's) a step runs at: the deployment's, else the checkpoint's (bf16 where it
    states none); the cache the activations' where the deployment names none."""
    dtype = deployment.dtype or model.weight_dtype or DType.bf16
    return dtype, deployment.kv_cache_dtype or dtype


def step_context(model: ModelSpec, gpu: GpuSpec, deployment: Deployment, expert_imbalance: float = 1.0,
                 decode_attention: str = "shared", moe_kernel: MoeKernel = DEFAULT_MOE_KERNEL,
                 dp_attention_release: Optional[tuple] = None, routing: Routing = Routing.unpriced,
                 mla_decode_splits: Optional[int] = None, mla_layout: MlaLayout = MlaLayout.separate,
                 absorbed_bytes: Optional[float] = None, sampler: Sampler = Sampler.graphed_greedy,
                 dense_block: DenseBlockFp8Kernel = DenseBlockFp8Kernel.scaled_mm_block,
                 graphs: Optional[bool] = None) -> StepContext:
    """The fixed parts of a step on `deployment` (formats, pricers) for step_rows; the deployment already checked;
    `decode_attention` a checked rooflab.step.attention.DecodeAttention, `moe_kernel` a rooflab.step.moe_kernel.
    MoeKernel; `dp_attention_release` the SGLang release whose DP-attention layout the weights follow
    (EngineKernels.layout_release; an InputError where that release runs no such layout); `routing` a
    rooflab.step.routing.Routing (its name), how the MoE layers' experts are picked; `mla_decode_splits` the KV
    splits the engine's MLA decode runs (EngineKernels.mla_decode_splits; None: rooflab's own split search), a whole
    number of at least 1, else an InputError naming it; `mla_layout` (rooflab.step.MlaLayout or its name) the
    GEMMs an MLA layer's projections launch and `absorbed_bytes` the bytes a parameter of its absorbed W_UK / W_UV
    matmuls (EngineKernels; None: the activations' width); `sampler` (rooflab.step.Sampler or its name) what picks
    the tokens after the model's graph (EngineKernels.sampler; default rooflab's own graphed greedy argmax);
    `dense_block` (rooflab.step.dense_block_fp8.DenseBlockFp8Kernel or its name) what prices the dense block-fp8 GEMMs
    (EngineKernels.dense_block; default the torch_scaled_mm_block fit); `graphs` whether the step's model runs as a
    CUDA graph (rooflab.step.work.step_graphed: False where the engine runs this step eagerly; None: as the
    deployment says), which times every launch and collective of the step (graph or eager; the elementwise fusion
    is the deployment's either way)."""
    if mla_decode_splits is not None:
        mla_decode_splits = whole_number(mla_decode_splits, "mla_decode_splits", maximum=MAX_SPLITS_ALLOWED)
    dp_attention_splits(deployment.tensor_parallel, deployment.attention_data_parallel, dp_attention_release)
    dtype, kv_dtype = step_dtypes(model, deployment)
    weights_as = weights_as_of(deployment)
    graphs = deployment.cuda_graphs and (graphs is None or bool(graphs))
    return StepContext(model=model, gpu=gpu, dep=deployment, dtype=dtype,
                       kv_dtype=kv_dtype, weights_as=weights_as,
                       pricer=Pricer(gpu, dtype, eager=not graphs,
                                     dense_block=DenseBlockFp8Kernel.of(dense_block, "dense_block")),
                       imbalance=expert_imbalance,
                       cp=deployment.prefill_context_parallel, decode_attention=decode_attention,
                       moe_kernel=moe_kernel, dp_attention_release=dp_attention_release,
                       routing=Routing.of(routing, "routing"), mla_decode_splits=mla_decode_splits,
                       mla_layout=MlaLayout.of(mla_layout, "mla_layout"),
                       absorbed_bytes=None if absorbed_bytes is None else real_number(absorbed_bytes,
                                                                                       "absorbed_bytes", 0.5, 8),
                       sampler=Sampler.of(sampler, "sampler"), graphs=graphs)


def priced_row(pricer: Pricer, variant: str, label: str, kernels: list[KernelCost], times: float,
               predicted: Optional[float], impl: Optional[str] = None, dtype: Optional[DType] = None,
               **fields) -> StepRow:
    """A row of `kernels` run `times` over: their floors at the pricer's roofs (`dtype`'s where given), the
    prediction as given."""
    if variant == "gemm" and predicted is not None and "predicted_from" not in fields:
        fields["predicted_from"] = pricer.gemm_from
    if predicted is None:              # nothing predicts it here: no fit named, no rate (the step's note says why)
        impl = None
        fields["source"] = "no prediction on this GPU"
    return floor_row(variant, label, pricer.floors(kernels, times, dtype), predicted, predicted_impl=impl, **fields)


def gemm_row(ctx: StepContext, label: str, costs: list[GemmCost], count: int, component: str, rows: int,
             **fields) -> StepRow:
    """GEMMs of one component for `count` layers, at the component's arithmetic and weight format; `rows` their m."""
    arith, block = ctx.arithmetic(component), ctx.block_scaled(component)
    predicted = ctx.pricer.gemms(costs, count, arith, block)
    impl = " + ".join(dict.fromkeys(ctx.pricer.dense_gemm_impl(arith, block, c) for c in costs))
    source = f"GEMM fit ({impl}) at the measured {arith.value} rate"
    if ctx.weight_only_fp8(component):
        source = f"weight-only fp8 (Marlin), {arith.value} arithmetic: {source}"
    return priced_row(ctx.pricer, "gemm", label, [c.kernel for c in costs], count, predicted, impl, arith,
                      calls=len(costs) * count, weight_bytes=count * sum(float(c.weight_bytes) for c in costs),
                      source=source, component=component,
                      gemm_dtype=arith.value, gemm_rows=rows, **fields)


def comm_row(gpu: GpuSpec, kernel: Kernel, label: str, bytes_per_rank: float, world: int, calls: float,
             missing: dict, timing: str = "graph", part: str = "tokens") -> StepRow:
    """A collective `calls` times over `world` GPUs: its floor at the link's datasheet bandwidth, its prediction from
    the link's fit (rooflab.comm.collective_time; None, recorded in `missing`, where the link has none)."""
    t = collective_time(gpu, kernel, bytes_per_rank, world, timing)
    if t.t_predicted_s is None:
        missing.setdefault(f"{kernel.value} (interconnect collectives)",
                           f"{gpu.name} has no {timing} {kernel.value} fit of its link (collectives are fitted per "
                           f"interconnect and not transferred)")
    predicted = None if t.t_predicted_s is None else calls * t.t_predicted_s
    source = (f"{kernel.value} fit over {t.fitted_world_size} GPUs ({timing})" + (", scaled" if t.scaled else "")
              if t.fitted_world_size else "no fit")
    return link_row(kernel.value, label, calls * t.t_floor_s, predicted,
                    predicted_impl="nccl" if predicted is not None else None, calls=int(round(calls)),
                    comm_bytes=calls * t.bus_bytes, part=part, source=source,
                    predicted_from=MEASURED_HERE if predicted is not None else None)


__all__ = ["Launches", "Pricer", "StepContext", "comm_row", "gemm_row", "gemm_ceilings", "launch_times",
           "priced_row", "step_context", "step_dtypes", "weights_as_of"]

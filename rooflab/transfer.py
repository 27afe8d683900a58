"""A fit measured on one GPU, predicting another: each fitted constant in hardware terms.

A fit (specs/fitted.FittedModel) holds its constants against the calibrated ceilings of the GPU it was measured
on (predict.py):  t_pred = c0 + t_model(calibrated roofs, SMs) / eta.  Those constants are already hardware terms
except the roofs themselves, so a fit transfers by re-deriving the roofs the kernel meets on the target:

    beta_T   = B_T x (beta_S / B_S)                  the copy bandwidth's measured fraction of the datasheet HBM rate
    pi_T     = P_T x (pi_S / P_S) x (s_T / s_S)      the GEMM's measured fraction of the dense tensor roof, times the
                                                     share s of that roof the kernel's instruction path reaches
                                                     (TensorPath: mma.sync on Hopper reaches 2/3 of it)
    eps_T    = E_T x (eps_S / E_S)                   the exp units' measured fraction
    curve_T  = the per-SM read-bandwidth curve (n SMs streaming -> bytes/s) at the target's clock, capped at the
               whole GPU's streaming rate beta_stream,S / B_S x B_T
    f, c0, a, eta, units per SM, tile terms          kept: the launch model (cost/parallel.py with the target's SM
                                                     count and its shared memory), the per-call overhead, how exp
                                                     work composes with matrix work, the efficiency

(B, P, E the datasheet roofs; S the source, T the target). What it assumes, said in every transferred row: the same
fractions of each roof on the target (the same library and code path, the same memory-system efficiency), launch
overheads as measured on the source, and the instruction path's share from MMA_SYNC_SHARE. A kernel transfers only
where it runs: wgmma kernels on Hopper alone; FA2-class kernels, cuDNN's fused attention and rooflab's mma.sync
kernels on NVIDIA compute capability 8.0 and later; eager PyTorch (cuBLAS GEMMs and a softmax) on any NVIDIA GPU.
No fit transfers to AMD parts (another ISA, other libraries).

A launch the source ran at a rate its SMs set, not its HBM (SM_BOUND_LAUNCHES, each from an H200 measurement), is
priced on the target at its time on the source x r, r = (SMs x clock)_S / (SMs x clock)_T, never under its time at
the target's roofs at full speed (predict.prediction_model_time): a kernel whose time does not follow its bytes on the source does not follow the target's bandwidth either.
Transferred to the GPU it was measured on (r = 1, the same roofs) every launch keeps its fitted time.

The same derivation with fewer SMs of one GPU (fewer_sms) is the SM-scaling check of issue 31 item 5: the roofs
scale with the SM count, the bandwidth follows the per-SM read curve.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .cudnn_kernel import modelled_impl
from .errors import InputError
from .floors import Ceilings
from .specs import FittedModel, GpuSpec
from .units import DType
from .vocab import CeilingSource, Kernel, _Named


class TensorPath(_Named):
    """Which tensor-core instruction a fitted implementation's matrix work runs on."""

    mma_sync = "mma_sync"      # Ampere's warp-level MMA: FlashAttention 2.x, PyTorch's flash and efficient back ends
    wgmma = "wgmma"            # Hopper's warpgroup MMA: runs on compute capability 9.0 only
    native = "native"          # the library picks the architecture's own (cuBLAS, cuDNN)


#: The instruction path of every implementation id a bundled fit names (bench/torch_peers.py, bench/ours.py).
IMPL_PATH: dict[str, TensorPath] = {
    "rooflab": TensorPath.mma_sync, "rooflab_hopper": TensorPath.wgmma, "rooflab_hopper_tile": TensorPath.wgmma,
    "torch_flash": TensorPath.mma_sync, "torch_flash_dense": TensorPath.mma_sync,
    "torch_efficient": TensorPath.mma_sync, "torch_cudnn": TensorPath.native, "torch_cudnn_dense": TensorPath.native,
    "torch_eager": TensorPath.native, "torch_bmm_dense": TensorPath.native, "torch_cublas": TensorPath.native,
    "torch_grouped_mm": TensorPath.native, "torch_scaled_grouped_mm": TensorPath.native,
    "torch_scaled_mm": TensorPath.native, "torch_scaled_mm_block": TensorPath.native, "deepgemm": TensorPath.wgmma,
    "torch_cudnn_shapes": TensorPath.native, "attention_pytorch": TensorPath.native,
}

#: A MoE layer's experts as one grouped GEMM: the implementation fitted for each arithmetic (rooflab.fit.moe_fit;
#: benchmarks/moe_gemm.py measures torch._grouped_mm and torch._scaled_grouped_mm, CUTLASS on sm90).
GROUPED_GEMM_IMPL = {DType.bf16: "torch_grouped_mm", DType.fp8_e4m3: "torch_scaled_grouped_mm"}
#: A dense GEMM in bf16 / fp16: torch.mm (cuBLAS), fitted by rooflab.fit.gemm_fit.fit_gemm.
DENSE_GEMM_IMPL = "torch_cublas"
#: A dense fp8 GEMM: torch._scaled_mm with per-tensor scales (cuBLASLt), fitted by rooflab.fit.gemm_fit.fit_dense_fp8
#: on benchmarks/dense_fp8_gemm.py's rows.
DENSE_FP8_GEMM_IMPL = "torch_scaled_mm"
#: A block-fp8 dense GEMM (1 x 128 activation scales, 128 x 128 weight scales, as DeepSeek-V3 / R1 checkpoints
#: ship): torch._scaled_mm with blockwise scales (cuBLASLt), fitted by rooflab.fit.gemm_fit.fit_dense_fp8_block on
#: benchmarks/dense_fp8_block_gemm.py's rows.
DENSE_FP8_BLOCK_GEMM_IMPL = "torch_scaled_mm_block"
#: The same GEMM as SGLang 0.5.x runs it on compute capability 9.0: DeepGEMM's fp8_gemm_nt (sgl-deep-gemm 0.1.0, an
#: sm90 wgmma kernel), fitted by rooflab.fit.gemm_fit.fit_dense_fp8_deepgemm on benchmarks/deepgemm_block_gemm.py's
#: rows.
DENSE_FP8_DEEPGEMM_IMPL = "deepgemm"

#: Hopper's mma.sync reaches about 2/3 of the dense tensor roof, which wgmma alone reaches: FlashAttention-3
#: (Shah et al., arXiv 2407.08608), section 2.2, "the older mma.sync instruction can only reach about 2/3 the peak
#: throughput of the Hopper Tensor Cores". On Ampere, Ada and Turing mma.sync is the native path (share 1).
HOPPER_MMA_SYNC_SHARE = 2.0 / 3.0
#: Hopper's fp16 dense rate a clock an SM (H100 whitepaper: 4096 FLOP) times that share: the mma.sync rate a clock an
#: SM that datacenter Blackwell is ASSUMED to keep (its native path is tcgen05; no published figure of its mma.sync
#: rate is bundled), so its share of Blackwell's roof is this over Blackwell's own per-clock rate.
MMA_SYNC_FLOP_PER_CLOCK_PER_SM = HOPPER_MMA_SYNC_SHARE * 4096

#: Architectures whose fused attention kernels (FA2-class, cuDNN, rooflab's) run: compute capability 8.0 and later.
_ATTENTION_MIN_CC = (8, 0)


def mma_sync_share(gpu: GpuSpec) -> tuple[float, str]:
    """The share of `gpu`'s dense fp16 tensor roof an mma.sync kernel reaches, and where the figure comes from."""
    arch = (gpu.architecture or "").lower()
    if arch == "hopper":
        return HOPPER_MMA_SYNC_SHARE, "mma.sync at 2/3 of Hopper's roof (FlashAttention-3, arXiv 2407.08608, 2.2)"
    if arch == "blackwell":
        per_clock = (gpu.tensor_flop_per_clock_per_sm or {}).get("fp16")
        if per_clock is None or gpu.num_sms is None or gpu.boost_clock_hz is None:
            raise InputError(f"{gpu.name}: transferring an mma.sync fit to Blackwell needs num_sms, boost_clock_hz and "
                             f"tensor_flop_per_clock_per_sm.fp16")
        return MMA_SYNC_FLOP_PER_CLOCK_PER_SM / per_clock, (
            f"ASSUMED: Blackwell runs mma.sync at Hopper's {MMA_SYNC_FLOP_PER_CLOCK_PER_SM:.0f} FLOP a clock an SM "
            f"({MMA_SYNC_FLOP_PER_CLOCK_PER_SM / per_clock:.0%} of its tcgen05 roof)")
    return 1.0, "mma.sync is the native tensor path"


def path_share(gpu: GpuSpec, path: TensorPath) -> float:
    return mma_sync_share(gpu)[0] if path is TensorPath.mma_sync else 1.0


def why_not(source: GpuSpec, target: GpuSpec, fitted: FittedModel) -> Optional[str]:
    """Why `fitted` (measured on `source`) cannot predict `target`, or None where it transfers."""
    path = IMPL_PATH.get(fitted.impl)
    if path is None:
        return f"{fitted.impl}'s instruction path is not known to rooflab.transfer"
    if (target.vendor or "").lower() != "nvidia":
        return f"no fit transfers to {target.vendor or 'this vendor'}'s {target.name} (another ISA and libraries)"
    cc = target.compute_capability_version
    if path is TensorPath.wgmma and (target.architecture or "").lower() != "hopper":
        return f"{fitted.impl} is a wgmma kernel: it runs on Hopper only ({target.name} is {target.architecture})"
    if fitted.impl != "torch_eager" and fitted.impl != "torch_cublas" and (cc is None or cc < _ATTENTION_MIN_CC):
        return f"{fitted.impl} needs compute capability 8.0 or later ({target.name}: {target.compute_capability})"
    if source.measured is None:
        return f"{source.name} has no calibration to take the roofs' fractions from"
    return None


def matmul_fraction(gpu: GpuSpec, dtype: DType) -> tuple[float, Optional[str]]:
    """The measured GEMM rate of `dtype` as a fraction of the datasheet's, and a note where it is not measured.

    An fp8 (or fp4) rate never measured is priced at the bf16 GEMM's measured fraction: no precision is priced
    above a measured precision's achieved fraction without a calibration behind it."""
    m = gpu.measured
    if m is None:
        raise InputError(f"{gpu.name} has no measured: section")
    dtype = DType.of(dtype)
    if dtype.is_fp8 and m.fp8_gemm_flop_per_s:
        return float(m.fp8_gemm_flop_per_s) / gpu.matmul_flop_per_s(dtype), None
    measured = m.gemm_flop_per_s.get(dtype.rate_key)
    if measured:
        return measured / gpu.matmul_flop_per_s(dtype), None
    bf16 = m.gemm_flop_per_s.get("bf16") or m.gemm_flop_per_s.get("fp16")
    key = "bf16" if m.gemm_flop_per_s.get("bf16") else "fp16"
    share = bf16 / gpu.matmul_flop_per_s(DType(key))
    return share, (f"{dtype.value} at {key}'s measured GEMM fraction ({share:.0%}) of the datasheet rate: {gpu.name} "
                   f"has no measured {dtype.value} rate")


def calibrated_ceilings(gpu: GpuSpec, dtype: DType) -> tuple[Ceilings, Optional[str]]:
    """The calibrated ceilings a fit on `gpu` predicts against, with the matrix rate never above a measured fraction
    (an fp8 attention or GEMM without an fp8 calibration at bf16's measured fraction), and a note where transferred."""
    roofs = Ceilings.of(gpu, dtype, CeilingSource.calibrated)
    share, note = matmul_fraction(gpu, dtype)
    if DType.of(dtype).is_fp8 and note is None and not gpu.measured.fp8_attention_flop_per_s:
        note = (f"fp8 matrix work at the measured fp8 GEMM rate ({share:.0%} of the datasheet's): {gpu.name} has no "
                f"fp8 attention calibrated")
    return dataclasses.replace(roofs, matmul_flop_per_s=share * gpu.matmul_flop_per_s(dtype)), note


def _stream_curve(source: GpuSpec, target: GpuSpec) -> tuple[tuple[int, float], ...]:
    """The source's per-SM read curve at the target's clock, capped at the target's whole-GPU streaming rate."""
    stream = tuple(sorted((int(n), float(b)) for n, b in (source.measured.stream_bytes_per_s or {}).items()))
    if not stream or target.num_sms is None or stream[-1][0] != source.num_sms:
        return ()
    clock = (target.boost_clock_hz / source.boost_clock_hz) if target.boost_clock_hz and source.boost_clock_hz else 1.0
    cap = stream[-1][1] / source.hbm_bandwidth_bytes_per_s * target.hbm_bandwidth_bytes_per_s
    return tuple((n, min(b * clock, cap)) for n, b in stream if n < target.num_sms) + ((target.num_sms, cap),)


#: (fitted implementation, launch name) -> why that launch's time is set by the SMs on the GPU it was fitted on.
#: PyTorch's row softmax (torch.softmax over the last dim, fp16, torch 2.11 on the H200): fp32 rows, twice the bytes,
#: take the same time as fp16 rows from T 2048 up (6.61 vs 6.70 ms at 524,288 rows of 4096; 8.73 vs 7.94 ms at
#: 262,144 rows of 8192), and fp16 rows of every length run at 1.1-2.8 TB/s where a clone of the same bytes moves
#: 4.0-4.3 (measurements/shapes/h200-softmax-bound.csv, benchmarks/h200_softmax_bound.py): its row reductions, one
#: thread block a row above 1,024 columns, bind, not HBM. The eager attention's softmax launch is that kernel.
SM_BOUND_LAUNCHES: dict[tuple[str, str], str] = {
    ("torch_eager", "softmax"): "PyTorch's fp16 row softmax is bound by its SMs on the H200 (fp32 rows take the same "
                                "time from T 2048; measurements/shapes/h200-softmax-bound.csv)",
}


def sm_ratio(source: GpuSpec, target: GpuSpec) -> float:
    """(SMs x boost clock) of `source` over that of `target`: how an SM-bound launch's time scales (1 where either
    GPU lacks the figures)."""
    if not (source.num_sms and target.num_sms and source.boost_clock_hz and target.boost_clock_hz):
        return 1.0
    return (source.num_sms * source.boost_clock_hz) / (target.num_sms * target.boost_clock_hz)


@dataclass(frozen=True)
class Transfer:
    """The roofs a fit from `source` meets on `target`, and what the transfer assumes (one line a row can print).

    `source_ceilings` and `sm_ratio` price the SM-bound launches (SM_BOUND_LAUNCHES): their time on the source's
    calibrated roofs times sm_ratio(source, target), where that is longer than at `ceilings`."""

    ceilings: Ceilings
    assumes: str
    source_ceilings: Optional[Ceilings] = None
    sm_ratio: float = 1.0


def sm_bound_launches(impl: str) -> frozenset[str]:
    """The names of `impl`'s launches whose time its SMs set (SM_BOUND_LAUNCHES)."""
    return frozenset(name for i, name in SM_BOUND_LAUNCHES if i == impl)


def transferred_ceilings(source: GpuSpec, target: GpuSpec, dtype: DType, path: TensorPath,
                         impl: Optional[str] = None) -> Transfer:
    """The module docstring's beta_T, pi_T, eps_T and curve_T for operands of `dtype` on the `path` instruction; with
    `impl`, the source's roofs and the SM ratio for its SM-bound launches, and the assumption said."""
    dtype = DType.of(dtype)
    cal = Ceilings.of(source, dtype, CeilingSource.calibrated)
    gemm, fp_note = matmul_fraction(source, dtype)
    copy = cal.bandwidth_bytes_per_s / source.hbm_bandwidth_bytes_per_s
    exp = (cal.exp_per_s / source.exp_per_s) if cal.exp_per_s and source.exp_per_s else 1.0
    share_s, share_t = path_share(source, path), path_share(target, path)
    matmul = target.matmul_flop_per_s(dtype) * gemm * share_t / share_s
    roofs = Ceilings(CeilingSource.calibrated, target.hbm_bandwidth_bytes_per_s * copy, matmul,
                     target.vector_fp32_flop_per_s, target.exp_per_s * exp if target.exp_per_s else None,
                     _stream_curve(source, target), dtype.rate_key)
    said = [f"{source.name}'s measured fractions of each roof (copy {copy:.0%}, {dtype.rate_key} GEMM {gemm:.0%}, "
            f"exp {exp:.0%}) on {target.name}'s datasheet roofs"]
    if path is TensorPath.mma_sync and share_t != share_s:
        said.append(mma_sync_share(target)[1] + f" against {share_s:.0%} on {source.architecture}")
    if fp_note:
        said.append(fp_note)
    bound = sm_bound_launches(impl) if impl is not None else frozenset()
    ratio = sm_ratio(source, target)
    if bound:
        said += [SM_BOUND_LAUNCHES[(impl, name)] + f": its {name} launch at the source's time x {ratio:.2f} "
                 f"(SMs x clock, {source.name} / {target.name}) where that is longer" for name in sorted(bound)]
    return Transfer(roofs, "; ".join(said), cal if bound else None, ratio)


def fewer_sms(ceilings: Ceilings, total_sms: int, num_sms: int) -> Ceilings:
    """`ceilings` of a whole GPU of `total_sms` SMs, seen by a launch confined to `num_sms` of them (a green context):
    the matrix, vector and exp roofs x num_sms / total_sms; the bandwidth the read curve gives num_sms SMs (the
    copy bandwidth x curve(n) / curve(all); x n / all without a curve), the curve cut at n."""
    if not 1 <= num_sms <= total_sms:
        raise InputError(f"num_sms {num_sms}: a launch runs on 1 to {total_sms} SMs")
    share = num_sms / total_sms
    stream = ceilings.stream
    if stream:
        sms = np.array([n for n, _ in stream], float)
        rate = np.array([b for _, b in stream], float)
        at_n = float(np.exp(np.interp(np.log(num_sms), np.log(sms), np.log(rate)))) if num_sms >= sms[0] \
            else rate[0] * num_sms / sms[0]
        bandwidth = ceilings.bandwidth_bytes_per_s * at_n / rate[-1]
        stream = tuple((n, b) for n, b in stream if n < num_sms) + ((num_sms, at_n),)
    else:
        bandwidth = ceilings.bandwidth_bytes_per_s * share
    exp = ceilings.exp_per_s * share if ceilings.exp_per_s else ceilings.exp_per_s
    return dataclasses.replace(ceilings, bandwidth_bytes_per_s=bandwidth, matmul_flop_per_s=ceilings.matmul_flop_per_s
                               * share, vector_flop_per_s=ceilings.vector_flop_per_s * share, exp_per_s=exp,
                               stream=stream)


@functools.lru_cache(maxsize=1)
def _fitted_gpus() -> tuple[GpuSpec, ...]:
    """The bundled GPUs with a fitted: list, the sources a transfer can take (loaded once). Only the files whose text
    has a top-level `fitted:` key are parsed: reading all twenty GPU specs took most of `rooflab report`'s time."""
    from .load import available, data_dir, load_gpu

    def has_fits(name: str) -> bool:
        text = (data_dir("hardware") / f"{name}.yaml").read_text(encoding="utf-8", errors="replace")
        return text.startswith("fitted:") or "\nfitted:" in text

    return tuple(g for g in (load_gpu(name) for name in available("hardware") if has_fits(name)) if g.fitted)


def transfer_source(target: GpuSpec, kernel: Kernel, keep_refused: bool = False
                    ) -> tuple[Optional[GpuSpec], tuple[FittedModel, ...]]:
    """The bundled GPU whose fits of `kernel` predict `target` (one of the same architecture first, then the one with
    most fits), and those of its fits that transfer (why_not); every fit of the kernel with `keep_refused`.
    (None, ()) where no other bundled GPU has a fit of `kernel`. A fused MoE fit (FittedModel.fused_moe: Triton's code
    for one architecture, measured on one GPU) is never a transfer's."""
    def movable(gpu: GpuSpec) -> tuple[FittedModel, ...]:
        return tuple(f for f in gpu.fitted_for(kernel) if not f.fused_moe)

    arch = (target.architecture or "").lower()
    sources = sorted((g for g in _fitted_gpus() if g.name != target.name and movable(g)),
                     key=lambda g: ((g.architecture or "").lower() != arch, -len(g.fitted), g.name))
    if not sources:
        return None, ()
    source = sources[0]
    fits = movable(source)
    return source, fits if keep_refused else tuple(f for f in fits if why_not(source, target, f) is None)


#: Cross-GPU errors of the transferred fits against published measurements (rooflab validate --published; fitted on
#: by nothing): (implementation predicted, target architecture) -> (median, worst, rows), each of the prediction
#: `rooflab report` makes: torch_cudnn's is the model of the kernel cuDNN launches (rooflab.cudnn_kernel, the
#: fitted entry torch_cudnn_shapes, which predicts torch_cudnn everywhere); torch_eager's is rooflab's eager peer on
#: the FlashAttention benchmark's eager rows, which the check itself gives rooflab.fit.shapes_fit's attention_pytorch
#: (a different implementation: its own name, no report impl).
#: tests/fit/test_published_check.py
#: recomputes them from measurements/published/, so they cannot drift from the data.
CROSS_GPU_ERROR: dict[tuple[str, str], tuple[float, float, int]] = {
    ("attention_pytorch", "blackwell"): (0.0794, 0.2897, 5),
    ("attention_pytorch", "hopper"): (0.1782, 0.6599, 20),
    ("torch_cudnn", "hopper"): (0.1802, 0.2708, 35),
    ("torch_eager", "blackwell"): (0.1534, 0.3328, 5),
    ("torch_eager", "hopper"): (0.2090, 0.6837, 20),
    ("torch_flash", "ampere"): (0.0974, 0.1696, 2),
    ("torch_flash", "blackwell"): (0.1243, 0.2199, 14),
    ("torch_flash", "hopper"): (0.0537, 0.2281, 38),
}


def error_band(fitted: FittedModel, source: Optional[GpuSpec], target: GpuSpec) -> tuple[Optional[float], str]:
    """The relative error to expect of `fitted`'s prediction on `target`, and where it comes from: the held-out
    median on the GPU it was measured on; where transferred, the larger of that and the median of the transferred
    fit against published rows on that architecture (CROSS_GPU_ERROR), or a note that none was checked."""
    held = fitted.median_error
    where = source.name if source is not None else target.name
    held_text = (f"held-out median {held:.1%}" + (f", worst {fitted.worst_error:.1%}" if fitted.worst_error is not None
                                                 else "") + f" ({fitted.held_out_rows} rows on {where})"
                 if held is not None else f"no held-out rows on {where}")
    if source is None:
        return held, held_text
    impl = modelled_impl(fitted.impl)
    cross = CROSS_GPU_ERROR.get((impl, (target.architecture or "").lower()))
    if cross is None:
        return held, held_text + f"; no published {target.architecture} rows checked for {impl}: the band " \
                                 f"is the source's alone"
    median, worst, rows = cross
    band = median if held is None else max(held, median)
    return band, held_text + f"; cross-GPU median {median:.1%}, worst {worst:.1%} over {rows} published " \
                             f"{target.architecture} rows"


__all__ = ["CROSS_GPU_ERROR", "error_band", "transfer_source", "HOPPER_MMA_SYNC_SHARE", "IMPL_PATH",
           "MMA_SYNC_FLOP_PER_CLOCK_PER_SM", "SM_BOUND_LAUNCHES", "TensorPath", "Transfer", "calibrated_ceilings",
           "sm_bound_launches", "sm_ratio", "fewer_sms", "matmul_fraction", "mma_sync_share", "path_share",
           "transferred_ceilings", "why_not"]

"""Measure the ceilings of the GPU this runs on, the Empirical Roofline Toolkit's way, and record them.

    copy   a device-to-device copy of several GB; bytes read plus bytes written over the time
    GEMM   cuBLAS on random fp16 and bf16 operands (never zeros: they run faster), 2 M N K over the time
    exp    a kernel of independent ex2.approx chains; special-function results per second
    fp8    (`--fp8`, through PyTorch) torch._scaled_mm on random e4m3 operands, and fp8 attention where PyTorch's
           scaled_dot_product_attention takes e4m3 inputs on some back end (else the reason none does)

The results become the `measured:` section of a GPU YAML that the rest of rooflab reads
(Ceilings.of(gpu, dtype, CeilingSource.calibrated)).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from ..progress import Progress
from ..specs import MeasuredCeilings
from .device import device_name, metadata, require_cupy
from .timing import Timing, read_kernel, time_gpu, time_torch

# cuBLAS and CUDA enum values (cublas_api.h, library_types.h)
_CUDA_R_16F, _CUDA_R_16BF, _CUDA_R_32F = 2, 14, 0
_CUBLAS_COMPUTE_32F = 68
_CUBLAS_OP_N = 0
_CUBLAS_GEMM_DEFAULT = -1

_EXP_KERNEL = r"""
extern "C" __global__ void exp_chains(float* out, int iters) {
    // eight independent chains per thread keep the special-function units busy;
    // x -> -0.5 * 2^x stays in [-0.5, -0.35], so no chain overflows or flushes to zero
    float x0 = -0.01f * (threadIdx.x & 7), x1 = x0 - 0.011f, x2 = x0 - 0.012f, x3 = x0 - 0.013f;
    float x4 = x0 - 0.014f, x5 = x0 - 0.015f, x6 = x0 - 0.016f, x7 = x0 - 0.017f;
    for (int i = 0; i < iters; ++i) {
#define STEP(x) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x)); x *= -0.5f;
        STEP(x0) STEP(x1) STEP(x2) STEP(x3) STEP(x4) STEP(x5) STEP(x6) STEP(x7)
#undef STEP
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"""
_EXP_CHAINS = 8

#: SM counts the per-SM streaming curve is measured at (and the whole GPU).
STREAM_SMS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Calibration:
    """The measured ceilings and how they were measured."""

    copy_bytes_per_s: float
    gemm_flop_per_s: dict[str, float]
    exp_per_s: float
    timings: dict[str, Timing]
    meta: dict[str, str]
    stream_bytes_per_s: dict[str, float] = dataclasses.field(default_factory=dict)

    def measured(self) -> MeasuredCeilings:
        return MeasuredCeilings(
            copy_bytes_per_s=self.copy_bytes_per_s, gemm_flop_per_s=dict(self.gemm_flop_per_s),
            date=self.meta["date"][:10], device_name=self.meta["device_name"], exp_per_s=self.exp_per_s,
            driver=self.meta["driver"], cuda=self.meta["cuda_runtime"], cupy=self.meta["cupy"],
            command=self.meta["command"], stream_bytes_per_s=dict(self.stream_bytes_per_s) or None,
        )


def measure_copy(nbytes: int = 2 << 30, repeats: int = 20) -> tuple[float, Timing]:
    """Device-to-device copy bandwidth, counting bytes read plus bytes written."""
    cupy = require_cupy()
    src = cupy.random.randint(0, 255, size=nbytes, dtype=cupy.uint8)
    dst = cupy.empty_like(src)
    stream = cupy.cuda.get_current_stream()

    def copy():
        cupy.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                      cupy.cuda.runtime.memcpyDeviceToDevice, stream.ptr)

    timing = time_gpu(copy, warmup=3, repeats=repeats)
    if not bool((dst[:4096] == src[:4096]).all()):
        raise RuntimeError("device-to-device copy produced wrong bytes")
    return 2 * nbytes / timing.median_s, timing


def measure_gemm(dtype: str, n: int = 8192, repeats: int = 10) -> tuple[float, Timing]:
    """Dense GEMM rate through cuBLAS on random `dtype` ("fp16" or "bf16") operands, fp32 accumulation."""
    cupy = require_cupy()
    from cupy_backends.cuda.libs import cublas

    rng = np.random.default_rng(0)
    host = rng.standard_normal((2, n, n), dtype=np.float32)
    bits = _to_bits(host, dtype)
    a, b = (cupy.asarray(bits[i]) for i in range(2))
    c = cupy.empty((n, n), dtype=cupy.float32)
    alpha, beta = np.ones(1, np.float32), np.zeros(1, np.float32)
    kind = _CUDA_R_16F if dtype == "fp16" else _CUDA_R_16BF
    handle = cupy.cuda.device.get_cublas_handle()

    def gemm():
        cublas.gemmEx(handle, _CUBLAS_OP_N, _CUBLAS_OP_N, n, n, n, alpha.ctypes.data, a.data.ptr, kind, n,
                      b.data.ptr, kind, n, beta.ctypes.data, c.data.ptr, _CUDA_R_32F, n, _CUBLAS_COMPUTE_32F,
                      _CUBLAS_GEMM_DEFAULT)

    timing = time_gpu(gemm, warmup=3, repeats=repeats)
    _check_gemm(host, c, n)
    return 2.0 * n ** 3 / timing.median_s, timing


def _to_bits(x: np.ndarray, dtype: str) -> np.ndarray:
    """fp32 values as the uint16 bit patterns of fp16 or bf16 (round to nearest even)."""
    if dtype == "fp16":
        return x.astype(np.float16).view(np.uint16)
    u = x.view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _check_gemm(host: np.ndarray, c, n: int) -> None:
    """Spot-check one row of the product (cuBLAS is column-major: C^T = B^T A^T in row-major terms)."""
    row = np.asarray(c[:1].get(), dtype=np.float64)[0]
    a_cm = host[0].T  # the row-major buffer seen as a column-major matrix is its transpose
    b_cm = host[1].T
    expect = (a_cm @ b_cm).T[0]
    rel = np.linalg.norm(row - expect) / np.linalg.norm(expect)
    if not np.isfinite(rel) or rel > 2e-2:
        raise RuntimeError(f"GEMM check failed: relative error {rel:.3g}")


def measure_exp(repeats: int = 10, iters: int = 4096) -> tuple[float, Timing]:
    """Special-function throughput: ex2.approx results per second across the whole GPU."""
    cupy = require_cupy()
    kernel = cupy.RawKernel(_EXP_KERNEL, "exp_chains")
    sms = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["multiProcessorCount"]
    blocks, threads = sms * 16, 256
    out = cupy.empty(blocks * threads, dtype=cupy.float32)
    timing = time_gpu(lambda: kernel((blocks,), (threads,), (out, np.int32(iters))), warmup=2, repeats=repeats)
    if not bool(cupy.isfinite(out).all()):
        raise RuntimeError("exp throughput kernel produced non-finite values")
    return blocks * threads * iters * _EXP_CHAINS / timing.median_s, timing


def measure_stream(nbytes: int = 1 << 30, repeats: int = 10) -> dict[str, float]:
    """Read bandwidth (bytes read per second) with 1, 2, 4, ... SMs streaming and with all of them:
    what a launch whose work units keep only some SMs busy can draw (the parallelism model's per-unit rate)."""
    cupy = require_cupy()
    sms = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["multiProcessorCount"]
    kernel = read_kernel()                 # one block of 512 threads an SM, each reading its slice
    buf = cupy.zeros(nbytes // 16 * 16, dtype=cupy.uint8)
    sink = cupy.zeros(1, dtype=cupy.uint32)
    n = np.uint64(buf.size // 16)
    out = {}
    for blocks in (*[b for b in STREAM_SMS if b < sms], sms):
        timing = time_gpu(lambda: kernel((blocks,), (512,), (buf, n, sink)), warmup=2, repeats=repeats)
        out[str(blocks)] = buf.size / timing.median_s
    return out


@dataclass(frozen=True)
class Fp8Rates:
    """The fp8 rates `rooflab calibrate --fp8` measured, each None with its reason where it could not be."""

    gemm_flop_per_s: float | None
    attention_flop_per_s: float | None
    gemm_note: str
    attention_note: str
    meta: dict[str, str]

    def provenance(self) -> str:
        """The one line the YAML keeps beside the rates: when, where, with what, and what was not measured."""
        m = self.meta
        return (f"{m['date']} on {m['device_name']} (driver {m['driver']}, torch {m['torch']}, commit "
                f"{m['git_commit']}): {m['command']}; GEMM: {self.gemm_note}; attention: {self.attention_note}")


#: The fp8 GEMM's shape (M = N = K) and the attention's (batch, heads, T, d), both large enough to fill the GPU.
FP8_GEMM_N = 8192
FP8_ATTENTION_SHAPE = (4, 32, 4096, 128)


def measure_fp8_gemm(n: int = FP8_GEMM_N, repeats: int = 10) -> tuple[float, Timing]:
    """Dense e4m3 x e4m3 GEMM through torch._scaled_mm (per-tensor fp32 scales, bf16 output, fp32 accumulation):
    2 n^3 over the median time. Random operands (never zeros), checked against a bf16 product of the same values."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn((n, n), device="cuda", generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn((n, n), device="cuda", generator=gen).to(torch.float8_e4m3fn).t()     # column-major, as cuBLASLt wants
    one = torch.ones((), device="cuda", dtype=torch.float32)

    def gemm():
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    timing = time_torch(gemm, warmup=3, repeats=repeats)
    out = gemm()[:64].float()
    expect = (a[:64].to(torch.bfloat16) @ b.to(torch.bfloat16)).float()
    rel = float(torch.linalg.norm(out - expect) / torch.linalg.norm(expect))
    if not np.isfinite(rel) or rel > 2e-2:
        raise RuntimeError(f"fp8 GEMM check failed: relative error {rel:.3g}")
    return 2.0 * n ** 3 / timing.median_s, timing


def measure_fp8_attention(shape: tuple[int, int, int, int] = FP8_ATTENTION_SHAPE, repeats: int = 10
                          ) -> tuple[float | None, str]:
    """fp8 (e4m3) attention forward through scaled_dot_product_attention, non-causal, 4 B H T^2 d FLOPs over the
    median time, on the first back end that takes e4m3 inputs and matches a bf16 reference; (None, why) where none
    does."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    batch, heads, t, d = shape
    gen = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn((batch, heads, t, d), device="cuda", generator=gen).to(torch.float8_e4m3fn)
               for _ in range(3))
    reasons = []
    for name in ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"):
        backend = getattr(SDPBackend, name, None)
        if backend is None:
            reasons.append(f"{name.lower()}: not in this torch")
            continue

        def attend(backend=backend):
            with sdpa_kernel(backend):
                return sdpa(q, k, v)
        try:
            out = attend()
            torch.cuda.synchronize()
        except Exception as exc:  # a back end that refuses fp8 inputs says why
            reasons.append(f"{name.lower()}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
            continue
        ref = sdpa(*(x[:1, :1].to(torch.bfloat16) for x in (q, k, v))).float()
        rel = float(torch.linalg.norm(out[:1, :1].float() - ref) / torch.linalg.norm(ref))
        if not np.isfinite(rel) or rel > 5e-2:
            reasons.append(f"{name.lower()}: relative error {rel:.3g} against bf16")
            continue
        timing = time_torch(attend, warmup=3, repeats=repeats)
        return 4.0 * batch * heads * t * t * d / timing.median_s, f"{name.lower()} back end, B H T d {shape}"
    return None, "no scaled_dot_product_attention back end takes e4m3 inputs (" + "; ".join(reasons) + ")"


def calibrate_fp8(command: str, spec_name: str, progress: TextIO | None = sys.stderr) -> Fp8Rates:
    """The fp8 rates on this GPU (through PyTorch): GEMM, then attention; either is None with its reason."""
    bar = Progress(2, progress)
    try:
        gemm, _ = measure_fp8_gemm()
        gemm_note = f"torch._scaled_mm e4m3 x e4m3 -> bf16, M = N = K = {FP8_GEMM_N}, per-tensor scales"
    except Exception as exc:  # no fp8 GEMM here (an older GPU, a torch without _scaled_mm)
        gemm, gemm_note = None, f"not measured: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    bar.step("GEMM fp8 " + (f"{gemm / 1e12:.1f} TFLOP/s" if gemm else gemm_note))
    try:
        attention, attention_note = measure_fp8_attention()
    except Exception as exc:
        attention, attention_note = None, f"not measured: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    bar.step("attention fp8 " + (f"{attention / 1e12:.1f} TFLOP/s" if attention else attention_note))
    return Fp8Rates(gemm, attention, gemm_note, attention_note, metadata(command, spec_name))


def with_fp8(measured: MeasuredCeilings, rates: Fp8Rates) -> MeasuredCeilings:
    """`measured` with the fp8 rates (and their provenance) in place of any it had; every other ceiling kept."""
    return dataclasses.replace(measured, fp8_gemm_flop_per_s=rates.gemm_flop_per_s,
                               fp8_attention_flop_per_s=rates.attention_flop_per_s, fp8_provenance=rates.provenance())


def calibrate(command: str, spec_name: str, copy_bytes: int = 2 << 30, gemm_n: int = 8192,
              progress: TextIO | None = sys.stderr) -> Calibration:
    """Measure copy bandwidth, fp16 and bf16 GEMM rates, exp throughput and the per-SM read curve on this GPU."""
    bar = Progress(5, progress)
    copy, t_copy = measure_copy(copy_bytes)
    bar.step(f"copy {copy / 1e12:.3f} TB/s (read + write)")
    fp16, t_fp16 = measure_gemm("fp16", gemm_n)
    bar.step(f"GEMM fp16 {fp16 / 1e12:.1f} TFLOP/s")
    bf16, t_bf16 = measure_gemm("bf16", gemm_n)
    bar.step(f"GEMM bf16 {bf16 / 1e12:.1f} TFLOP/s")
    exp, t_exp = measure_exp()
    bar.step(f"exp {exp / 1e12:.2f} T/s")
    stream = measure_stream()
    bar.step("read bandwidth by SMs streaming: " + ", ".join(f"{k} {v / 1e12:.2f}" for k, v in stream.items()) + " TB/s")
    meta = metadata(command, spec_name)
    return Calibration(copy, {"fp16": fp16, "bf16": bf16}, exp,
                       {"copy": t_copy, "gemm_fp16": t_fp16, "gemm_bf16": t_bf16, "exp": t_exp}, meta, stream)


# --- writing the measured: section -----------------------------------------------------

def measured_yaml(m: MeasuredCeilings) -> str:
    """The `measured:` block, as the last section of a GPU YAML (a nested section, such as `launch:`, indented
    under it)."""
    lines = ["measured:                                # written by `rooflab calibrate`; do not edit by hand"]
    return "\n".join(lines + _fields_yaml(m, "  ")) + "\n"


def _fields_yaml(obj: object, indent: str) -> list[str]:
    """One YAML line a field of a dataclass (a dict or a nested dataclass as an indented block); None left out."""
    lines = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None:
            continue
        if dataclasses.is_dataclass(value):
            lines += [f"{indent}{f.name}:", *_fields_yaml(value, indent + "  ")]
        elif isinstance(value, dict):
            lines.append(f"{indent}{f.name}:")
            lines += [f"{indent}  {k}: {_scalar(v)}" for k, v in value.items()]
        else:
            lines.append(f"{indent}{f.name}: {_scalar(value)}")
    return lines


def _scalar(value: object) -> str:
    """A number (floats as 4-digit scientific), a flow list of numbers, or a quoted string."""
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:.4e}"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _quote(str(value))


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def with_measured(spec_text: str, m: MeasuredCeilings) -> str:
    """A GPU YAML's text with its `measured:` section replaced (or added at the end), comments kept."""
    block = measured_yaml(m)
    if re.search(r"(?m)^measured:", spec_text):
        return re.sub(r"(?ms)^measured:.*?(?=^\S|\Z)", lambda _: block, spec_text)
    return spec_text.rstrip("\n") + "\n" + block


def write_spec(source: Path, target: Path, m: MeasuredCeilings) -> None:
    """Write `source` with the measured section into `target`, atomically; refuse a file rooflab could not read.

    Calibrate does not measure launch times (benchmarks/eager_launch.py does): where `m` has none, the source's
    `measured.launch` is kept, so a fresh calibration does not drop the step's small-kernel times."""
    from ..load import clear_cache, parse_yaml, spec_from_mapping
    from ..output import write_atomic
    from ..specs import GpuSpec

    original = source.read_text()
    if m.launch is None:
        before = spec_from_mapping(GpuSpec, parse_yaml(original, str(source)), str(source)).measured
        if before is not None and before.launch is not None:
            m = dataclasses.replace(m, launch=before.launch)
    text = with_measured(original, m)
    spec_from_mapping(GpuSpec, parse_yaml(text, str(target)), str(target))
    write_atomic(target, text)
    clear_cache()


def describe(cal: Calibration) -> list[tuple[str, str]]:
    """Rows for a short summary table."""
    from ..units import fmt_rate

    return [
        ("device", device_name()),
        ("copy bandwidth (read + write)", fmt_rate(cal.copy_bytes_per_s, "B/s")),
        ("GEMM fp16, random data", fmt_rate(cal.gemm_flop_per_s["fp16"], "FLOP/s")),
        ("GEMM bf16, random data", fmt_rate(cal.gemm_flop_per_s["bf16"], "FLOP/s")),
        ("exp (ex2.approx)", fmt_rate(cal.exp_per_s, "op/s")),
    ]

"""Measure the ceilings of the GPU this runs on, the Empirical Roofline Toolkit's way, and record them.

    copy   a device-to-device copy of several GB; bytes read plus bytes written over the time
    GEMM   cuBLAS on random fp16 and bf16 operands (never zeros: they run faster), 2 M N K over the time
    exp    a kernel of independent ex2.approx chains; special-function results per second

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
from .timing import Timing, time_gpu

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

# One block of 512 threads an SM streams (reads) its slice of a buffer with 16-byte loads: the read bandwidth
# `blocks` SMs reach when nothing else runs (the XOR keeps the loads; the guarded store never runs).
_STREAM_KERNEL = r"""
extern "C" __global__ void stream_read(const uint4* __restrict__ p, unsigned long long n, unsigned* sink) {
    unsigned acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9E3779B9u) *sink = acc;
}
"""
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
    kernel = cupy.RawKernel(_STREAM_KERNEL, "stream_read")
    buf = cupy.zeros(nbytes // 16 * 16, dtype=cupy.uint8)
    sink = cupy.zeros(1, dtype=cupy.uint32)
    n = np.uint64(buf.size // 16)
    out = {}
    for blocks in (*[b for b in STREAM_SMS if b < sms], sms):
        timing = time_gpu(lambda: kernel((blocks,), (512,), (buf, n, sink)), warmup=2, repeats=repeats)
        out[str(blocks)] = buf.size / timing.median_s
    return out


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
    """The `measured:` block, as the last section of a GPU YAML."""
    lines = ["measured:                                # written by `rooflab calibrate`; do not edit by hand"]
    for f in dataclasses.fields(m):
        value = getattr(m, f.name)
        if value is None:
            continue
        if isinstance(value, dict):
            lines.append(f"  {f.name}:")
            lines += [f"    {k}: {v:.4e}" for k, v in value.items()]
        elif isinstance(value, float):
            lines.append(f"  {f.name}: {value:.4e}")
        else:
            lines.append(f"  {f.name}: {_quote(str(value))}")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def with_measured(spec_text: str, m: MeasuredCeilings) -> str:
    """A GPU YAML's text with its `measured:` section replaced (or added at the end), comments kept."""
    block = measured_yaml(m)
    if re.search(r"(?m)^measured:", spec_text):
        return re.sub(r"(?ms)^measured:.*?(?=^\S|\Z)", lambda _: block, spec_text)
    return spec_text.rstrip("\n") + "\n" + block


def write_spec(source: Path, target: Path, m: MeasuredCeilings) -> None:
    """Write `source` with the measured section into `target`, atomically; refuse a file rooflab could not read."""
    from ..load import clear_cache, parse_yaml, spec_from_mapping
    from ..output import write_atomic
    from ..specs import GpuSpec

    text = with_measured(source.read_text(), m)
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

"""Helpers for testing and benchmarking the kernels: tolerances, random inputs, poisoning, paged caches.

Kept beside the kernels (not under tests/) because the benchmark script uses them too.
CuPy is imported inside each function; bfloat16 arrays use ml_dtypes' dtype, which CuPy 14
accepts, and are built and read through their 16-bit patterns so that no CuPy bfloat16
arithmetic is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ._runtime import cupy_module


@dataclass(frozen=True)
class Tolerance:
    """Bounds on the error of a kernel output against the fp64 oracle.

    rel_l2: ||out - ref|| / ||ref|| over the whole tensor; max_abs: max |out - ref| as a
    fraction of max |ref| (catches one bad row that the norm would average away);
    lse_abs: max |lse - ref| in natural-log units for finite LSEs.
    """

    rel_l2: float
    max_abs: float
    lse_abs: float
    reason: str


#: One table for every GPU test: (dtype, what the kernel rounds) -> tolerance, with the reason.
TOLERANCES: dict[tuple[str, str], Tolerance] = {
    ("float16", "attention"): Tolerance(
        2e-3, 1e-2, 2e-4,
        "fp16 output rounding (2^-11 relative) plus P rounded to fp16 before the PV mma; scores and LSE "
        "accumulate in fp32 from exact fp16 products, so the LSE error is fp32 summation order"),
    ("bfloat16", "attention"): Tolerance(
        1.2e-2, 5e-2, 2e-4,
        "bf16 keeps 8 significant bits: output rounding 2^-9 plus P rounded to bf16 for the PV mma; "
        "the LSE never passes through bf16"),
    ("float16", "naive"): Tolerance(
        4e-3, 2e-2, 0.0,
        "as flash fp16, plus the unscaled scores S rounded to fp16 before the softmax (|s| ~ 30 for d = 128)"),
    ("bfloat16", "naive"): Tolerance(
        4e-2, 1.5e-1, 0.0,
        "S rounded to bf16 moves each logit by up to 2^-9 |s| (~0.01 after scaling): a percent in P"),
    ("float32", "naive"): Tolerance(
        1e-3, 5e-3, 0.0,
        "cuBLAS may run fp32 GEMMs in TF32 on tensor cores (10-bit mantissa products)"),
    ("float16", "rowwise"): Tolerance(
        1e-3, 1e-3, 1e-5,
        "one fp16 rounding of the result (2^-11 relative); fp32 arithmetic inside"),
    ("bfloat16", "rowwise"): Tolerance(
        6e-3, 8e-3, 1e-5,
        "one bf16 rounding of the result (2^-9 relative); fp32 arithmetic inside"),
    ("float32", "rowwise"): Tolerance(
        1e-5, 1e-5, 1e-5,
        "fp32 arithmetic with hardware exp/log (a few ulp), no narrow rounding"),
}


def tolerance(dtype: Any, kind: str) -> Tolerance:
    return TOLERANCES[(np.dtype(dtype).name if not isinstance(dtype, str) else dtype, kind)]


def resolve_dtype(dtype: Any) -> np.dtype:
    """fp16 / bf16 / fp32 (or a NumPy dtype) -> the NumPy dtype CuPy arrays use."""
    name = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}.get(str(dtype), None)
    if name is None:
        name = getattr(dtype, "name", None) or np.dtype(dtype).name
    if name == "bfloat16":
        import ml_dtypes  # CuPy 14's bfloat16 is ml_dtypes'; imported only when asked for

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def from_float32(x: Any, dtype: Any) -> Any:
    """Round a CuPy fp32 array to fp16 / bf16 (nearest even) / fp32."""
    cupy = cupy_module()
    dt = resolve_dtype(dtype)
    if dt.name == "bfloat16":
        u = x.view(cupy.uint32)
        u = u + (cupy.uint32(0x7FFF) + ((u >> 16) & 1))
        return (u >> 16).astype(cupy.uint16).view(dt)
    return x.astype(dt)


def random_normal(shape: Sequence[int], dtype: Any, rng: Any, std: float = 1.0) -> Any:
    """N(0, std^2) on the device in `dtype`; rng is a cupy.random.Generator."""
    cupy = cupy_module()
    return from_float32(rng.standard_normal(tuple(shape), dtype=cupy.float32) * np.float32(std), dtype)


def to_float64(x: Any) -> np.ndarray:
    """A CuPy fp16 / bf16 / fp32 array -> NumPy float64 (bf16 through its bit pattern)."""
    cupy = cupy_module()
    if x.dtype.name == "bfloat16":
        x = (x.view(cupy.uint16).astype(cupy.uint32) << 16).view(cupy.float32)
    return cupy.asnumpy(x).astype(np.float64)


_NAN_BITS = {"float16": 0x7E00, "bfloat16": 0x7FC0}


def poison(x: Any) -> Any:
    """Fill x with NaN in place (so an element a kernel fails to write shows up); returns x."""
    cupy = cupy_module()
    if x.dtype.name in _NAN_BITS:
        x.view(cupy.uint16).fill(_NAN_BITS[x.dtype.name])
    else:
        x.fill(np.nan)
    return x


def nan_like(x: Any) -> Any:
    cupy = cupy_module()
    return poison(cupy.empty_like(x))


def graph_time_ms(fn: Any, calls: int = 20, replays: int = 10) -> float:
    """Median GPU time of one fn(i) call, timed as replays of a captured CUDA graph of `calls` calls.

    Takes the launchers' Python overhead (tens of microseconds a call) out of the timing of
    microsecond-scale kernels. fn must not allocate while captured: pass out= buffers.
    """
    cupy = cupy_module()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for i in range(3):
            fn(i)
        stream.synchronize()
        stream.begin_capture()
        for i in range(calls):
            fn(i)
        graph = stream.end_capture()
        graph.launch(stream)
        stream.synchronize()
        times = []
        for _ in range(replays):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / calls)
    return float(np.median(times))


@dataclass(frozen=True)
class PagedCache:
    """A random paged KV cache: pages scattered over shuffled physical pages.

    Physical pages no sequence uses, the tail slots of each sequence's last page, and one
    page that every unused block-table entry points at are all NaN, so a kernel that reads
    past a context or through a wrong entry produces NaN.
    """

    k_cache: Any          # [num_pages, h_kv, page_size, d]
    v_cache: Any
    block_table: Any      # int32 [B, max_pages]
    context_lens: Any     # int32 [B]
    lens: tuple[int, ...]
    page_size: int

    def pages(self, b: int) -> int:
        return -(-self.lens[b] // self.page_size)

    def dense(self, b: int) -> tuple[Any, Any]:
        """Sequence b's keys and values, [h_kv, ctx, d] each, gathered through the block table."""
        cupy = cupy_module()
        ids = self.block_table[b, :self.pages(b)]
        out = []
        for cache in (self.k_cache, self.v_cache):
            bits = cache.view(cupy.uint16)[ids]                        # [pages, h_kv, ps, d]
            kv_heads, head_dim = cache.shape[1], cache.shape[3]
            bits = bits.transpose(1, 0, 2, 3).reshape(kv_heads, -1, head_dim)[:, :self.lens[b]]
            out.append(cupy.ascontiguousarray(bits).view(cache.dtype))
        return out[0], out[1]


def make_paged_cache(context_lens: Sequence[int], num_kv_heads: int, head_dim: int, page_size: int = 16,
                     dtype: Any = "fp16", seed: int = 0, spare_pages: int | None = None) -> PagedCache:
    """Random K/V for sequences of the given lengths in a paged cache [num_pages, h_kv, page_size, d]."""
    cupy = cupy_module()
    if resolve_dtype(dtype).name not in _NAN_BITS:
        raise ValueError(f"paged caches are fp16 or bf16, got {dtype}")
    lens = np.asarray(context_lens, dtype=np.int64)
    if lens.ndim != 1 or lens.size == 0 or (lens < 1).any():
        raise ValueError(f"context_lens must be a non-empty list of lengths >= 1, got {context_lens}")
    pages = -(-lens // page_size)
    used = int(pages.sum())
    spare = max(1, used // 8) if spare_pages is None else int(spare_pages)
    poison_page = used + spare                                     # the last physical page
    order = np.random.default_rng(seed).permutation(used + spare)  # logical page -> physical page
    table = np.full((lens.size, int(pages.max())), poison_page, dtype=np.int32)
    start = 0
    for b, n in enumerate(pages):
        table[b, :n] = order[start:start + n]
        start += n
    rng = cupy.random.default_rng(seed)
    shape = (used + spare + 1, num_kv_heads, page_size, head_dim)
    k_cache, v_cache = random_normal(shape, dtype, rng), random_normal(shape, dtype, rng)
    dead = cupy.asarray(np.append(order[used:], poison_page))
    nan_bits = _NAN_BITS[k_cache.dtype.name]
    for cache in (k_cache, v_cache):
        bits = cache.view(cupy.uint16)
        bits[dead] = nan_bits
        for b, n in enumerate(lens):
            tail = int(n % page_size)
            if tail:
                bits[int(table[b, pages[b] - 1]), :, tail:, :] = nan_bits
    return PagedCache(k_cache, v_cache, cupy.asarray(table), cupy.asarray(lens.astype(np.int32)),
                      tuple(int(n) for n in lens), int(page_size))

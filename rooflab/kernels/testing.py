"""Helpers for testing and benchmarking the kernels: tolerances, random inputs, poisoning, paged caches.

Kept beside the kernels (not under tests/) because the benchmark script uses them too.
CuPy is imported inside each function; bfloat16 arrays use ml_dtypes' dtype, which CuPy 14
accepts, and are built and read through their 16-bit patterns so that no CuPy bfloat16
arithmetic is needed. fp8 e4m3 caches are uint8 arrays of e4m3 codes; e4m3_decode and
e4m3_encode convert exactly (no fp8 type in NumPy or CuPy is needed).
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


# ---------------------------------------------------------------- fp8 e4m3 codes
# e4m3 ("e4m3fn", arXiv:2209.05433): 1 sign bit, 4 exponent bits with bias 7, 3 mantissa bits;
# exponent 0 is subnormal (m x 2^-9); 0x7F and 0xFF are NaN; no inf; largest finite 448.
# fp8 attention is checked against the fp64 oracle run on the *decoded* cache (code value x scale),
# so its tolerance is that of 16-bit attention: the kernel widens codes to fp16 / bf16 exactly.

E4M3_MAX = 448.0
E4M3_NAN = 0x7F
_E4M3_MIN_NORMAL = 2.0**-6


def _e4m3_table() -> np.ndarray:
    """The value of every code 0..255 as float64, from its bit fields."""
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exponent, mantissa = (codes >> 3) & 0xF, codes & 0x7
    magnitude = np.where(exponent == 0, mantissa * 2.0**-9,                    # subnormal: 0.m x 2^-6
                         (8 + mantissa) * np.ldexp(1.0, exponent - 10))       # 1.m x 2^(e - 7)
    values = sign * magnitude
    values[[0x7F, 0xFF]] = np.nan
    return values


E4M3_VALUES = _e4m3_table()


def e4m3_decode(codes: Any) -> np.ndarray:
    """e4m3 codes (a NumPy or CuPy uint8 array) -> their exact values, NumPy float64."""
    if type(codes).__module__.split(".")[0] == "cupy":
        codes = cupy_module().asnumpy(codes)
    codes = np.asarray(codes)
    if codes.dtype != np.uint8:
        raise ValueError(f"e4m3 codes are uint8, got {codes.dtype}")
    return E4M3_VALUES[codes]


def e4m3_encode(x: Any) -> Any:
    """Round to e4m3 codes: nearest, ties to even, saturating to +-448; NaN -> 0x7F (0xFF if negative).

    x: a NumPy or CuPy array of fp16 / fp32 / fp64 (the result lives where x does, as uint8).
    Formula: quantum q = 2^(max(E, -6) - 3) with E = floor(log2 |x|) (subnormals share the
    smallest normal exponent's quantum), v = min(rint(|x| / q) q, 448), both steps exact in the
    working precision (q is a power of two, and fp16 / fp32 inputs are exact in fp32 / fp64). The
    code of v is v / 2^-9 below 2^-6, else (E_v + 7) * 8 + (v / 2^E_v - 1) * 8; inf saturates.
    """
    on_gpu = type(x).__module__.split(".")[0] == "cupy"
    xp = cupy_module() if on_gpu else np
    x = xp.asarray(x)
    work = xp.float32 if on_gpu and x.dtype.itemsize <= 4 else xp.float64    # exact for fp16 / fp32 inputs
    x = x.astype(work, copy=False)
    nan = xp.isnan(x)
    a = xp.where(nan, 0, xp.abs(x))
    binade = xp.frexp(a)[1].astype(xp.int32) - 1                              # |x| in [2^E, 2^(E + 1))
    quantum = xp.ldexp(work(1.0), xp.maximum(binade, -6) - 3)
    with np.errstate(invalid="ignore", over="ignore"):
        v = xp.minimum(xp.rint(a / quantum) * quantum, work(E4M3_MAX))          # inf / q = inf -> 448
    exponent = xp.frexp(v)[1].astype(xp.int32) - 1
    normal_code = (exponent + 7) * 8 + (xp.ldexp(v, -exponent) - 1) * 8
    code = xp.where(v < _E4M3_MIN_NORMAL, v * 512, normal_code)
    code = xp.where(nan, E4M3_NAN, code).astype(xp.uint8)
    return code | xp.where(xp.signbit(x), 0x80, 0).astype(xp.uint8)


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


@dataclass(frozen=True)
class PagedCache:
    """A random paged KV cache: pages scattered over shuffled physical pages.

    Physical pages no sequence uses, the tail slots of each sequence's last page, and one
    page that every unused block-table entry points at are all NaN, so a kernel that reads
    past a context or through a wrong entry produces NaN. An fp8 cache holds uint8 e4m3
    codes standing for k_scale * e4m3(k_cache) and v_scale * e4m3(v_cache).
    """

    k_cache: Any          # [num_pages, h_kv, page_size, d]
    v_cache: Any
    block_table: Any      # int32 [B, max_pages]
    context_lens: Any     # int32 [B]
    lens: tuple[int, ...]
    page_size: int
    k_scale: float = 1.0
    v_scale: float = 1.0

    @property
    def fp8(self) -> bool:
        return self.k_cache.dtype.itemsize == 1

    @property
    def scales(self) -> dict[str, float]:
        """The launchers' keyword arguments for this cache's scales (none for a 16-bit cache)."""
        return {"k_scale": self.k_scale, "v_scale": self.v_scale} if self.fp8 else {}

    def pages(self, b: int) -> int:
        return -(-self.lens[b] // self.page_size)

    def dense(self, b: int) -> tuple[Any, Any]:
        """Sequence b's keys and values, [h_kv, ctx, d] each, gathered through the block table (stored type)."""
        cupy = cupy_module()
        ids = self.block_table[b, :self.pages(b)]
        out = []
        for cache in (self.k_cache, self.v_cache):
            bits = cache.view(cupy.uint8 if self.fp8 else cupy.uint16)[ids]     # [pages, h_kv, ps, d]
            kv_heads, head_dim = cache.shape[1], cache.shape[3]
            bits = bits.transpose(1, 0, 2, 3).reshape(kv_heads, -1, head_dim)[:, :self.lens[b]]
            out.append(cupy.ascontiguousarray(bits).view(cache.dtype))
        return out[0], out[1]

    def dense_float64(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Sequence b's keys and values as the kernel sees them, NumPy float64 [h_kv, ctx, d]:
        the stored values, and for an fp8 cache the decoded codes times their scale."""
        k, v = self.dense(b)
        if not self.fp8:
            return to_float64(k), to_float64(v)
        return e4m3_decode(k) * self.k_scale, e4m3_decode(v) * self.v_scale


#: The KV dtype name of an fp8 cache in make_paged_cache (stored as uint8 e4m3 codes).
FP8_KV = "fp8_e4m3"


def _random_e4m3(shape: tuple[int, ...], rng: Any, scale: float, chunk_elems: int = 1 << 26) -> Any:
    """e4m3 codes of N(0, 1) / scale, so that scale * decode(code) ~ N(0, 1); generated in chunks."""
    cupy = cupy_module()
    codes = cupy.empty(shape, dtype=cupy.uint8)
    flat = codes.reshape(-1)
    for start in range(0, flat.size, chunk_elems):
        n = min(chunk_elems, flat.size - start)
        flat[start:start + n] = e4m3_encode(rng.standard_normal(n, dtype=cupy.float32) * np.float32(1.0 / scale))
    return codes


def make_paged_cache(context_lens: Sequence[int], num_kv_heads: int, head_dim: int, page_size: int = 16,
                     dtype: Any = "fp16", seed: int = 0, spare_pages: int | None = None,
                     k_scale: float = 1.0, v_scale: float = 1.0) -> PagedCache:
    """Random K/V for sequences of the given lengths in a paged cache [num_pages, h_kv, page_size, d].

    dtype fp16 / bf16: N(0, 1) values. dtype "fp8_e4m3": uint8 e4m3 codes of N(0, 1) / k_scale
    (and / v_scale), so the dequantized cache is N(0, 1) rounded to e4m3 at that scale (a small
    scale uses the top of the e4m3 range, saturating at 448; a large one its subnormals).
    """
    cupy = cupy_module()
    fp8 = str(dtype) == FP8_KV
    if not fp8 and resolve_dtype(dtype).name not in _NAN_BITS:
        raise ValueError(f"paged caches are fp16, bf16 or {FP8_KV}, got {dtype}")
    if not fp8 and (k_scale != 1.0 or v_scale != 1.0):
        raise ValueError("k_scale and v_scale apply to an fp8 cache")
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
    if fp8:
        k_cache, v_cache = _random_e4m3(shape, rng, k_scale), _random_e4m3(shape, rng, v_scale)
        nan_bits, bits_type = E4M3_NAN, cupy.uint8
    else:
        k_cache, v_cache = random_normal(shape, dtype, rng), random_normal(shape, dtype, rng)
        nan_bits, bits_type = _NAN_BITS[k_cache.dtype.name], cupy.uint16
    dead = cupy.asarray(np.append(order[used:], poison_page))
    for cache in (k_cache, v_cache):
        bits = cache.view(bits_type)
        bits[dead] = nan_bits
        for b, n in enumerate(lens):
            tail = int(n % page_size)
            if tail:
                bits[int(table[b, pages[b] - 1]), :, tail:, :] = nan_bits
    return PagedCache(k_cache, v_cache, cupy.asarray(table), cupy.asarray(lens.astype(np.int32)),
                      tuple(int(n) for n in lens), int(page_size), float(k_scale), float(v_scale))


# ---------------------------------------------------------------- key ranges of the decode kernels

def decode_key_range(context_len: int, q_len: int = 1, window: int | None = None,
                     chunk: int | None = None) -> tuple[int, int]:
    """[first, stop): the keys some of the q_len new tokens see (the last q_len positions of the context),
    as paged_decode.cu reads them: from token 0's first key to the end of the context."""
    pos = context_len - q_len
    first = 0
    if window:
        first = max(first, pos - window + 1)
    if chunk:
        first = max(first, pos - pos % chunk)
    return first, context_len


def split_ranges(context_len: int, num_splits: int, page_size: int, q_len: int = 1, window: int | None = None,
                 chunk: int | None = None) -> list[tuple[int, int]]:
    """The [start, stop) keys of each split of a split-KV decode launch: whole pages of the tokens' key range
    dealt out evenly (ceil(pages / S) pages a split), clipped to the range; empty splits are (x, x)."""
    first, stop = decode_key_range(context_len, q_len, window, chunk)
    first_page = first // page_size
    pages = -(-stop // page_size) - first_page
    span = -(-pages // num_splits) * page_size
    out = []
    for z in range(num_splits):
        base = first_page * page_size + z * span
        begin = max(first, min(stop, base))
        out.append((begin, max(begin, min(stop, base + span))))
    return out


def poison_keys_before(cache: PagedCache, first_keys: Sequence[int]) -> None:
    """NaN into K and V of sequence b's keys 0 .. first_keys[b] - 1 (a kernel that reads one fails)."""
    cupy = cupy_module()
    bits_type = cupy.uint8 if cache.fp8 else cupy.uint16
    nan_bits = E4M3_NAN if cache.fp8 else _NAN_BITS[cache.k_cache.dtype.name]
    table = cupy.asnumpy(cache.block_table)
    for b, first in enumerate(first_keys):
        for key in range(0, int(first), cache.page_size):
            page = int(table[b, key // cache.page_size])
            stop = min(int(first) - key, cache.page_size)
            for c in (cache.k_cache, cache.v_cache):
                c.view(bits_type)[page, :, :stop, :] = nan_bits

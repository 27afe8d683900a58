"""Prefill attention launchers: the row softmax, naive attention (three kernels) and flash attention.

Shapes: q [B, h, Tq, d], k and v [B, h_kv, Tk, d], h a multiple of h_kv (GQA: query head j
reads KV head j // (h // h_kv)); o like q; lse fp32 [B, h, Tq], the natural log of the sum
of exp(scale * q . k) over the keys a row sees. Causal: query i sees key j iff
j <= i + Tk - Tq (queries aligned to the end of the keys; Tq == Tk is the usual case).
All inputs are C-contiguous CuPy arrays; outputs are new arrays unless `out` is given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._runtime import (HALF_TYPES, MASK_LOCAL, dtype_name, LOG2E, NULL, ceil_div, check_array, check_grid_dim,
                       check_out, check_scale, check_sinks, check_visibility, ctype, cupy_module, kernel, launch,
                       multiprocessor_count)
from .flash_hopper import HOPPER_HEAD_DIMS, hopper_supported, launch_flash_hopper

# ---------------------------------------------------------------- row softmax

#: Floats a thread holds for its part of a row (ITEMS * VEC): the row lives in registers, and
#: a 1024-thread block must fit 64 registers a thread.
_SOFTMAX_FLOATS_PER_THREAD = 32
_SOFTMAX_MAX_THREADS = 1024


def softmax_config(n: int, itemsize: int, aligned: bool = True) -> tuple[int, int, int]:
    """(VEC, ITEMS, TPR) for rows of n elements: VEC elements a load, ITEMS loads a thread, TPR threads a row.

    VEC is 16 bytes' worth when n and the pointers allow it (else the largest power of two that
    divides n). ITEMS starts at 4 (four 16-byte loads in flight a thread) and TPR is the power of
    two that then covers the row; past 1024 threads ITEMS grows, up to 32 floats a thread
    (rows of up to 32768 elements).
    """
    if n < 1:
        raise ValueError(f"rows must have at least one element, got {n}")
    vec = 16 // itemsize
    while vec > 1 and (n % vec or not aligned):
        vec //= 2
    nvec = ceil_div(n, vec)
    max_items = _SOFTMAX_FLOATS_PER_THREAD // vec
    items = min(4, max_items, 1 << (nvec - 1).bit_length())
    tpr = 1 << max(0, (ceil_div(nvec, items) - 1).bit_length())
    if tpr > _SOFTMAX_MAX_THREADS:
        tpr = _SOFTMAX_MAX_THREADS
        items = 1 << (ceil_div(nvec, tpr) - 1).bit_length()
        if items > max_items:
            raise ValueError(f"rows of {n} elements are longer than the single-pass softmax holds "
                             f"({_SOFTMAX_MAX_THREADS * max_items * vec} at this alignment)")
    return vec, items, tpr


#: Ring depth of the streaming softmax by row-slot size: deeper for short rows, up to 64 KiB a block.
_SOFTMAX_RING = ((16 * 1024, 4), (24 * 1024, 3), (48 * 1024, 2))


def softmax_plan(n: int, itemsize: int, aligned: bool = True) -> tuple[int, int, int, int]:
    """(VEC, ITEMS, TPR, NST): softmax_config plus the ring depth NST (0: direct loads).

    Rows that take whole 16-byte vectors and more than one warp use the streaming variant,
    whose ring of NST row slots (NST * slot <= 64 KiB) keeps the next rows' loads in flight.
    """
    vec, items, tpr = softmax_config(n, itemsize, aligned)
    nst = 0
    if vec * itemsize == 16 and tpr > 32:
        slot = items * tpr * 16
        nst = next((depth for limit, depth in _SOFTMAX_RING if slot <= limit), 0)
    return vec, items, tpr, nst


def _launch_softmax(cupy: Any, s: Any, p: Any, rows: int, n: int, scale: float,
                    causal: bool = False, q_len: int = 1, causal_offset: int = 0) -> None:
    aligned = s.data.ptr % 16 == 0 and p.data.ptr % 16 == 0
    vec, items, tpr, nst = softmax_plan(n, s.dtype.itemsize, aligned)
    kern = kernel("softmax_rows.cu", f"softmax_rows<{ctype(s)}, {vec}, {items}, {nst}>")
    args = (s, p, np.int64(rows), np.int32(n), np.int32(tpr), np.float32(scale * LOG2E),
            np.int32(bool(causal)), np.int32(q_len), np.int32(causal_offset))
    if nst == 0:
        block = tpr if tpr > 32 else 128
        launch(kern, (ceil_div(rows, block // tpr), 1, 1), (block, 1, 1), args)
        return
    ring_bytes = nst * items * tpr * 16
    regs = -(-int(kern.num_regs) // 8) * 8
    per_sm = max(1, min(2048 // tpr, 65536 // (regs * tpr), (227 * 1024) // (ring_bytes + 1024)))
    grid = min(rows, per_sm * multiprocessor_count(cupy.cuda.runtime.getDevice()))
    launch(kern, (grid, 1, 1), (tpr, 1, 1), args, ring_bytes)


def softmax_rows(s: Any, out: Any = None) -> Any:
    """p = softmax(s) along the last axis, fp32 arithmetic, one read of S and one write of P.

    s: cupy [..., N] fp16 / bf16 / fp32, C-contiguous; out: same shape and dtype (may be s).
    A row whose entries are all -inf gives zeros. N up to 65536 (more for fp32 and at
    16-byte alignment: see softmax_config).

    Tensors (CuPy arrays, C-contiguous):
        s        [..., N]  fp16 / bf16 / fp32
        out      [..., N]  s's dtype (may be s itself)
    """
    cupy = cupy_module()
    check_array(cupy, s, "s", ("float16", "bfloat16", "float32"))
    if s.ndim < 1:
        raise ValueError("s must have at least one dimension")
    p = cupy.empty_like(s) if out is None else out
    if out is not None:
        check_out(cupy, out, "out", s.shape, dtype_name(s))
    if s.size == 0:
        return p
    n = s.shape[-1]
    _launch_softmax(cupy, s, p, s.size // n, n, 1.0)
    return p


# ---------------------------------------------------------------- shapes shared by both attentions

def _check_qkv(cupy: Any, q: Any, k: Any, v: Any, dtypes: tuple[str, ...]) -> tuple[int, ...]:
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_array(cupy, x, name, dtypes, ndim=4)
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v must share a dtype, got {dtype_name(q)}, {dtype_name(k)}, {dtype_name(v)}")
    batch, heads, q_len, head_dim = q.shape
    if k.shape != v.shape or k.shape[0] != batch or k.shape[3] != head_dim:
        raise ValueError(f"k and v must both be [B, h_kv, Tk, d] with q's B and d; "
                         f"got q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    kv_heads, kv_len = k.shape[1], k.shape[2]
    if kv_heads < 1 or heads % kv_heads:
        raise ValueError(f"query heads ({heads}) must be a multiple of KV heads ({kv_heads})")
    if min(batch, heads, q_len, kv_len, head_dim) < 1:
        raise ValueError(f"every dimension must be >= 1; got q {tuple(q.shape)}, k {tuple(k.shape)}")
    return batch, heads, q_len, head_dim, kv_heads, kv_len


#: cuBLAS / CUDA library enums (library_types.h, cublas_api.h), as literals so no header is needed.
_CUDA_DTYPES = {"float16": 2, "bfloat16": 14, "float32": 0}     # CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F
_CUBLAS_OP_N, _CUBLAS_OP_T = 0, 1
_CUBLAS_COMPUTE_32F = 68
_CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99
_ONE, _ZERO = np.array(1.0, dtype=np.float32), np.array(0.0, dtype=np.float32)


def _gemm_batched(cupy: Any, trans_a: int, m: int, n: int, k: int, a: Any, lda: int, stride_a: int,
                  b: Any, ldb: int, stride_b: int, c: Any, ldc: int, stride_c: int, batch: int) -> None:
    """C = op(A) B per batch, column-major, through cublasGemmStridedBatchedEx with fp32 accumulation.

    Called directly because CuPy 14's batched matmul sends bfloat16 down its integer path.
    """
    from cupy_backends.cuda.libs import cublas

    dtype = _CUDA_DTYPES[dtype_name(c)]
    cublas.gemmStridedBatchedEx(
        cupy.cuda.device.get_cublas_handle(), trans_a, _CUBLAS_OP_N, m, n, k,
        _ONE.ctypes.data, a.data.ptr, dtype, lda, stride_a,
        b.data.ptr, dtype, ldb, stride_b,
        _ZERO.ctypes.data, c.data.ptr, dtype, ldc, stride_c,
        batch, _CUBLAS_COMPUTE_32F, _CUBLAS_GEMM_DEFAULT_TENSOR_OP)


def attention_scores(q: Any, k: Any) -> Any:
    """S = Q K^T (unscaled), [B, h, Tq, Tk] in q's dtype: one strided-batched GEMM per (batch, KV head).

    GQA costs no copy: q viewed as [B, h_kv, g * Tq, d] meets each KV head's keys once, and
    the rows of S come out in [B, h, Tq, Tk] order.

    Tensors (CuPy arrays, C-contiguous):
        q        [B, h, Tq, d]  fp16 / bf16 / fp32
        k        [B, h_kv, Tk, d]  q's dtype; h a multiple of h_kv
        returns  S [B, h, Tq, Tk]  q's dtype
    """
    cupy = cupy_module()
    batch, heads, q_len, head_dim, kv_heads, kv_len = _check_qkv(cupy, q, k, k, ("float16", "bfloat16", "float32"))
    rows = heads // kv_heads * q_len                                # g * Tq query rows per KV head
    s = cupy.empty((batch, heads, q_len, kv_len), dtype=q.dtype)
    # column-major: S^T [Tk x rows] = K [Tk x d] (stored as d x Tk, transposed) . Q^T [d x rows]
    _gemm_batched(cupy, _CUBLAS_OP_T, kv_len, rows, head_dim, k, head_dim, kv_len * head_dim,
                  q, head_dim, rows * head_dim, s, kv_len, rows * kv_len, batch * kv_heads)
    return s


def attention_values(p: Any, v: Any) -> Any:
    """O = P V, [B, h, Tq, d] from P [B, h, Tq, Tk] and v [B, h_kv, Tk, d]: one strided-batched GEMM.

    Tensors (CuPy arrays, C-contiguous):
        p        [B, h, Tq, Tk]  fp16 / bf16 / fp32
        v        [B, h_kv, Tk, d]  p's dtype; h a multiple of h_kv
        returns  O [B, h, Tq, d]  p's dtype
    """
    cupy = cupy_module()
    check_array(cupy, p, "p", ("float16", "bfloat16", "float32"), ndim=4)
    check_array(cupy, v, "v", (dtype_name(p),), ndim=4)
    batch, heads, q_len, kv_len = p.shape
    kv_heads, head_dim = v.shape[1], v.shape[3]
    if v.shape[0] != batch or v.shape[2] != kv_len or heads % kv_heads:
        raise ValueError(f"p [B, h, Tq, Tk] and v [B, h_kv, Tk, d] do not match: {tuple(p.shape)}, {tuple(v.shape)}")
    rows = heads // kv_heads * q_len
    o = cupy.empty((batch, heads, q_len, head_dim), dtype=p.dtype)
    # column-major: O^T [d x rows] = V^T [d x Tk] . P^T [Tk x rows]
    _gemm_batched(cupy, _CUBLAS_OP_N, head_dim, rows, kv_len, v, head_dim, kv_len * head_dim,
                  p, kv_len, rows * kv_len, o, head_dim, rows * head_dim, batch * kv_heads)
    return o


def masked_softmax(s: Any, scale: float, causal: bool = False, out: Any = None) -> Any:
    """P = softmax(scale S) over the last axis of S [B, h, Tq, Tk]; causal masks key j > i + Tk - Tq.

    Tensors (CuPy arrays, C-contiguous):
        s        [B, h, Tq, Tk]  fp16 / bf16 / fp32
        out      [B, h, Tq, Tk]  s's dtype (optional, preallocated)
        returns  P [B, h, Tq, Tk]  s's dtype
    """
    cupy = cupy_module()
    check_array(cupy, s, "s", ("float16", "bfloat16", "float32"), ndim=4)
    p = cupy.empty_like(s) if out is None else out
    q_len, kv_len = s.shape[2], s.shape[3]
    _launch_softmax(cupy, s, p, s.size // kv_len, kv_len, scale, causal, q_len, kv_len - q_len)
    return p


def naive_attention(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> Any:
    """Textbook attention as the three kernels the chapter counts: S = Q K^T, P = softmax(scale S), O = P V.

    QK^T and PV run through cuBLAS (strided-batched GEMMs, fp32 accumulation); the softmax is
    rooflab's row kernel, which applies the scale and, if causal, the mask (masked scores ->
    -inf), so S [B, h, Tq, Tk] and P are both fully materialised in the input dtype.
    dtypes fp16, bf16, fp32. Returns o [B, h, Tq, d]. The three pieces are attention_scores,
    masked_softmax and attention_values, for timing one at a time.

    Tensors (CuPy arrays, C-contiguous):
        q        [B, h, Tq, d]  fp16 / bf16 / fp32
        k, v     [B, h_kv, Tk, d]  q's dtype; h a multiple of h_kv
        returns  o [B, h, Tq, d]  q's dtype
    """
    cupy = cupy_module()
    _, _, _, head_dim, _, _ = _check_qkv(cupy, q, k, v, ("float16", "bfloat16", "float32"))
    s = attention_scores(q, k)
    p = masked_softmax(s, check_scale(scale, head_dim), causal)
    del s                                                          # P is written before S is freed
    return attention_values(p, v)


# ---------------------------------------------------------------- flash attention

#: (MT, NW, KN) per head dim: 16*MT query rows a warp, NW warps (BM = 16*MT*NW rows a CTA),
#: KN keys a softmax step inside the 64-key shared-memory tile. d 128 takes the fastest
#: measured on the H200 (351 / 322 TFLOP/s at T 8192), which ptxas builds with 12-76 bytes of
#: spills per 64-key tile; (2, 4, 32) has none and ran 4-6% slower (KERNELS.md).
FLASH_VARIANTS = {128: (2, 4, 64), 64: (2, 4, 64)}
FLASH_KV_TILE = 64
#: What flash_attention runs when impl and variant are None: the wgmma kernel where it runs (sm_90,
#: d 128), which passed every GPU test and ran 1.55x / 1.79x the mma.sync kernel on the H200
#: (non-causal / causal, T 8192, KERNELS.md); "mma" elsewhere.
FLASH_DEFAULT_IMPL = "hopper"


def flash_default_impl(head_dim: int) -> str:
    """The implementation flash_attention picks on this device for `head_dim` when none is asked for."""
    hopper = FLASH_DEFAULT_IMPL == "hopper" and hopper_supported(cupy_module(), head_dim)
    return "hopper" if hopper else "mma"


def flash_smem_bytes(head_dim: int, mt: int, nw: int) -> int:
    """Q tile plus two stages of K and V tiles, all fp16/bf16."""
    return 16 * mt * nw * head_dim * 2 + 4 * FLASH_KV_TILE * head_dim * 2


def flash_attention(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None,
                    return_lse: bool = True, *, out: Any = None, out_lse: Any = None,
                    variant: tuple | None = None, impl: str | None = None, window: int | None = None,
                    chunk: int | None = None, sinks: Any = None) -> tuple[Any, Any]:
    """Flash attention forward on tensor cores (online softmax in fp32). -> (o, lse).

    q [B, h, Tq, d], k and v [B, h_kv, Tk, d]: C-contiguous fp16 or bf16, d in {64, 128};
    any Tq, Tk >= 1. o [B, h, Tq, d] in q's dtype; lse fp32 [B, h, Tq] (None unless
    return_lse or out_lse); a causal row that sees no key gets o = 0 and lse = -inf.
    out / out_lse: preallocated outputs (tests poison them).
    window W (needs causal=True): query i (key position p = i + Tk - Tq) sees keys p - W < j <= p.
    chunk C (needs causal=True): it sees keys j <= p with floor(j / C) == floor(p / C) (both may be
    given; a key must pass both). Key tiles outside every row's range are skipped, not masked.
    sinks: fp32 [h], one logit per query head (natural-log units, like scale q . k) that joins each
    row's softmax denominator and no value (gpt-oss): o = sum_j e^(x_j - m) v_j / (e^(s_h - m) +
    sum_j e^(x_j - m)), and the LSE includes it; a row with no visible key then gets o = 0, lse = s_h.
    impl: "mma" (mma.sync m16n8k16, sm_80+, flash_fwd.cu), "hopper" (wgmma, sm_90 and d 128 only,
    flash_fwd_hopper_ws.cu / flash_fwd_hopper.cu) or None: FLASH_DEFAULT_IMPL where the device and d
    allow it, else "mma". variant: a tuning override, (MT, NW, KN) for "mma" (FLASH_VARIANTS),
    (NWG, BN, PIPE[, NST]) for "hopper" (flash_hopper.HOPPER_VARIANTS; windows and chunks need the
    warp-specialized 4-tuple); with impl None a variant means "mma".

    Tensors (CuPy arrays, C-contiguous):
        q        [B, h, Tq, d]  fp16 / bf16, d 64 or 128
        k, v     [B, h_kv, Tk, d]  q's dtype; h a multiple of h_kv
        sinks    [h]  fp32 (optional)
        out      [B, h, Tq, d]  q's dtype (optional, preallocated)
        out_lse  [B, h, Tq]  fp32 (optional, preallocated)
        returns  (o [B, h, Tq, d] q's dtype, lse [B, h, Tq] fp32 or None)
    """
    cupy = cupy_module()
    batch, heads, q_len, head_dim, kv_heads, kv_len = _check_qkv(cupy, q, k, v, HALF_TYPES)
    if head_dim not in FLASH_VARIANTS:
        raise ValueError(f"flash_attention supports head_dim {sorted(FLASH_VARIANTS)}, got {head_dim}")
    check_grid_dim(heads, "heads")
    check_grid_dim(batch, "batch")
    scale = check_scale(scale, head_dim)
    mask, window_keys, chunk_keys = check_visibility(causal, window, chunk)
    sinks_arg = check_sinks(cupy, sinks, heads)
    if impl not in (None, "mma", "hopper"):
        raise ValueError(f"impl must be None, 'mma' or 'hopper', got {impl!r}")
    hopper_ok = hopper_supported(cupy, head_dim)
    if impl == "hopper" and not hopper_ok:
        raise ValueError(f"impl='hopper' needs an sm_90 GPU and head_dim in {HOPPER_HEAD_DIMS}")
    use_hopper = impl == "hopper" or (impl is None and variant is None and FLASH_DEFAULT_IMPL == "hopper"
                                      and hopper_ok)
    if use_hopper and variant is not None and len(variant) != 4 and mask == MASK_LOCAL:
        raise ValueError(f"variant={variant}: windows and chunks run in the warp-specialized Hopper kernel "
                         f"(a (2, BN, False, NST) variant)")
    o = cupy.empty_like(q) if out is None else out
    if out is not None:
        check_out(cupy, out, "out", q.shape, dtype_name(q))
    lse = out_lse
    if lse is None and return_lse:
        lse = cupy.empty((batch, heads, q_len), dtype=cupy.float32)
    elif lse is not None:
        check_out(cupy, lse, "out_lse", (batch, heads, q_len), "float32")
    extra = (sinks_arg, np.int32(window_keys), np.int32(chunk_keys))
    if use_hopper:
        launch_flash_hopper(q, k, v, o, lse, mask, scale, variant, extra=extra)
        return o, lse
    mt, nw, kn = variant if variant is not None else FLASH_VARIANTS[head_dim]
    rows_per_cta = 16 * mt * nw
    name = f"flash_fwd<{ctype(q)}, {head_dim}, {mt}, {nw}, {kn}, {mask}>"
    launch(kernel("flash_fwd.cu", name), (ceil_div(q_len, rows_per_cta), heads, batch), (nw * 32, 1, 1),
           (q, k, v, o, NULL if lse is None else lse, np.int32(q_len), np.int32(kv_len),
            np.int32(heads), np.int32(heads // kv_heads), np.float32(scale * LOG2E), *extra),
           flash_smem_bytes(head_dim, mt, nw))
    return o, lse

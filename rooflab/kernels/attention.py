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

from ._runtime import (HALF_TYPES, LOG2E, NULL, ceil_div, check_array, check_grid_dim, check_out,
                       check_scale, ctype, cupy_module, kernel, launch)

# ---------------------------------------------------------------- row softmax

#: Floats a thread holds for its part of a row (ITEMS * VEC): the row lives in registers.
_SOFTMAX_FLOATS_PER_THREAD = 64
_SOFTMAX_MAX_THREADS = 1024


def softmax_config(n: int, itemsize: int, aligned: bool = True) -> tuple[int, int, int]:
    """(VEC, ITEMS, TPR) for rows of n elements: VEC elements a load, ITEMS loads a thread, TPR threads a row.

    VEC is 16 bytes' worth when n and the pointers allow it (else the largest power of two that
    divides n). ITEMS starts at 4 (four 16-byte loads in flight a thread) and TPR is the power of
    two that then covers the row; past 1024 threads ITEMS grows, up to 64 floats a thread.
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


def _launch_softmax(cupy: Any, s: Any, p: Any, rows: int, n: int, scale: float,
                    causal: bool = False, q_len: int = 1, causal_offset: int = 0) -> None:
    aligned = s.data.ptr % 16 == 0 and p.data.ptr % 16 == 0
    vec, items, tpr = softmax_config(n, s.dtype.itemsize, aligned)
    block = tpr if tpr > 32 else 128
    grid = ceil_div(rows, block // tpr)
    kern = kernel("softmax_rows.cu", f"softmax_rows<{ctype(s)}, {vec}, {items}>")
    launch(kern, (grid, 1, 1), (block, 1, 1),
           (s, p, np.int64(rows), np.int32(n), np.int32(tpr), np.float32(scale * LOG2E),
            np.int32(bool(causal)), np.int32(q_len), np.int32(causal_offset)))


def softmax_rows(s: Any, out: Any = None) -> Any:
    """p = softmax(s) along the last axis, fp32 arithmetic, one read of S and one write of P.

    s: cupy [..., N] fp16 / bf16 / fp32, C-contiguous; out: same shape and dtype (may be s).
    A row whose entries are all -inf gives zeros. N up to 65536 (more for fp32 and at
    16-byte alignment: see softmax_config).
    """
    cupy = cupy_module()
    check_array(cupy, s, "s", ("float16", "bfloat16", "float32"))
    if s.ndim < 1:
        raise ValueError("s must have at least one dimension")
    p = cupy.empty_like(s) if out is None else out
    if out is not None:
        check_out(cupy, out, "out", s.shape, s.dtype.name)
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
        raise ValueError(f"q, k, v must share a dtype, got {q.dtype.name}, {k.dtype.name}, {v.dtype.name}")
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


def naive_attention(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> Any:
    """Textbook attention as the three kernels the chapter counts: S = Q K^T, P = softmax(scale S), O = P V.

    QK^T and PV run through cuBLAS (cupy.matmul, fp32 accumulation); the softmax is rooflab's
    row kernel, which applies the scale and, if causal, the mask (masked scores -> -inf), so
    S [B, h, Tq, Tk] and P are both fully materialised in the input dtype. GQA costs no copy:
    q viewed as [B, h_kv, g * Tq, d] multiplies each KV head's keys once, and the rows of
    S come out in [B, h, Tq, Tk] order; the softmax recovers each row's query index as
    row % Tq for the mask. dtypes fp16, bf16, fp32. Returns o [B, h, Tq, d].
    """
    cupy = cupy_module()
    batch, heads, q_len, head_dim, kv_heads, kv_len = _check_qkv(cupy, q, k, v,
                                                                  ("float16", "bfloat16", "float32"))
    scale = check_scale(scale, head_dim)
    group = heads // kv_heads
    q_grouped = q.reshape(batch, kv_heads, group * q_len, head_dim)
    s = cupy.matmul(q_grouped, k.swapaxes(-1, -2))                 # [B, h_kv, g*Tq, Tk] == [B, h, Tq, Tk]
    p = cupy.empty_like(s)
    _launch_softmax(cupy, s, p, s.size // kv_len, kv_len, scale, causal, q_len, kv_len - q_len)
    del s
    o = cupy.matmul(p, v)                                          # [B, h_kv, g*Tq, d]
    return o.reshape(batch, heads, q_len, head_dim)


# ---------------------------------------------------------------- flash attention

#: (MT, NW, KN) per head dim: 16*MT query rows a warp, NW warps (BM = 16*MT*NW rows a CTA),
#: KN keys a softmax step inside the 64-key shared-memory tile. Chosen where ptxas reports
#: no spills (KERNELS.md has the register reports and timings of the alternatives).
FLASH_VARIANTS = {128: (2, 4, 32), 64: (2, 4, 64)}
FLASH_KV_TILE = 64


def flash_smem_bytes(head_dim: int, mt: int, nw: int) -> int:
    """Q tile plus two stages of K and V tiles, all fp16/bf16."""
    return 16 * mt * nw * head_dim * 2 + 4 * FLASH_KV_TILE * head_dim * 2


def flash_attention(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None,
                    return_lse: bool = True, *, out: Any = None, out_lse: Any = None,
                    variant: tuple[int, int, int] | None = None) -> tuple[Any, Any]:
    """Flash attention forward on tensor cores (mma.sync m16n8k16, online softmax in fp32). -> (o, lse).

    q [B, h, Tq, d], k and v [B, h_kv, Tk, d]: C-contiguous fp16 or bf16, d in {64, 128};
    any Tq, Tk >= 1. o [B, h, Tq, d] in q's dtype; lse fp32 [B, h, Tq] (None unless
    return_lse or out_lse); a causal row that sees no key gets o = 0 and lse = -inf.
    out / out_lse: preallocated outputs (tests poison them). variant: (MT, NW, KN) override
    for tuning, see FLASH_VARIANTS.
    """
    cupy = cupy_module()
    batch, heads, q_len, head_dim, kv_heads, kv_len = _check_qkv(cupy, q, k, v, HALF_TYPES)
    if head_dim not in FLASH_VARIANTS:
        raise ValueError(f"flash_attention supports head_dim {sorted(FLASH_VARIANTS)}, got {head_dim}")
    check_grid_dim(heads, "heads")
    check_grid_dim(batch, "batch")
    scale = check_scale(scale, head_dim)
    mt, nw, kn = variant if variant is not None else FLASH_VARIANTS[head_dim]
    o = cupy.empty_like(q) if out is None else out
    if out is not None:
        check_out(cupy, out, "out", q.shape, q.dtype.name)
    lse = out_lse
    if lse is None and return_lse:
        lse = cupy.empty((batch, heads, q_len), dtype=cupy.float32)
    elif lse is not None:
        check_out(cupy, lse, "out_lse", (batch, heads, q_len), "float32")
    rows_per_cta = 16 * mt * nw
    name = f"flash_fwd<{ctype(q)}, {head_dim}, {mt}, {nw}, {kn}, {'true' if causal else 'false'}>"
    launch(kernel("flash_fwd.cu", name), (ceil_div(q_len, rows_per_cta), heads, batch), (nw * 32, 1, 1),
           (q, k, v, o, NULL if lse is None else lse, np.int32(q_len), np.int32(kv_len),
            np.int32(heads), np.int32(heads // kv_heads), np.float32(scale * LOG2E)),
           flash_smem_bytes(head_dim, mt, nw))
    return o, lse

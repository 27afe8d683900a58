"""Decode launchers: paged decode (optionally split-KV), the S-way merge of its partials, and the pairwise merge.

Shapes: q [B, h, d] (one token per sequence) or [B, q_len, h, d] (q_len new tokens, 1 to 8, the last
q_len positions of each context: token t sees keys j <= context_len - q_len + t); o like q, lse
q's shape without d. k_cache and v_cache [num_pages, h_kv, page_size, d] (HND: one (page, KV head)
chunk is page_size * d contiguous elements); block_table int32 [B, max_pages_per_seq]; context_lens
int32 [B], each >= q_len and <= max_pages_per_seq * page_size (not checked: reading them would
synchronise). window W / chunk C limit the keys each token sees (as flash_attention's), and only the
pages holding keys some token sees are read; sinks fp32 [h] join each row's denominator. Split-KV
partials: o fp32 [S, *q.shape] and lse fp32 [S, *q.shape[:-1]]; split z covers whole pages,
ceil(pages / S) of those the tokens' key range touches (rooflab/cost/paged.py deals pages out the
same way); an empty split has o = 0 and lse = -inf.

fp8 KV cache: k_cache and v_cache may hold e4m3 bytes (CuPy uint8, since CuPy has no fp8 dtype;
compute capability 8.9 or newer) with one fp32 scale per tensor: the cache stands for
k_scale * e4m3(k_cache) and v_scale * e4m3(v_cache). q and o stay fp16 / bf16; the kernel widens
the bytes to q's dtype exactly, folds k_scale into the softmax scale and v_scale into the output.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._runtime import (HALF_TYPES, MASK_CAUSAL, MASK_NONE, dtype_name, LOG2E, NULL, ceil_div, check_array,
                       check_count, check_grid_dim, check_out, check_scale, check_sinks, check_visibility, compute_capability, ctype,
                       cupy_module, kernel, launch)

#: Rows a merge_states thread loads at once (16 bytes of each input per row). 1 ran fastest on
#: the H200 (99% of copy bandwidth against 90% for 2 and 65% for 4: more resident threads beat
#: more loads a thread; KERNELS.md).
MERGE_ROWS_PER_THREAD = 1
#: Warps a CTA and cp.async stages a warp: 4 x 3 x 8 KiB (d = 128) = 96 KiB, two CTAs an SM.
PAGED_WARPS = 4
PAGED_STAGES = 3
#: Stages for an fp8 cache (16-key stages of 4 KiB at d = 128): 4 x 4 x 4 KiB = 64 KiB, three CTAs an SM
#: (155 registers a thread allow three). On the H200 (2026-11-30, B 128 x 8192): 556 us against 651 us
#: for 6 stages (96 KiB, two CTAs an SM) and 578 us for 3: the widening needs the extra resident warps.
PAGED_STAGES_FP8 = 4
_TILE_KEYS = 16
#: CuPy dtype name of an fp8 e4m3 cache (bytes), and the kernels' storage type for it.
FP8_STORAGE = "uint8"
FP8_CTYPE = "rl::e4m3"
#: cvt.rn.f16x2.e4m3x2 needs compute capability 8.9 (Ada) or newer.
FP8_MIN_COMPUTE_CAPABILITY = 89
#: New tokens per sequence the kernel takes (speculative verification, multi-token prediction).
MAX_Q_LEN = 8


def _paged_layout(rows: int) -> tuple[int, int]:
    """(MT, head_chunks) for `rows` = group x q_len query rows of one KV head: 16*MT rows a CTA, and
    how many CTAs share them (each reading the KV head's pages)."""
    mt = 1 if rows <= 16 else 2
    return mt, ceil_div(rows, 16 * mt)


def paged_smem_bytes(head_dim: int, mt: int, warps: int = PAGED_WARPS, stages: int = PAGED_STAGES,
                     kv_bytes: int = 2) -> int:
    rings = warps * stages * 2 * _TILE_KEYS * head_dim * kv_bytes
    merge = (warps * 16 * mt * head_dim + 2 * warps * 16 * mt) * 4
    return max(rings, merge)


def _check_paged(cupy: Any, q: Any, k_cache: Any, v_cache: Any, block_table: Any,
                 context_lens: Any) -> tuple[int, ...]:
    check_array(cupy, q, "q", HALF_TYPES)
    if q.ndim not in (3, 4):
        raise ValueError(f"q must be [B, h, d] or [B, q_len, h, d], got shape {tuple(q.shape)}")
    check_array(cupy, k_cache, "k_cache", HALF_TYPES + (FP8_STORAGE,), ndim=4)
    check_array(cupy, v_cache, "v_cache", HALF_TYPES + (FP8_STORAGE,), ndim=4)
    check_array(cupy, block_table, "block_table", ("int32",), ndim=2)
    check_array(cupy, context_lens, "context_lens", ("int32",), ndim=1)
    batch, heads, head_dim = q.shape[0], q.shape[-2], q.shape[-1]
    if q.ndim == 4:
        check_count(q.shape[1], "q_len (q.shape[1])", 1, MAX_Q_LEN)
    if k_cache.dtype != v_cache.dtype or dtype_name(k_cache) not in (dtype_name(q), FP8_STORAGE):
        raise ValueError(f"k_cache and v_cache must both have q's dtype or both be fp8 e4m3 bytes (uint8), got "
                         f"q {dtype_name(q)}, k_cache {dtype_name(k_cache)}, v_cache {dtype_name(v_cache)}")
    if k_cache.shape != v_cache.shape or k_cache.shape[3] != head_dim:
        raise ValueError(f"k_cache and v_cache must both be [num_pages, h_kv, page_size, d] with q's d; "
                         f"got q {tuple(q.shape)}, k {tuple(k_cache.shape)}, v {tuple(v_cache.shape)}")
    if head_dim not in (64, 128):
        raise ValueError(f"paged decode supports head_dim 64 and 128, got {head_dim}")
    kv_heads, page_size = k_cache.shape[1], k_cache.shape[2]
    if kv_heads < 1 or heads % kv_heads:
        raise ValueError(f"query heads ({heads}) must be a multiple of KV heads ({kv_heads})")
    if page_size < 1:
        raise ValueError("page_size must be >= 1")
    if block_table.shape[0] != batch or context_lens.shape[0] != batch:
        raise ValueError(f"block_table [B, pages] and context_lens [B] must have B = {batch} rows; "
                         f"got {tuple(block_table.shape)} and {tuple(context_lens.shape)}")
    check_grid_dim(batch, "batch")
    return batch, heads, head_dim, kv_heads, page_size


def _check_kv_scales(cupy: Any, fp8: bool, k_scale: float, v_scale: float) -> None:
    for name, value in (("k_scale", k_scale), ("v_scale", v_scale)):
        if isinstance(value, bool) or not (math.isfinite(float(value)) and float(value) > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value}")
        if not fp8 and float(value) != 1.0:
            raise ValueError(f"{name} applies to an fp8 (uint8) cache; a 16-bit cache takes 1.0, got {value}")
    if fp8 and compute_capability(cupy) < FP8_MIN_COMPUTE_CAPABILITY:
        raise ValueError(f"an fp8 KV cache needs compute capability 8.9 or newer (cvt e4m3x2), this GPU has "
                         f"{compute_capability(cupy) / 10:.1f}")


def _launch_paged(cupy: Any, q: Any, k_cache: Any, v_cache: Any, block_table: Any, context_lens: Any,
                  num_splits: int, split: bool, out: Any, out_lse: Any, scale: float | None,
                  config: tuple[int, int] | None, k_scale: float = 1.0, v_scale: float = 1.0,
                  window: int | None = None, chunk: int | None = None, sinks: Any = None) -> None:
    """split = False: o in q's dtype like q (num_splits must be 1); True: fp32 partials [S, *q.shape]."""
    batch, heads, head_dim, kv_heads, page_size = _check_paged(cupy, q, k_cache, v_cache,
                                                               block_table, context_lens)
    fp8 = dtype_name(k_cache) == FP8_STORAGE
    _check_kv_scales(cupy, fp8, k_scale, v_scale)
    scale = check_scale(scale, head_dim)
    q_len = q.shape[1] if q.ndim == 4 else 1
    mask, window_keys, chunk_keys = check_visibility(True, window, chunk)
    if mask == MASK_CAUSAL and q_len == 1:
        mask = MASK_NONE                                   # one token sees the whole context
    sinks_arg = check_sinks(cupy, sinks, heads)
    warps, stages = config if config is not None else (PAGED_WARPS, PAGED_STAGES_FP8 if fp8 else PAGED_STAGES)
    group = heads // kv_heads
    mt, chunks = _paged_layout(group * q_len)
    page_shift = page_size.bit_length() - 1 if page_size & (page_size - 1) == 0 else -1
    name = (f"paged_decode<{ctype(q)}, {FP8_CTYPE if fp8 else ctype(q)}, {head_dim}, {mt}, {warps}, {stages}, "
            f"{'true' if split else 'false'}, {mask}>")
    launch(kernel("paged_decode.cu", name), (kv_heads * chunks, batch, num_splits), (warps * 32, 1, 1),
           (q, k_cache, v_cache, block_table, np.int32(block_table.shape[1]), context_lens,
            out, NULL if out_lse is None else out_lse, np.int32(heads), np.int32(group), np.int32(chunks),
            np.int32(page_size), np.int32(page_shift), np.float32(scale * float(k_scale) * LOG2E),
            np.float32(v_scale), np.int32(q_len), sinks_arg, np.int32(window_keys), np.int32(chunk_keys)),
           paged_smem_bytes(head_dim, mt, warps, stages, 1 if fp8 else 2))


def _check_splits(num_splits: int) -> int:
    if isinstance(num_splits, bool) or int(num_splits) != num_splits or not 1 <= num_splits <= 65535:
        raise ValueError(f"num_splits must be a whole number in 1..65535, got {num_splits}")
    return int(num_splits)


def _row_shape(q: Any) -> tuple[int, ...]:
    """q's shape without d: [B, h] or [B, q_len, h] (empty if q is not an array, which the checks then refuse)."""
    return tuple(q.shape[:-1]) if getattr(q, "ndim", 0) in (3, 4) else ()


def paged_decode_partial(q: Any, k_cache: Any, v_cache: Any, block_table: Any, context_lens: Any,
                         num_splits: int, scale: float | None = None, *, out: Any = None,
                         out_lse: Any = None, config: tuple[int, int] | None = None,
                         k_scale: float = 1.0, v_scale: float = 1.0, window: int | None = None,
                         chunk: int | None = None, sinks: Any = None) -> tuple[Any, Any]:
    """The split-KV kernel alone: fp32 partial outputs [S, *q.shape] and LSEs [S, *q.shape[:-1]] (-inf for
    an empty split; split 0 carries the sinks).

    k_scale, v_scale: the per-tensor scales of an fp8 cache; window, chunk, sinks: see this module's docstring.

    Tensors (CuPy arrays, C-contiguous):
        q             [B, h, d] or [B, q_len, h, d]  fp16 / bf16
        k_cache       [num_pages, h_kv, page_size, d]  q's dtype, or uint8 e4m3 codes (an fp8 cache)
        v_cache       [num_pages, h_kv, page_size, d]  k_cache's dtype
        block_table   [B, max_pages_per_seq]  int32
        context_lens  [B]  int32
        sinks         [h]  fp32 (optional)
        out           [S, *q.shape]  fp32 (optional, preallocated)
        out_lse       [S, *q.shape[:-1]]  fp32 (optional, preallocated)
        returns       (o [S, *q.shape] fp32, lse [S, *q.shape[:-1]] fp32)
    """
    cupy = cupy_module()
    num_splits = _check_splits(num_splits)
    rows = _row_shape(q)
    shape = (num_splits,) + rows
    head_dim = q.shape[-1] if rows else 0
    o_part = cupy.empty(shape + (head_dim,), dtype=cupy.float32) if out is None else out
    lse_part = cupy.empty(shape, dtype=cupy.float32) if out_lse is None else out_lse
    if out is not None:
        check_out(cupy, out, "out", shape + (head_dim,), "float32")
    if out_lse is not None:
        check_out(cupy, out_lse, "out_lse", shape, "float32")
    # num_splits == 1 still runs the split kernel (fp32 partials), so the pieces can be timed alone.
    _launch_paged(cupy, q, k_cache, v_cache, block_table, context_lens, num_splits, True,
                  o_part, lse_part, scale, config, k_scale, v_scale, window, chunk, sinks)
    return o_part, lse_part


def paged_decode(q: Any, k_cache: Any, v_cache: Any, block_table: Any, context_lens: Any,
                 num_splits: int = 1, return_lse: bool = False, scale: float | None = None, *,
                 out: Any = None, out_lse: Any = None, config: tuple[int, int] | None = None,
                 k_scale: float = 1.0, v_scale: float = 1.0, window: int | None = None,
                 chunk: int | None = None, sinks: Any = None) -> Any:
    """Decode attention through a paged KV cache. -> o like q in q's dtype, or (o, lse fp32 q.shape[:-1]).

    q [B, h, d], or [B, q_len, h, d] for q_len new tokens a sequence (1..8, causal among themselves).
    One CTA per (KV head, sequence, split) reads each KV page once for its whole query group and
    all new tokens. num_splits > 1 runs the split kernel (fp32 partials) and then merge_partials.
    Shapes and page layout: see this module's docstring. scale defaults to 1/sqrt(d).
    k_cache / v_cache: q's dtype, or fp8 e4m3 bytes (uint8) standing for k_scale * e4m3 and
    v_scale * e4m3 (the scales must be 1.0 for a 16-bit cache).
    window W: token t (key position p = context_len - q_len + t) sees keys p - W < j <= p; chunk C:
    keys j <= p with floor(j / C) == floor(p / C); pages outside every token's keys are not read.
    sinks: fp32 [h], a logit per query head in each row's denominator (gpt-oss), counted once.
    config: (warps, stages) override for tuning.

    Tensors (CuPy arrays, C-contiguous):
        q             [B, h, d] or [B, q_len, h, d]  fp16 / bf16
        k_cache       [num_pages, h_kv, page_size, d]  q's dtype, or uint8 e4m3 codes (an fp8 cache)
        v_cache       [num_pages, h_kv, page_size, d]  k_cache's dtype
        block_table   [B, max_pages_per_seq]  int32
        context_lens  [B]  int32
        sinks         [h]  fp32 (optional)
        out           q's shape  q's dtype (optional, preallocated)
        out_lse       q.shape[:-1]  fp32 (optional, preallocated)
        returns       o q's shape and dtype, or (o, lse q.shape[:-1] fp32)
    """
    cupy = cupy_module()
    num_splits = _check_splits(num_splits)
    rows = _row_shape(q)
    head_dim = q.shape[-1] if rows else 0
    want_lse = return_lse or out_lse is not None
    if out is not None:
        check_out(cupy, out, "out", rows + (head_dim,), dtype_name(q))
    if out_lse is not None:
        check_out(cupy, out_lse, "out_lse", rows, "float32")
    if num_splits == 1:
        o = cupy.empty_like(q) if out is None else out
        lse = (cupy.empty(rows, dtype=cupy.float32) if out_lse is None else out_lse) if want_lse else None
        _launch_paged(cupy, q, k_cache, v_cache, block_table, context_lens, 1, False, o, lse, scale, config,
                      k_scale, v_scale, window, chunk, sinks)
    else:
        o_part, lse_part = paged_decode_partial(q, k_cache, v_cache, block_table, context_lens, num_splits,
                                                scale, config=config, k_scale=k_scale, v_scale=v_scale,
                                                window=window, chunk=chunk, sinks=sinks)
        o, lse = merge_partials(o_part, lse_part, q.dtype, return_lse=want_lse, out=out, out_lse=out_lse)
    return (o, lse) if return_lse else o


def merge_partials(o_part: Any, lse_part: Any, dtype: Any = None, return_lse: bool = True, *,
                   out: Any = None, out_lse: Any = None) -> tuple[Any, Any]:
    """Merge S partial states at once: o_part fp32 [S, ..., d], lse_part fp32 [S, ...] -> (o [..., d], lse [...]).

    o in `dtype` (fp16, bf16 or fp32; default fp32). Guards as merge_states: +inf and -inf
    LSEs are empty splits whose o is never read; all-empty rows give o = 0, lse = -inf.

    Tensors (CuPy arrays, C-contiguous):
        o_part    [S, ..., d]  fp32
        lse_part  [S, ...]  fp32
        out       [..., d]  `dtype` (optional, preallocated)
        out_lse   [...]  fp32 (optional, preallocated)
        returns   (o [..., d] `dtype`, lse [...] fp32 or None)
    """
    cupy = cupy_module()
    check_array(cupy, o_part, "o_part", ("float32",))
    check_array(cupy, lse_part, "lse_part", ("float32",))
    if o_part.ndim < 2 or tuple(o_part.shape[:-1]) != tuple(lse_part.shape):
        raise ValueError(f"o_part must be lse_part's shape plus d; got {tuple(o_part.shape)} and "
                         f"{tuple(lse_part.shape)}")
    num_splits, head_dim = o_part.shape[0], o_part.shape[-1]
    if head_dim % 4 or head_dim > 4096:
        raise ValueError(f"merge_partials needs d a multiple of 4 (and <= 4096), got {head_dim}")
    dtype = cupy.dtype(cupy.float32 if dtype is None else dtype)
    out_shape = tuple(o_part.shape[1:])
    o = cupy.empty(out_shape, dtype=dtype) if out is None else out
    if out is not None:
        check_out(cupy, out, "out", out_shape, dtype_name(out))
        if out.dtype != dtype:
            raise ValueError(f"out must be {dtype}, got {out.dtype}")
    lse = out_lse
    if lse is None and return_lse:
        lse = cupy.empty(out_shape[:-1], dtype=cupy.float32)
    elif lse is not None:
        check_out(cupy, lse, "out_lse", out_shape[:-1], "float32")
    rows = int(np.prod(out_shape[:-1], dtype=np.int64))
    if rows == 0 or num_splits == 0:
        return o, lse
    threads_x = head_dim // 4
    rows_per_block = max(1, 256 // threads_x)
    kern = kernel("merge_partials.cu", f"merge_partials<{ctype(o)}, 8>")
    launch(kern, (ceil_div(rows, rows_per_block), 1, 1), (threads_x, rows_per_block, 1),
           (o_part, lse_part, o, NULL if lse is None else lse, np.int32(num_splits), np.int64(rows),
            np.int32(head_dim)))
    return o, lse


def merge_states(o_a: Any, lse_a: Any, o_b: Any, lse_b: Any, out: Any = None, out_lse: Any = None,
                 return_lse: bool = True, *, rows_per_thread: int = MERGE_ROWS_PER_THREAD) -> tuple[Any, Any]:
    """Merge two attention states over disjoint key ranges by their LSEs. -> (o, lse or None).

    o_a, o_b [tokens, heads, d] (any leading shape) fp16 / bf16 / fp32; lse_a, lse_b fp32
    [tokens, heads]. fp32 arithmetic; 16-byte loads when d and the pointers allow; 64-bit
    indices. +inf marks an empty side like -inf; both empty give o = 0 and lse = -inf.
    rows_per_thread (1, 2 or 4): rows whose loads a thread issues together (a tuning knob).

    Tensors (CuPy arrays, C-contiguous):
        o_a, o_b      [..., d]  fp16 / bf16 / fp32, one dtype
        lse_a, lse_b  o_a.shape[:-1]  fp32
        out           o_a's shape and dtype (optional, preallocated)
        out_lse       o_a.shape[:-1]  fp32 (optional, preallocated)
        returns       (o o_a's shape and dtype, lse fp32 or None)
    """
    cupy = cupy_module()
    for name, x in (("o_a", o_a), ("o_b", o_b)):
        check_array(cupy, x, name, ("float16", "bfloat16", "float32"))
    for name, x in (("lse_a", lse_a), ("lse_b", lse_b)):
        check_array(cupy, x, name, ("float32",))
    if o_a.shape != o_b.shape or o_a.dtype != o_b.dtype:
        raise ValueError(f"o_a and o_b must match in shape and dtype; got {tuple(o_a.shape)} "
                         f"{dtype_name(o_a)} and {tuple(o_b.shape)} {dtype_name(o_b)}")
    if o_a.ndim < 2 or tuple(lse_a.shape) != tuple(o_a.shape[:-1]) or lse_b.shape != lse_a.shape:
        raise ValueError(f"lse_a and lse_b must be o's shape without d; got o {tuple(o_a.shape)}, "
                         f"lse_a {tuple(lse_a.shape)}, lse_b {tuple(lse_b.shape)}")
    o = cupy.empty_like(o_a) if out is None else out
    if out is not None:
        check_out(cupy, out, "out", o_a.shape, dtype_name(o_a))
    lse = out_lse
    if lse is None and return_lse:
        lse = cupy.empty(lse_a.shape, dtype=cupy.float32)
    elif lse is not None:
        check_out(cupy, lse, "out_lse", lse_a.shape, "float32")
    head_dim = o_a.shape[-1]
    rows = o_a.size // head_dim if head_dim else 0
    if rows == 0:
        return o, lse
    itemsize = o_a.dtype.itemsize
    vec = 16 // itemsize
    while vec > 1 and (head_dim % vec or any(x.data.ptr % (vec * itemsize) for x in (o_a, o_b, o))):
        vec //= 2
    threads_x = head_dim // vec
    if threads_x > 1024:
        raise ValueError(f"d = {head_dim} needs {threads_x} threads a row at this alignment (max 1024)")
    if rows_per_thread not in (1, 2, 4):
        raise ValueError(f"rows_per_thread must be 1, 2 or 4, got {rows_per_thread}")
    rows_per_step = max(1, 256 // threads_x)
    kern = kernel("merge_states.cu", f"merge_states<{ctype(o_a)}, {vec}, {rows_per_thread}>")
    launch(kern, (ceil_div(rows, rows_per_step * rows_per_thread), 1, 1), (threads_x, rows_per_step, 1),
           (o_a, lse_a, o_b, lse_b, o, NULL if lse is None else lse, np.int64(rows), np.int32(head_dim)))
    return o, lse

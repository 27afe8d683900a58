"""MLA decode launcher (multi-head latent attention in the absorbed form, over a paged latent cache).

Shapes: q [B, q_len, h, 576] fp16 / bf16 (the queries projected into the latent space: 512 + 64 rope
elements); latent_cache [num_pages, 64, 576] in q's dtype, or fp8 e4m3 bytes (CuPy uint8) standing for
kv_scale * e4m3 (one scale for the whole tensor, the dense fp8 layout: 576 bytes a token); block_table
int32 [B, max_pages]; context_lens int32 [B], each >= q_len and <= max_pages * 64 (not checked: reading
them would synchronise). Output o [B, q_len, h, 512] in q's dtype and lse fp32 [B, q_len, h].
Every head attends over the same cached latents c_j; the values are their first 512 elements:
o = softmax(scale q . c_j) c_j[:512]; the q_len new tokens are the context's last, token t seeing
keys j <= context_len - q_len + t. FLOPs as FlashMLA counts them: 2 (576 + 512) per (query head,
visible key) pair (mla_flops). The kernels are mla_decode.cu (mma.sync, any sm_80+ GPU, every cache format)
and mla_decode_hopper.cu (wgmma, sm_90, 16-bit caches, 64 rows a CTA); KERNELS.md has both designs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._runtime import (HALF_TYPES, LOG2E, NULL, ceil_div, check_array, check_count, check_grid_dim, check_out,
                       check_scale, compute_capability, ctype, cupy_module, dtype_name, kernel, launch)
from .decode import FP8_CTYPE, FP8_MIN_COMPUTE_CAPABILITY, FP8_STORAGE, _check_splits, merge_partials

#: DeepSeek-V3's latent: d_c = 512 value elements plus d_R = 64 rope elements a cached token.
MLA_LATENT_DIM = 576
MLA_VALUE_DIM = 512
#: Keys a page (FlashMLA's block size); one page is one 64-key tile of the kernel.
MLA_PAGE_SIZE = 64
MLA_MAX_HEADS = 128
MLA_MAX_Q_LEN = 8
#: Row tiles a CTA (16 MT query rows, rows = q_len x h of one sequence) by rows: (most rows, MT).
MLA_ROW_TILES = ((16, 1), (32, 2))
MLA_WARPS = 8
_KV_TILE_BYTES = MLA_PAGE_SIZE * MLA_LATENT_DIM * 2
#: Query rows (q_len x h) a CTA of the wgmma kernel holds: the M of wgmma m64.
MLA_HOPPER_ROWS = 64
#: mla_decode with impl None runs the wgmma kernel on sm_90 for a 16-bit cache when a sequence has at least
#: this many query rows (q_len x h: one full 64-row tile), else the mma.sync kernel. H200, B 128 x 8192 bf16
#: (KERNELS.md, seesaw run 2): h 128, q_len 2: wgmma (seesaw) 1.005 ms (581 TFLOP/s) against mma.sync 2.487 ms;
#: h 16, q_len 1 (16 rows): mma.sync 306 us (92.6% of copy), the seesaw 295 us (96.1%): a candidate for the
#: default there too (not switched: test_mla_default_impl pins 16 rows to mma).
MLA_HOPPER_MIN_ROWS = 64


def mla_row_tiles(rows: int) -> int:
    """MT for q_len x h rows: 1 up to 16 rows, 2 up to 32, else 4 (chunks of 64 rows)."""
    return next((mt for most, mt in MLA_ROW_TILES if rows <= most), 4)


def mla_smem_bytes(mt: int) -> int:
    """Q [16 MT x 576], two 64-key latent tiles (16-bit; the fp8 path: two byte stages and one 16-bit tile),
    P [16 MT x 64], and the row maxima and sums of the key groups (mla_decode.cu's mla::smem_bytes)."""
    wn = {1: 1, 2: 2, 4: 2}[mt]
    return mt * 16 * MLA_LATENT_DIM * 2 + 2 * _KV_TILE_BYTES + mt * 16 * MLA_PAGE_SIZE * 2 + 2 * (8 // wn) * mt * 16 * 4


#: impl -> the wgmma kernel's SCHED template argument (mla_decode_hopper.cu): "hopper" the seesaw schedule (pairs
#: of 64-key tiles, each warpgroup's softmax under the other's MMAs), "hopper_tile" the earlier schedule (one
#: phase a tile, no overlap), "hopper_tma" the seesaw with its full tiles loaded by TMA (cp.async.bulk.tensor, one
#: thread a part). KERNELS.md has the designs and their timings, and those of SCHED 2, the seesaw on a persistent
#: grid, removed (slower at every measured shape).
MLA_HOPPER_SCHEDS = {"hopper": 1, "hopper_tile": 0, "hopper_tma": 3}


def mla_hopper_smem_bytes(sched: int = 0) -> int:
    """1 KiB alignment slack, Q and two 64-key tiles (each [64 x 576] 16-bit), P [64 x 64], then fp32 maxima and
    sums: [2][64] each (sched 0), or 4 mbarriers, m0 / m1 [64] and sums [2][64] (sched 1 and 3, P1 in Q's block 8)."""
    tail = 4 * MLA_HOPPER_ROWS * 4 if sched == 0 else 64 + 4 * MLA_HOPPER_ROWS * 4
    return 1024 + 3 * _KV_TILE_BYTES + MLA_HOPPER_ROWS * MLA_PAGE_SIZE * 2 + tail


_TENSOR_MAPS: dict = {}


def _tensor_map(cupy: Any, cache: Any) -> Any:
    """The CUtensorMap (128 bytes, in device memory) of a 16-bit latent cache as the 2-D tensor [pages x 64, 576] of
    16-bit words, boxes [64 rows x 64 columns] with the 128-byte swizzle; cuTensorMapEncodeTiled through ctypes,
    kept per (device, pointer, pages) so a call after the first copies nothing."""
    import ctypes

    key = (cupy.cuda.runtime.getDevice(), cache.data.ptr, cache.shape[0])
    if key in _TENSOR_MAPS:
        return _TENSOR_MAPS[key]
    lib = ctypes.CDLL("libcuda.so.1")
    tmap = (ctypes.c_uint64 * 16)()
    dims = (ctypes.c_uint64 * 2)(MLA_LATENT_DIM, cache.shape[0] * MLA_PAGE_SIZE)
    strides = (ctypes.c_uint64 * 1)(MLA_LATENT_DIM * 2)
    box = (ctypes.c_uint32 * 2)(64, MLA_PAGE_SIZE)
    elem = (ctypes.c_uint32 * 2)(1, 1)
    # data type UINT16 (1), no interleave (0), 128-byte swizzle (3), L2 promotion 256 B (3), no OOB fill (0)
    rc = lib.cuTensorMapEncodeTiled(tmap, 1, 2, ctypes.c_void_p(cache.data.ptr), dims, strides, box, elem, 0, 3, 3,
                                    0)
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({rc}) for a latent cache of shape {tuple(cache.shape)}")
    dev = cupy.asarray(np.frombuffer(bytes(tmap), dtype=np.uint8))
    if len(_TENSOR_MAPS) > 64:
        _TENSOR_MAPS.clear()
    _TENSOR_MAPS[key] = dev
    return dev


def mla_flops(heads: int, visible_pairs: int) -> int:
    """FlashMLA's count: 2 (576 + 512) FLOPs per (query head, visible key) pair (Q K^T over 576, P V over 512)."""
    return 2 * (MLA_LATENT_DIM + MLA_VALUE_DIM) * heads * visible_pairs


def _check_mla(cupy: Any, q: Any, cache: Any, block_table: Any, context_lens: Any) -> tuple[int, int, int]:
    check_array(cupy, q, "q", HALF_TYPES, ndim=4)
    check_array(cupy, cache, "latent_cache", HALF_TYPES + (FP8_STORAGE,), ndim=3)
    check_array(cupy, block_table, "block_table", ("int32",), ndim=2)
    check_array(cupy, context_lens, "context_lens", ("int32",), ndim=1)
    batch, q_len, heads, dim = q.shape
    if dim != MLA_LATENT_DIM:
        raise ValueError(f"q's last dim must be the latent {MLA_LATENT_DIM} (512 + 64 rope), got {dim}")
    check_count(q_len, "q_len (q.shape[1])", 1, MLA_MAX_Q_LEN)
    check_count(heads, "heads (q.shape[2])", 1, MLA_MAX_HEADS)
    if dtype_name(cache) not in (dtype_name(q), FP8_STORAGE):
        raise ValueError(f"latent_cache must have q's dtype ({dtype_name(q)}) or be fp8 e4m3 bytes (uint8), "
                         f"got {dtype_name(cache)}")
    if cache.shape[1] != MLA_PAGE_SIZE:
        raise ValueError(f"latent_cache pages must hold {MLA_PAGE_SIZE} tokens ([num_pages, 64, 576]), "
                         f"got page_size {cache.shape[1]}")
    if cache.shape[2] != MLA_LATENT_DIM:
        raise ValueError(f"latent_cache rows must be {MLA_LATENT_DIM} elements, got {cache.shape[2]}")
    if block_table.shape[0] != batch or context_lens.shape[0] != batch:
        raise ValueError(f"block_table [B, pages] and context_lens [B] must have B = {batch} rows; "
                         f"got {tuple(block_table.shape)} and {tuple(context_lens.shape)}")
    check_grid_dim(batch, "batch")
    return batch, q_len, heads


def _check_kv_scale(cupy: Any, fp8: bool, kv_scale: Any) -> None:
    if isinstance(kv_scale, bool) or not isinstance(kv_scale, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(float(kv_scale)) and float(kv_scale) > 0):
        raise ValueError(f"kv_scale must be a finite number > 0, got {kv_scale!r}")
    if not fp8 and float(kv_scale) != 1.0:
        raise ValueError(f"kv_scale applies to an fp8 (uint8) latent cache; a 16-bit cache takes 1.0, got {kv_scale}")
    if fp8 and compute_capability(cupy) < FP8_MIN_COMPUTE_CAPABILITY:
        raise ValueError(f"an fp8 latent cache needs compute capability 8.9 or newer (cvt e4m3x2), this GPU has "
                         f"{compute_capability(cupy) / 10:.1f}")


def mla_default_impl(cupy: Any, rows: int, fp8: bool, mt: Any = None) -> str:
    """What impl None runs: "hopper" on sm_90 for a 16-bit cache and >= MLA_HOPPER_MIN_ROWS rows (no mt), else "mma"."""
    hopper = compute_capability(cupy) == 90 and not fp8 and mt is None and rows >= MLA_HOPPER_MIN_ROWS
    return "hopper" if hopper else "mma"


def _check_impl(cupy: Any, impl: Any, fp8: bool, mt: Any, rows: int) -> str:
    if impl not in (None, "mma") and impl not in MLA_HOPPER_SCHEDS:
        raise ValueError(f"impl must be None, 'mma', {', '.join(map(repr, MLA_HOPPER_SCHEDS))}, got {impl!r}")
    impl = impl or mla_default_impl(cupy, rows, fp8, mt)
    if impl in MLA_HOPPER_SCHEDS:
        if compute_capability(cupy) != 90:
            raise ValueError(f"impl='hopper' (wgmma) needs an sm_90 GPU, this one is sm_{compute_capability(cupy)}")
        if fp8:
            raise ValueError("impl='hopper' takes a 16-bit latent cache; an fp8 cache runs with impl='mma'")
        if mt is not None:
            raise ValueError(f"mt={mt!r} is a tuning knob of impl='mma'; the wgmma kernel holds 64 rows a CTA")
    return impl


def _launch_mla(cupy: Any, q: Any, cache: Any, block_table: Any, context_lens: Any, num_splits: int, split: bool,
                out: Any, out_lse: Any, scale: float | None, kv_scale: float, mt: int | None,
                impl: str | None = None) -> None:
    batch, q_len, heads = _check_mla(cupy, q, cache, block_table, context_lens)
    fp8 = dtype_name(cache) == FP8_STORAGE
    _check_kv_scale(cupy, fp8, kv_scale)
    scale = check_scale(scale, MLA_LATENT_DIM)
    rows = q_len * heads
    impl = _check_impl(cupy, impl, fp8, mt, rows)
    if impl in MLA_HOPPER_SCHEDS:
        sched = MLA_HOPPER_SCHEDS[impl]
        name = f"mla_decode_hopper<{ctype(q)}, {'true' if split else 'false'}, {sched}>"
        tmap = _tensor_map(cupy, cache) if sched == 3 else NULL
        launch(kernel("mla_decode_hopper.cu", name), (ceil_div(rows, MLA_HOPPER_ROWS), batch, num_splits),
               (256, 1, 1), (q, cache, block_table, np.int32(block_table.shape[1]), context_lens, out,
                             NULL if out_lse is None else out_lse, np.int32(heads), np.int32(q_len),
                             np.float32(scale * LOG2E), tmap),
               mla_hopper_smem_bytes(sched))
        return
    mt = mla_row_tiles(rows) if mt is None else mt
    if mt not in (1, 2, 4):
        raise ValueError(f"mt (row tiles a CTA) must be 1, 2 or 4, got {mt!r}")
    name = (f"mla_decode<{ctype(q)}, {FP8_CTYPE if fp8 else ctype(q)}, {mt}, {'true' if split else 'false'}>")
    launch(kernel("mla_decode.cu", name), (ceil_div(rows, 16 * mt), batch, num_splits), (32 * MLA_WARPS, 1, 1),
           (q, cache, block_table, np.int32(block_table.shape[1]), context_lens, out,
            NULL if out_lse is None else out_lse, np.int32(heads), np.int32(q_len),
            np.float32(scale * float(kv_scale) * LOG2E), np.float32(kv_scale)),
           mla_smem_bytes(mt))


def mla_decode(q: Any, latent_cache: Any, block_table: Any, context_lens: Any, num_splits: int = 1,
               return_lse: bool = True, scale: float | None = None, *, kv_scale: float = 1.0, out: Any = None,
               out_lse: Any = None, mt: int | None = None, impl: str | None = None) -> tuple[Any, Any]:
    """MLA decode over a paged latent cache. -> (o [B, q_len, h, 512] in q's dtype, lse fp32 [B, q_len, h] or None).

    Shapes and formats: this module's docstring. scale defaults to 1/sqrt(576) (pass the model's).
    num_splits > 1: split-KV (each split covers whole pages, fp32 partials) and then merge_partials.
    kv_scale: the fp8 cache's per-tensor scale (1.0 for a 16-bit cache). mt: row tiles a CTA
    (1, 2 or 4; default by rows, mla_row_tiles), a tuning knob of the mma.sync kernel.
    impl: "mma" (mla_decode.cu), "hopper" (mla_decode_hopper.cu: wgmma, sm_90, 16-bit caches; the seesaw
    schedule), "hopper_tile" (the same kernel's earlier one-phase schedule), "hopper_tma" (the seesaw loading its
    tiles by TMA) or None
    (mla_default_impl: the wgmma kernel on sm_90 for a 16-bit cache and >= 64 rows a sequence, else mma.sync).

    Tensors (CuPy arrays, C-contiguous):
        q             [B, q_len, h, 576]  fp16 / bf16
        latent_cache  [num_pages, 64, 576]  q's dtype, or uint8 e4m3 codes (an fp8 cache)
        block_table   [B, max_pages]  int32
        context_lens  [B]  int32
        out           [B, q_len, h, 512]  q's dtype (optional, preallocated)
        out_lse       [B, q_len, h]  fp32 (optional, preallocated)
        returns       (o [B, q_len, h, 512] q's dtype, lse [B, q_len, h] fp32 or None)
    """
    cupy = cupy_module()
    num_splits = _check_splits(num_splits)
    rows_shape = tuple(q.shape[:3]) if getattr(q, "ndim", 0) == 4 else ()
    want_lse = return_lse or out_lse is not None
    if out is not None:
        check_out(cupy, out, "out", rows_shape + (MLA_VALUE_DIM,), dtype_name(q))
    if out_lse is not None:
        check_out(cupy, out_lse, "out_lse", rows_shape, "float32")
    if num_splits == 1:
        o = cupy.empty(rows_shape + (MLA_VALUE_DIM,), dtype=q.dtype) if out is None else out
        lse = (cupy.empty(rows_shape, dtype=cupy.float32) if out_lse is None else out_lse) if want_lse else None
        _launch_mla(cupy, q, latent_cache, block_table, context_lens, 1, False, o, lse, scale, kv_scale, mt, impl)
        return o, lse
    o_part = cupy.empty((num_splits,) + rows_shape + (MLA_VALUE_DIM,), dtype=cupy.float32)
    lse_part = cupy.empty((num_splits,) + rows_shape, dtype=cupy.float32)
    _launch_mla(cupy, q, latent_cache, block_table, context_lens, num_splits, True, o_part, lse_part, scale,
                kv_scale, mt, impl)
    return merge_partials(o_part, lse_part, q.dtype, return_lse=want_lse, out=out, out_lse=out_lse)


def mla_instantiations(dtypes: tuple[str, ...] = ("__half", "__nv_bfloat16"), fp8: bool = True,
                       hopper: bool = True) -> list[tuple[str, str]]:
    """(file, name) pairs of every MLA instantiation (precompile); hopper: the wgmma kernel's too (sm_90)."""
    out = []
    if hopper:
        out += [("mla_decode_hopper.cu", f"mla_decode_hopper<{ct}, {s}, {sched}>") for ct in dtypes
                for s in ("false", "true") for sched in sorted(set(MLA_HOPPER_SCHEDS.values()))]
    for ct in dtypes:
        for kv in (ct, FP8_CTYPE) if fp8 else (ct,):
            for mt in (1, 2, 4):
                for split in ("false", "true"):
                    out.append(("mla_decode.cu", f"mla_decode<{ct}, {kv}, {mt}, {split}>"))
    return out


__all__ = ["MLA_LATENT_DIM", "MLA_PAGE_SIZE", "MLA_VALUE_DIM", "mla_decode", "mla_default_impl", "mla_flops",
           "mla_hopper_smem_bytes",
           "mla_instantiations", "mla_row_tiles", "mla_smem_bytes"]

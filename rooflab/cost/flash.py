"""FlashAttention forward: S and P stay on chip, only Q, K, V, O and the LSE cross HBM.

Sources: the chapter "Naive attention and the online softmax" (the
compulsory intensity 2hT/(b(h + h_kv)), the 1/B_c rescale overhead) and
the chapter "FlashAttention and PagedAttention: what does each save?" (tiling keeps blocks on chip; the
pairing count stays quadratic).

Two byte counts bracket a real kernel:
  compulsory  Q, K, V, O once each, plus the fp32 LSE: the lower bound;
  tiled       K and V re-read once per query tile of B_r rows, per query head,
              with no help from L2: the upper bound a kernel that walks
              (batch, query head, query tile) in any order cannot exceed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, shown
from ..specs import AttentionHeads, GpuSpec
from ..specs.heads import MAX_HEAD_DIM
from ..units import FP32_BYTES, DType
from ..vocab import Variant
from ..limits import MAX_BATCH, MAX_TOKENS
from .common import (FULL_VISIBILITY, ArrayLike, KernelCost, SingleKernel, Visibility, as_array, check_flag,
                     check_heads, check_visibility, real_number, whole_number)
from .parallel import check_parallelism, schedule_fraction

_TILE_CHOICES = (128, 64, 32, 16)
#: The most rows or columns a tile may have (a thread block holds at most 1,024 threads, one row each at most).
MAX_TILE_ROWS = 1024
#: K and V tiles are double-buffered so the next tile loads while this one is used.
KV_STAGES = 2


@dataclass(frozen=True)
class FlashTile:
    """Query rows (B_r) and key columns (B_c) one thread block holds on chip."""

    block_q: int
    block_kv: int

    def __post_init__(self) -> None:      # a tile of 0 rows divided by zero in every count
        for name in ("block_q", "block_kv"):
            object.__setattr__(self, name, whole_number(getattr(self, name), f"FlashTile {name}",
                                                        maximum=MAX_TILE_ROWS))

    def smem_bytes(self, head_dim: int, dtype: DType) -> int:
        """Q tile plus double-buffered K and V tiles: (B_r + 2 * stages * B_c) * d * b."""
        return (self.block_q + 2 * KV_STAGES * self.block_kv) * head_dim * dtype.bytes


def choose_tile(gpu: GpuSpec, head_dim: int, dtype: DType = DType.fp16) -> FlashTile:
    """Largest power-of-two tile (at most 128 x 128) whose buffers fit one SM's shared memory.

    A large B_r is preferred first, since every query tile re-reads K and V; then a large B_c,
    since the rescale overhead is 1/B_c.
    """
    if not isinstance(gpu, GpuSpec):
        raise InputError(f"choose_tile needs a GpuSpec (load_gpu), got {type(gpu).__name__}")
    head_dim = whole_number(head_dim, "head_dim", maximum=MAX_HEAD_DIM)
    dtype = DType.of(dtype)
    if gpu.smem_per_sm_bytes is None:          # the spec does not say: the largest tile
        return FlashTile(_TILE_CHOICES[0], _TILE_CHOICES[0])
    for block_q in _TILE_CHOICES:
        for block_kv in _TILE_CHOICES:
            tile = FlashTile(block_q, block_kv)
            if tile.smem_bytes(head_dim, dtype) <= gpu.smem_per_sm_bytes:
                return tile
    raise InputError(f"head_dim {head_dim} in {dtype} does not fit a 16 x 16 tile in "
                     f"{gpu.name}'s {gpu.smem_per_sm_bytes} bytes of shared memory per SM")


@dataclass(frozen=True)
class FlashCost(SingleKernel):
    """Cost of one FlashAttention forward launch for one layer.

    `hbm_bytes` are the compulsory bytes: Q, K, V, O once, plus the fp32 LSE when `write_lse`.
    Without the LSE they are the chapter's compulsory bytes (6553.6 FLOP/byte for Llama-3-8B at
    T = 8192); the LSE adds h T x 4 bytes (6512.9 FLOP/byte).
    """

    kernel: KernelCost
    hbm_bytes_tiled: np.ndarray
    tile: FlashTile
    rescale_flops: np.ndarray
    variant: Variant = Variant.flash
    seq_len: np.ndarray = np.float64(0.0)
    causal: bool = False
    visibility: Visibility = FULL_VISIBILITY
    #: The workload it prices (flash_prefill's arguments), so that a model of another kernel of the same attention
    #: (rooflab.cudnn_kernel: cuDNN's tile and padded head dim) prices the same call; None where not recorded.
    heads: AttentionHeads | None = None
    batch: np.ndarray | None = None
    dtype: DType | None = None
    write_lse: bool = True
    sinks: bool = False

    def tile_work(self, unit_overhead_tiles: float = 0.0) -> np.ndarray:
        """The work a tile kernel does, over the visible pairs (>= 1): every B_r x B_c tile a query tile touches,
        whole (the diagonal's and a window's or chunk's partly masked edge tiles included), plus a fixed cost of
        `unit_overhead_tiles` key tiles a query tile (its prologue and epilogue: the Q load, the pipeline's fill,
        the O and LSE stores). A model of the implementation, for predictions (rooflab.predict); the floor counts
        visible pairs only. Independent of batch and heads (both scale the two counts alike).
        """
        overhead = real_number(unit_overhead_tiles, "unit_overhead_tiles", 0.0, 64.0, lo_open=False)
        t = np.asarray(self.seq_len, dtype=np.float64)
        if not t.shape:                         # one sequence length (a measured row)
            return np.float64(self._tile_work_one(int(t), overhead))
        values, inverse = np.unique(t, return_inverse=True)
        ratio = np.array([self._tile_work_one(int(v), overhead) for v in values])
        return ratio[inverse].reshape(t.shape) if t.shape else np.float64(ratio[0])

    def _tile_work_one(self, t: int, overhead: float) -> float:
        return _tile_work_ratio(t, self.tile, self.causal, self.visibility, overhead)

    @property
    def intensity_tiled(self) -> np.ndarray:
        return self.flops / self.hbm_bytes_tiled

    @property
    def rescale_overhead(self) -> float:
        """Extra arithmetic of the online softmax relative to the PV accumulation: 1/B_c."""
        return 1.0 / self.tile.block_kv


def flash_prefill(heads: AttentionHeads, seq_len: ArrayLike, batch: ArrayLike = 1,
                  dtype: DType = DType.fp16, causal: bool = False,
                  tile: FlashTile | None = None, gpu: GpuSpec | None = None,
                  write_lse: bool = True, num_sms: int | None = None, units_per_sm: float = 1.0,
                  visibility: Visibility = FULL_VISIBILITY, sinks: bool = False) -> FlashCost:
    """FlashAttention forward over T tokens for one layer.

    The tile is `tile` if given, else choose_tile(gpu, ...) if a GPU is given, else 128 x 128.
    `write_lse` adds the fp32 LSE a forward pass keeps for the backward pass or a later merge;
    without it the bytes are exactly the attention function's compulsory Q, K, V, O.
    `visibility` bounds the keys each query sees (a sliding window or a chunk, both causal): FLOPs and
    exps follow the visible pairs (about T W instead of T^2 / 2), and the tiled estimate reads at most
    W + B_r - 1 keys per query tile; the compulsory bytes are unchanged (every key is seen by some query).
    `sinks` adds one logit per (head, query) to the softmax: an exp each, no traffic.
    With `num_sms`, the parallelism model (cost/parallel.py) limits the launch: one work unit per
    (sequence, query head, query tile of B_r rows), issued batch by batch, head by head, and within
    a head the heaviest (causal: the last) query tile first, each taking time in proportion to
    the keys it visits, rounded up to whole B_c tiles.
    """
    heads = check_heads(heads, "flash_prefill")
    visibility = check_visibility(visibility)
    causal = check_flag(causal, "causal") or not visibility.is_full
    write_lse, sinks = check_flag(write_lse, "write_lse"), check_flag(sinks, "sinks")
    dtype = DType.of(dtype)
    num_sms, units_per_sm = check_parallelism(num_sms, units_per_sm)
    if tile is not None and not isinstance(tile, FlashTile):
        raise InputError(f"tile must be a FlashTile (or None: chosen for the GPU), got {shown(tile)}")
    if tile is None:
        tile = choose_tile(gpu, heads.head_dim, dtype) if gpu is not None else FlashTile(128, 128)
    t = as_array(seq_len, "seq_len", maximum=MAX_TOKENS)
    b = as_array(batch, "batch", maximum=MAX_BATCH)
    h, h_kv, d, d_v, e = heads.num_qo_heads, heads.num_kv_heads, heads.head_dim, heads.value_dim, dtype.bytes

    q_bytes = b * h * t * d * e            # [B, h, T, d]
    k_bytes = b * h_kv * t * d * e         # [B, h_kv, T, d], once
    v_bytes = b * h_kv * t * d_v * e       # [B, h_kv, T, d_v], once
    o_bytes = b * h * t * d_v * e          # [B, h, T, d_v]
    lse_bytes = b * h * t * FP32_BYTES * write_lse   # [B, h, T] fp32
    compulsory = q_bytes + k_bytes + v_bytes + o_bytes + lse_bytes

    kv_rows_read = _kv_rows_per_head(t, tile.block_q, causal, visibility.span)   # summed over the query tiles
    tiled = q_bytes + o_bytes + lse_bytes + b * h * kv_rows_read * (d + d_v) * e

    pairs = b * h * visibility.pairs(t, t, causal)
    flops = 2 * pairs * (d + d_v)          # QK^T (d) and PV (d_v), two FLOP per multiply-add each
    kv_blocks = np.ceil(np.minimum(t, visibility.span) / tile.block_kv)
    rescale_flops = b * h * t * kv_blocks * (d_v + 1)   # alpha * O (d_v) and alpha * l (1), per row per block
    fraction = _fraction(t, b, heads.num_qo_heads, tile, causal, num_sms, units_per_sm, visibility)
    exps = pairs + (b * h * t if sinks else 0)
    kernel = KernelCost("flash_fwd", flops, compulsory, exp_ops=exps, parallel_fraction=fraction)
    return FlashCost(kernel, tiled, tile, rescale_flops, seq_len=t, causal=causal, visibility=visibility, heads=heads,
                     batch=b, dtype=dtype, write_lse=write_lse, sinks=sinks)


@functools.lru_cache(maxsize=1 << 14)
def _tile_work_ratio(t: int, tile: FlashTile, causal: bool, visibility: Visibility, overhead: float) -> float:
    """FlashCost.tile_work for one sequence length T, computed once a (T, tile, mask, overhead): the fit asks for it
    at every units-per-SM value and tile term of its grid."""
    b_r, b_c = tile.block_q, tile.block_kv
    n = -(-t // b_r)
    tiles = 0                   # query tiles in slices of a million: bounded memory up to MAX_TOKENS (about 2 s)
    for start in range(0, n, 1 << 20):
        q0 = np.arange(start, min(n, start + (1 << 20)), dtype=np.int64) * b_r
        tiles += int(np.sum(_key_tiles(q0, t, tile, causal, visibility)))
    computed = (tiles + n * overhead) * b_r * b_c
    return computed / float(visibility.pairs(t, t, causal))


def _fraction(t: np.ndarray, b: np.ndarray, heads: int, tile: FlashTile, causal: bool, num_sms: int | None,
              units_per_sm: float, visibility: Visibility = FULL_VISIBILITY) -> np.ndarray:
    """The share of the GPU the launch keeps busy, elementwise over (T, B)."""
    if num_sms is None:
        return np.float64(1.0)
    t_b = np.broadcast_arrays(t, b)
    out = np.empty(t_b[0].shape)
    for idx in np.ndindex(out.shape):
        out[idx] = schedule_fraction(_unit_work(int(t_b[0][idx]), tile, causal, visibility), num_sms, units_per_sm,
                                     repeats=int(t_b[1][idx]) * heads)
    return out if out.shape else np.float64(out)


def _key_tiles(q0: np.ndarray, t: int, tile: FlashTile, causal: bool, visibility: Visibility) -> np.ndarray:
    """The B_c key tiles each query tile starting at row q0 touches: all of them without a mask; causal, those from
    the tile of its first visible key (0, q0 - W + 1 for a window, its chunk's start) to that of its last row."""
    if not causal:
        return np.full(q0.shape, -(-t // tile.block_kv))
    last = np.minimum(q0 + tile.block_q, t) - 1
    if visibility.window is not None:
        first = np.maximum(0, q0 - visibility.window + 1)
    elif visibility.chunk is not None:
        first = q0 // visibility.chunk * visibility.chunk
    else:
        first = np.zeros_like(q0)
    return last // tile.block_kv - first // tile.block_kv + 1


def _unit_work(t: int, tile: FlashTile, causal: bool, visibility: Visibility = FULL_VISIBILITY) -> np.ndarray:
    """Keys each query tile unit of one (sequence, head) visits, in launch order, as whole B_c tiles (_key_tiles);
    the launch issues them once a (sequence, head)."""
    q0 = np.arange(-(-t // tile.block_q), dtype=np.int64) * tile.block_q
    per_head = _key_tiles(q0, t, tile, causal, visibility) * tile.block_kv
    if causal:
        per_head = per_head[::-1]              # the heaviest query tile first
    return per_head


def _kv_rows_per_head(t: np.ndarray, block_q: int, causal: bool, span: float = np.inf) -> np.ndarray:
    """Key rows one query head's tiles read, summed over its n = ceil(T / B_r) tiles.

    Non-causal: n T. Causal: tile i (rows i B_r .. (i + 1) B_r - 1) needs keys up to min((i + 1) B_r, T),
    at most cap = span + B_r - 1 of them under a window or chunk of `span` keys:
    with f = floor(T / B_r) full tiles and k = min(f, floor(cap / B_r)) of them under the cap,
    B_r k (k + 1) / 2 + (f - k) cap, plus min(T, cap) for a last partial tile.
    (Without a cap: B_r n (n + 1) / 2 - (n B_r - T).)
    """
    t = np.asarray(t, dtype=np.float64)
    if not causal:
        return np.ceil(t / block_q) * t
    if not np.isfinite(span):
        n = np.ceil(t / block_q)
        return block_q * n * (n + 1) / 2 - (n * block_q - t)
    cap = span + block_q - 1
    full = np.floor(t / block_q)
    k = np.minimum(full, np.floor(cap / block_q))
    partial = np.where(np.mod(t, block_q) > 0, np.minimum(t, cap), 0.0)
    return block_q * k * (k + 1) / 2 + (full - k) * cap + partial

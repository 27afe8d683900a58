"""Multi-head latent attention (MLA): decode in the absorbed form, over a paged latent cache.

Source: DeepSeek-V3 technical report, section 2.1.1; FlashMLA's README (its FLOP count and cache
formats). Every token caches one latent c of d_c + d_R elements (576 = 512 + 64 rope for DeepSeek-V3),
shared by all h query heads. In the absorbed form each query is projected into the latent space, so
every head attends over the same 576-wide keys and takes the first d_c = 512 as its values:

    latent   (d_c + d_R) b_kv per cached token, read once for every head      [pages, page, 576]
    Q        B q h (d_c + d_R) b                                              [B, q, h, 576]
    O        B q h d_c b (+ fp32 LSE)                                         [B, q, h, 512]
    FLOPs    2 (d_c + d_R + d_c) per (query head, visible key): FlashMLA's count, 2 x (576 + 512)

so decode intensity is about h q 2 (576 + 512) / (576 b_kv): 1.89 h q FLOP/byte in bf16, 242 at 128 heads,
compute-bound on an H200 (ridge 206) and memory-bound on an H100 (ridge 295). Prefill runs the
un-absorbed form, per-head attention with q.k over d_nope + d_R and values of d_v (flash_prefill with
the model's heads). Under tensor parallelism the heads divide and the latent is replicated on every rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..specs import LayerType
from ..specs.layers import MLA_SPARSE_FP8_BYTES
from ..units import FP32_BYTES, INT32_BYTES, DType
from ..vocab import LayerKind
from .batch import DecodeBatch
from .common import ArrayLike, KernelCost, check_layer, whole_number
from .merge import MergeCost, merge_splits
from .paged import SplitDecode, decode_arguments
from .parallel import parallel_fraction

#: Query rows (heads x new tokens) one FlashMLA-style work unit holds: a 64-row tile.
MLA_ROWS_PER_UNIT = 64
#: Rows a unit computes for q_len x h rows of a sequence: up to 16 and 32 rows a unit of 16 or 32 (rooflab's mma.sync
#: kernel, kernels/mla.py mla_row_tiles), else 64-row tiles, the last padded (both of rooflab's MLA kernels).
MLA_UNIT_ROWS = ((16, 16), (32, 32))


@dataclass(frozen=True)
class MlaDecodeCost(SplitDecode):
    """One MLA decode step for one layer: the attention launch and, with splits, the merge."""

    attention: KernelCost
    merge: MergeCost | None
    kv_bytes: np.ndarray
    num_splits: int
    work_units: np.ndarray
    longest_unit_tokens: np.ndarray
    rows_per_sequence: int = 1
    tiles_per_sequence: int = 1
    unit_rows: int = MLA_ROWS_PER_UNIT
    kv_fp8: bool = False

    def tile_work(self, unit_overhead_rows: float = 0.0, fp8_overhead_rows: float | None = None) -> np.ndarray:
        """The work the units do over the work of the real rows (>= 1): every unit computes `unit_rows` rows (the
        last tile of a sequence padded), plus a fixed cost a cached token of `unit_overhead_rows` rows' worth (the
        latent tile's load and the softmax bookkeeping: work a unit does whatever its rows), and with an fp8
        latent `fp8_overhead_rows` more (widening the token's 576 codes to bf16 before the MMAs: on the H200 the
        mma.sync kernel takes 7-10 ns more a token and wave with fp8 than with bf16 at every row count,
        measurements/h200-mla-sweep.csv). A model of the implementation, for predictions (rooflab.predict); the
        floor counts real rows only."""
        from .common import real_number

        overhead = real_number(unit_overhead_rows, "unit_overhead_tiles (rows a unit)", 0.0, 64.0, lo_open=False)
        if self.kv_fp8 and fp8_overhead_rows is not None:
            overhead += real_number(fp8_overhead_rows, "fp8_overhead_rows", 0.0, 64.0, lo_open=False)
        return np.float64(self.tiles_per_sequence * (self.unit_rows + overhead) / self.rows_per_sequence)


def mla_latent_bytes(layer: LayerType, kv_dtype: DType, sparse_fp8: bool = False) -> int:
    """Bytes of one cached token's latent: (d_c + d_R) b_kv, or 656 in DeepSeek-V3.2's sparse fp8 layout."""
    check_layer(layer, LayerKind.mla)
    return MLA_SPARSE_FP8_BYTES if sparse_fp8 else layer.latent_dim * DType.of(kv_dtype, "kv_dtype").bytes


def mla_decode(layer: LayerType, num_qo_heads: int, context_lens: ArrayLike | DecodeBatch, page_size: int = 64,
               dtype: DType = DType.bf16, kv_dtype: DType | None = None, num_splits: int = 1, q_len: int = 1,
               num_sms: int | None = None, units_per_sm: float = 1.0, sparse_fp8: bool = False) -> MlaDecodeCost:
    """One absorbed-MLA decode step for `num_qo_heads` query heads (per GPU under tensor parallelism).

    Work units are (sequence, 64-row tile of heads x new tokens, split); each reads its split's
    latent pages once for the tile's rows.
    """
    check_layer(layer)
    if not layer.is_latent:
        raise InputError(f"mla_decode needs an mla layer type, not {layer.kind.value}")
    h = whole_number(num_qo_heads, "num_qo_heads")
    page_size, num_splits, q_len, dtype, kv_dtype, num_sms, units_per_sm, batch = decode_arguments(
        context_lens, page_size, dtype, kv_dtype, num_splits, num_sms, units_per_sm, q_len)
    d_lat, d_c = layer.latent_dim, layer.kv_lora_rank
    tokens = np.float64(batch.total_tokens)
    pairs = np.float64((q_len * batch.lengths - q_len * (q_len - 1) / 2) * batch.counts).sum()   # causal new tokens
    rows = np.float64(batch.size * q_len * h)
    kv_bytes = mla_latent_bytes(layer, kv_dtype, sparse_fp8) * tokens
    pages = (np.ceil(batch.lengths / page_size) * batch.counts).sum()
    table_bytes = INT32_BYTES * (pages + batch.size)
    q_bytes = rows * d_lat * dtype.bytes
    split = num_splits > 1
    partial = rows * num_splits * (d_c + 1) * FP32_BYTES * split
    out_bytes = partial if split else rows * d_c * dtype.bytes + rows * FP32_BYTES
    flops = 2 * (d_lat + d_c) * h * pairs
    unit_rows = next((rows_ for most, rows_ in MLA_UNIT_ROWS if q_len * h <= most), MLA_ROWS_PER_UNIT)
    tiles = np.ceil(q_len * h / MLA_ROWS_PER_UNIT)
    split_len = np.ceil(np.ceil(batch.lengths / page_size) / num_splits) * page_size
    busy_splits = np.minimum(num_splits, np.ceil(batch.lengths / split_len))
    units = np.float64((busy_splits * batch.counts).sum() * tiles)
    longest = np.float64(np.minimum(split_len, batch.lengths).max())
    fraction = parallel_fraction(tiles * tokens, longest, num_sms, units_per_sm)
    if num_sms is not None:                     # whole waves: U units on S slots take ceil(U / S) rounds
        slots = num_sms * units_per_sm
        fraction = np.minimum(fraction, units / (slots * np.ceil(units / slots)))
    name = "mla_split_decode" if split else "mla_decode"
    attention = KernelCost(name, flops, kv_bytes + table_bytes + q_bytes + out_bytes, exp_ops=h * pairs,
                           parallel_fraction=fraction)
    merge = merge_splits(rows, num_splits, d_c, dtype, write_lse=True) if split else None
    return MlaDecodeCost(attention, merge, kv_bytes, num_splits, units, longest, int(q_len * h), int(tiles), unit_rows,
                         kv_fp8=sparse_fp8 or kv_dtype.bytes == 1)


__all__ = ["MLA_ROWS_PER_UNIT", "MlaDecodeCost", "mla_decode", "mla_latent_bytes"]

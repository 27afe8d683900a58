"""The LSE merge of partial attention states, pairwise and S-way.

Source: the chapter "Naive attention and the online softmax", the merge
sections ("The state that gets passed around is the log-sum-exp", the vLLM
kernel walk-through and "Total HBM traffic for the merge"). Per (token, head):

    read  O_a, O_b            2 d b bytes      read LSE_a, LSE_b   2 x 4 bytes (always fp32)
    write O                   d b bytes        write LSE           4 bytes, only if asked

    FLOPs  3d (two scales times two vectors, one add) + 6 scalar ops (max, two
           subtracts, the sum of the two exps, two divides); the two exps go to
           the special-function units. At d = 128, bf16: 776 bytes, 390 FLOP, I = 0.5.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..limits import MAX_BATCH, MAX_TOKENS
from ..specs.heads import MAX_HEAD_DIM, MAX_HEADS
from ..units import FP32_BYTES, DType
from ..vocab import Pipe, Variant
from .common import ArrayLike, KernelCost, SingleKernel, as_array, whole_number

#: Scalar work per (token, head) besides the 3d vector FLOPs: max, 2 subtracts, 1 add, 2 divides.
MERGE_SCALAR_FLOPS = 6
#: Writing the merged LSE costs a log and an add.
MERGE_LSE_FLOPS = 2


@dataclass(frozen=True)
class MergeCost(SingleKernel):
    """One merge launch (pairwise or S-way)."""

    kernel: KernelCost
    variant: Variant = Variant.merge


def merge_pair(tokens: ArrayLike, num_heads: int, head_dim: int, dtype: DType = DType.bf16,
               write_lse: bool = False) -> MergeCost:
    """Merge two partial states (O_a, LSE_a) and (O_b, LSE_b) for `tokens` x `num_heads` rows.

    `tokens`: the tokens of every sequence together (array-like; at most MAX_BATCH x MAX_TOKENS, a whole batch's
    prefill: explain's merge of T x B tokens).
    """
    num_heads = whole_number(num_heads, "num_heads", maximum=MAX_HEADS)
    head_dim = whole_number(head_dim, "head_dim", maximum=MAX_HEAD_DIM)
    dtype = DType.of(dtype)
    rows = as_array(tokens, "tokens", maximum=MAX_BATCH * MAX_TOKENS) * num_heads   # (token, head) pairs
    read = rows * (2 * head_dim * dtype.bytes + 2 * FP32_BYTES)
    write = rows * (head_dim * dtype.bytes + FP32_BYTES * write_lse)
    flops = rows * (3 * head_dim + MERGE_SCALAR_FLOPS + MERGE_LSE_FLOPS * write_lse)
    return MergeCost(KernelCost("merge", flops, read + write, pipe=Pipe.vector, exp_ops=2 * rows))


def merge_splits(rows: ArrayLike, num_splits: ArrayLike, head_dim: int, out_dtype: DType,
                 write_lse: bool = False) -> MergeCost:
    """S-way merge of split-KV partials: S fp32 outputs and LSEs per row in, one output out.

    Per row: read S (d + 1) x 4 bytes, write d b (+ 4); FLOPs S (2d + 3) + d (a running max,
    a subtract, an add and a d-wide multiply-add per split, one normalising multiply).
    """
    r = as_array(rows, "rows")
    s = as_array(num_splits, "num_splits")
    head_dim = whole_number(head_dim, "head_dim", maximum=MAX_HEAD_DIM)
    out_dtype = DType.of(out_dtype, "out_dtype")
    read = r * s * (head_dim + 1) * FP32_BYTES
    write = r * (head_dim * out_dtype.bytes + FP32_BYTES * write_lse)
    flops = r * (s * (2 * head_dim + 3) + head_dim)
    return MergeCost(KernelCost("merge", flops, read + write, pipe=Pipe.vector, exp_ops=r * s))

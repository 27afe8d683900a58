"""Tests of rooflab/cost/merge.py: merging partial attention states.

Bytes, FLOPs and intensity against "chapter 1" (the chapter "Naive attention and the online softmax"), their
scaling with tokens, heads and head_dim, an S-way merge reading every partial, and bad heads or token
counts refused naming the argument.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rooflab.cost.merge import merge_pair, merge_splits
from rooflab.limits import MAX_BATCH, MAX_TOKENS
from rooflab.units import DType
from support import HUGE, refused


def test_merge_bytes_flops_intensity():
    # chapter 1, "Total HBM traffic for the merge, per token-head": 776 bytes at d_h = 128 in bf16,
    # roughly 390 FLOPs, I ~ 0.5 FLOP/byte
    cost = merge_pair(1, 1, 128, DType.bf16)
    assert float(cost.hbm_bytes) == 776
    assert float(cost.flops) == pytest.approx(390, abs=5)
    assert float(cost.flops / cost.hbm_bytes) == pytest.approx(0.5, abs=0.01)
    # writing the merged LSE adds one fp32 per (token, head)
    assert float(merge_pair(1, 1, 128, DType.bf16, write_lse=True).hbm_bytes) == 780


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 100_000), st.integers(1, 128), st.sampled_from([64, 128, 256]),
       st.sampled_from([DType.fp16, DType.bf16, DType.fp32]))
def test_merge_bytes_scale_with_tokens_heads_and_head_dim(tokens, heads, d, dtype):
    cost = float(merge_pair(tokens, heads, d, dtype).hbm_bytes)
    assert cost == tokens * heads * (3 * d * dtype.bytes + 8)
    assert float(merge_pair(2 * tokens, heads, d, dtype).hbm_bytes) == 2 * cost


def test_s_way_merge_reads_all_partials():
    cost = merge_splits(32, 4, 128, DType.fp16)
    assert float(cost.hbm_bytes) == 32 * (4 * 129 * 4 + 128 * 2)


# --- merge_pair and the parallelism model (13b, 13c) --------------------------------------------------------------

@pytest.mark.parametrize("value", [-1, 0, math.nan, 1.5, complex(8, 0), 1e18, HUGE, [1, -1], "8", None, True,
                                   np.array([8.0])])
@pytest.mark.parametrize("argument", ["num_heads", "head_dim"])
def test_merge_pair_checks_its_heads(argument, value):
    args = {"tokens": 8192, "num_heads": 32, "head_dim": 128, argument: value}
    refused(lambda: merge_pair(**args), argument)


def test_merge_pair_limits_its_tokens():
    refused(lambda: merge_pair(MAX_BATCH * MAX_TOKENS * 2, 32, 128), "tokens")
    assert merge_pair(MAX_BATCH * MAX_TOKENS, 32, 128).flops > 0     # explain's merge of T x B tokens at the limits
    refused(lambda: merge_pair(True, 32, 128), "tokens")
    assert merge_pair(np.int64(8192), np.int64(32), 128.0).flops == merge_pair(8192, 32, 128).flops

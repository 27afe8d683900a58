"""Tests of rooflab/capacity/position_split.py: DCP splits each sequence's KV by position (and the old import path
rooflab.context_parallel.dcp_capacity still works for one release)."""

from __future__ import annotations

import pytest

from rooflab.capacity import dcp_capacity, plan_capacity
from rooflab.load import load_gpu, load_model
from rooflab.units import DType

H200 = load_gpu("h200-sxm")


def test_capacity_dcp_shards_the_kv():
    model = load_model("llama-3-8b")
    plan = plan_capacity(model, H200, 1 << 20, max_model_len=1 << 20)
    assert plan.max_sequences_paged == 0                     # 1M tokens do not fit one H200 unsplit
    four = dcp_capacity(plan, model, 1 << 20, 4, 16, DType(plan.kv_dtype))
    assert four.max_sequences_paged >= 3 and four.reason is None
    assert four.kv_bytes_per_sequence == pytest.approx(plan.kv_bytes_per_sequence / 4, rel=1e-3)
    assert 3.9 * plan.max_context_len < four.max_context_len <= 4 * plan.max_context_len + 64
    assert dcp_capacity(plan, model, 1 << 20, 1, 16, DType(plan.kv_dtype)) is plan


def test_the_old_import_path_is_the_same_function():
    from rooflab import context_parallel

    assert context_parallel.dcp_capacity is dcp_capacity

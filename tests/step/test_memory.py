"""Tests of rooflab/step/memory.py: the KV cache a GPU of the step holds, and the fit check."""

from __future__ import annotations

import pytest

from rooflab.capacity import tensor_parallel_sizes
from rooflab.load import available, load_model
from rooflab.step.memory import kv_bytes
from rooflab.units import DType


@pytest.mark.parametrize("name", available("models"))
def test_tensor_parallel_never_increases_the_kv_per_gpu(name):
    model = load_model(name)
    kv = [kv_bytes(model, 4, 8192, DType.bf16, 16, tp, 1) for tp in tensor_parallel_sizes(model)]
    assert kv == sorted(kv, reverse=True)
    assert [model.kv_bytes_per_token(DType.bf16, tp) for tp in tensor_parallel_sizes(model)] == \
        sorted((model.kv_bytes_per_token(DType.bf16, tp) for tp in tensor_parallel_sizes(model)), reverse=True)


def test_a_split_by_position_holds_its_share_of_every_page():
    model = load_model("llama-3-8b")
    one = kv_bytes(model, 2, 8192, DType.bf16, 16, 1, 1)
    assert one == 2 * 32 * 8192 * 2 * 8 * 128 * 2                     # B x L x T x (K and V) x h_kv x d x 2 bytes
    assert kv_bytes(model, 2, 8192, DType.bf16, 16, 1, 4) == one / 4  # 512 pages: 128 on each of 4 GPUs

"""Tests of rooflab/capacity/curve.py: capacity_curve equals plan_capacity at every point, and refuses lengths that
are not token counts."""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.capacity import plan_capacity
from rooflab.errors import InputError
from rooflab.load import available, load_gpu, load_model


# --- the closed-form curve: plan_capacity's counts over a grid, equal point by point ---------------------------

def _deployments(name: str):
    from rooflab.deployment import Deployment

    out = [Deployment(), Deployment(tensor_parallel=8), Deployment(tensor_parallel=8, attention_data_parallel=8)]
    if name == "deepseek-v3":
        out += [Deployment(tensor_parallel=8, decode_context_parallel=8), Deployment(tensor_parallel=8, kv_parallel=4)]
    return out


@pytest.mark.parametrize("name", available("models"))
def test_capacity_curve_equals_plan_capacity_at_every_point(name):
    """capacity_curve prices every length at once (kvcache.sequence_bytes); plan_capacity one at a time: the same
    paged and contiguous counts at lengths on and between page boundaries, windows and max-model-length edges."""
    from rooflab.capacity import capacity_curve

    model, gpu = load_model(name), load_gpu("h200-sxm")
    lens = np.array([1, 15, 16, 17, 1000, 4095, 4096, 4097, 8192, 32768, 131071, 1 << 20])
    tried = 0
    for deployment in _deployments(name):
        try:
            plan_capacity(model, gpu, 1, deployment=deployment)
        except InputError:
            continue                          # does not fit, or the heads do not split that way
        tried += 1
        curve = capacity_curve(model, gpu, lens, deployment)
        plans = [plan_capacity(model, gpu, int(n), deployment=deployment) for n in lens]
        assert list(curve.paged) == [p.max_sequences_paged for p in plans]
        assert list(curve.contiguous) == [p.max_sequences_contiguous for p in plans]
    assert tried


@pytest.mark.parametrize("lens", [[], [0], [2.5], [float("nan")], ["8k"], [[1, 2]], [1 << 62]])
def test_capacity_curve_refuses_lengths_that_are_not_token_counts(lens):
    from rooflab.capacity import capacity_curve

    with pytest.raises(InputError, match="context_lens"):
        capacity_curve(load_model("llama-3-8b"), load_gpu("h200-sxm"), lens)

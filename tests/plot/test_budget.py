"""Tensor-parallel capacity, prefix sharing in the planner, and the DataFrame views notebooks use.
"""

from __future__ import annotations

import pytest

from rooflab import load_gpu, load_model
from rooflab.capacity import plan_capacity


LLAMA8 = load_model("llama-3-8b")
LLAMA70 = load_model("llama-3-70b")
H100 = load_gpu("h100-sxm")
H200 = load_gpu("h200-sxm")


# --- charts -----------------------------------------------------------------------------------

def _bar_widths(fig, i):
    return {p.get_gid().split(":")[2]: p.get_width() for p in fig.axes[0].patches if p.get_gid().startswith(f"bar:{i}:")}


def test_budget_chart_bars_are_the_plans():
    from rooflab.plot import budget_chart
    from rooflab.units import GiB
    plans = [plan_capacity(LLAMA8, H100, 8192),
             plan_capacity(LLAMA70, H200, 8192, tensor_parallel=4, activation_reserve_bytes=8 * GiB)]
    fig = budget_chart(plans)
    for i, plan in enumerate(plans):
        bars = _bar_widths(fig, i)
        assert bars["weights"] == pytest.approx(plan.weights_bytes / GiB)
        assert bars["KV budget"] == pytest.approx(plan.kv_budget_bytes / GiB)
        assert sum(bars.values()) == pytest.approx(plan.hbm_bytes / GiB)
    assert "activation reserve" not in _bar_widths(fig, 0)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["llama-3-8b on h100-sxm", "llama-3-70b on 4 x h200-sxm"]
    with pytest.raises(ValueError):
        budget_chart([])

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


def test_budget_chart_title_stays_inside_the_figure_with_a_long_label():
    """The title sat on the axes, which a long deployment label narrows: its second line ran off the right edge."""
    from rooflab.capacity import plan_capacity
    from rooflab.load import load_gpu, load_model
    from rooflab.plot import budget_chart

    fig = budget_chart([plan_capacity(load_model("qwen3-next-80b-a3b"), load_gpu("a100-pcie-80gb"), 8192,
                                      tensor_parallel=4)])
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    box, page = fig._suptitle.get_window_extent(renderer), fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1 and "KV budget holds (paged)" in fig._suptitle.get_text()

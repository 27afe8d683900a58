"""Where each GPU's memory goes: one bar per deployment (weights, activation reserve, KV budget, kept free)."""

from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure

from ..capacity import CapacityPlan
from ..units import GiB
from .style import chart, VARIANT_COLORS, new_figure


#: Colours of the parts of one GPU's memory in budget_chart.
BUDGET_COLORS = {"weights": "#7F7F7F", "activation reserve": "#E69F00", "KV budget": VARIANT_COLORS["paged"],
                 "kept free": "#DDDDDD"}


@chart
def budget_chart(plans: Sequence[CapacityPlan]) -> Figure:
    """One bar per deployment: a GPU's memory split into weights, activation reserve, KV budget and the rest.

    Each bar is one GPU of the deployment (plans with tensor_parallel > 1 hold 1/tp of the weights);
    the label gives the concurrent sequences the KV budget holds at the plan's context length.
    """
    if not plans:
        raise ValueError("budget_chart needs at least one capacity plan")
    fig, ax = new_figure((10.0, 1.4 + 0.62 * len(plans)))
    labels, drawn = [], set()
    for i, plan in enumerate(plans):
        where = f"{plan.tensor_parallel} x {plan.gpu}" if plan.tensor_parallel > 1 else plan.gpu
        labels.append(f"{plan.model} on {where}")
        parts = {"weights": plan.weights_bytes, "activation reserve": plan.activation_reserve_bytes,
                 "KV budget": plan.kv_budget_bytes, "kept free": max(0, plan.hbm_bytes - plan.usable_bytes)}
        left = 0.0
        for name, size in parts.items():
            if size <= 0:
                continue
            ax.barh(i, size / GiB, left=left / GiB, color=BUDGET_COLORS[name], edgecolor="white",
                    label=None if name in drawn else name, gid=f"bar:{i}:{name}")
            drawn.add(name)
            left += size
        ax.annotate(f"{plan.max_sequences_paged:,} x {plan.context_len:,} tokens", (left / GiB, i),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=9)
    ax.set_yticks(range(len(plans)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(p.hbm_bytes for p in plans) / GiB * 1.32)
    ax.set_xlabel("memory of one GPU (GiB)")
    ax.grid(False, axis="y")
    # on the figure, not the axes: long deployment labels narrow the axes, and an axes title ran off the right edge
    fig.suptitle("Where each GPU's memory goes\nweights per GPU, then the KV cache; the label counts the sequences "
                 "the KV budget holds (paged)", x=0.01, ha="left", fontsize=11)
    fig.legend(loc="outside lower center", fontsize=9, ncols=4, frameon=False)
    return fig

"""Tests of rooflab/plot/sweeps.py under the Agg backend: the memory, time, decode and capacity charts
(Llama-3-8B's KV at 8k is 8 GiB), one panel a GPU, one sweep in a list drawn as the single chart, sweeps of
different models refused, tensor-parallel capacity, and a chart that shows itself as PNG.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from rooflab import load_gpu, load_model
from rooflab.capacity import plan_capacity
from rooflab.cost.naive import naive_max_seq_len, naive_prefill
from rooflab.errors import InputError
from rooflab.plot import (capacity_chart, capacity_sweep, capacity_sweeps, decode_chart, decode_sweep, decode_sweeps,
                          memory_chart, memory_sweep, time_chart, time_sweep, time_sweeps)
from rooflab.units import GiB
from support import _by_gid, _texts


# --- sweeps ------------------------------------------------------------------------------------

@pytest.mark.parametrize("model_name, gpu_name", [("llama-3-8b", "h100-sxm"), ("mistral-7b", "a100-40gb")])
def test_memory_chart(model_name, gpu_name):
    model, gpu = load_model(model_name), load_gpu(gpu_name)
    sweep = memory_sweep(model, [gpu])
    fig = memory_chart(sweep)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "(tokens" in ax.get_xlabel() and "(bytes" in ax.get_ylabel()
    assert model.display_name in ax.get_title(loc="left") and gpu.display_name in ax.get_title(loc="left")
    (free,) = _by_gid(ax, f"free:{gpu.display_name}")
    assert np.asarray(free.get_ydata())[0] == pytest.approx(gpu.hbm_capacity_bytes - model.total_parameters * 2)
    (limit,) = _by_gid(ax, f"limit:{gpu.display_name}")
    assert np.asarray(limit.get_xdata())[0] == naive_max_seq_len(model, gpu)
    assert ax.get_xlim()[0] <= 256 and ax.get_xlim()[1] > naive_max_seq_len(model, gpu)
    i = int(np.flatnonzero(sweep.seq_lens == 8192)[0])
    assert sweep.sp_bytes[i] == float(naive_prefill(model.heads, 8192).peak_extra_bytes)


def test_memory_chart_llama_8k_is_8_gib_and_several_gpus():
    sweep = memory_sweep(load_model("llama-3-8b"), [load_gpu("h100-sxm"), load_gpu("h200-sxm")])
    i = int(np.flatnonzero(sweep.seq_lens == 8192)[0])
    assert sweep.sp_bytes[i] == 8 * GiB                       # S and P, 4 GiB each
    assert [line.naive_max_seq_len for line in sweep.lines][0] == 23215
    ax = memory_chart(sweep).axes[0]
    assert len(_by_gid(ax, "free:")) == 2


def test_time_chart():
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    sweep = time_sweep(model, gpu, causal=False)   # the chapter's non-causal times
    fig = time_chart(sweep)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "(tokens" in ax.get_xlabel() and "(s)" in ax.get_ylabel() and "32 layers" in ax.get_ylabel()
    assert gpu.display_name in ax.get_title(loc="left") and "fp16" in ax.get_title(loc="left")
    i = int(np.flatnonzero(sweep.seq_lens == 8192)[0])
    assert sweep.naive_s[i] == pytest.approx(0.16571, rel=1e-4)     # the chapter's 165.7 ms
    assert sweep.flash_s[i] == pytest.approx(0.035561, rel=1e-4)    # and 35.6 ms
    assert _by_gid(ax, "series:naive_oom")                          # naive stops fitting past 23,215
    assert "ratio 4.7x" in _texts(fig)
    lo, hi = ax.get_ylim()
    assert lo <= sweep.flash_s.min() and sweep.naive_s.max() <= hi


def test_decode_chart():
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    sweep = decode_sweep(model, gpu, batches=(1, 8, 64))
    ax = decode_chart(sweep).axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "(tokens" in ax.get_xlabel() and "(s)" in ax.get_ylabel()
    assert {str(line.get_gid()) for line in _by_gid(ax, "series:launched:")} == \
        {"series:launched:1", "series:launched:8", "series:launched:64"}
    # batch 1 and 8 leave the GPU idle the same way: equal launched times, labelled as such
    assert np.allclose(sweep.launched_s[0], sweep.launched_s[1])
    assert any("same as batch 1" in t for t in ax.get_legend_handles_labels()[1])
    assert sweep.weights_s == pytest.approx(model.total_parameters * 2 / gpu.hbm_bandwidth_bytes_per_s)
    assert all(np.all(launched >= ideal) for launched, ideal in zip(sweep.launched_s, sweep.ideal_s))


@pytest.mark.parametrize("model_name, gpu_name", [("llama-3-8b", "h100-sxm"), ("llama-3-70b", "mi300x")])
def test_capacity_chart(model_name, gpu_name):
    model, gpu = load_model(model_name), load_gpu(gpu_name)
    sweep = capacity_sweep(model, gpu)
    ax = capacity_chart(sweep).axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "(tokens" in ax.get_xlabel() and "(count)" in ax.get_ylabel()
    i = int(np.flatnonzero(sweep.context_lens == 2048)[0])
    plan = plan_capacity(model, gpu, 2048)
    assert (sweep.paged[i], sweep.contiguous[i]) == (plan.max_sequences_paged, plan.max_sequences_contiguous)
    assert sweep.paged[i] >= sweep.contiguous[i]
    assert _by_gid(ax, "series:paged") and _by_gid(ax, "series:contiguous")


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LLAMA8 = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")
H200 = load_gpu("h200-sxm")


def _gids(ax, prefix: str) -> set[str]:
    return {str(line.get_gid()) for line in ax.lines if str(line.get_gid()).startswith(prefix)}


def _shared_y(fig: Figure) -> bool:
    a, b = fig.axes[0], fig.axes[1]
    return a.get_shared_y_axes().joined(a, b) and a.get_shared_x_axes().joined(a, b)


# --- several GPUs ------------------------------------------------------------------------------

def test_decode_chart_draws_one_panel_per_gpu():
    sweeps = decode_sweeps(LLAMA8, [H100, H200], batches=(1, 8, 64))
    fig = decode_chart(sweeps)
    assert len(fig.axes) == 2 and _shared_y(fig)
    for ax, gpu, sweep in zip(fig.axes, (H100, H200), sweeps):
        assert gpu.display_name in ax.get_title(loc="left")
        assert _gids(ax, "series:launched:") == {"series:launched:1", "series:launched:8", "series:launched:64"}
        (weights,) = [line for line in ax.lines if line.get_gid() == "weights"]
        assert np.asarray(weights.get_ydata())[0] == sweep.weights_s
    assert "on 2 GPUs" in fig.get_suptitle()
    # one legend for both panels: each batch named once
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert [label for label in labels if label.startswith("batch ")] == ["batch 1", "batch 8", "batch 64"]
    # the batches that coincide as launched are named in each panel, since they depend on the GPU's SMs
    assert all("batch 8 = 1" in "\n".join(t.get_text() for t in ax.texts) for ax in fig.axes)


def test_time_and_capacity_charts_draw_one_panel_per_gpu():
    fig = time_chart(time_sweeps(LLAMA8, [H100, H200], causal=False))
    assert len(fig.axes) == 2 and _shared_y(fig)
    for ax, gpu in zip(fig.axes, (H100, H200)):
        assert gpu.display_name in ax.get_title(loc="left") and _gids(ax, "series:flash")
        assert "ratio" in "\n".join(t.get_text() for t in ax.texts)
    assert fig.axes[0].get_ylabel() and not fig.axes[1].get_ylabel()
    caps = capacity_sweeps(LLAMA8, [H100, H200])
    fig = capacity_chart(caps)
    assert len(fig.axes) == 2 and _shared_y(fig)
    for ax, sweep in zip(fig.axes, caps):
        assert ax.get_title(loc="left").startswith(f"{sweep.gpu}: KV budget")
        assert _gids(ax, "series:paged") and _gids(ax, "series:contiguous")
    assert fig.axes[0].get_ylim()[1] >= 2 * max(c.paged.max() for c in caps)   # both panels' counts in view


def test_one_sweep_in_a_list_is_the_single_chart():
    one = decode_chart([decode_sweep(LLAMA8, H100)])
    alone = decode_chart(decode_sweep(LLAMA8, H100))
    assert len(one.axes) == len(alone.axes) == 1
    assert one.axes[0].get_title(loc="left") == alone.axes[0].get_title(loc="left")
    assert not one.legends and one.axes[0].get_legend() is not None


def test_sweeps_of_different_models_are_refused():
    with pytest.raises(InputError, match="one model a chart"):
        time_chart([time_sweep(LLAMA8, H100), time_sweep(load_model("mistral-7b"), H100)])
    with pytest.raises(InputError, match="at least one sweep"):
        decode_chart([])


# --- notebooks ---------------------------------------------------------------------------------

def test_a_chart_is_a_figure_that_shows_itself_as_png():
    fig = time_chart(time_sweep(LLAMA8, H100))
    assert isinstance(fig, Figure)
    png = fig._repr_png_()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000
    assert repr(fig).startswith("<Figure size 1000x640 with 1 Axes")      # the text form notebooks have shown


LLAMA70 = load_model("llama-3-70b")


def test_capacity_sweep_with_tensor_parallel():
    from rooflab.plot import capacity_chart, capacity_sweep
    sweep = capacity_sweep(LLAMA70, H200, tensor_parallel=4)
    at = int(sweep.context_lens.tolist().index(4096))
    assert sweep.paged[at] == plan_capacity(LLAMA70, H200, 4096, tensor_parallel=4).max_sequences_paged
    assert "4 x" in capacity_chart(sweep).axes[0].get_title(loc="left")

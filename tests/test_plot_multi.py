"""Charts of several GPUs (one panel a GPU), `rooflab plot ... -g A -g B` and --lengths, figures that show
themselves in a fresh Jupyter kernel, and roofline labels clear of the lines."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from typer.testing import CliRunner

import rooflab.plot
from rooflab import load_gpu, load_model
from rooflab.cli import app
from rooflab.errors import InputError
from rooflab.plot import (capacity_chart, capacity_sweeps, decode_chart, decode_sweep, decode_sweeps, roofline_chart,
                          roofline_data, time_chart, time_sweep, time_sweeps)

runner = CliRunner()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LLAMA8 = load_model("llama-3-8b")
H100, H200 = load_gpu("h100-sxm"), load_gpu("h200-sxm")


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


@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """The figures the CLI saves, kept for inspection."""
    figures = []
    real = rooflab.plot.save_figure

    def keep(fig, path):
        figures.append(fig)
        return real(fig, path)

    monkeypatch.setattr(rooflab.plot, "save_figure", keep)
    monkeypatch.chdir(tmp_path)
    return figures


@pytest.mark.parametrize("command", ["decode", "time", "capacity"])
@pytest.mark.parametrize("gpus", [["-g", "h100-sxm", "-g", "h200-sxm"], ["-g", "h100-sxm,h200-sxm"]])
def test_cli_plots_take_several_gpus(drawn, command, gpus):
    r = runner.invoke(app, ["plot", command, *gpus, "-o", f"{command}.png"])
    assert r.exit_code == 0, r.output
    (fig,) = drawn
    assert [ax.get_title(loc="left").split(" (")[0].split(":")[0] for ax in fig.axes] == \
        [H100.display_name, H200.display_name]


def test_cli_lengths_are_the_grid(drawn):
    r = runner.invoke(app, ["plot", "time", "--lengths", "1k,4K", "--lengths", "8192", "-o", "t.png"])
    assert r.exit_code == 0, r.output
    (fig,) = drawn
    (flash,) = [line for line in fig.axes[0].lines if line.get_gid() == "series:flash"]
    assert np.asarray(flash.get_xdata()).tolist() == [1000, 4096, 8192]        # vLLM's suffixes: k = 1000, K = 1024
    assert "ratio" in "\n".join(t.get_text() for t in fig.axes[0].texts)       # -T 8192 is one of them: marked
    for command in ("decode", "capacity", "memory"):
        r = runner.invoke(app, ["plot", command, "--lengths", "2k,64k", "-o", f"{command}.png"])
        assert r.exit_code == 0, r.output
    assert [np.asarray(line.get_xdata()).tolist() for line in drawn[1].axes[0].lines
            if line.get_gid() == "series:launched:1"] == [[2000, 64000]]


@pytest.mark.parametrize("args, needle", [
    (["time", "--lengths", "0"], "--lengths: 0 is below 1"),
    (["time", "--lengths", "1k,,4k"], "--lengths"),
    (["decode", "--lengths", "lots"], "--lengths"),
    (["memory", "--lengths", "4096", "--max-seq-len", "8192"], "--lengths or --max-seq-len"),
    (["decode", "--lengths", "4096", "--max-context-len", "8192"], "--lengths or --max-context-len"),
    (["capacity", "--lengths", "99999999999"], "--lengths"),
    (["decode", "-g", "h100-sxm,"], "empty name"),
    (["time", "-g", "h100-sxm", "-g", "h300"], "unknown GPU 'h300'"),
    (["roofline", "-o", ""], "'--output' / '-o': is empty"),      # not the current folder
])
def test_cli_bad_lengths_and_gpus(tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["plot", *args])
    assert r.exit_code == 2, r.output
    assert 1 <= len(r.stderr.strip().splitlines()) <= 2 and needle in r.stderr and "Traceback" not in r.output
    assert list(tmp_path.iterdir()) == []


# --- notebooks ---------------------------------------------------------------------------------

def test_a_chart_is_a_figure_that_shows_itself_as_png():
    fig = time_chart(time_sweep(LLAMA8, H100))
    assert isinstance(fig, Figure)
    png = fig._repr_png_()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000
    assert repr(fig).startswith("<Figure size 1000x640 with 1 Axes")      # the text form notebooks have shown


def test_a_chart_displays_as_an_image_in_a_fresh_kernel():
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
    pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from rooflab import load_gpu, load_model\n"
        "from rooflab.plot import decode_chart, decode_sweeps\n"
        "decode_chart(decode_sweeps(load_model('llama-3-8b'), [load_gpu('h100-sxm'), load_gpu('h200-sxm')]))")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    (out,) = nb.cells[0].outputs
    assert out.output_type == "execute_result" and "image/png" in out.data, out


# --- roofline labels ---------------------------------------------------------------------------

@pytest.mark.parametrize("model_name, gpus, seq_len, causal", [
    ("llama-3-8b", ["h100-sxm"], 8192, True),      # the README's chart: "9.3x left of the ridge" sat on the vector roof
    ("llama-3-8b", ["h100-sxm"], 8192, False),
    ("llama-3-70b", ["h100-sxm", "h200-sxm", "b200"], 32000, True),
])
def test_roofline_point_labels_cross_no_line(model_name, gpus, seq_len, causal):
    data = roofline_data(load_model(model_name), [load_gpu(g) for g in gpus], seq_len, causal=causal)
    fig = roofline_chart(data)
    ax = fig.axes[0]
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw_without_rendering()
    lines = [line for line in ax.lines if line.get_linestyle() not in ("None", "") and len(line.get_xdata()) > 1]
    assert any(str(line.get_gid()).startswith("vector_roof:") for line in lines)
    assert len(ax.texts) >= 5 + len(gpus)      # points' labels, ridges' labels, the bound arrows
    for label in ax.texts:
        box = label.get_window_extent(renderer)
        crossed = [str(line.get_gid()) for line in lines
                   if line.get_transform().transform_path(line.get_path()).intersects_bbox(box, filled=False)]
        assert not crossed, f"label {label.get_text()!r} crosses {crossed}"

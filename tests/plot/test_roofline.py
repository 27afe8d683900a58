"""Tests of rooflab/plot/roofline.py under the Agg backend: axes, labels, title and ridge; the non-causal
chapter picture; several GPUs' roofs; measured roofs and points; the exp roof at a head dim; labels that
cross no line; and a row faster than its floor ringed, named and warned about.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rooflab import DType, load_gpu, load_model
from rooflab.errors import InputError
from rooflab.load import data_dir
from rooflab.plot import MeasuredPoint, roofline_chart, roofline_data
from support import _by_gid, _legend_texts, _texts


# (model, gpu, dtype): several vendors, GQA ratios and dtypes
WORKLOADS = [
    ("llama-3-8b", "h100-sxm", DType.fp16),
    ("llama-3-70b", "a100-sxm-80gb", DType.bf16),
    ("mixtral-8x7b", "mi300x", DType.fp16),
    ("gemma-2-9b", "l40s", DType.fp8_e4m3),
]


def _point(line) -> tuple[float, float]:
    return float(np.asarray(line.get_xdata())[0]), float(np.asarray(line.get_ydata())[0])


# --- roofline ----------------------------------------------------------------------------------

@pytest.mark.parametrize("model_name, gpu_name, dtype", WORKLOADS)
def test_roofline_axes_labels_title_and_ridge(model_name, gpu_name, dtype):
    model, gpu = load_model(model_name), load_gpu(gpu_name)
    fig = roofline_chart(roofline_data(model, [gpu], 4096, dtype))
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "(FLOP/byte" in ax.get_xlabel() and "(FLOP/s)" in ax.get_ylabel()
    title = ax.get_title(loc="left")
    for needle in (gpu.display_name, model.display_name, dtype.value, "4,096"):
        assert needle in title
    (ridge,) = _by_gid(ax, f"ridge:{gpu.name}")
    x, y = _point(ridge)
    assert x == pytest.approx(gpu.ridge_flop_per_byte(dtype), rel=1e-12)
    assert y == pytest.approx(gpu.matmul_flop_per_s(dtype), rel=1e-12)
    assert f"ridge {gpu.ridge_flop_per_byte(dtype):.0f} FLOP/B" in _texts(fig)
    points = _by_gid(ax, "point:")
    assert len(points) >= 6
    (x_lo, x_hi), (y_lo, y_hi) = ax.get_xlim(), ax.get_ylim()
    for line in points + [ridge]:
        px, py = _point(line)
        assert x_lo < px < x_hi and y_lo < py < y_hi, line.get_gid()
    assert fig.axes[0].get_legend() is not None and fig.legends


def test_non_causal_roofline_shows_the_chapter_picture():
    fig = roofline_chart(roofline_data(load_model("llama-3-8b"), [load_gpu("h100-sxm")], causal=False))
    ax, text = fig.axes[0], _texts(fig)
    assert _point(_by_gid(ax, "ridge:h100-sxm")[0])[0] == pytest.approx(295.34, abs=0.01)
    assert "ridge 295 FLOP/B" in text
    assert "63.4\n4.7x left of the ridge" in text and "6,513\n22.1x right of the ridge" in text
    labels = [str(line.get_gid()) for line in _by_gid(ax, "point:")]
    # QK^T and PV always coincide: one marker, both names
    assert sum("QK" in g for g in labels) == 1 and any("QK" in g and "PV" in g for g in labels)
    assert any("softmax" in g and "vector" in g for g in labels) and any("merge" in g for g in labels)
    assert any(g.startswith("point:paged decode, batch 1") for g in labels)
    assert not any("tiled" in g for g in labels)      # the tiled upper bound is opt-in
    merge = next(line for line in _by_gid(ax, "point:") if "merge" in str(line.get_gid()))
    assert _point(merge)[0] == pytest.approx(390 / 776, rel=1e-9)     # the chapter's I = 0.5
    assert _by_gid(ax, "vector_roof:h100-sxm")


def test_several_gpus_overlay_their_roofs():
    gpus = [load_gpu(n) for n in ("h100-sxm", "a100-40gb", "b200")]
    fig = roofline_chart(roofline_data(load_model("llama-3-70b"), gpus, 32768))
    ax = fig.axes[0]
    for gpu in gpus:
        assert _by_gid(ax, f"roof:{gpu.name}")
        x, _ = _point(_by_gid(ax, f"ridge:{gpu.name}")[0])
        assert x == pytest.approx(gpu.ridge_flop_per_byte(DType.fp16))
        assert ax.get_xlim()[0] < x < ax.get_xlim()[1]
    assert "3 GPUs" in ax.get_title(loc="left")


def _measured_gpu(tmp_path) -> str:
    data = yaml.safe_load((data_dir("hardware") / "h100-sxm.yaml").read_text())
    data["name"] = "h100-calibrated"
    data["measured"] = {"copy_bytes_per_s": 2.9e12, "gemm_flop_per_s": {"fp16": 7.2e14}, "date": "2026-01-02",
                        "device_name": "NVIDIA H100 80GB HBM3"}
    path = tmp_path / "h100-calibrated.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_measured_roofs_and_points(tmp_path):
    gpu = load_gpu(_measured_gpu(tmp_path))
    stars = [MeasuredPoint("flash fwd", 6400.0, 5.1e14), MeasuredPoint("naive", 63.0, 1.5e14)]
    fig = roofline_chart(roofline_data(load_model("llama-3-8b"), [gpu]), measured=stars)
    ax = fig.axes[0]
    assert _by_gid(ax, "roof:h100-calibrated:measured")
    x, y = _point(_by_gid(ax, "ridge:h100-calibrated:measured")[0])
    assert (x, y) == (pytest.approx(7.2e14 / 2.9e12), pytest.approx(7.2e14))
    measured = _by_gid(ax, "measured:")
    assert [_point(m) for m in measured] == [(6400.0, 5.1e14), (63.0, 1.5e14)]
    assert "flash fwd: 1" in _legend_texts(fig) and "flash fwd" not in _texts(fig)   # named once, in the legend
    with pytest.raises(InputError, match="achieved_flop_per_s"):
        MeasuredPoint("bad", 10.0, -1.0)


def test_the_exp_roof_of_an_attention_at_its_head_dim():
    """--exp-roof: the exp roof times the FLOPs an exp (4 d per pair at d_v = d: 512 at d 128). On B200 the exp
    units alone cap d-128 attention at 1 / 0.945 of the tensor roof (the ratio explain derives)."""
    from rooflab.floors import Ceilings

    gpu = load_gpu("b200")
    data = roofline_data(load_model("llama-3-8b"), [gpu], dtype=DType.bf16)
    roofs = Ceilings.of(gpu, DType.bf16)
    assert data.flop_per_exp == pytest.approx(4 * 128)
    assert data.exp_roof_flop_per_s == pytest.approx(roofs.exp_roof_per_s * 512)
    assert data.exp_units_flop_per_s / roofs.matmul_flop_per_s == pytest.approx(1 / 0.945, rel=2e-3)
    plain = roofline_chart(data)
    assert not _by_gid(plain.axes[0], "exp_roof:")
    drawn = roofline_chart(data, exp_roof=True).axes[0]
    (line,) = _by_gid(drawn, "exp_roof:b200")
    assert line.get_ydata()[0] == pytest.approx(data.exp_roof_flop_per_s)
    assert _by_gid(drawn, "exp_units:b200")


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


# --- rows faster than their floor are named (issue 27 item 1) ------------------------------------------------------

def _fixture_faster_than_the_floor(tmp_path, speedup: float = 4.0):
    """TEST FIXTURE, NOT A MEASUREMENT: measurements/h200-sweep.csv's header and its first flash rows, the time of
    the first divided by `speedup` so that it beats its floor (no real row does). Written to tmp_path only."""
    lines = (data_dir("measurements") / "h200-sweep.csv").read_text().splitlines()
    head = [line for line in lines if line.startswith("#")]
    columns = next(line for line in lines if not line.startswith("#"))
    flash = [line for line in lines if line.startswith("flash,rooflab,")][:3]
    names = columns.split(",")
    first = dict(zip(names, flash[0].split(",")))
    t = float(first["time_s"]) / speedup
    first.update(time_s=repr(t), time_p10_s=repr(t * 0.99), time_p90_s=repr(t * 1.01))
    rows = [",".join(first[n] for n in names)] + flash[1:]
    path = tmp_path / "TEST-FIXTURE-faster-than-floor.csv"
    path.write_text("\n".join(head + ["# note: TEST FIXTURE (tests/plot/test_roofline.py): one time divided by "
                                      f"{speedup:g}, not a measurement", columns] + rows) + "\n")
    return path


def test_a_row_faster_than_its_floor_is_ringed_and_named(tmp_path):
    from rooflab.bench.validate import measured_points, validate
    from rooflab.sweeps.points import beaten_text, floor_beaters

    points = measured_points(validate(_fixture_faster_than_the_floor(tmp_path), fit=False))
    beaten = floor_beaters(points)
    assert len(beaten) == 1 and beaten[0].measured_s < beaten[0].floor_s and beaten[0].row.startswith("flash/")
    assert "faster than the floor allows" in beaten_text(beaten[0])
    data = roofline_data(load_model("llama-3-8b"), [load_gpu("h200-sxm")], seq_len=8192)
    fig = roofline_chart(data, points)
    ax = fig.axes[0]
    rings = _by_gid(ax, "beats_floor:")
    assert [r.get_gid() for r in rings] == [f"beats_floor:{beaten[0].row}"]
    named = [t.get_text() for t in ax.texts]
    assert f"beats its floor: {beaten[0].row}" in named
    legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert any(t.startswith("BEATS ITS FLOOR (") and t.endswith(beaten[0].row) for t in legend)
    assert "1 measured row(s) beat their floor (ringed, named)" in ax.get_title(loc="left")
    frame = data.chart_frame(points)
    assert frame[frame.series == "measured"].beats_floor.sum() == 1


def test_no_bundled_row_beats_its_floor_on_the_chart():
    from rooflab.bench.validate import measured_points, validate
    from rooflab.sweeps.points import floor_beaters

    points = measured_points(validate(data_dir("measurements") / "h200-sweep.csv", fit=False))
    assert points and all(p.floor_s > 0 for p in points) and floor_beaters(points) == ()
    fig = roofline_chart(roofline_data(load_model("llama-3-8b"), [load_gpu("h200-sxm")]), points)
    assert not _by_gid(fig.axes[0], "beats_floor:")


def test_plot_roofline_warns_naming_the_row_beating_its_floor(tmp_path):
    from typer.testing import CliRunner

    from rooflab.cli import app

    r = CliRunner().invoke(app, ["plot", "roofline", "--measurements", str(_fixture_faster_than_the_floor(tmp_path)),
                                 "-o", str(tmp_path / "roofline.png")])
    assert r.exit_code == 0, r.output
    assert "warning: beats its floor: flash/rooflab" in r.output and (tmp_path / "roofline.png").is_file()

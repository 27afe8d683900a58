"""Charts (rooflab.plot) under the Agg backend, and `rooflab plot`: scales, labels, limits, ridge, files."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import yaml
from matplotlib.figure import Figure
from typer.testing import CliRunner

from rooflab import DType, load_gpu, load_model
from rooflab.capacity import plan_capacity
from rooflab.cli import app
from rooflab.cost.naive import naive_max_seq_len, naive_prefill
from rooflab.errors import InputError, RooflabError
from rooflab.load import data_dir
from rooflab.plot import (MeasuredPoint, capacity_chart, capacity_sweep, decode_chart, decode_sweep, memory_chart,
                          memory_sweep, roofline_chart, roofline_data, save_figure, time_chart, time_sweep)
from rooflab.units import GiB

runner = CliRunner()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# (model, gpu, dtype): several vendors, GQA ratios and dtypes
WORKLOADS = [
    ("llama-3-8b", "h100-sxm", DType.fp16),
    ("llama-3-70b", "a100-sxm-80gb", DType.bf16),
    ("mixtral-8x7b", "mi300x", DType.fp16),
    ("gemma-2-9b", "l40s", DType.fp8_e4m3),
]


def _by_gid(ax, prefix: str) -> list:
    return [line for line in ax.lines if str(line.get_gid()).startswith(prefix)]


def _point(line) -> tuple[float, float]:
    return float(np.asarray(line.get_xdata())[0]), float(np.asarray(line.get_ydata())[0])


def _texts(fig: Figure) -> str:
    return "\n".join(t.get_text() for t in fig.axes[0].texts)


def _legend_texts(fig: Figure) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


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


def test_points_sit_on_their_roofs():
    gpu = load_gpu("h100-sxm")
    data = roofline_data(load_model("llama-3-8b"), [gpu], flash_tiled=True)
    roofs = data.roofs[0].datasheet
    for p in data.points:
        roof = min(roofs.rate(p.pipe), roofs.bandwidth_bytes_per_s * p.intensity_flop_per_byte)
        if p.kind == "paged_launched":
            assert p.flop_per_s < 0.1 * roof       # 8 work units on 132 SMs
        else:
            assert p.flop_per_s == pytest.approx(roof, rel=1e-9), p.label
    assert any(p.kind == "flash_tiled" for p in data.points)


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


def test_dtype_without_a_rate_is_a_clear_error():
    with pytest.raises(RooflabError, match="fp8"):
        roofline_data(load_model("llama-3-8b"), [load_gpu("a100-40gb")], dtype=DType.fp8_e4m3)


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
    assert sweep.sp_bytes[i] == float(naive_prefill(model, 8192).peak_extra_bytes)


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


def test_charts_use_no_pyplot():
    # (the core's freedom from matplotlib is tests/test_imports.py's)
    code = (
        "import sys\n"
        "from rooflab import load_gpu, load_model\n"
        "from rooflab.plot import roofline_chart, roofline_data\n"
        "roofline_chart(roofline_data(load_model('llama-3-8b'), [load_gpu('h100-sxm')]))\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'a chart used pyplot'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- saving ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def default_roofline() -> Figure:
    return roofline_chart(roofline_data(load_model("llama-3-8b"), [load_gpu("h100-sxm")]))


def test_save_writes_valid_images(tmp_path, default_roofline):
    png = save_figure(default_roofline, tmp_path / "r.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000
    svg = save_figure(default_roofline, tmp_path / "r.svg").read_bytes()
    assert svg.startswith(b"<?xml") and b"<svg" in svg and svg.rstrip().endswith(b"</svg>")
    pdf = save_figure(default_roofline, tmp_path / "r.PDF").read_bytes()
    assert pdf.startswith(b"%PDF") and b"%%EOF" in pdf[-32:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.PDF", "r.png", "r.svg"]   # no temp files left


def test_save_refuses_bad_paths_and_leaves_nothing(tmp_path, default_roofline):
    target = tmp_path / "keep.png"
    target.write_bytes(b"old")
    with pytest.raises(RooflabError, match=r"'\.jpg' is not an image type"):
        save_figure(default_roofline, tmp_path / "keep.jpg")
    with pytest.raises(RooflabError, match="does not exist"):
        save_figure(default_roofline, tmp_path / "missing" / "r.png")
    with pytest.raises(RooflabError, match="no extension"):
        save_figure(default_roofline, tmp_path / "roofline")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["keep.png"]


# --- CLI ---------------------------------------------------------------------------------------

def _short_error(result, needle):
    assert result.exit_code == 2, result.output
    assert 1 <= len(result.stderr.strip().splitlines()) <= 2, result.stderr
    assert needle in result.stderr and "Traceback" not in result.output and result.stdout == ""


def test_cli_roofline_default_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["plot", "roofline", "--gpu", "h100-sxm", "--model", "llama-3-8b", "--seq-len", "8192"])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == "wrote roofline.png"
    assert (tmp_path / "roofline.png").read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize("args, name", [
    (["roofline", "-g", "h100-sxm,a100-40gb", "--causal"], "r.svg"),
    (["memory", "-g", "h100-sxm", "-g", "h200-sxm", "--max-seq-len", "65536"], "m.pdf"),
    (["time", "-m", "mistral-7b", "--seq-len", "4096"], "t.png"),
    (["decode", "-b", "1,16", "--kv-dtype", "fp8_e4m3", "--max-context-len", "16384"], "d.svg"),
    (["capacity", "--page-size", "32"], "c.pdf"),
])
def test_cli_each_chart_writes_its_file(tmp_path, args, name):
    out = tmp_path / name
    r = runner.invoke(app, ["plot", *args, "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert f"wrote {out}" in r.stdout
    head = out.read_bytes()[:8]
    assert head.startswith({"png": PNG_MAGIC, "svg": b"<?xml", "pdf": b"%PDF"}[name[-3:]])


@pytest.mark.parametrize("args, needle", [
    (["roofline", "-o", "roofline.jpg"], "'.jpg' is not an image type"),
    (["memory", "-o", "/no/such/folder/m.png"], "does not exist"),
    (["roofline", "-g", "h300"], "unknown GPU 'h300'"),
    (["roofline", "--seq-len", "0", "-o", "x.png"], "--seq-len"),
    (["roofline", "-g", "a100-40gb", "--dtype", "fp8_e4m3", "-o", "x.png"], "fp8"),
    (["decode", "-b", "two"], "--batch"),
    (["capacity", "-m", "llama-3.1-405b"], "do not fit"),
])
def test_cli_bad_input(tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    _short_error(runner.invoke(app, ["plot", *args]), needle)
    assert list(tmp_path.iterdir()) == []


def test_cli_help():
    r = runner.invoke(app, ["plot", "--help"])
    assert r.exit_code == 0
    for command in ("roofline", "memory", "time", "decode", "capacity"):
        assert command in r.stdout
        sub = runner.invoke(app, ["plot", command, "--help"])
        assert sub.exit_code == 0 and "--output" in sub.stdout and ".png, .svg or .pdf" in sub.stdout


# --- measured points on the roofline (--measurements) ------------------------------------------------

BUNDLED_SWEEP = data_dir("measurements") / "h200-sweep.csv"


@pytest.fixture(scope="module")
def measured_cli(tmp_path_factory):
    """`rooflab plot roofline --measurements <bundled sweep>` with no --gpu: the PNG it wrote and its Figure."""
    import rooflab.plot

    saved = []

    def keep(fig, path):
        saved.append(fig)
        return rooflab.plot.save.save_figure(fig, path)

    out = tmp_path_factory.mktemp("measured") / "roofline-measured.png"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rooflab.plot, "save_figure", keep)
        r = runner.invoke(app, ["plot", "roofline", "--measurements", str(BUNDLED_SWEEP), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return r, out, saved[0]


def test_cli_measurements_write_a_png(measured_cli):
    r, out, _ = measured_cli
    assert r.stdout.strip() == f"wrote {out}"
    png = out.read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000


def test_cli_measurements_default_gpu_is_the_files(measured_cli):
    _, _, fig = measured_cli
    assert "H200" in fig.axes[0].get_title(loc="left")
    assert _by_gid(fig.axes[0], "roof:h200-sxm:measured")        # the calibrated roofs the points are held to


def test_measured_points_one_style_and_one_legend_entry_per_group(measured_cli):
    from rooflab.bench.validate import measured_points, validate

    _, _, fig = measured_cli
    ax = fig.axes[0]
    expected = measured_points(validate(BUNDLED_SWEEP))
    groups: dict[str, list[tuple[float, float]]] = {}
    for p in expected:
        groups.setdefault(p.label, []).append((p.intensity_flop_per_byte, p.achieved_flop_per_s))
    lines = {str(line.get_gid()).removeprefix("measured:"): line for line in _by_gid(ax, "measured:")}
    assert list(lines) == list(groups) and len(groups) >= 10            # one artist per (kernel, impl)
    for label, points in groups.items():                                 # every measured row, where it belongs
        assert np.allclose(lines[label].get_xydata(), points, rtol=1e-12)
    assert sum(len(p) for p in groups.values()) == len(expected) > 100
    styles = {(line.get_marker(), line.get_color(), line.get_markerfacecolor() == "none") for line in lines.values()}
    assert len(styles) == len(lines)                                     # groups are told apart by their markers
    for label, line in lines.items():
        hollow = line.get_markerfacecolor() == "none"
        assert hollow == ("(rooflab" not in label), label               # rooflab's filled, PyTorch's hollow
    assert [f"{label}: {len(points)}" for label, points in groups.items()] == \
        [t for t in _legend_texts(fig) if t.split(":")[0] in groups]    # one legend entry per group, with its count
    assert not any(label in _texts(fig) for label in groups)             # and no label per point


@pytest.mark.parametrize("args, needle", [
    (["--measurements", "missing.csv"], "cannot read file"),
    (["--measurements", "bad.csv"], "format line"),
    (["--gpu", "h100-sxm", "--measurements", str(BUNDLED_SWEEP)], "not on h100-sxm"),
])
def test_cli_bad_measurement_file(tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.csv").write_text("hello,world\n1,2\n")
    _short_error(runner.invoke(app, ["plot", "roofline", *args, "-o", "r.png"]), needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


def test_the_exp_roof_of_an_attention_at_its_head_dim():
    """--exp-roof: the exp roof times the FLOPs an exp (4 d per pair at d_v = d: 512 at d 128). On B200 the exp
    units alone cap d-128 attention at 1 / 0.945 of the tensor roof (the ratio explain derives)."""
    from rooflab.roofline import Ceilings

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

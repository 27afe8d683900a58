"""Tests of rooflab/cli/charts.py: `rooflab plot` under the Agg backend.

Each chart writes its file (the default name, -o, --data as strict JSON or CSV of the chart's frame, whose
numbers are the sweeps'), several GPUs (-g A -g B) and --lengths, charts of measurement files and the
predicted-against-measured chart on the bundled H200 data, help, and bad input (exit 2, nothing written).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import rooflab.plot
from rooflab import load_gpu
from rooflab.cli import app
from rooflab.load import data_dir
from support import _by_gid, _legend_texts, _texts


runner = CliRunner()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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

    def keep(fig, path, inputs=()):
        saved.append(fig)
        return rooflab.plot.save.save_figure(fig, path, inputs)

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


def test_measured_points_one_style_and_one_legend_entry_per_group(measured_cli, validation):
    from rooflab.bench.validate import measured_points

    _, _, fig = measured_cli
    ax = fig.axes[0]
    expected = measured_points(validation)          # the bundled sweep's validation (tests/conftest.py)
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


H100 = load_gpu("h100-sxm")
H200 = load_gpu("h200-sxm")


@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """The figures the CLI saves, kept for inspection."""
    figures = []
    real = rooflab.plot.save_figure

    def keep(fig, path, inputs=()):
        figures.append(fig)
        return real(fig, path, inputs)

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


def test_plot_validation_cli(tmp_path):
    from typer.testing import CliRunner

    from rooflab.cli import app

    out = tmp_path / "v.svg"
    r = CliRunner().invoke(app, ["plot", "validation", "--peers", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text().lstrip().startswith("<?xml") and "<svg" in out.read_text()[:2000]
    bad = CliRunner().invoke(app, ["plot", "validation", str(tmp_path / "missing.csv")])
    assert bad.exit_code == 2 and "cannot read" in bad.stderr and not (tmp_path / "validation.png").exists()


# --- --data: every chart writes the numbers it draws --------------------------------------------------------------

DATA_COMMANDS = [
    ["roofline", "-T", "8k"],
    ["memory", "--lengths", "4k,8k"],
    ["time", "--lengths", "4k,8k"],
    ["decode", "--lengths", "4k,8k", "-b", "1,8"],
    ["capacity", "--lengths", "4k,8k"],
    ["validation"],
]


@pytest.mark.parametrize("args", DATA_COMMANDS, ids=lambda a: a[0])
@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_cli_every_chart_writes_its_data(tmp_path, args, suffix):
    """--data holds the chart's frame, strict JSON or CSV with the frame's columns; a chart of times has an
    'estimate' column that keeps floors and predictions apart (memory and capacity count bytes and sequences)."""
    import csv
    import json

    image, data = tmp_path / "chart.png", tmp_path / f"chart{suffix}"
    result = runner.invoke(app, ["plot", *args, "-o", str(image), "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert image.read_bytes().startswith(PNG_MAGIC)
    text = data.read_text()
    records = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON {c}")) if suffix == ".json" else \
        list(csv.DictReader(text.splitlines()))
    assert records
    if args[0] not in ("memory", "capacity"):
        assert {r["estimate"] for r in records} <= {"floor", "prediction", "measured"}


def test_cli_data_numbers_are_the_sweeps(tmp_path):
    import json

    from rooflab.load import load_model
    from rooflab.plot import decode_sweep

    data = tmp_path / "decode.json"
    result = runner.invoke(app, ["plot", "decode", "-m", "deepseek-v3", "-g", "h200-sxm", "--lengths", "32K",
                                 "-b", "8", "-o", str(tmp_path / "d.png"), "--data", str(data)])
    assert result.exit_code == 0, result.output
    got = {r["series"]: r["time_s"] for r in json.loads(data.read_text())}
    sweep = decode_sweep(load_model("deepseek-v3"), load_gpu("h200-sxm"), batches=(8,), context_lens=[32768])
    assert got == {"floor": sweep.floor_s[0][0], "launched": sweep.launched_s[0][0],
                   "predicted": sweep.predicted_s[0][0]}


def _inputs_folder(tmp_path):
    """tmp_path holding c/config.json (Qwen2.5-7B's), link.json (a symlink to it), hard.json (a hard link), a GPU
    YAML and a measurement CSV (the bundled H200 sweep), each a file a chart command reads."""
    import os
    import shutil

    from rooflab.fit.validate import bundled_dataset

    (tmp_path / "c").mkdir()
    shutil.copy(Path(__file__).parents[1] / "data" / "hf_configs" / "qwen2.5-7b.json", tmp_path / "c" / "config.json")
    (tmp_path / "link.json").symlink_to(tmp_path / "c" / "config.json")
    os.link(tmp_path / "c" / "config.json", tmp_path / "hard.json")
    shutil.copy(data_dir("hardware") / "h200-sxm.yaml", tmp_path / "g.json")   # a GPU YAML under any name
    shutil.copy(bundled_dataset()[0], tmp_path / "m.csv")
    return {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}


@pytest.mark.parametrize("args, data", [
    (["capacity", "-m", "c", "--lengths", "8k"], "c/config.json"),
    (["capacity", "-m", "c", "--lengths", "8k"], "./c/../c/config.json"),
    (["capacity", "-m", "c", "--lengths", "8k"], "link.json"),
    (["capacity", "-m", "c", "--lengths", "8k"], "hard.json"),
    (["time", "-m", "./c", "--lengths", "8k"], "c/config.json"),
    (["memory", "-m", "c/config.json", "--lengths", "8k"], "c/config.json"),
    (["decode", "-m", "link.json", "--lengths", "8k", "-b", "1"], "c/config.json"),
    (["decode", "-g", "./g.json", "--lengths", "8k", "-b", "1"], "g.json"),
    (["roofline", "-g", "h200-sxm", "--measurements", "m.csv"], "m.csv"),
    (["roofline", "-m", "c", "-g", "./g.json"], "g.json"),
    (["validation", "m.csv"], "m.csv"),
    (["serve", "-m", "c", "--max-concurrency", "4"], "c/config.json"),
])
def test_cli_data_never_overwrites_an_input(tmp_path, monkeypatch, args, data):
    """--data naming a file the command reads (the model's config.json under any spelling, a symlink or a hard link
    to it, a GPU YAML, the measurement CSV) is refused naming --data, exit 2; no image, every input unchanged."""
    before = _inputs_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plot", *args, "-o", "chart.png", "--data", data])
    _short_error(result, "--data")
    assert "would overwrite an input file" in result.stderr
    assert not (tmp_path / "chart.png").exists()
    assert {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_cli_data_beside_the_inputs_is_written(tmp_path, monkeypatch):
    """The same command with --data beside its inputs writes both files (the refusal above is of inputs only)."""
    _inputs_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plot", "capacity", "-m", "c", "--lengths", "8k", "-o", "chart.png",
                                 "--data", "c/capacity.csv"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "chart.png").is_file() and (tmp_path / "c" / "capacity.csv").read_text().count("\n") >= 2


@pytest.mark.parametrize("name, needle", [("chart.txt", ".csv or .json"), ("", "empty"), ("chart.png", ".csv or .json")])
def test_cli_data_refuses_a_bad_file(tmp_path, monkeypatch, name, needle):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plot", "time", "--lengths", "8k", "-o", "chart.png", "--data", name])
    assert result.exit_code != 0 and needle in result.output
    assert not (tmp_path / "chart.png").exists()        # refused before any drawing

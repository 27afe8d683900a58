"""The throughput-interactivity chart (rooflab/plot/serve.py) and `rooflab plot serve`: several GPUs and TP degrees
on one chart, the numbers it draws written by --data (rooflab.plot.save_data: CSV, strict JSON), bad values
refused naming the option."""

import csv
import json

import pytest
from matplotlib.figure import Figure
from typer.testing import CliRunner

from rooflab import load_gpu, load_model
from rooflab.cli import app
from rooflab.deployment import Deployment
from rooflab.plot.serve import MAX_NAMED, serve_chart, sweeps_frame
from rooflab.serve import Replica, Workload, concurrency_sweep

runner = CliRunner()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BASE = ["plot", "serve", "-m", "llama-3-8b", "--input-len", "512", "--output-len", "64", "--max-concurrency",
        "1,4,16"]


@pytest.fixture(scope="module")
def sweeps():
    model, workload = load_model("llama-3-8b"), Workload.fixed(512, 64)
    out = []
    for gpu, tp in (("h200-sxm", 1), ("h200-sxm", 2), ("h100-sxm", 1)):
        replica = Replica.build(model, load_gpu(gpu), Deployment(tensor_parallel=tp), workload, max_concurrency=16)
        out.append(concurrency_sweep(replica, [1, 4, 16]))
    return out


def test_one_curve_per_replica_and_estimate(sweeps):
    fig = serve_chart(sweeps)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    # the H200 (TP 1 and 2: its collectives are fitted) and the H100 (predictions transferred) have both
    assert sum(label.endswith(": floor") for label in labels) == 3
    assert sum(label.endswith(": predicted") for label in labels) == 3
    assert len(set(labels)) == 6
    assert ax.get_xscale() == ax.get_yscale() == "log"
    for line in ax.get_lines():
        assert len(line.get_xdata()) == 3


def test_the_frame_is_what_the_chart_draws(sweeps):
    frame = sweeps_frame(sweeps)
    assert len(frame) == 3 * 3 * 2
    fig = serve_chart(sweeps)
    drawn = sorted(y for line in fig.axes[0].get_lines() for y in line.get_ydata())
    assert drawn == pytest.approx(sorted(frame.output_tokens_per_s_per_gpu))


@pytest.mark.parametrize("suffix", ["csv", "json"])
def test_plot_serve_writes_the_image_and_its_data(tmp_path, suffix):
    image, data = tmp_path / "serve.png", tmp_path / f"serve.{suffix}"
    r = runner.invoke(app, BASE + ["-g", "h200-sxm", "-g", "h100-sxm", "--tp", "1,2", "-o", str(image),
                                   "--data", str(data)])
    assert r.exit_code == 0, r.output
    assert image.read_bytes()[:8] == PNG_MAGIC
    text = data.read_text()
    if suffix == "json":
        rows = json.loads(text, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    else:
        rows = list(csv.DictReader(text.splitlines()))
    replicas = {(row["gpu"], row["replica"]) for row in rows}
    assert len(replicas) == 4 and {gpu for gpu, _ in replicas} == {"h200-sxm", "h100-sxm"}
    assert {row["estimate"] for row in rows} == {"floor", "predicted"}


@pytest.mark.parametrize("args, option", [
    (["--tp", "0"], "--tp"), (["--tp", ""], "--tensor-parallel-size"), (["--tp", "nan"], "--tp"), (["--tp", "9" * 30], "--tp"),
    (["--max-concurrency", "-1"], "--max-concurrency"), (["--max-concurrency", "1e300"], "--max-concurrency"),
    (["--input-len", "inf"], "--input-len"), (["--gpu-memory-utilization", "0"], "--gpu-memory-utilization"),
    (["-o", "chart.txt"], "chart.txt"), (["--data", "numbers.xlsx"], "numbers.xlsx"), (["-g", ""], "gpu"),
])
def test_bad_values_are_refused(tmp_path, args, option):
    extra = [] if "-o" in args else ["-o", str(tmp_path / "x.png")]
    r = runner.invoke(app, BASE + args + extra)
    assert r.exit_code == 2 and option in r.output.strip().splitlines()[0] and "Traceback" not in r.output, r.output


def test_ticks_are_plain_numbers_and_a_missing_prediction_is_in_the_legend():
    """Minor ticks of a log axis under two decades printed raw mathtext (3 x 10^1); a replica without a prediction
    (H100 at TP 2: its collectives have no fit) drew a floor alone with nothing saying why."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    model, workload = load_model("llama-3-8b"), Workload.fixed(512, 64)
    replica = Replica.build(model, load_gpu("h100-sxm"), Deployment(tensor_parallel=2), workload, max_concurrency=16)
    fig = serve_chart([concurrency_sweep(replica, [1, 4, 16])])
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    ticks = [t.get_text() for axis in (ax.xaxis, ax.yaxis)
             for t in axis.get_majorticklabels() + axis.get_minorticklabels() if t.get_text()]
    assert ticks and not any("$" in t or "times" in t for t in ticks), ticks
    labels = [line.get_label() for line in ax.get_lines()]
    assert any(label.endswith(": floor") for label in labels)
    # both collectives without a fit are named, not the first alone (review, session 12)
    assert any(label.endswith(": no prediction for all_gather, all_reduce (see rooflab serve)") for label in labels), \
        labels


def _legend_of(sweep) -> list[str]:
    return [line.get_label() for line in serve_chart([sweep]).axes[0].get_lines()]


def test_the_legend_names_each_kernel_without_a_prediction_once():
    """The MI300X has no fit of its own and none transfers to it: each kernel the step report names without a
    prediction is in the legend once, in the report's order, and no reason's text (rooflab serve has those)."""
    model, workload = load_model("llama-3-8b"), Workload.fixed(512, 64)
    sweep = concurrency_sweep(Replica.build(model, load_gpu("mi300x"), Deployment(), workload, max_concurrency=4),
                              [1, 4])
    parts = [p for p in sweep.provenance.split("; ") if p.startswith("no prediction for ")]
    names = list(dict.fromkeys(p.removeprefix("no prediction for ").split(" (")[0].split(":")[0] for p in parts))
    assert len(names) > 1, sweep.provenance
    [label] = [label for label in _legend_of(sweep) if "no prediction" in label]
    more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
    assert label.endswith(f": no prediction for {', '.join(names[:MAX_NAMED])}{more} (see rooflab serve)"), label
    assert "transfers" not in label


def test_past_max_named_the_legend_counts_the_rest():
    """A provenance naming more kernels than MAX_NAMED (one twice) keeps the legend entry short."""
    import dataclasses

    model, workload = load_model("llama-3-8b"), Workload.fixed(512, 64)
    sweep = concurrency_sweep(Replica.build(model, load_gpu("mi300x"), Deployment(), workload, max_concurrency=4),
                              [1, 4])
    kinds = ["gemm", "paged", "all_reduce", "gemm", "merge", "norms and elementwise"]
    long = "; ".join(f"no prediction for {k} (a family): {'a long reason ' * 10}" for k in kinds)
    [label] = [label for label in _legend_of(dataclasses.replace(sweep, provenance=long)) if "no prediction" in label]
    assert label.endswith(": no prediction for gemm, paged, all_reduce and 2 more (see rooflab serve)"), label
    assert "long reason" not in label

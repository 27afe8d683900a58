"""`rooflab report` and `rooflab list`: output, the JSON contract, and bad input (stderr, exit 2)."""

from __future__ import annotations

import csv
import io
import json

import pytest
import yaml
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.load import data_dir
from rooflab.units import GiB

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_report_no_causal_shows_the_chapter_figures():
    r = invoke("report", "--no-causal")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "Meta Llama 3 8B" in out and "H100 SXM" in out and "T=8192" in out and "fp16" in out
    assert "16.156 GiB" in out          # naive traffic per layer
    assert "4.7x left" in out and "22.1x right" in out
    assert "165.709 ms" in out          # 32 layers, memory-bound
    assert "35.561 ms" in out           # compute floor
    assert "S = 4.000 GiB" in out
    assert "6553.6" in out
    for kernel in ("qk", "softmax", "pv"):
        assert kernel in out


def test_report_is_causal_by_default_and_says_so():
    """Prefill is causal by default, as engines run decoders, and the header names the mask."""
    causal, chapter = invoke("report"), invoke("report", "--no-causal")
    assert causal.exit_code == 0 and chapter.exit_code == 0
    assert causal.stdout.splitlines()[0].endswith("fp16, causal, datasheet ceilings")
    assert chapter.stdout.splitlines()[0].endswith("fp16, non-causal, datasheet ceilings")
    assert "549.823 GFLOP" in causal.stdout and "1.100 TFLOP" in chapter.stdout   # T(T+1)/2 of T^2 pairs
    assert "16.156 GiB" in causal.stdout      # the naive kernels still write all of S and P


def test_report_json_contract():
    r = invoke("report", "--format", "json", "--no-causal")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    for key in ("model", "gpu", "seq_len", "batch", "dtype", "causal", "num_layers", "rows"):
        assert key in doc
    assert (doc["model"], doc["gpu"], doc["seq_len"], doc["batch"], doc["dtype"], doc["causal"]) == \
        ("llama-3-8b", "h100-sxm", 8192, 1, "fp16", False)
    assert doc["num_layers"] == 32
    variants = {row["variant"]: row for row in doc["rows"]}
    assert set(variants) == {"naive", "flash"}
    for row in variants.values():
        for key in ("flops", "hbm_bytes", "intensity_flop_per_byte", "t_compute_s", "t_memory_s",
                    "t_floor_s", "bound"):
            assert isinstance(row[key], (int, float, str)), key
        assert row["bound"] in ("compute", "memory")
    assert variants["naive"]["s_bytes"] / GiB == pytest.approx(4.0)
    assert variants["naive"]["p_bytes"] / GiB == pytest.approx(4.0)
    assert variants["naive"]["t_floor_s"] == pytest.approx(5.178e-3, rel=1e-3)


def test_report_options_change_the_workload():
    doc = json.loads(invoke("report", "-m", "llama-3-70b", "-g", "h200-sxm", "-T", "4096", "-b", "2",
                            "--dtype", "bf16", "--causal", "-f", "json").stdout)
    assert (doc["model"], doc["gpu"], doc["seq_len"], doc["batch"], doc["dtype"], doc["causal"]) == \
        ("llama-3-70b", "h200-sxm", 4096, 2, "bf16", True)
    naive = doc["rows"][0]
    # 2 sequences x 64 heads x 4096^2 x 2 bytes
    assert naive["s_bytes"] == 2 * 64 * 4096 * 4096 * 2


def test_report_markdown_and_csv():
    md = invoke("report", "--format", "markdown").stdout
    assert md.startswith("## ") and "| naive" in md and "|---" in md.replace(" ", "")
    rows = list(csv.DictReader(io.StringIO(invoke("report", "--format", "csv").stdout)))
    assert [r["kernel"] for r in rows] == ["", "qk", "softmax", "pv", ""]
    assert float(rows[0]["hbm_bytes"]) / GiB == pytest.approx(16.156, rel=1e-4)


def test_report_says_when_naive_does_not_fit():
    out = invoke("report", "--seq-len", "32768").stdout
    assert "does NOT fit" in out


def test_list_gpus_and_models():
    gpus = invoke("list", "gpus")
    assert gpus.exit_code == 0 and "h100-sxm" in gpus.stdout and "295 FLOP/B" in gpus.stdout
    models = json.loads(invoke("list", "models", "--format", "json").stdout)
    assert {m["name"] for m in models} >= {"llama-3-8b", "mixtral-8x7b", "gemma-2-9b"}


def _assert_short_error(result, *needles):
    assert result.exit_code == 2, result.output
    err = result.stderr.strip().splitlines()
    assert 1 <= len(err) <= 2, result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.stderr
    assert result.stdout == ""  # nothing half-written


def test_unknown_gpu_name():
    _assert_short_error(invoke("report", "--gpu", "h300"), "unknown GPU 'h300'", "a100-40gb")


@pytest.mark.parametrize("name, spec", [("h200", "h200-sxm"), ("NVIDIA H200", "h200-sxm"), ("H100-SXM5-80GB", "h100-sxm"),
                                        ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("nvidia a100-sxm4-80gb", "a100-sxm-80gb"),
                                        ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("L40S", "l40s"), ("h200 sxm", "h200-sxm")])
def test_gpu_names_people_and_nvidia_smi_use(name, spec):
    r = invoke("report", "--gpu", name, "-f", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["gpu"] == spec


@pytest.mark.parametrize("name, candidates", [("H100", ("h100-sxm", "h100-pcie")), ("a100", ("a100-40gb", "a100-sxm-80gb"))])
def test_ambiguous_gpu_names_list_the_candidates(name, candidates):
    r = invoke("report", "--gpu", name)
    _assert_short_error(r, "ambiguous", *candidates)
    assert "b200" not in r.stderr


@pytest.mark.parametrize("name, suggestion", [("l40", "l40s"), ("mi300", "mi300x"), ("b20", "b200"),
                                              ("rtx-4090-2", "rtx-4090")])
def test_a_prefix_must_end_between_words(name, suggestion):
    """The L40 is not the L40S, nor the MI300A the MI300X: a name that stops inside a model name is unknown (and the
    suggestion names the GPU it may mean), not silently resolved."""
    _assert_short_error(invoke("report", "--gpu", name), f"unknown GPU '{name}'", f"Did you mean '{suggestion}'")


def test_unknown_model_name_suggests():
    _assert_short_error(invoke("report", "--model", "llama3-8b"), "Did you mean 'llama-3-8b'")


@pytest.mark.parametrize("args, needle", [
    (("--seq-len", "0"), "--seq-len"),
    (("--batch", "-3"), "--batch"),
    (("--batch", "10000000000000000000"), "--batch"),
    (("--seq-len", "1e160"), "--seq-len"),
    (("--dtype", "fp9"), "--dtype"),
    (("--format", "xml"), "--format"),
    (("--no-such-option",), "No such option"),
])
def test_bad_options(args, needle):
    _assert_short_error(invoke("report", *args), needle)


def _bad_yaml(tmp_path, mutate):
    data = yaml.safe_load((data_dir("models") / "llama-3-8b.yaml").read_text())
    mutate(data)
    path = tmp_path / "bad-model.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("mutate, needles", [
    (lambda d: d.update(num_kv_heads=5), ["num_kv_heads", "5", "multiple"]),
    (lambda d: d.update(num_layers=-1), ["num_layers", "-1", "positive"]),
    (lambda d: d.update(head_dims=128), ["head_dims", "unknown field"]),
    (lambda d: d.pop("vocab_size"), ["vocab_size", "missing"]),
    (lambda d: d.update(hidden_size="big"), ["hidden_size", "'big'"]),
])
def test_bad_model_file(tmp_path, mutate, needles):
    path = _bad_yaml(tmp_path, mutate)
    _assert_short_error(invoke("report", "--model", path), path, *needles)


def test_malformed_gpu_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\n  bad indentation: [\n")
    _assert_short_error(invoke("report", "--gpu", str(path)), str(path), "malformed YAML")


def test_help_texts():
    r = invoke("report", "--help")
    assert r.exit_code == 0
    for opt in ("--model", "--gpu", "--seq-len", "--batch", "--dtype", "--causal", "--format"):
        assert opt in r.stdout


def test_version_and_python_dash_m():
    """`rooflab --version` and `python -m rooflab` (the same app as the console script)."""
    import subprocess
    import sys

    from rooflab import __version__

    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout.strip() == f"rooflab {__version__}"
    done = subprocess.run([sys.executable, "-m", "rooflab", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"rooflab {__version__}"
    bad = subprocess.run([sys.executable, "-m", "rooflab", "report", "--seq-len", "0"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "--seq-len" in bad.stderr

"""Tests of rooflab/cli/measure.py: `rooflab validate` and `rooflab bench` on a machine without a GPU.

validate on fixture files built from rooflab's own predictions and on the bundled dataset (JSON, bad or
missing files, another GPU's measurements, outputs that cannot be written or would overwrite the input);
bench and the distributed bench saying what is missing, without hanging; `bench --new-kernels` handing its
cases to the runner (the device calls replaced).
"""

from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from rooflab.bench.cases import new_kernel_cases
from rooflab.bench.records import FORMAT_LINE, write_measurements
from rooflab.cli import app
from rooflab.vocab import Kernel
from support import FULL_HEADER, GOOD_ROW, _at_fraction, _file, _flash, run_in_process, _write_text


runner = CliRunner()
META = {"gpu_spec": "h100-sxm", "device_name": "NVIDIA H100 80GB HBM3", "date": "fixture"}


def _cli(*args):
    return runner.invoke(app, ["validate", *args])


def _short_error(result, *needles):
    assert result.exit_code == 2, result.output
    assert 1 <= len(result.stderr.strip().splitlines()) <= 2, result.stderr
    for n in needles:
        assert n in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


def test_validate_cli_json(tmp_path):
    rows = [_at_fraction(_flash(t, 1.0), 0.5) for t in (1024, 2048, 4096, 8192)]
    path = tmp_path / "m.csv"
    write_measurements(path, rows, META)
    out = tmp_path / "v.json"
    r = _cli(str(path), "--format", "json", "-o", str(out))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["gpu"] == "h100-sxm" and doc["groups"][0]["fraction_of_floor_datasheet"] == pytest.approx(0.5)
    assert json.loads(out.read_text()) == doc


@pytest.mark.parametrize("body, needles", [
    (_file(header="kernel,impl,dtype"), ["missing column", "time_s"]),
    (_file(GOOD_ROW, GOOD_ROW.replace("flash", "warp")), ["line 5", "'kernel'", "unknown kernel 'warp'"]),
    (_file(GOOD_ROW.replace("0.001,,1", "nan,,1", 1)), ["line 4", "'time_s'"]),
    (_file(GOOD_ROW.replace("0.001,,1", ",,1", 1)), ["line 4", "'time_s'"]),
    (_file(GOOD_ROW.replace(",4096,", ",lots,")), ["line 4", "'seq_len'", "lots"]),
    (_file(GOOD_ROW + ",red", header=FULL_HEADER + ",colour"), ["unknown column", "colour"]),
    ("", ["empty"]),
    (_file(GOOD_ROW[:-20]), ["line 4", "cells"]),                                  # a truncated row
    (_file(GOOD_ROW + ",7"), ["line 4", "cells"]),                                 # an extra cell
    (_file(GOOD_ROW, head="# gpu_spec: h100-sxm\n"), ["format line"]),             # no version line
    (_file(GOOD_ROW, head="# rooflab measurements v9\n"), ["format line"]),
    (_file(GOOD_ROW.replace(",4096,", ",0,")), ["line 4", "seq_len"]),              # a flash row without its length
    (_file(GOOD_ROW.replace("flash,", "paged,", 1).replace(",,0,0,1,", ",lots,0,16,1,")),
     ["line 4", "'context_lens'", "lots"]),
    (_file(GOOD_ROW, head=f"# {FORMAT_LINE}\n# gpu_spec: h100-sxm\n# device_name: NVIDIA H200\n"),
     ["device_name", "gpu_spec"]),
    (_file(GOOD_ROW.replace(",0,0,1,0,", ",yes,0,1,0,")), ["line 4", "'causal'"]),
])
def test_bad_measurement_files(tmp_path, body, needles):
    path = _write_text(tmp_path, body)
    _short_error(_cli(path), path, *needles)


def test_measurements_from_another_gpu(tmp_path):
    path = tmp_path / "m.csv"
    write_measurements(path, [_flash(4096, 1e-3)] * 4, META)
    _short_error(_cli(str(path), "--gpu", "a100-40gb"), "measured on NVIDIA H100", "not on a100-40gb")


def test_unwritable_output_leaves_nothing(tmp_path):
    path = tmp_path / "m.csv"
    write_measurements(path, [_flash(4096, 1e-3)] * 4, META)
    _short_error(_cli(str(path), "-o", str(tmp_path / "no" / "such" / "dir.txt")), "dir.txt", "does not exist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv"]


def test_output_never_overwrites_the_input(tmp_path):
    path = tmp_path / "m.csv"
    write_measurements(path, [_flash(4096, 1e-3)] * 4, META)
    before = path.read_text()
    _short_error(_cli(str(path), "-o", str(path)), "overwrite an input")
    assert path.read_text() == before


def test_missing_file(tmp_path):
    _short_error(_cli(str(tmp_path / "absent.csv")), "cannot read")


@pytest.fixture(scope="module")
def bundled_validate_json():
    """`rooflab validate --format json` on the bundled dataset, run once for the tests that read it."""
    return runner.invoke(app, ["validate", "--format", "json"])


def test_the_default_dataset_holds_the_new_kernels_too(bundled_validation, bundled_validate_json):
    """`rooflab validate` with no file reads the bundled sweep, the new kernels' campaign and the seesaw MLA kernel's
    rows together: the wgmma MLA kernel that ships (rooflab_hopper) beside the schedule it replaced."""
    from rooflab.bench.validate import BUNDLED_DATASET

    v = bundled_validation                  # validate() on the bundled dataset (tests/conftest.py)
    kernels = {g.kernel for g in v.groups}
    assert {Kernel.flash, Kernel.paged, Kernel.flash_window, Kernel.paged_window, Kernel.paged_multi,
            Kernel.mla_decode} <= kernels
    assert BUNDLED_DATASET == ("h200-sweep.csv", "h200-new-kernels.csv", "h200-mla-seesaw.csv")
    assert {g.impl for g in v.groups if g.kernel is Kernel.mla_decode} >= {"rooflab_hopper", "rooflab_hopper_tile"}
    r = bundled_validate_json
    assert r.exit_code == 0 and "mla_decode" in r.stdout


NO_CUPY = importlib.util.find_spec("cupy") is None


@pytest.mark.skipif(not NO_CUPY, reason="CuPy is installed here: the missing-CuPy message cannot be seen")
@pytest.mark.parametrize("command", [["bench"], ["calibrate"], ["bench", "--quick", "-k", "merge"]])
def test_gpu_commands_say_what_is_missing(command):
    r = CliRunner().invoke(app, command)
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "CuPy is not installed" in r.stderr and "rooflab[gpu]" in r.stderr


# ---------------------------------------------------------------- the CLI

def test_bench_new_kernels_runs_the_new_cases(monkeypatch, tmp_path):
    """`rooflab bench --new-kernels` hands new_kernel_cases() to the runner (the device calls replaced)."""
    import rooflab.bench.device as device
    import rooflab.bench.run as run

    seen = {}

    def run_to_file(cases, *args, **kwargs):
        seen["cases"] = cases
        return run.BenchResult()

    monkeypatch.setattr(device, "default_spec", lambda: "h200-sxm")
    monkeypatch.setattr(device, "device_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(device, "check_spec_matches", lambda spec, name: None)
    monkeypatch.setattr(run, "run_to_file", run_to_file)
    out = tmp_path / "new.csv"
    for args, expected in ((["--new-kernels"], new_kernel_cases()),
                           (["--new-kernels", "--quick"], new_kernel_cases(quick=True)),
                           (["--new-kernels", "-k", "mla"], [c for c in new_kernel_cases()
                                                              if c.kernel is Kernel.mla_decode])):
        seen.clear()
        r = CliRunner().invoke(app, ["bench", *args, "-o", str(out)])
        assert r.exit_code == 0, r.output
        assert seen["cases"] == expected
        assert f"{len(expected)} configurations on NVIDIA H200" in r.stderr
    assert "--new-kernels" in CliRunner().invoke(app, ["bench", "--help"], env={"COLUMNS": "200"}).output


def test_validate_cli_on_bundled_data(bundled_validate_json):
    r = bundled_validate_json
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["gpu"] == "h200-sxm" and doc["ceilings"] == "calibrated"
    table = CliRunner().invoke(app, ["validate"]).stdout
    assert "NVIDIA H200" in table and "held-out" in table


# ------------------------------------------------------------------ the CLI

def test_distributed_bench_without_gpus_is_an_error_not_a_hang(capsys, tmp_path):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.device_count() >= 2:
        pytest.skip("this machine has the GPUs")
    code, _, err = run_in_process(["bench", "--distributed", "--nproc", "2", "-o", str(tmp_path / "x.csv")], capsys)
    assert code == 2 and "needs 2 GPUs" in err


def test_validate_published_never_writes_over_a_bundled_check_file(tmp_path):
    """D34 (hostile closing5, found by hand): `validate --published -o` onto one of the bundled published CSVs it reads
    is refused (exit 2, the file unchanged); beside them it writes."""
    from typer.testing import CliRunner

    from rooflab.cli import app
    from rooflab.load import data_dir

    target = next((data_dir("measurements") / "published" / "kernels").glob("*.csv"))
    before = target.read_bytes()
    try:
        result = CliRunner().invoke(app, ["validate", "--published", "-o", str(target)])
        assert result.exit_code == 2 and "overwrite an input" in result.stderr, result.output
    finally:
        if target.read_bytes() != before:                  # never leave a bundled check file damaged
            target.write_bytes(before)
    assert target.read_bytes() == before
    ok = CliRunner().invoke(app, ["validate", "--published", "-o", str(tmp_path / "p.txt")])
    assert ok.exit_code == 0 and (tmp_path / "p.txt").read_text()

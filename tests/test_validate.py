"""The measurement format, `rooflab validate` and the calibrated-ceilings writer, without a GPU.

The files written here are test fixtures built from rooflab's own predictions (so the expected
fractions are known exactly); the real H200 data lives in measurements/ and has its own test.
"""

from __future__ import annotations

import tempfile

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rooflab import DType, load_gpu
from rooflab.bench.calibrate import with_measured
from rooflab.bench.records import FORMAT_LINE, V1_FIELDS, Measurement, format_context_lens, parse_context_lens, \
    read_measurements, \
    write_measurements
from rooflab.bench.validate import fit_overhead_efficiency, predict_measurement, validate
from rooflab.cli import app
from rooflab.errors import InputError
from rooflab.load import data_dir
from rooflab.roofline import Ceilings
from rooflab.vocab import CeilingSource
from rooflab.specs import MeasuredCeilings

runner = CliRunner()
META = {"gpu_spec": "h100-sxm", "device_name": "NVIDIA H100 80GB HBM3", "date": "fixture"}


def _flash(t: int, time_s: float, impl: str = "rooflab") -> Measurement:
    return Measurement(kernel="flash", impl=impl, dtype="fp16", time_s=time_s, batch=1, num_qo_heads=32,
                       num_kv_heads=8, head_dim=128, seq_len=t)


def _merge(tokens: int, time_s: float) -> Measurement:
    return Measurement(kernel="merge", impl="rooflab", dtype="bf16", time_s=time_s, num_qo_heads=32,
                       num_kv_heads=32, head_dim=128, tokens=tokens)


def _at_fraction(m: Measurement, fraction: float, overhead: float = 0.0,
                 units_per_sm: float | None = None) -> Measurement:
    """A row timed exactly as the model says: overhead + t_model / fraction (h100-sxm has no measured ceilings,
    so the model runs on its datasheet roofs; units_per_sm None: no parallelism term)."""
    from rooflab.bench.fitting import model_times

    t_model = float(model_times([m], load_gpu("h100-sxm"), units_per_sm)[0][0])
    return Measurement(**{**m.__dict__, "time_s": overhead + t_model / fraction})


def test_context_lens_round_trip():
    assert parse_context_lens(format_context_lens([8192] * 128)) == [8192] * 128
    assert parse_context_lens(format_context_lens([100, 5000, 17])) == [100, 5000, 17]


def test_write_then_read(tmp_path):
    rows = [_flash(4096, 1e-3), _merge(16384, 2e-4)]
    path = tmp_path / "m.csv"
    write_measurements(path, rows, META)
    meta, back = read_measurements(path)
    assert meta["gpu_spec"] == "h100-sxm" and back == rows


def test_validate_recovers_a_known_efficiency_and_overhead(tmp_path):
    # times built as 20 us + floor(2 units per SM) / 0.6: the fit must find all three, and predict the
    # held-out half exactly
    rows = [_at_fraction(_flash(t, 1.0), 0.6, 20e-6, units_per_sm=2.0) for t in (512, 1024, 2048, 4096, 8192, 16384)]
    rows += [_at_fraction(_merge(n, 1.0), 0.9) for n in (1024, 4096, 16384, 65536)]
    path = tmp_path / "m.csv"
    write_measurements(path, rows, META)
    v = validate(path)
    flash = next(g for g in v.groups if g.kernel == "flash")
    assert flash.fit.efficiency == pytest.approx(0.6, rel=1e-6)
    assert flash.fit.overhead_s == pytest.approx(20e-6, rel=1e-6)
    assert flash.fit.units_per_sm == 2.0
    assert flash.median_error == pytest.approx(0, abs=1e-9) and flash.held_out_rows == 3
    merge = next(g for g in v.groups if g.kernel == "merge")
    assert merge.fraction_of_floor_datasheet == pytest.approx(0.9)
    assert merge.achieved_bytes_per_s == pytest.approx(0.9 * 3.35e12)
    # error is reported on held-out rows only
    assert all((r.error is not None) for r in v.rows)
    assert sum(r.held_out for r in v.rows if r.kernel == "flash") == 3


def test_fit_handles_negative_overhead():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    fit = fit_overhead_efficiency(x, 2 * x - 0.5)  # would need c0 < 0: clamp to 0
    assert fit.overhead_s == 0.0 and 0.4 < fit.efficiency < 0.6


def test_fit_refuses_a_negative_efficiency():
    # Two points whose times fall as the floor grows: the exact fit would be c0 > 0 with a < 0.
    fit = fit_overhead_efficiency(np.array([1.0, 2.0]), np.array([3.0, 2.9]))
    assert fit.overhead_s == 0.0 and fit.efficiency > 0


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


def _write_text(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    return str(path)


FULL_HEADER = ",".join(V1_FIELDS)   # the first campaigns' columns: the later ones are optional
GOOD_ROW = "flash,rooflab,fp16,0.001,,1,32,8,128,4096,,0,0,1,0,,,20,0.001"


def _file(*rows: str, head: str = f"# {FORMAT_LINE}\n# gpu_spec: h100-sxm\n", header: str = FULL_HEADER) -> str:
    return head + header + "\n" + "".join(r + "\n" for r in rows)


def test_the_good_row_reads():
    # the mutations below start from this file, so it must be valid itself
    from rooflab.bench.records import read_measurements

    meta, rows = read_measurements(Path(_write_text(Path(tempfile.mkdtemp()), _file(GOOD_ROW))))
    assert rows[0].seq_len == 4096 and rows[0].kernel == "flash" and meta["gpu_spec"] == "h100-sxm"


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


# --- calibrated ceilings in a GPU YAML -------------------------------------------------------

def test_measured_section_is_written_and_read_back(tmp_path):
    source = data_dir("hardware") / "h100-sxm.yaml"
    m = MeasuredCeilings(copy_bytes_per_s=3.0e12, gemm_flop_per_s={"fp16": 700e12, "bf16": 720e12},
                         date="2026-11-30", device_name="NVIDIA H100 80GB HBM3", exp_per_s=4.0e12,
                         driver="580", cuda="13.0", cupy="14.2", command="rooflab calibrate")
    text = with_measured(source.read_text(), m)
    assert "# NVIDIA H100 SXM5" in text          # comments survive
    path = tmp_path / "h100-calibrated.yaml"
    path.write_text(text)
    gpu = load_gpu(str(path))
    assert gpu.measured == m
    roofs = Ceilings.of(gpu, DType.bf16, CeilingSource.calibrated)
    assert roofs.bandwidth_bytes_per_s == 3.0e12 and roofs.matmul_flop_per_s == 720e12
    # writing again replaces the section instead of adding a second one
    again = with_measured(text, m)
    assert again.count("measured:") == 1


def test_calibrated_ceilings_need_a_measured_section():
    with pytest.raises(InputError, match="rooflab calibrate"):
        Ceilings.of(load_gpu("a100-40gb"), DType.fp16, CeilingSource.calibrated)


def test_rooflab_fit_writes_the_fitted_list_and_keeps_fits_of_other_files(tmp_path):
    """`rooflab fit` refits the kernels its campaigns measure; a GEMM fitted from another file stays."""
    from typer.testing import CliRunner

    from rooflab.cli import app
    from rooflab.load import data_dir, load_gpu
    from rooflab.vocab import Kernel

    target = tmp_path / "h200-sxm.yaml"
    r = CliRunner().invoke(app, ["fit", str(data_dir("measurements") / "h200-sweep.csv"), "-o", str(target)])
    assert r.exit_code == 0, r.output
    written = load_gpu(target)
    bundled = load_gpu("h200-sxm")
    refit = {m.key for m in written.fitted if "h200-sweep.csv" in m.campaigns}
    assert (Kernel.paged, "rooflab") in refit and (Kernel.flash, "torch_cudnn") in refit
    others = [m for m in bundled.fitted if m.key not in refit]
    assert others and all(m in written.fitted for m in others)          # e.g. gemm / torch_cublas
    assert "kept" in r.stderr and "gemm/torch_cublas" in r.stderr
    assert written.measured == bundled.measured and written.interconnect == bundled.interconnect


def test_the_default_dataset_holds_the_new_kernels_too():
    """`rooflab validate` with no file reads the bundled sweep and the new kernels' campaign together."""
    from typer.testing import CliRunner

    from rooflab.bench.validate import BUNDLED_DATASET, validate
    from rooflab.cli import app
    from rooflab.vocab import Kernel

    v = validate()
    kernels = {g.kernel for g in v.groups}
    assert {Kernel.flash, Kernel.paged, Kernel.flash_window, Kernel.paged_window, Kernel.paged_multi,
            Kernel.mla_decode} <= kernels
    assert BUNDLED_DATASET == ("h200-sweep.csv", "h200-new-kernels.csv")
    r = CliRunner().invoke(app, ["validate", "-f", "json"])
    assert r.exit_code == 0 and "mla_decode" in r.stdout


def test_campaigns_of_two_gpus_are_not_validated_together(tmp_path):
    from rooflab.bench.validate import validate
    from rooflab.errors import InputError
    from rooflab.load import data_dir

    other = tmp_path / "h100.csv"
    text = (data_dir("measurements") / "h200-sweep.csv").read_text()
    other.write_text(text.replace("# gpu_spec: h200-sxm", "# gpu_spec: h100-sxm")
                     .replace("# device_name: NVIDIA H200", "# device_name: NVIDIA H100 80GB HBM3"))
    with pytest.raises(InputError, match="one GPU at a time"):
        validate([data_dir("measurements") / "h200-sweep.csv", other])

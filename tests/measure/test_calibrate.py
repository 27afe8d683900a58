"""Tests of rooflab/measure/calibrate.py without a GPU: the calibrated-ceilings writer's measured section
written and read back, fp8 rates joining it and kept within the measured range, and fp8 with collectives
refused.
"""

from __future__ import annotations

import pytest

from rooflab import DType, load_gpu
from rooflab.measure.calibrate import with_measured
from rooflab.load import data_dir
from rooflab.roofline import Ceilings
from rooflab.specs import MeasuredCeilings
from rooflab.vocab import CeilingSource


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


# ---------------------------------------------------------------- fp8 rates (`rooflab calibrate --fp8`), no GPU

def _fp8_rates(gemm=1.4872e15, attention=None):
    from rooflab.measure.calibrate import Fp8Rates

    meta = {"date": "2026-12-01T20:33:57Z", "device_name": "NVIDIA H200", "driver": "580.159.04",
            "torch": "2.11.0+cu130", "git_commit": "fb9b8c4", "command": "rooflab calibrate --fp8 -g h200-sxm"}
    return Fp8Rates(gemm, attention, "torch._scaled_mm e4m3", "no back end takes e4m3 (cudnn: refused)", meta)


def test_fp8_rates_join_the_measured_section_and_keep_every_other_ceiling(tmp_path):
    from rooflab.measure.calibrate import with_fp8, write_spec
    from rooflab.load import data_dir, load_gpu

    source = data_dir("hardware") / "h200-sxm.yaml"
    before = load_gpu("h200-sxm").measured
    target = tmp_path / "h200-sxm.yaml"
    write_spec(source, target, with_fp8(before, _fp8_rates()))
    after = load_gpu(str(target)).measured
    assert after.fp8_gemm_flop_per_s == pytest.approx(1.4872e15, rel=1e-4)
    assert after.fp8_attention_flop_per_s is None
    assert "fb9b8c4" in after.fp8_provenance and "no back end" in after.fp8_provenance
    assert after.copy_bytes_per_s == before.copy_bytes_per_s and after.gemm_flop_per_s == before.gemm_flop_per_s
    assert after.stream_bytes_per_s == before.stream_bytes_per_s and after.command == before.command
    text = target.read_text()
    assert text.count("measured:") >= 1 and "fitted:" in text           # the sections after measured: are kept
    assert load_gpu(str(target)).fitted == load_gpu("h200-sxm").fitted


def test_an_fp8_rate_outside_the_measured_range_is_refused_naming_the_field():
    import dataclasses

    from rooflab.errors import SpecError
    from rooflab.load import load_gpu

    measured = load_gpu("h200-sxm").measured
    for bad in (0.0, -1.0, float("nan"), 1e30):
        with pytest.raises(SpecError, match="fp8_gemm_flop_per_s"):
            dataclasses.replace(measured, fp8_gemm_flop_per_s=bad)


def test_fp8_and_collectives_together_are_refused():
    from typer.testing import CliRunner

    from rooflab.cli import app

    result = CliRunner().invoke(app, ["calibrate", "--fp8", "--collectives"])
    assert result.exit_code != 0 and "--fp8" in result.output


def test_a_fresh_calibration_keeps_the_specs_measured_launch_times(tmp_path):
    """Calibrate measures no launch times; writing a fresh measured section (no `launch`) into the H200's spec
    keeps the spec's `measured.launch`, which the step reads, instead of dropping it."""
    import dataclasses

    from rooflab.load import data_dir, load_gpu
    from rooflab.measure.calibrate import write_spec

    before = load_gpu("h200-sxm").measured
    assert before.launch is not None
    fresh = dataclasses.replace(before, launch=None, copy_bytes_per_s=before.copy_bytes_per_s * 0.99)
    target = tmp_path / "h200-sxm.yaml"
    write_spec(data_dir("hardware") / "h200-sxm.yaml", target, fresh)
    after = load_gpu(str(target)).measured
    assert after.launch == before.launch
    assert after.copy_bytes_per_s == pytest.approx(before.copy_bytes_per_s * 0.99, rel=1e-4)

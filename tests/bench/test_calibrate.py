"""The measurement format, `rooflab validate` and the calibrated-ceilings writer, without a GPU.

The files written here are test fixtures built from rooflab's own predictions (so the expected
fractions are known exactly); the real H200 data lives in measurements/ and has its own test.
"""

from __future__ import annotations

from rooflab import DType, load_gpu
from rooflab.bench.calibrate import with_measured
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

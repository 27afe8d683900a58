"""Tests of rooflab/sweeps/points.py: roofline points sit on their roofs, a dtype without a rate is a clear
error, and the roofline data's frames.
"""

from __future__ import annotations

import pytest

from rooflab import DType, load_gpu, load_model
from rooflab.errors import RooflabError
from rooflab.sweeps import roofline_data


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


def test_dtype_without_a_rate_is_a_clear_error():
    with pytest.raises(RooflabError, match="fp8"):
        roofline_data(load_model("llama-3-8b"), [load_gpu("a100-40gb")], dtype=DType.fp8_e4m3)


LLAMA8 = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")
H200 = load_gpu("h200-sxm")


def test_roofline_frames():
    data = roofline_data(LLAMA8, [H100, H200])
    points = data.to_frame()
    assert len(points) == len(data.points) and set(points.gpu) == {H100.display_name}
    flash = points[points.kind == "flash"]
    assert flash.ridge_ratio.item() == pytest.approx(flash.intensity_flop_per_byte.item()
                                                     / H100.ridge_flop_per_byte(data.dtype))
    roofs = data.roofs_frame()
    # H200's YAML has a measured section: two rows for it, one for the H100
    assert roofs.groupby("gpu").size().to_dict() == {H100.display_name: 1, H200.display_name: 2}
    assert (roofs.ridge_flop_per_byte == roofs.matmul_flop_per_s / roofs.bandwidth_bytes_per_s).all()

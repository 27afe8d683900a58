"""Tests of rooflab/numerics/formats.py: the floating-point formats. fp8 formats match their definitions,
the others NumPy's, rounding agrees with NumPy's casts (bf16 on fp32 inputs too), and e4m3 rounds past 448
to NaN.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rooflab.numerics import float_format, round_bf16, round_to_format
from rooflab.units import DType


def test_fp8_formats_match_their_definitions():
    # arXiv:2209.05433, Table 1: E4M3 max 448, min subnormal 2^-9, no inf; E5M2 max 57344, min subnormal 2^-16
    e4m3, e5m2 = float_format(DType.fp8_e4m3), float_format(DType.fp8_e5m2)
    assert (e4m3.max_finite, e4m3.min_subnormal, e4m3.min_normal, e4m3.has_inf) == (448.0, 2.0**-9, 2.0**-6, False)
    assert (e5m2.max_finite, e5m2.min_subnormal, e5m2.min_normal, e5m2.has_inf) == (57344.0, 2.0**-16, 2.0**-14, True)


@pytest.mark.parametrize("dtype, np_type", [(DType.fp16, np.float16), (DType.fp32, np.float32)])
def test_formats_match_numpy(dtype, np_type):
    fmt, info = float_format(dtype), np.finfo(np_type)
    assert fmt.max_finite == float(info.max)
    assert fmt.min_normal == float(info.smallest_normal)
    assert fmt.min_subnormal == float(info.smallest_subnormal)


def _ieee_edge_values(np_type, rng, n=20_000):
    """Random float64s over the whole range of np_type, plus exact ties between neighbours."""
    info = np.finfo(np_type)
    lo, hi = math.log2(float(info.smallest_subnormal)) - 2, math.log2(float(info.max)) + 1
    x = rng.choice([-1.0, 1.0], n) * 2.0 ** rng.uniform(lo, hi, n)
    with np.errstate(over="ignore"):
        grid = x.astype(np_type)
        up = np.nextafter(grid, np.array(np.inf, np_type))
        ties = (grid.astype(np.float64) + up.astype(np.float64)) / 2
    return np.concatenate([x, ties[np.isfinite(ties)], [0.0, -0.0, np.inf, -np.inf]])


@pytest.mark.parametrize("dtype, np_type", [(DType.fp16, np.float16), (DType.fp32, np.float32)])
def test_round_to_format_agrees_with_numpy_casts(dtype, np_type):
    # Cross-checks the emulation used for bf16 and fp8 against IEEE casts, ties and subnormals included.
    x = _ieee_edge_values(np_type, np.random.default_rng(1))
    with np.errstate(over="ignore"):
        expected = x.astype(np_type).astype(np.float64)
    np.testing.assert_array_equal(round_to_format(x, float_format(dtype)), expected)


def test_round_bf16_agrees_with_round_to_format_on_fp32_inputs():
    with np.errstate(over="ignore"):
        x = _ieee_edge_values(np.float32, np.random.default_rng(2)).astype(np.float32)
    bits = np.random.default_rng(3).integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([x, bits.view(np.float32)])            # every kind of fp32, NaNs included
    got = round_bf16(x).astype(np.float64)
    with np.errstate(invalid="ignore"):                       # signalling NaNs among the random bits
        want = round_to_format(x.astype(np.float64), float_format(DType.bf16))
    np.testing.assert_array_equal(got, want)
    # a tie rounds to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7
    assert round_bf16(np.float32(1 + 2.0**-8)) == 1.0
    assert round_bf16(np.float32(1 + 3 * 2.0**-8)) == 1 + 2 * 2.0**-7


def test_e4m3_rounds_past_448_to_nan():
    fmt = float_format(DType.fp8_e4m3)
    out = round_to_format([464.0, 464.1, 480.0, np.inf, -470.0], fmt)
    assert out[0] == 448.0                                     # tie goes to the even 448 (mantissa 110)
    assert np.isnan(out[1:]).all()

"""Tests of rooflab/kernels/testing.py without CuPy: every tolerance has a reason, the e4m3 encoder and
decoder (every code round-trips, known values, round to nearest even, saturation, NaN, fp16 and fp32 inputs
alike), and split ranges covering the decode key range in whole pages.
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.kernels import testing


def test_every_tolerance_has_a_reason():
    for key, tol in testing.TOLERANCES.items():
        assert tol.reason and tol.rel_l2 > 0, key


# ---------------------------------------------------------------- fp8 e4m3 codes (the fp8 KV cache's oracle)

def _e4m3_ties() -> np.ndarray:
    """Every midpoint between neighbouring finite e4m3 values, both signs."""
    pos = np.sort(testing.E4M3_VALUES[:0x7F])                     # 0 .. 448, the 127 finite codes
    mid = (pos[:-1] + pos[1:]) / 2
    return np.concatenate([mid, -mid])


def test_e4m3_every_code_round_trips():
    codes = np.arange(256, dtype=np.uint8)
    values = testing.e4m3_decode(codes)
    finite = ~np.isnan(values)
    assert finite.sum() == 254 and np.isnan(values[[0x7F, 0xFF]]).all()
    assert np.array_equal(testing.e4m3_encode(values[finite]), codes[finite])  # -0.0 keeps code 0x80
    assert set(testing.e4m3_encode(values[~finite]) & 0x7F) == {0x7F}          # NaN stays NaN


@pytest.mark.parametrize("code, value", [
    (0x00, 0.0), (0x01, 2.0**-9), (0x07, 7 * 2.0**-9), (0x08, 2.0**-6), (0x38, 1.0), (0x39, 1.125),
    (0x7E, 448.0), (0xFE, -448.0), (0xB8, -1.0), (0x81, -(2.0**-9)), (0x3F, 1.875), (0x40, 2.0),
])
def test_e4m3_known_values(code, value):
    # arXiv:2209.05433, Table 1: max 448 (S.1111.110), min normal 2^-6, min subnormal 2^-9 (S.0000.001)
    assert testing.e4m3_decode(np.array([code], np.uint8))[0] == value
    assert testing.e4m3_encode(np.array([value]))[0] == code


@pytest.mark.parametrize("x, code", [
    (1.0625, 0x38),          # halfway between 1 (mantissa 000) and 1.125 (001): to even, down
    (1.1875, 0x3A),          # halfway between 1.125 (001) and 1.25 (010): to even, up
    (1.9375, 0x40),          # halfway between 1.875 and 2: up into the next binade
    (2.0**-10, 0x00),        # half the smallest subnormal: to even, zero
    (3 * 2.0**-10, 0x02),    # halfway between subnormals 1 and 2: to 2
    (7.5 * 2.0**-9, 0x08),   # halfway between the largest subnormal and the smallest normal
    (464.0, 0x7E),           # halfway between 448 and 480 (which is NaN's code): 448
    (470.0, 0x7E), (1e6, 0x7E), (np.inf, 0x7E), (-np.inf, 0xFE),   # saturating
    (-0.0, 0x80), (1e-30, 0x00), (-1e-30, 0x80),
])
def test_e4m3_encode_rounds_to_nearest_even_and_saturates(x, code):
    assert testing.e4m3_encode(np.array([x]))[0] == code


def test_e4m3_encode_nan():
    got = testing.e4m3_encode(np.array([np.nan, -np.nan]))
    assert list(got) == [0x7F, 0xFF]


def test_e4m3_encode_agrees_with_round_to_format():
    # An independent emulation (rooflab.numerics.formats, float64 throughout) on random values over
    # the whole range and on every tie; non-saturating there, so only |x| <= 448 is compared.
    from rooflab.numerics.formats import float_format, round_to_format
    from rooflab.units import DType

    rng = np.random.default_rng(7)
    x = rng.choice([-1.0, 1.0], 20000) * 2.0 ** rng.uniform(-12, np.log2(448), 20000)
    x = np.concatenate([x, _e4m3_ties()])
    expected = round_to_format(x, float_format(DType.fp8_e4m3))
    assert np.array_equal(testing.e4m3_decode(testing.e4m3_encode(x)), expected)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_e4m3_encode_is_the_same_from_fp16_and_fp32(dtype):
    x = np.random.default_rng(3).standard_normal(5000) * 40
    x = np.concatenate([x, _e4m3_ties()]).astype(dtype)
    assert np.array_equal(testing.e4m3_encode(x), testing.e4m3_encode(x.astype(np.float64)))


def test_e4m3_decode_refuses_other_dtypes():
    with pytest.raises(ValueError, match="uint8"):
        testing.e4m3_decode(np.zeros(3, np.int16))


def test_split_ranges_cover_the_decode_key_range_in_whole_pages():
    for ctx, q_len, window, chunk, splits, page in [(1000, 1, None, None, 4, 16), (1000, 3, 300, None, 5, 16),
                                                    (77, 2, 5, None, 3, 7), (500, 8, None, 128, 6, 1)]:
        first, stop = testing.decode_key_range(ctx, q_len, window, chunk)
        ranges = testing.split_ranges(ctx, splits, page, q_len, window, chunk)
        assert ranges[0][0] == first and ranges[-1][1] == stop
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        assert all((hi - lo == 0) or lo % page == 0 or lo == first for lo, hi in ranges)

"""Tests of rooflab/numerics/limits.py: where exp overflows and underflows in each dtype, and softmax headroom.

Golden figures (chapter "Naive attention and the online softmax"): fp16 exp overflows at 11.09 and underflows
below -17.33, bf16 and fp32 overflow at 88.72, the expected max of 8192 normal logits is 3.7; the thresholds
are the edges of rounding; tf32 is refused with a reason; bad logit std or seq_len refused by name, and the
same answer for every form of a valid argument.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from rooflab.limits import MAX_TOKENS
from rooflab.numerics import (NumericsError, dtype_limits, expected_max_normal, expected_max_normal_exact,
                              float_format, round_to_format, round_to_precision, softmax_headroom)
from rooflab.units import DType
from support import HUGE, refused


# Figures the chapters print are compared at half a unit of their last printed digit (rounding).
# A margin in the logit well above float64's rounding of exp (~1e-16 relative) and well below
# the spacing of the formats: used to step just inside and just outside a threshold.
EDGE_STEP = 1e-9


# --- 1. dtype limits -------------------------------------------------------------------------

def test_fp16_exp_overflows_at_11_09():
    # naive, section (1) "Naive softmax, and why it is unusable": "An fp16 softmax dies at a logit of 11.1"
    lim = dtype_limits(DType.fp16)
    assert round(lim.overflow_logit, 2) == 11.09
    assert round(lim.max_finite_logit, 2) == 11.09
    assert lim.max_finite_logit == math.log(65504.0)           # ln of fp16's largest finite value
    assert lim.overflow_logit == math.log(65520.0)             # 65504 + half its ulp of 32


@pytest.mark.parametrize("dtype", [DType.bf16, DType.fp32])
def test_bf16_and_fp32_exp_overflow_at_88_72(dtype):
    # naive, section (1): "e^100 = 2.688e43 overflows fp32 too"; bf16 shares fp32's 8 exponent bits
    lim = dtype_limits(dtype)
    assert round(lim.overflow_logit, 2) == 88.72
    assert lim.overflow_logit < 100 < math.log(2.688e43) + 1e-3


def test_fp16_exp_underflows_below_minus_17_33():
    # naive, section (2) "Safe softmax": "fp16 rounds exp(z) to zero below z = log(2^-25), approximately -17.33"
    lim = dtype_limits(DType.fp16)
    assert lim.underflow_logit == math.log(2.0**-25)
    assert round(lim.underflow_logit, 2) == -17.33
    # naive, section (2): "flush-to-zero hardware can differ": flushing starts at the smallest normal, 2^-14
    assert lim.ftz_underflow_logit == math.log(2.0**-14)


def test_expected_max_of_8192_normal_logits_is_3_7():
    # naive, section (1): "the expected maximum of an 8192-long row of such samples is only ... = 3.7"
    assert round(expected_max_normal(8192), 1) == 3.7
    # by hand: sqrt(2 ln 8192) = 4.24522, (ln ln 8192 + ln 4 pi) / (2 * 4.24522) = 0.55704
    assert expected_max_normal(8192) == pytest.approx(4.24522 - 0.55704, abs=1e-5)


def test_exact_expected_max_matches_closed_forms_and_runs_above_the_asymptotic_one():
    # Order statistics: E[max of 2 standard normals] = 1/sqrt(pi), of 3 = 3/(2 sqrt(pi)).
    assert expected_max_normal_exact(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-8)
    assert expected_max_normal_exact(3) == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-8)
    # At N = 8192 the chapter's asymptotic 3.69 is 0.11 below the true expectation, 3.80.
    assert round(expected_max_normal_exact(8192), 2) == 3.80
    rng = np.random.default_rng(4)
    sampled = rng.standard_normal((200, 8192)).max(axis=1).mean()    # standard error ~0.03
    assert sampled == pytest.approx(expected_max_normal_exact(8192), abs=0.1)


def test_headroom_at_8192():
    h = softmax_headroom(DType.fp16, 8192)
    assert h.expected_max_logit_asymptotic == pytest.approx(3.68818, abs=1e-5)
    assert h.headroom_logit == pytest.approx(dtype_limits(DType.fp16).overflow_logit - 3.80228, abs=1e-5)
    # sigma = 3, the chapter's test logits ("Reproduce the proof numerically"), is right at the edge in fp16
    assert 2.9 < h.critical_logit_std < 3.1
    assert softmax_headroom(DType.fp16, 8192, logit_std=3.0).headroom_logit < 0.5


def test_tf32_is_refused_with_a_reason():
    with pytest.raises(NumericsError, match="fp32"):
        dtype_limits(DType.tf32)


@pytest.mark.parametrize("dtype", [DType.fp32, DType.fp16, DType.bf16, DType.fp8_e4m3, DType.fp8_e5m2])
def test_exp_thresholds_are_the_edges_of_rounding(dtype):
    # The limits are exactly where exp(x), rounded to the format, stops being finite / nonzero.
    lim, fmt = dtype_limits(dtype), float_format(dtype)
    over = round_to_format(np.exp([lim.overflow_logit - EDGE_STEP, lim.overflow_logit + EDGE_STEP]), fmt)
    assert over[0] == fmt.max_finite and not np.isfinite(over[1])
    under = round_to_format(np.exp([lim.underflow_logit + EDGE_STEP, lim.underflow_logit - EDGE_STEP]), fmt)
    assert under[0] == fmt.min_subnormal and under[1] == 0.0
    assert np.exp(lim.ftz_underflow_logit - EDGE_STEP) < fmt.min_normal <= np.exp(lim.ftz_underflow_logit + EDGE_STEP)


@pytest.mark.parametrize("dtype, precision", [(DType.fp16, DType.fp16), (DType.fp32, DType.fp32),
                                              (DType.bf16, DType.bf16)])
def test_exp_thresholds_hold_for_the_state_rounding(dtype, precision):
    lim = dtype_limits(dtype)
    # 1e-4, not EDGE_STEP, inside the edges: bf16 goes through fp32 (next test), whose rounding moves
    # them by up to 2^-24 in the logit at the top and 2^-15 at the bottom (fp32 subnormals near 2^-134).
    margin = 1e-4
    x = np.array([lim.overflow_logit - margin, lim.overflow_logit + margin,
                  lim.underflow_logit + margin, lim.underflow_logit - margin])
    with np.errstate(over="ignore"):
        e = round_to_precision(np.exp(x), precision)
    assert np.isfinite(e[0]) and np.isinf(e[1]) and e[2] > 0 and e[3] == 0


def test_bf16_state_rounding_goes_through_fp32():
    # round_to_precision(bf16) rounds float64 -> fp32 -> bf16, like a kernel converting fp32 registers.
    # Just below the bf16 overflow edge, exp(x) first rounds to the fp32 midpoint (2 - 2^-8) 2^127,
    # which then ties to even past bf16's largest value: the double rounding moves the edge by < 1e-7.
    edge = dtype_limits(DType.bf16).overflow_logit
    with np.errstate(over="ignore"):
        assert np.isinf(round_to_precision(np.exp(edge - EDGE_STEP), DType.bf16))
    assert np.isfinite(round_to_format(np.exp(edge - EDGE_STEP), float_format(DType.bf16)))
    assert np.isfinite(round_to_precision(np.exp(edge - 1e-6), DType.bf16))


# --- numerics (item 3, 13f) ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [d for d in DType if d is not DType.tf32])
def test_exp_limits_are_finite_in_every_dtype(dtype):
    lim = dtype_limits(dtype)
    for x in (lim.overflow_logit, lim.max_finite_logit, lim.underflow_logit, lim.ftz_underflow_logit):
        assert math.isfinite(x)
    assert lim.underflow_logit < lim.ftz_underflow_logit < 0 < lim.max_finite_logit <= lim.overflow_logit
    h = softmax_headroom(dtype, 2)
    assert math.isfinite(h.headroom_logit) and math.isfinite(h.critical_logit_std)


def test_exp_limits_golden():
    """fp16: ln 2**-25 and ln 65520 (the chapter's section 2 and 1); fp64: ln 2**-1075 and ln(max + ulp/2)."""
    assert dtype_limits(DType.fp16).underflow_logit == pytest.approx(-25 * math.log(2), rel=1e-15)
    assert dtype_limits(DType.fp16).overflow_logit == pytest.approx(math.log(65520), rel=1e-15)
    assert dtype_limits(DType.fp64).underflow_logit == pytest.approx(-1075 * math.log(2), rel=1e-15)
    assert dtype_limits(DType.fp64).overflow_logit == pytest.approx(709.782712893384, rel=1e-15)


@pytest.mark.parametrize("value", ["1", None, [1.0], [], complex(1, 0), b"1", HUGE, 10**400, 0, -1.0, math.nan,
                                   math.inf, True, 1e7, np.array([[1.0]]), 5e-324, 1e-7])
def test_softmax_headroom_refuses_bad_logit_std(value):
    message = refused(lambda: softmax_headroom(DType.fp16, 8192, value), "logit_std", error=NumericsError)
    assert "1e+06" in message


@pytest.mark.parametrize("value", [MAX_TOKENS + 1, HUGE, 1, "8192", True, [8192]])
def test_softmax_headroom_refuses_bad_seq_len(value):
    refused(lambda: softmax_headroom(DType.fp16, value), "seq_len", error=NumericsError)


def test_softmax_headroom_same_answer_for_every_form_of_its_arguments():
    base = softmax_headroom(DType.fp16, 8192, 1.0)
    for seq_len, std in ((np.int64(8192), 1), (8192, np.float64(1.0)), (8192, Fraction(1)), (8192, Decimal(1))):
        assert softmax_headroom("fp16", seq_len, std) == base

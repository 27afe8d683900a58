"""Golden figures of the float64 numerics oracles, their error cases, and `rooflab numerics`.

Chapters cited by file name and section title, (the source chapters):
"naive" = the chapter "Naive attention and the online softmax", "flash" = the chapter "FlashAttention and PagedAttention: what does each save?".
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.numerics import (NumericsError, attention_reference, dtype_limits, expected_max_normal,
                              expected_max_normal_exact, float_format, identity_state, merge_many,
                              merge_states, naive_softmax, normaliser_steps, online_softmax, partial_attention, round_bf16,
                              round_to_format, round_to_precision, safe_softmax, softmax_headroom,
                              softmax_normaliser, state_precision_error, streaming_attention)
from rooflab.units import DType

# Tolerances, written once.
# float64 sums of N terms taken in another order differ by at most ~N * eps relative
# (N = 8192: 1.8e-12); the chapter's own check ("Reproduce the proof numerically") uses 1e-12.
FP64_TOL = 1e-12
# Figures the chapters print are compared at half a unit of their last printed digit (rounding).
# A margin in the logit well above float64's rounding of exp (~1e-16 relative) and well below
# the spacing of the formats: used to step just inside and just outside a threshold.
EDGE_STEP = 1e-9

runner = CliRunner()


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


def test_tf32_is_refused_with_a_reason():
    with pytest.raises(NumericsError, match="fp32"):
        dtype_limits(DType.tf32)


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


# --- 2. online softmax ---------------------------------------------------------------------------

# naive, "Verify it on numbers": eight logits, four blocks of two; the running max goes 2 -> 3 -> 8 -> 8.
# The chapter's own eight values are not in our text; these follow its description.
EIGHT_LOGITS = [1.0, 2.0, 3.0, -1.0, 8.0, 5.0, 0.0, 4.0]


def test_eight_logits_rescale_by_e_minus_5_at_block_3():
    steps = normaliser_steps(EIGHT_LOGITS, block=2)
    assert [s.m for s in steps] == [2.0, 3.0, 8.0, 8.0]
    # naive, "Verify it on numbers": "the maximum jumps from 3 to 8, and alpha(3) = e^-5 = 0.0067379
    # divides the accumulated state by 148"
    assert round(steps[2].alpha, 7) == 0.0067379
    assert steps[2].alpha == pytest.approx(math.exp(-5), rel=FP64_TOL)
    assert round(1 / steps[2].alpha) == 148
    assert steps[3].alpha == 1.0
    # "Identical to l(4)": the direct sum with m = 8
    direct = sum(math.exp(x - 8.0) for x in EIGHT_LOGITS)
    m, l = softmax_normaliser(EIGHT_LOGITS, block=2)
    assert m == 8.0
    assert l == pytest.approx(direct, rel=FP64_TOL)


def test_normaliser_of_an_empty_or_masked_row():
    assert softmax_normaliser([], block=4) == (-np.inf, 0.0)
    assert softmax_normaliser([-np.inf, -np.inf, 0.0], block=2) == (0.0, 1.0)


def test_8192_logits_with_a_late_outlier_match_three_pass_softmax():
    # naive, "Reproduce the proof numerically": N = 8192 logits with sigma 3, x[4000] = 40,
    # 128-wide values, blocks of 64; the online result equals the safe 3-pass one within 1e-12.
    rng = np.random.default_rng(0)
    x = rng.normal(0, 3, 8192)
    x[4000] = 40.0
    v = rng.normal(0, 1, (8192, 128))
    ref = safe_softmax(x) @ v
    result = online_softmax(x[None, :], v, block=64)
    assert result.m[0] == 40.0
    np.testing.assert_allclose(result.out[0], ref, rtol=FP64_TOL, atol=FP64_TOL)
    np.testing.assert_allclose(streaming_attention(x, v, 64), ref, rtol=FP64_TOL, atol=FP64_TOL)


def test_naive_fp16_softmax_is_nan_past_11_1_while_online_stays_finite():
    # naive, section (1): "Once one entry is +inf, the denominator is +inf, ... inf/inf = NaN"
    x = np.array([[12.0, 0.0, 1.0, -3.0]])
    assert np.isnan(naive_softmax(x, DType.fp16)).any()
    v = np.eye(4)                                               # out = the probabilities themselves
    online = online_softmax(x, v, block=2, precision=DType.fp16).out
    assert np.isfinite(online).all()
    # fp16 state: ~2^-11 relative per rounding, and subnormals (below 2^-14) spaced 2^-24 apart
    np.testing.assert_allclose(online, safe_softmax(x), rtol=2e-3, atol=2.0**-24)


def test_naive_fp16_softmax_breaks_exactly_at_the_overflow_logit():
    edge = dtype_limits(DType.fp16).overflow_logit
    inside = naive_softmax([edge - EDGE_STEP, -30.0], DType.fp16)
    outside = naive_softmax([edge + EDGE_STEP, -30.0], DType.fp16)
    assert np.array_equal(inside, [1.0, 0.0])
    assert np.isnan(outside[0])


def test_upcasting_is_no_defence():
    # naive, section (1): "e^100 = 2.688e43 overflows fp32 too"
    assert np.isnan(naive_softmax([100.0, 0.0], DType.fp32)).any()
    assert np.isfinite(naive_softmax([100.0, 0.0], DType.fp64)).all()


def test_fp16_running_sum_stalls_at_2048():
    # naive, "What has to be fp32": the running sum is a reduction. Adding exp(0) = 1 one key at a
    # time, fp16 stops counting at 2048, where its spacing becomes 2 and 2048 + 1 ties back to 2048.
    x = np.zeros((1, 4096))
    v = np.ones((4096, 1))
    assert online_softmax(x, v, block=1, precision=DType.fp16).l[0] == 2048.0
    assert online_softmax(x, v, block=1, precision=DType.fp32).l[0] == 4096.0


def test_fp16_running_sum_overflows_past_65504_keys():
    # A flat row of 65,536 keys: l = 65,536 is past fp16's largest value, so l = inf and the output is lost.
    n = 65536
    x = np.zeros((1, n))
    v = np.linspace(-1.0, 1.0, n)[:, None] + 0.5
    ref = v.mean(axis=0)
    fp16 = online_softmax(x, v, block=64, precision=DType.fp16)
    assert fp16.l[0] == np.inf and fp16.out[0, 0] == 0.0
    fp32 = online_softmax(x, v, block=64, precision=DType.fp32)
    assert fp32.l[0] == n
    # fp32 state: up to 2^-24 relative per rounding, 1024 blocks: at most ~6e-5 together
    np.testing.assert_allclose(fp32.out[0], ref, rtol=1e-4)


def test_online_softmax_per_row_values_and_masked_rows():
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]])
    v = np.arange(2 * 3 * 2, dtype=float).reshape(2, 3, 2)
    r = online_softmax(x, v, block=2)
    w = np.exp([0.0, 1.0]) / np.exp([0.0, 1.0]).sum()
    np.testing.assert_allclose(r.out[0], w[0] * v[0, 0] + w[1] * v[0, 2], rtol=FP64_TOL)
    assert np.array_equal(r.out[1], [0.0, 0.0]) and r.lse[1] == -np.inf and r.l[1] == 0.0
    assert r.lse[0] == pytest.approx(math.log(1 + math.e), rel=FP64_TOL)


@pytest.mark.parametrize("bad", [
    dict(logits=[0.0, 1.0]),                                    # 1-D: needs [rows, N]
    dict(values=np.ones((3, 2))),                               # N mismatch
    dict(values=np.ones((2, 3, 2))),                            # rows mismatch
    dict(logits=[[0.0, np.nan]]),
    dict(logits=[[0.0, np.inf]]),
    dict(values=[[1.0], [np.inf]]),
    dict(block=0), dict(block=2.0), dict(block=True),
])
def test_online_softmax_refuses_bad_input(bad):
    args = dict(logits=[[0.0, 1.0]], values=np.ones((2, 1)), block=1) | bad
    with pytest.raises(ValueError):
        online_softmax(args["logits"], args["values"], args["block"])


# --- 3. streaming attention ----------------------------------------------------------------------

LOG123 = [math.log(1), math.log(2), math.log(3)]


@pytest.mark.parametrize("block", [1, 2, 3])
@pytest.mark.parametrize("shift", [0.0, 1000.0])
def test_three_scores_give_25_over_3(block, shift):
    # flash, "One attention row need not store all its probabilities": o = 50/6 = 25/3;
    # "Verify the arithmetic": the same at block size 1, 2 or 3 and after adding 1,000 to every score.
    scores = [s + shift for s in LOG123]
    assert streaming_attention(scores, [10.0, 20.0, 0.0], block) == pytest.approx(25 / 3, rel=FP64_TOL)
    vec = streaming_attention(scores, [[10.0, 1.0], [20.0, 1.0], [0.0, 1.0]], block)
    np.testing.assert_allclose(vec, [25 / 3, 1.0], rtol=FP64_TOL)


def test_second_block_rescales_by_two_thirds():
    # flash, "Online softmax rescales old statistics": "The second step multiplies old statistics by 2/3"
    steps = normaliser_steps(LOG123, block=2)
    assert steps[1].alpha == pytest.approx(2 / 3, rel=FP64_TOL)
    # flash, "Online does not mean probabilities are final immediately": [1/3, 2/3] after two positions
    assert np.allclose(safe_softmax(LOG123[:2]), [1 / 3, 2 / 3], rtol=FP64_TOL)
    assert np.allclose(safe_softmax(LOG123), [1 / 6, 2 / 6, 3 / 6], rtol=FP64_TOL)


def test_masked_positions_are_skipped_and_their_values_never_read():
    # flash, "Verify the arithmetic": "Negative infinity marks masked positions that can be skipped"
    scores = [LOG123[0], -np.inf, LOG123[1], -np.inf, LOG123[2]]
    values = [10.0, np.nan, 20.0, np.inf, 0.0]
    for block in (1, 2, 5):
        assert streaming_attention(scores, values, block) == pytest.approx(25 / 3, rel=FP64_TOL)


@pytest.mark.parametrize("scores, values, block", [
    ([0.0, np.nan], [1.0, 2.0], 1),                             # NaN score
    ([0.0, np.inf], [1.0, 2.0], 1),                             # +inf score
    ([0.0, 1.0], [1.0, np.nan], 1),                             # NaN value at a visible position
    ([0.0, 1.0], [1.0, -np.inf], 2),                            # inf value at a visible position
    ([0.0, 1.0], [[1.0], [np.inf]], 2),                         # ... in a vector value
    ([-np.inf, -np.inf], [1.0, 2.0], 1),                        # no visible key
    ([], [], 1),                                                # empty row
    ([0.0, 1.0], [1.0], 1),                                     # length mismatch
    ([[0.0, 1.0]], [1.0, 2.0], 1),                              # 2-D scores
    ([0.0, 1.0], np.ones((2, 1, 1)), 1),                        # 3-D values
    ([0.0, 1.0], np.ones((2, 0)), 1),                           # zero-width values
    ([0.0, 1.0], [1.0, 2.0], 0),                                # block < 1
    ([0.0, 1.0], [1.0, 2.0], -3),
    ([0.0, 1.0], [1.0, 2.0], 1.0),                              # not an int
    ([0.0, 1.0], [1.0, 2.0], True),                             # a bool is not a block size
    ([0.0, 1.0], [1.0, 2.0], "2"),
    ([0.0, 1.0], [1.0, 2.0], None),
    (["a", "b"], [1.0, 2.0], 1),                                # not numbers
])
def test_streaming_attention_error_cases_raise(scores, values, block):
    # flash, "Verify the arithmetic": NaN, +inf and non-finite visible values raise, as does an
    # entirely invalid row and an invalid shape or block size.
    with pytest.raises(ValueError):
        streaming_attention(scores, values, block)


def test_numpy_integer_block_sizes_are_accepted():
    assert streaming_attention(LOG123, [10.0, 20.0, 0.0], np.int64(2)) == pytest.approx(25 / 3, rel=FP64_TOL)


# --- 4. merge ------------------------------------------------------------------------------------

def test_merging_two_halves_of_the_three_score_example():
    # flash, "One attention row ...": keys {1, 2} hold mass 3 with output 50/3, key {3} mass 3 with output 0;
    # naive, "The state that gets passed around is the log-sum-exp": the merge is their convex combination.
    o, lse = merge_states([[[50 / 3]]], [[math.log(3)]], [[[0.0]]], [[math.log(3)]])
    assert o[0, 0, 0] == pytest.approx(25 / 3, rel=FP64_TOL)
    assert lse[0, 0] == pytest.approx(math.log(6), rel=FP64_TOL)


def test_both_sides_empty_give_zero_and_minus_inf_never_nan():
    # naive, "The base case is a NaN factory": both empty -> zeros and -inf, not 0/0.
    for lse_a, lse_b in [(-np.inf, -np.inf), (np.inf, -np.inf), (np.inf, np.inf), (-np.inf, np.inf)]:
        o, lse = merge_states(np.full((2, 3, 4), np.nan), np.full((2, 3), lse_a),
                              np.full((2, 3, 4), 7.0), np.full((2, 3), lse_b))
        assert np.array_equal(o, np.zeros((2, 3, 4))) and not np.signbit(o).any()
        assert np.array_equal(lse, np.full((2, 3), -np.inf))


def test_plus_inf_lse_is_an_empty_side():
    # naive, "The base case is a NaN factory": FA2 signals an empty range with +inf; treat it as -inf.
    o_b, lse_b = np.array([[[1.5, -2.0]]]), np.array([[0.25]])
    for empty in (np.inf, -np.inf):
        o, lse = merge_states(np.array([[[9.0, 9.0]]]), np.array([[empty]]), o_b, lse_b)
        assert np.array_equal(o, o_b) and np.array_equal(lse, lse_b)


def test_identity_state():
    o, lse = identity_state(2, 3, 4)
    assert o.shape == (2, 3, 4) and lse.shape == (2, 3)
    assert np.array_equal(o, np.zeros((2, 3, 4))) and np.array_equal(lse, np.full((2, 3), -np.inf))


def test_merge_is_a_convex_combination_even_at_huge_lse():
    # naive, "Scale first, then multiply": the output cannot leave the range of its inputs.
    o, lse = merge_states(np.full((1, 1, 2), 6e307), [[700.0]], np.full((1, 1, 2), 6e307), [[700.0]])
    assert np.array_equal(o, np.full((1, 1, 2), 6e307))
    assert lse[0, 0] == pytest.approx(700 + math.log(2), rel=FP64_TOL)


def test_merge_computes_in_fp64_whatever_the_input_dtype():
    o, lse = merge_states(np.ones((1, 1, 2), np.float16), np.zeros((1, 1), np.float16),
                          np.ones((1, 1, 2), np.float32), np.zeros((1, 1), np.float32))
    assert o.dtype == np.float64 and lse.dtype == np.float64


@pytest.mark.parametrize("args", [
    (np.zeros((2, 3, 4)), np.zeros((2, 3)), np.zeros((2, 3, 5)), np.zeros((2, 3))),    # head_dim differs
    (np.zeros((2, 3, 4)), np.zeros((2, 4)), np.zeros((2, 3, 4)), np.zeros((2, 3))),    # lse shape
    (np.zeros((2, 3, 4)), np.full((2, 3), np.nan), np.zeros((2, 3, 4)), np.zeros((2, 3))),
    (np.full((2, 3, 4), np.inf), np.zeros((2, 3)), np.zeros((2, 3, 4)), np.zeros((2, 3))),  # O of a live side
])
def test_merge_refuses_bad_states(args):
    with pytest.raises(ValueError):
        merge_states(*args)


def test_merge_many_refuses_an_empty_list():
    with pytest.raises(ValueError):
        merge_many([], [])


# --- 5. attention reference ----------------------------------------------------------------------

def test_attention_reference_reproduces_25_over_3():
    # flash, "One attention row ...": scores log 1, log 2, log 3 come from q = 1, k = (log 1, log 2, log 3).
    q = np.ones((1, 1, 1, 1))
    k = np.array(LOG123).reshape(1, 1, 3, 1)
    v = np.array([10.0, 20.0, 0.0]).reshape(1, 1, 3, 1)
    o, lse = attention_reference(q, k, v, scale=1.0)
    assert o[0, 0, 0, 0] == pytest.approx(25 / 3, rel=FP64_TOL)
    assert lse[0, 0, 0] == pytest.approx(math.log(6), rel=FP64_TOL)


def dense_attention(q, k, v, causal, scale):
    """An independent dense formula: K/V repeated to every query head, a triangular mask, logsumexp."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    tq, tk = q.shape[2], k.shape[2]
    if causal:
        s = s + np.triu(np.full((tq, tk), -np.inf), k=tk - tq + 1)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    l = e.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        o = np.nan_to_num(np.einsum("bhqk,bhkd->bhqd", e, v) / l)
        lse = (m + np.log(l))[..., 0]
    return o, lse


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("tq, tk", [(5, 9), (9, 9), (7, 4), (1, 6)])
def test_attention_reference_matches_a_dense_computation(causal, tq, tk):
    rng = np.random.default_rng(tq * 100 + tk)
    q, k, v = rng.normal(size=(2, 8, tq, 16)), rng.normal(size=(2, 2, tk, 16)), rng.normal(size=(2, 2, tk, 8))
    o, lse = attention_reference(q, k, v, causal=causal)
    o_ref, lse_ref = dense_attention(q, k, v, causal, 1 / math.sqrt(16))
    assert o.shape == (2, 8, tq, 8) and lse.shape == (2, 8, tq)
    np.testing.assert_allclose(o, o_ref, rtol=FP64_TOL, atol=FP64_TOL)
    np.testing.assert_allclose(lse, lse_ref, rtol=FP64_TOL, atol=FP64_TOL)


def test_causal_rows_with_no_visible_key_are_zero_and_minus_inf():
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(1, 2, 5, 4)), rng.normal(size=(1, 1, 3, 4)), rng.normal(size=(1, 1, 3, 4))
    o, lse = attention_reference(q, k, v, causal=True)
    # query i sees keys 0 .. Tk - Tq + i = i - 2: rows 0 and 1 see nothing, row 2 only key 0
    assert np.array_equal(o[:, :, :2], np.zeros((1, 2, 2, 4))) and np.all(lse[:, :, :2] == -np.inf)
    np.testing.assert_array_equal(o[0, :, 2], np.broadcast_to(v[0, 0, 0], (2, 4)))
    np.testing.assert_allclose(lse[0, :, 2], q[0, :, 2] @ k[0, 0, 0] / 2, rtol=FP64_TOL)


def test_gqa_query_head_reads_kv_head_j_over_group():
    # 8 query heads on 2 KV heads: heads 0-3 read KV head 0, heads 4-7 read KV head 1 (not j % 2).
    rng = np.random.default_rng(6)
    q, k = rng.normal(size=(1, 8, 3, 4)), rng.normal(size=(1, 2, 5, 4))
    v = np.stack([np.full((5, 2), 1.0), np.full((5, 2), 2.0)])[None]
    o, _ = attention_reference(q, k, v)
    np.testing.assert_allclose(o[0, :, 0, 0], [1, 1, 1, 1, 2, 2, 2, 2], rtol=FP64_TOL)


def test_split_kv_partials_merge_into_the_full_attention():
    # naive, "The state that gets passed around is the log-sum-exp": split-KV partials over disjoint
    # key ranges fold back into the whole.
    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(2, 4, 6, 8)), rng.normal(size=(2, 2, 11, 8)), rng.normal(size=(2, 2, 11, 8))
    for causal in (False, True):
        full = attention_reference(q, k, v, causal=causal)
        cuts = [0, 3, 3, 7, 11]                                   # one empty split on purpose
        parts = [partial_attention(q, k, v, a, b, causal=causal) for a, b in zip(cuts, cuts[1:])]
        o, lse = merge_many([p[0] for p in parts], [p[1] for p in parts])
        np.testing.assert_allclose(o, full[0], rtol=FP64_TOL, atol=FP64_TOL)
        np.testing.assert_allclose(lse, full[1], rtol=FP64_TOL, atol=FP64_TOL)


def test_chunked_rows_give_the_same_answer(monkeypatch):
    import rooflab.numerics.reference as reference

    rng = np.random.default_rng(8)
    q, k, v = rng.normal(size=(1, 4, 13, 8)), rng.normal(size=(1, 2, 13, 8)), rng.normal(size=(1, 2, 13, 8))
    whole = attention_reference(q, k, v, causal=True)
    monkeypatch.setattr(reference, "_CHUNK_ELEMENTS", 50)        # 50 // (2 * 13) = 1 row a chunk
    chunked = attention_reference(q, k, v, causal=True)
    np.testing.assert_allclose(whole[0], chunked[0], rtol=FP64_TOL, atol=FP64_TOL)   # BLAS blocks differ
    np.testing.assert_allclose(whole[1], chunked[1], rtol=FP64_TOL, atol=FP64_TOL)


def test_a_few_thousand_tokens_fit():
    rng = np.random.default_rng(9)
    q, k, v = (rng.normal(size=(1, 4, 2048, 32)) for _ in range(3))
    k, v = k[:, :1], v[:, :1]
    o, lse = attention_reference(q, k, v, causal=True)
    assert np.isfinite(o).all() and np.isfinite(lse).all()
    np.testing.assert_array_equal(o[0, :, 0], np.broadcast_to(v[0, 0, 0], (4, 32)))


@pytest.mark.parametrize("change", [
    dict(q=np.zeros((1, 3, 2, 4))),                               # 3 query heads on 2 KV heads
    dict(q=np.zeros((1, 2, 2, 5))),                               # head_dim differs from k
    dict(k=np.zeros((1, 2, 3, 4))),                               # k and v lengths differ
    dict(q=np.zeros((2, 4))),                                     # not 4-D
    dict(q=np.full((1, 2, 2, 4), np.nan)),
    dict(causal="yes"), dict(causal=1),
    dict(scale=float("inf")), dict(scale=True),
    dict(kv_start=3, kv_stop=2), dict(kv_stop=6), dict(kv_start=-1), dict(kv_start=0.0),
])
def test_attention_inputs_are_checked(change):
    args = dict(q=np.zeros((1, 2, 2, 4)), k=np.zeros((1, 2, 5, 4)), v=np.zeros((1, 2, 5, 4)),
                kv_start=0, kv_stop=5, causal=False, scale=None) | change
    with pytest.raises(ValueError):
        partial_attention(**args)


# --- 6. error study ------------------------------------------------------------------------------

def test_the_state_must_be_fp32():
    # naive, "What has to be fp32": fp16 and bf16 state errors grow with N far past what storing the
    # output in that type costs; fp32's stays below what fp16 storage of the output costs anyway.
    rows = {(r.seq_len, r.precision): r for r in
            state_precision_error(seq_lens=(512, 32768), rows=8, head_dim=32)}
    for p in (DType.fp16, DType.bf16):
        assert rows[32768, p].median_rel_error > 3 * rows[32768, p].storage_rel_error
        assert rows[32768, p].median_rel_error > 2 * rows[512, p].median_rel_error
    assert rows[32768, DType.bf16].max_rel_error > 0.05
    assert rows[32768, DType.fp32].max_rel_error < 1e-5
    assert rows[32768, DType.fp32].max_rel_error < rows[32768, DType.fp16].storage_rel_error / 10


# --- 7. CLI and the core's imports ---------------------------------------------------------------

def test_cli_numerics_table():
    r = runner.invoke(app, ["numerics", "--dtype", "fp16", "--seq-len", "8192"])
    assert r.exit_code == 0, r.output
    for needle in ("fp16", "11.0901", "-17.3287", "-9.7041", "3.6882", "65504", "N=8192"):
        assert needle in r.stdout, needle


def test_cli_numerics_json():
    r = runner.invoke(app, ["numerics", "--dtype", "bf16", "--seq-len", "4096", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["dtype"] == "bf16" and doc["seq_len"] == 4096
    assert round(doc["overflow_logit"], 2) == 88.72
    assert doc["expected_max_logit"] == pytest.approx(expected_max_normal_exact(4096))
    assert doc["expected_max_logit_asymptotic"] == pytest.approx(expected_max_normal(4096))


@pytest.mark.parametrize("args, needle", [
    (["--seq-len", "1"], "--seq-len"),
    (["--dtype", "tf32"], "tf32"),
    (["--logit-std", "0"], "--logit-std"),
    (["--logit-std", "1e308"], "--logit-std"),
    (["--dtype", "int8"], "int8"),
])
def test_cli_numerics_bad_input(args, needle):
    r = runner.invoke(app, ["numerics", *args])
    assert r.exit_code == 2, r.output
    err = r.stderr.strip().splitlines()
    assert 1 <= len(err) <= 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr

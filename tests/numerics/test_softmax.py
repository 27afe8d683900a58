"""Tests of rooflab/numerics/softmax.py: golden figures of the naive, safe and online softmax oracles,
their error cases, and invariants over random inputs (hypothesis).

Sources, cited by chapter and section title: "naive" = the chapter "Naive attention and the online softmax",
"flash" = the chapter "FlashAttention and PagedAttention: what does each save?". The algebra is the naive chapter's
section (3) (the recurrence is exact for any blocking; "The state that gets passed around is the log-sum-exp":
states under the merge form a commutative monoid with identity (0, -inf)) and the flash chapter's "Verify the
arithmetic" (block size and a common shift do not change the result; the error cases).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from rooflab.numerics import (dtype_limits, naive_softmax, normaliser_steps, online_softmax, safe_softmax,
                              softmax_normaliser, streaming_attention)
from rooflab.units import DType


# Tolerances, written once.
# float64 sums of N terms taken in another order differ by at most ~N * eps relative
# (N = 8192: 1.8e-12); the chapter's own check ("Reproduce the proof numerically") uses 1e-12.
FP64_TOL = 1e-12
# Figures the chapters print are compared at half a unit of their last printed digit (rounding).
# A margin in the logit well above float64's rounding of exp (~1e-16 relative) and well below
# the spacing of the formats: used to step just inside and just outside a threshold.
EDGE_STEP = 1e-9


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


def test_second_block_rescales_by_two_thirds():
    # flash, "Online softmax rescales old statistics": "The second step multiplies old statistics by 2/3"
    steps = normaliser_steps(LOG123, block=2)
    assert steps[1].alpha == pytest.approx(2 / 3, rel=FP64_TOL)
    # flash, "Online does not mean probabilities are final immediately": [1/3, 2/3] after two positions
    assert np.allclose(safe_softmax(LOG123[:2]), [1 / 3, 2 / 3], rtol=FP64_TOL)
    assert np.allclose(safe_softmax(LOG123), [1 / 6, 2 / 6, 3 / 6], rtol=FP64_TOL)


# x + c rounds each logit by up to ulp(|x| + |c|) / 2 = 1.1e-13 for |x + c| < 1024, which moves the
# weights, and so the output, by that much relative to max |v|.
SHIFT_TOL = 1e-11

SETTINGS = settings(max_examples=60, deadline=None)

logit = st.floats(-30, 30, allow_nan=False)
masked_or_logit = st.one_of(logit, logit, logit, st.just(-np.inf))
value = st.floats(-10, 10, allow_nan=False)


@st.composite
def rows_and_values(draw, max_n=40):
    rows = draw(st.integers(1, 3))
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, 4))
    x = draw(arrays(np.float64, (rows, n), elements=masked_or_logit))
    per_row = draw(st.booleans())
    v = draw(arrays(np.float64, (rows, n, d) if per_row else (n, d), elements=value))
    return x, v


def _vmax(v: np.ndarray) -> float:
    return max(1.0, float(np.abs(v).max()))


# --- online softmax and streaming attention ------------------------------------------------------

@SETTINGS
@given(rows_and_values(), st.integers(1, 50), st.integers(1, 50))
def test_online_softmax_does_not_depend_on_block_size(data, block_a, block_b):
    x, v = data
    a = online_softmax(x, v, block_a)
    b = online_softmax(x, v, block_b)
    np.testing.assert_allclose(a.out, b.out, rtol=FP64_TOL, atol=FP64_TOL * _vmax(v))
    np.testing.assert_allclose(a.lse, b.lse, rtol=FP64_TOL, atol=FP64_TOL)
    assert np.array_equal(a.m, b.m)                               # the max is exact in any order
    ref = np.einsum("rn,rnd->rd", safe_softmax(x), np.broadcast_to(v, x.shape + v.shape[-1:]))
    np.testing.assert_allclose(a.out, ref, rtol=FP64_TOL, atol=FP64_TOL * _vmax(v))


@SETTINGS
@given(rows_and_values(), st.integers(1, 50), st.floats(-1000, 1000))
def test_online_softmax_does_not_depend_on_a_common_shift(data, block, shift):
    x, v = data
    a = online_softmax(x, v, block)
    b = online_softmax(x + shift, v, block)
    np.testing.assert_allclose(a.out, b.out, rtol=SHIFT_TOL, atol=SHIFT_TOL * _vmax(v))


@SETTINGS
@given(st.lists(st.integers(-64 * 1024, 64 * 1024), min_size=1, max_size=30), st.integers(1, 8),
       st.integers(-2**20, 2**20))
def test_shift_invariance_is_exact_when_the_shift_is_exact(numerators, block, shift):
    # Logits k/1024 and an integer shift: x + c and x - m are exact, so the weights are bit-identical.
    x = np.array(numerators, dtype=np.float64)[None, :] / 1024
    v = np.arange(x.size, dtype=np.float64)[:, None]
    a = online_softmax(x, v, block).out
    b = online_softmax(x + shift, v, block).out
    assert np.array_equal(a, b)


@SETTINGS
@given(rows_and_values(max_n=30), st.integers(1, 40))
def test_streaming_attention_agrees_with_online_softmax(data, block):
    x, v = data
    v_row = v[0] if v.ndim == 3 else v
    assume(np.isfinite(x[0]).any())
    out = streaming_attention(x[0], v_row, block)
    ref = online_softmax(x[:1], v_row, block).out[0]
    np.testing.assert_allclose(out, ref, rtol=FP64_TOL, atol=FP64_TOL * _vmax(v_row))
    scalar = streaming_attention(x[0], v_row[:, 0], block)
    assert isinstance(scalar, float)
    np.testing.assert_allclose(scalar, ref[0], rtol=FP64_TOL, atol=FP64_TOL * _vmax(v_row))

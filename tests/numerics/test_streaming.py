"""Tests of rooflab/numerics/streaming.py: streaming attention over a row of keys, golden figures and
invariants over random inputs (hypothesis).

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
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from rooflab.numerics import streaming_attention


# Tolerances, written once.
# Reordering a float64 computation over at most ~40 terms moves it by a few tens of eps relative
# (eps = 2.2e-16); 1e-12 leaves a wide margin and still fails on any algebraic slip.
FP64_TOL = 1e-12


SETTINGS = settings(max_examples=60, deadline=None)

logit = st.floats(-30, 30, allow_nan=False)
masked_or_logit = st.one_of(logit, logit, logit, st.just(-np.inf))
value = st.floats(-10, 10, allow_nan=False)


# --- the error cases of streaming attention ------------------------------------------------------

@st.composite
def visible_row(draw):
    """A valid row (at least one visible key) and the index of a visible position."""
    n = draw(st.integers(1, 12))
    scores = draw(arrays(np.float64, n, elements=masked_or_logit))
    i = draw(st.integers(0, n - 1))
    scores[i] = draw(logit)
    values = draw(arrays(np.float64, n, elements=value))
    return scores, values, i


bad_number = st.sampled_from([np.nan, np.inf, -np.inf])


@SETTINGS
@given(visible_row(), st.sampled_from([np.nan, np.inf]), st.integers(1, 5))
def test_nan_or_plus_inf_score_raises(row, bad, block):
    scores, values, i = row
    scores[i] = bad
    with pytest.raises(ValueError):
        streaming_attention(scores, values, block)


@SETTINGS
@given(visible_row(), bad_number, st.integers(1, 5), st.booleans())
def test_non_finite_visible_value_raises(row, bad, block, vector):
    scores, values, i = row
    values[i] = bad
    with pytest.raises(ValueError):
        streaming_attention(scores, values[:, None] if vector else values, block)


@SETTINGS
@given(visible_row(), bad_number, st.integers(1, 5))
def test_masked_position_is_skipped_whatever_its_value(row, bad, block):
    scores, values, _ = row
    masked_scores = np.append(scores, -np.inf)
    masked_values = np.append(values, bad)
    np.testing.assert_allclose(streaming_attention(masked_scores, masked_values, block),
                               streaming_attention(scores, values, block), rtol=FP64_TOL, atol=FP64_TOL * 10)


@SETTINGS
@given(st.integers(0, 12), st.integers(1, 5))
def test_no_visible_key_raises(n, block):
    with pytest.raises(ValueError):
        streaming_attention(np.full(n, -np.inf), np.ones(n), block)


bad_block = st.one_of(st.integers(max_value=0), st.booleans(), st.floats(allow_nan=True), st.text(max_size=3),
                      st.none(), st.just([2]))


@SETTINGS
@given(visible_row(), bad_block)
def test_bad_block_size_raises(row, block):
    scores, values, _ = row
    with pytest.raises(ValueError):
        streaming_attention(scores, values, block)


@SETTINGS
@given(visible_row(), st.integers(1, 3), st.integers(1, 5))
def test_length_mismatch_raises(row, extra, block):
    scores, values, _ = row
    with pytest.raises(ValueError):
        streaming_attention(scores, np.append(values, np.ones(extra)), block)


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

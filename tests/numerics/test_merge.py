"""Tests of rooflab/numerics/merge.py: the LSE merge of partial attention states, golden figures and
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

from rooflab.numerics import attention_reference, identity_state, merge_many, merge_states, partial_attention


# Tolerances, written once.
# float64 sums of N terms taken in another order differ by at most ~N * eps relative
# (N = 8192: 1.8e-12); the chapter's own check ("Reproduce the proof numerically") uses 1e-12.
FP64_TOL = 1e-12


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


SETTINGS = settings(max_examples=60, deadline=None)


value = st.floats(-10, 10, allow_nan=False)


def _vmax(v: np.ndarray) -> float:
    return max(1.0, float(np.abs(v).max()))


# --- merge ---------------------------------------------------------------------------------------

lse_entry = st.one_of(st.floats(-50, 50), st.floats(-50, 50), st.just(-np.inf), st.just(np.inf))


@st.composite
def states(draw, count=1, shape=None):
    tokens, heads, d = shape or (draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 4)))
    out = []
    for _ in range(count):
        o = draw(arrays(np.float64, (tokens, heads, d), elements=value))
        lse = draw(arrays(np.float64, (tokens, heads), elements=lse_entry))
        out.append((o, lse))
    return out


def _close(a, b, tol=FP64_TOL):
    np.testing.assert_allclose(a[0], b[0], rtol=tol, atol=tol * 10)    # |O| <= 10
    np.testing.assert_allclose(a[1], b[1], rtol=tol, atol=tol * 50)    # |LSE| <= 50 + ln(count)


@SETTINGS
@given(states(count=2))
def test_merge_is_commutative_exactly(pair):
    # IEEE addition and multiplication are commutative, and the merge is symmetric in its sides.
    (o_a, lse_a), (o_b, lse_b) = pair
    ab = merge_states(o_a, lse_a, o_b, lse_b)
    ba = merge_states(o_b, lse_b, o_a, lse_a)
    assert np.array_equal(ab[0], ba[0]) and np.array_equal(ab[1], ba[1])
    assert not np.isnan(ab[0]).any() and not np.isnan(ab[1]).any()


@SETTINGS
@given(states(count=3))
def test_merge_is_associative(triple):
    (o_a, lse_a), (o_b, lse_b), (o_c, lse_c) = triple
    left = merge_states(*merge_states(o_a, lse_a, o_b, lse_b), o_c, lse_c)
    right = merge_states(o_a, lse_a, *merge_states(o_b, lse_b, o_c, lse_c))
    _close(left, right)


@SETTINGS
@given(states(count=1))
def test_identity_state_changes_nothing(single):
    (o, lse), = single
    empty = ~np.isfinite(lse)                                   # +inf and -inf both mean empty
    expected_o = np.where(empty[..., None], 0.0, o)
    expected_lse = np.where(empty, -np.inf, lse)
    for merged in (merge_states(o, lse, *identity_state(*o.shape)), merge_states(*identity_state(*o.shape), o, lse)):
        assert np.array_equal(merged[0], expected_o) and np.array_equal(merged[1], expected_lse)


@SETTINGS
@given(states(count=2))
def test_empty_sides_give_exactly_what_is_stated(pair):
    (o_a, lse_a), (o_b, lse_b) = pair
    o, lse = merge_states(o_a, lse_a, o_b, lse_b)
    both_empty = ~np.isfinite(lse_a) & ~np.isfinite(lse_b)
    assert np.all(o[both_empty] == 0.0) and np.all(lse[both_empty] == -np.inf)
    # +inf is the same as -inf: swap every +inf for -inf and get the same state, bit for bit
    flipped = merge_states(o_a, np.where(lse_a == np.inf, -np.inf, lse_a), o_b, np.where(lse_b == np.inf, -np.inf, lse_b))
    assert np.array_equal(o, flipped[0]) and np.array_equal(lse, flipped[1])
    assert not np.isnan(o).any() and not np.isnan(lse).any()


def _fold_tree(parts: list, split_at: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Merge a list of states as a binary tree whose shape the split points choose."""
    if len(parts) == 1:
        return merge_states(*parts[0], *identity_state(*parts[0][0].shape))
    cut = 1 + split_at[len(parts) % len(split_at)] % (len(parts) - 1)
    return merge_states(*_fold_tree(parts[:cut], split_at), *_fold_tree(parts[cut:], split_at))


@SETTINGS
@given(st.integers(1, 6).flatmap(lambda n: states(count=n)), st.randoms(use_true_random=False),
       st.lists(st.integers(0, 100), min_size=1, max_size=5))
def test_any_fold_order_gives_the_same_state(parts, rnd, split_at):
    reference = merge_many([o for o, _ in parts], [lse for _, lse in parts])
    shuffled = list(parts)
    rnd.shuffle(shuffled)
    _close(merge_many([o for o, _ in shuffled], [lse for _, lse in shuffled]), reference)
    _close(_fold_tree(shuffled, split_at), reference)


# --- attention: split-KV ------------------------------------------------------------------------

@st.composite
def attention_inputs(draw):
    batch, kv_heads, group = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    tq, tk, d = draw(st.integers(1, 6)), draw(st.integers(1, 12)), draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q = rng.normal(size=(batch, kv_heads * group, tq, d)) * draw(st.sampled_from([0.1, 1.0, 5.0]))
    k = rng.normal(size=(batch, kv_heads, tk, d))
    v = rng.normal(size=(batch, kv_heads, tk, draw(st.integers(1, 4))))
    cuts = sorted(draw(st.lists(st.integers(0, tk), max_size=4)))
    return q, k, v, [0, *cuts, tk]


@SETTINGS
@given(attention_inputs(), st.booleans(), st.randoms(use_true_random=False))
def test_split_kv_partials_merge_into_the_whole(inputs, causal, rnd):
    q, k, v, cuts = inputs
    o_ref, lse_ref = attention_reference(q, k, v, causal=causal)
    parts = [partial_attention(q, k, v, a, b, causal=causal) for a, b in zip(cuts, cuts[1:])]
    rnd.shuffle(parts)
    o, lse = merge_many([p[0] for p in parts], [p[1] for p in parts])
    np.testing.assert_allclose(o, o_ref, rtol=FP64_TOL, atol=FP64_TOL * _vmax(v))
    np.testing.assert_allclose(lse, lse_ref, rtol=FP64_TOL, atol=FP64_TOL * 10)
    assert np.array_equal(np.isneginf(lse), np.isneginf(lse_ref))

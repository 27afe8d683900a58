"""Invariants of the numerics oracles over random inputs (hypothesis).

The algebra is from naive-attention-and-online-softmax.txt (section (3): the recurrence is
exact for any blocking; "The state that gets passed around is the log-sum-exp": states under
the merge form a commutative monoid with identity (0, -inf)) and flash-and-paged-attention.txt
("Verify the arithmetic": block size and a common shift do not change the result; the error cases).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rooflab.numerics import (attention_reference, identity_state, merge_many, merge_states, online_softmax,
                              partial_attention, safe_softmax, streaming_attention)

# Tolerances, written once.
# Reordering a float64 computation over at most ~40 terms moves it by a few tens of eps relative
# (eps = 2.2e-16); 1e-12 leaves a wide margin and still fails on any algebraic slip.
FP64_TOL = 1e-12
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


"""Tests of rooflab/numerics/reference.py: the float64 attention oracle.

Golden figures ("flash" = the chapter "FlashAttention and PagedAttention: what does each save?": one attention
row gives 25/3), a dense computation, causal rows with no visible key, GQA's head mapping, chunked rows, a few
thousand tokens, and inputs checked.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rooflab.numerics import attention_reference, partial_attention


# Tolerances, written once.
# float64 sums of N terms taken in another order differ by at most ~N * eps relative
# (N = 8192: 1.8e-12); the chapter's own check ("Reproduce the proof numerically") uses 1e-12.
FP64_TOL = 1e-12


# --- 3. streaming attention ----------------------------------------------------------------------

LOG123 = [math.log(1), math.log(2), math.log(3)]


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

"""Tests of rooflab/numerics/variants.py: the float64 oracle on the attention variants. Windows of one and past the
context, a dominant sink, rows whose window holds no key, chunks and partials merging into the whole, and MLA as
attention with the latent as keys.
"""

from __future__ import annotations

import numpy as np


# ---------------------------------------------------------------- the variants' fp64 oracles (rooflab.numerics.variants)

def _qkv(seed: int = 0, heads: int = 4, kv_heads: int = 2, q_len: int = 9, kv_len: int = 13, d: int = 8):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((2, heads, q_len, d)), rng.standard_normal((2, kv_heads, kv_len, d)),
            rng.standard_normal((2, kv_heads, kv_len, d)))


def test_oracle_window_of_one_returns_each_rows_own_value():
    from rooflab.numerics import masked_attention_reference

    q, k, v = _qkv(q_len=13, kv_len=13)
    o, lse = masked_attention_reference(q, k, v, window=1)
    assert np.allclose(o, np.repeat(v, 2, axis=1))
    assert np.allclose(lse, np.einsum("bhqd,bhqd->bhq", q, np.repeat(k, 2, axis=1)) / np.sqrt(8))


def test_oracle_window_longer_than_the_context_is_causal():
    from rooflab.numerics import attention_reference, masked_attention_reference

    q, k, v = _qkv()
    for window in (13, 14, 10**6):
        o, lse = masked_attention_reference(q, k, v, window=window)
        o_ref, lse_ref = attention_reference(q, k, v, causal=True)
        assert np.allclose(o, o_ref) and np.allclose(lse, lse_ref)


def test_oracle_dominant_sink_takes_the_mass():
    from rooflab.numerics import masked_attention_reference

    q, k, v = _qkv()
    o, lse = masked_attention_reference(q, k, v, sinks=np.array([60.0, 0.0, -np.inf, 1.0]))
    assert np.abs(o[:, 0]).max() < 1e-20 and np.allclose(lse[:, 0], 60.0)
    o_plain, lse_plain = masked_attention_reference(q, k, v)
    assert np.allclose(o[:, 2], o_plain[:, 2]) and np.allclose(lse[:, 2], lse_plain[:, 2])   # -inf: no sink
    # a sink s adds e^s to the denominator: lse = ln(e^lse_plain + e^s), o shrinks by e^lse_plain / e^lse
    assert np.allclose(lse[:, 3], np.logaddexp(lse_plain[:, 3], 1.0))
    assert np.allclose(o[:, 3], o_plain[:, 3] * np.exp(lse_plain[:, 3] - lse[:, 3])[..., None])


def test_oracle_rows_whose_window_holds_no_key():
    from rooflab.numerics import masked_attention_reference

    q, k, v = _qkv(q_len=20, kv_len=6)                              # rows 0..13 sit before key 0
    o, lse = masked_attention_reference(q, k, v, window=3)
    assert (o[:, :, :14] == 0).all() and np.isneginf(lse[:, :, :14]).all()
    assert np.isfinite(lse[:, :, 14:]).all()
    o, lse = masked_attention_reference(q, k, v, window=3, sinks=np.full(4, 2.5))
    assert (o[:, :, :14] == 0).all() and np.allclose(lse[:, :, :14], 2.5)   # only the sink: o 0, lse the sink


def test_oracle_chunks_and_partials_merge_into_the_whole():
    from rooflab.numerics import masked_attention_reference, merge_many, visible_keys

    seen = visible_keys(6, 10, chunk=4)                             # positions 4..9
    assert seen.sum(axis=1).tolist() == [1, 2, 3, 4, 1, 2]
    q, k, v = _qkv(kv_len=40, q_len=40)
    whole = masked_attention_reference(q, k, v, window=9, chunk=16, sinks=np.ones(4))
    cuts = [0, 7, 16, 33, 40]
    parts = [masked_attention_reference(q, k, v, window=9, chunk=16, sinks=np.ones(4) if i == 0 else None,
                                        kv_start=a, kv_stop=b) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))]
    o, lse = merge_many([p[0] for p in parts], [p[1] for p in parts])
    assert np.allclose(o, whole[0]) and np.allclose(lse, whole[1])


def test_oracle_mla_is_attention_with_the_latent_as_keys_and_its_head_as_values():
    from rooflab.numerics import attention_reference, mla_decode_reference

    rng = np.random.default_rng(3)
    q, c = rng.standard_normal((3, 5, 24)), rng.standard_normal((11, 24))
    o, lse = mla_decode_reference(q, c, value_dim=16)
    o_ref, lse_ref = attention_reference(q.transpose(1, 0, 2)[None], c[None, None], c[None, None, :, :16], causal=True)
    assert o.shape == (3, 5, 16) and lse.shape == (3, 5)
    assert np.allclose(o, o_ref[0].transpose(1, 0, 2)) and np.allclose(lse, lse_ref[0].T)

"""Dense attention in float64, whole or over a key range: the oracle the GPU kernels are checked against.

Source: the recurrence and merge of the chapter "Naive attention and the online softmax" (the LSE state,
GQA sharing of K/V across query heads) and the chapter "FlashAttention and PagedAttention: what does each
save?" (masking).
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import NumericsError, as_fp64, check_finite, check_index

#: Score elements held at once ([group, query rows, keys] float64): 2**22 is 32 MiB.
_CHUNK_ELEMENTS = 2**22


def _checked_qkv(q: object, k: object, v: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, k, v = as_fp64(q, "q"), as_fp64(k, "k"), as_fp64(v, "v")
    if not (q.ndim == k.ndim == v.ndim == 4):
        raise NumericsError(f"q, k, v must be 4-D ([B, h, Tq, d], [B, h_kv, Tk, d], [B, h_kv, Tk, d_v]); "
                            f"got {q.shape}, {k.shape}, {v.shape}")
    batch, num_qo_heads, _, head_dim = q.shape
    if k.shape[0] != batch or v.shape[0] != batch or k.shape[1] != v.shape[1] or k.shape[2] != v.shape[2]:
        raise NumericsError(f"k and v must share batch, KV heads and length with each other and q's batch; "
                            f"got q {q.shape}, k {k.shape}, v {v.shape}")
    if k.shape[3] != head_dim:
        raise NumericsError(f"q and k must have the same head_dim, got {head_dim} and {k.shape[3]}")
    num_kv_heads = k.shape[1]
    if num_kv_heads < 1 or num_qo_heads % num_kv_heads != 0:
        raise NumericsError(f"query heads ({num_qo_heads}) must be a multiple of KV heads ({num_kv_heads})")
    if head_dim < 1 or v.shape[3] < 1:
        raise NumericsError("head_dim of q/k and of v must be >= 1")
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_finite(x, name)
    return q, k, v


def _checked_scale(scale: float | None, head_dim: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise NumericsError(f"scale must be a real number, got {scale!r}")
    if not math.isfinite(scale):
        raise NumericsError(f"scale must be finite, got {scale}")
    return float(scale)


def _attend_rows(qg: np.ndarray, k: np.ndarray, v: np.ndarray, visible: np.ndarray | None,
                 scale: float) -> tuple[np.ndarray, np.ndarray]:
    """qg [group, rows, d] against k [n, d], v [n, d_v]; visible [rows, n] or None -> o, lse."""
    s = (qg @ k.T) * scale                                         # [group, rows, n]
    if visible is not None:
        s = np.where(visible, s, -np.inf)
    m = s.max(axis=-1)                                             # [group, rows]
    if np.isnan(m).any() or np.isposinf(m).any():
        raise NumericsError("scaled scores overflow float64; scale q and k down")
    seen = m > -np.inf
    m_shift = np.where(seen, m, 0.0)
    p = np.exp(s - m_shift[..., None])
    l = np.where(seen, p.sum(axis=-1), 1.0)                        # >= 1 where seen
    o = np.where(seen[..., None], (p @ v) / l[..., None], 0.0)
    lse = np.where(seen, m_shift + np.log(l), -np.inf)
    return o, lse


def partial_attention(q: object, k: object, v: object, kv_start: int, kv_stop: int,
                      causal: bool = False, scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Attention of q over keys kv_start <= j < kv_stop only, in float64: one split-KV partial (O, LSE).

    Formula per query row i and head: s_j = scale q_i . k_j over the visible keys of the
    range; O = sum_j softmax(s)_j v_j; LSE = ln sum_j exp(s_j). Shapes: q [B, h, Tq, d],
    k [B, h_kv, Tk, d], v [B, h_kv, Tk, d_v] -> O [B, h, Tq, d_v], LSE [B, h, Tq].
    GQA: query head j reads KV head j // (h // h_kv). Causal: query i sees key j iff
    j <= Tk - Tq + i, in whole-sequence key positions, so partials over a partition of
    [0, Tk) merge (merge_states / merge_many) into attention_reference. A row with no
    visible key in the range has O = 0 and LSE = -inf (the identity state).
    Memory: scores are formed a chunk of query rows at a time (at most 32 MiB).
    """
    q, k, v = _checked_qkv(q, k, v)
    if not isinstance(causal, (bool, np.bool_)):
        raise NumericsError(f"causal must be a bool, got {causal!r} ({type(causal).__name__})")
    batch, num_qo_heads, q_len, head_dim = q.shape
    num_kv_heads, kv_len = k.shape[1], k.shape[2]
    start, stop = check_index(kv_start, "kv_start"), check_index(kv_stop, "kv_stop")
    if not 0 <= start <= stop <= kv_len:
        raise NumericsError(f"need 0 <= kv_start <= kv_stop <= Tk = {kv_len}, got {start} and {stop}")
    scale = _checked_scale(scale, head_dim)
    group = num_qo_heads // num_kv_heads
    o = np.zeros((batch, num_qo_heads, q_len, v.shape[3]))
    lse = np.full((batch, num_qo_heads, q_len), -np.inf)
    if stop == start:
        return o, lse
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // (group * (stop - start)))
    key_pos = np.arange(start, stop)
    for b in range(batch):
        for kv_head in range(num_kv_heads):
            heads = slice(kv_head * group, (kv_head + 1) * group)
            kb, vb = k[b, kv_head, start:stop], v[b, kv_head, start:stop]
            for r0 in range(0, q_len, rows_per_chunk):
                r1 = min(q_len, r0 + rows_per_chunk)
                visible = None
                if causal:
                    last_key = np.arange(r0, r1) + (kv_len - q_len)   # query i sees keys <= Tk - Tq + i
                    visible = key_pos[None, :] <= last_key[:, None]
                o[b, heads, r0:r1], lse[b, heads, r0:r1] = _attend_rows(q[b, heads, r0:r1], kb, vb,
                                                                        visible, scale)
    return o, lse


def attention_reference(q: object, k: object, v: object, causal: bool = False,
                        scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Full attention in float64: O = softmax(scale q k^T (+ causal mask)) v and its LSE per query row.

    Shapes: q [B, h, Tq, d], k [B, h_kv, Tk, d], v [B, h_kv, Tk, d_v] with h a multiple of
    h_kv; O [B, h, Tq, d_v], LSE [B, h, Tq] (natural log of sum_j exp(scale q . k_j)).
    scale defaults to 1/sqrt(d). Causal: query i (0-based) sees keys 0 .. Tk - Tq + i
    (the last query row sees every key); a row with no visible key has O = 0, LSE = -inf.
    It is partial_attention over the whole key range.
    """
    k_arr = as_fp64(k, "k")
    if k_arr.ndim != 4:
        raise NumericsError(f"k must be [B, h_kv, Tk, d], got shape {k_arr.shape}")
    return partial_attention(q, k_arr, v, 0, k_arr.shape[2], causal=causal, scale=scale)

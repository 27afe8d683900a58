"""float64 oracles for the attention variants the kernels run: sliding window, chunk, sinks, several new
decode tokens, and MLA decode in the absorbed form.

Sources: the chapter "FlashAttention and PagedAttention: what does each save?" (masks, paged decode) and
the chapter "Naive attention and the online softmax" (the softmax over the keys a row sees, its
log-sum-exp); the window, chunk and sink definitions are those of rooflab.cost.common.Visibility and of
gpt-oss (a sink is a per-head logit in the denominator only); MLA's absorbed decode as in the DeepSeek-V3
technical report, section 2.1.1 (values are the first d_c elements of each cached latent).
"""

from __future__ import annotations

import numpy as np

from ._checks import NumericsError, as_fp64, check_index
from .reference import _checked_qkv, _checked_scale

#: Score elements held at once ([group, query rows, keys] float64): 2**22 is 32 MiB.
_CHUNK_ELEMENTS = 2**22


def _optional_count(value: object, name: str) -> int | None:
    if value is None:
        return None
    n = check_index(value, name)
    if n < 1:
        raise NumericsError(f"{name} must be >= 1, got {value}")
    return n


def visible_keys(q_len: int, kv_len: int, causal: bool = True, window: int | None = None,
                 chunk: int | None = None, q_offset: int | None = None) -> np.ndarray:
    """Which keys each query sees, bool [q_len, kv_len].

    Query i sits at key position p = i + q_offset (default kv_len - q_len: the queries are the last
    positions). causal: keys j <= p. window W: also p - W < j (W keys counting its own). chunk C: also
    floor(j / C) == floor(p / C) (Llama 4's chunked attention). A window or chunk implies causal.
    A query at p < 0 sees nothing.
    """
    q_len, kv_len = check_index(q_len, "q_len"), check_index(kv_len, "kv_len")
    window, chunk = _optional_count(window, "window"), _optional_count(chunk, "chunk")
    offset = kv_len - q_len if q_offset is None else int(q_offset)
    pos = np.arange(q_len)[:, None] + offset                       # [q_len, 1]
    key = np.arange(kv_len)[None, :]                               # [1, kv_len]
    seen = np.ones((q_len, kv_len), dtype=bool)
    if causal or window is not None or chunk is not None:
        seen &= key <= pos
    if window is not None:
        seen &= key > pos - window
    if chunk is not None:
        seen &= (key // chunk) == (pos // chunk)
    return seen


def _rows_with_sinks(qg: np.ndarray, k: np.ndarray, v: np.ndarray, seen: np.ndarray, sinks: np.ndarray | None,
                     scale: float) -> tuple[np.ndarray, np.ndarray]:
    """qg [group, rows, d] against k [n, d], v [n, d_v]; seen [rows, n]; sinks [group] or None -> o, lse.

    Formula per row: m = max(max_j x_j, s), l = e^(s - m) + sum_j e^(x_j - m), o = sum_j e^(x_j - m) v_j / l,
    lse = m + ln l, with x_j = scale q . k_j over the visible keys and s the sink (absent: -inf).
    A row with no visible key and no sink: o = 0, lse = -inf.
    """
    s = np.where(seen, (qg @ k.T) * scale, -np.inf)                # [group, rows, n]
    sink = np.full(qg.shape[:2], -np.inf) if sinks is None else np.broadcast_to(sinks[:, None], qg.shape[:2])
    m = np.maximum(s.max(axis=-1, initial=-np.inf), sink)          # [group, rows]
    if np.isnan(m).any() or np.isposinf(m).any():
        raise NumericsError("scaled scores overflow float64; scale q and k down")
    alive = m > -np.inf
    m_shift = np.where(alive, m, 0.0)
    p = np.exp(s - m_shift[..., None])
    l = p.sum(axis=-1) + np.exp(sink - m_shift)
    l = np.where(alive, l, 1.0)                                    # >= 1 where alive
    o = np.where(alive[..., None], (p @ v) / l[..., None], 0.0)
    lse = np.where(alive, m_shift + np.log(l), -np.inf)
    return o, lse


def masked_attention_reference(q: object, k: object, v: object, causal: bool = True, window: int | None = None,
                               chunk: int | None = None, sinks: object = None, scale: float | None = None,
                               kv_start: int = 0, kv_stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Attention in float64 with a causal / sliding-window / chunked mask and optional sinks. -> (O, LSE).

    Shapes: q [B, h, Tq, d], k [B, h_kv, Tk, d], v [B, h_kv, Tk, d_v], sinks [h] (natural-log logits,
    one a query head) or None -> O [B, h, Tq, d_v], LSE [B, h, Tq]. GQA: query head j reads KV head
    j // (h // h_kv). Visibility as visible_keys (queries at the end of the keys). Each sink joins its
    head's softmax denominator and no value: o = sum_j e^(x_j - m) v_j / (e^(s_h - m) + sum_j e^(x_j - m)),
    and the LSE includes it, so a row that sees no key gets o = 0 and lse = s_h (gpt-oss's formulation).
    kv_start, kv_stop: only keys in [kv_start, kv_stop) (one split-KV partial; whole-sequence positions
    decide visibility, so partials over a partition merge into the whole, the sinks in one of them).
    """
    q, k, v = _checked_qkv(q, k, v)
    batch, num_qo_heads, q_len, head_dim = q.shape
    num_kv_heads, kv_len = k.shape[1], k.shape[2]
    scale = _checked_scale(scale, head_dim)
    stop = kv_len if kv_stop is None else check_index(kv_stop, "kv_stop")
    start = check_index(kv_start, "kv_start")
    if not 0 <= start <= stop <= kv_len:
        raise NumericsError(f"need 0 <= kv_start <= kv_stop <= Tk = {kv_len}, got {start} and {stop}")
    sink = None
    if sinks is not None:
        sink = as_fp64(sinks, "sinks")
        if sink.shape != (num_qo_heads,):
            raise NumericsError(f"sinks must have one logit per query head, shape ({num_qo_heads},), got {sink.shape}")
        if np.isnan(sink).any() or np.isposinf(sink).any():
            raise NumericsError("sinks must be finite or -inf (no sink)")
    group = num_qo_heads // num_kv_heads
    seen_all = visible_keys(q_len, kv_len, causal, window, chunk)[:, start:stop]
    o = np.zeros((batch, num_qo_heads, q_len, v.shape[3]))
    lse = np.full((batch, num_qo_heads, q_len), -np.inf)
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // (group * max(1, stop - start)))
    for b in range(batch):
        for kv_head in range(num_kv_heads):
            heads = slice(kv_head * group, (kv_head + 1) * group)
            kb, vb = k[b, kv_head, start:stop], v[b, kv_head, start:stop]
            sg = None if sink is None else sink[heads]
            for r0 in range(0, q_len, rows_per_chunk):
                r1 = min(q_len, r0 + rows_per_chunk)
                o[b, heads, r0:r1], lse[b, heads, r0:r1] = _rows_with_sinks(q[b, heads, r0:r1], kb, vb,
                                                                            seen_all[r0:r1], sg, scale)
    return o, lse


def mla_decode_reference(q: object, latent: object, value_dim: int = 512, scale: float | None = None,
                         causal: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """MLA decode of one sequence in the absorbed form, float64. -> (O [q_len, h, value_dim], LSE [q_len, h]).

    q [q_len, h, d_latent] (queries already projected into the latent space, e.g. d_latent 576 = 512 +
    64 rope), latent [ctx, d_latent] (the cached latents, shared by every head). Every head attends
    over the same keys c_j and takes their first value_dim elements as values:
    o = softmax(scale q . c_j) c_j[:value_dim]. The q_len new tokens are the last positions of the
    context; with causal, token t sees keys j <= ctx - q_len + t. scale defaults to 1/sqrt(d_latent).
    """
    q, c = as_fp64(q, "q"), as_fp64(latent, "latent")
    if q.ndim != 3 or c.ndim != 2 or q.shape[2] != c.shape[1]:
        raise NumericsError(f"q must be [q_len, h, d] and latent [ctx, d] with the same d; got {q.shape}, {c.shape}")
    value_dim = check_index(value_dim, "value_dim")
    if not 1 <= value_dim <= c.shape[1]:
        raise NumericsError(f"value_dim must be in 1..{c.shape[1]}, got {value_dim}")
    qh = q.transpose(1, 0, 2)[None]                                # [1, h, q_len, d]
    k = c[None, None]                                              # [1, 1, ctx, d]
    o, lse = masked_attention_reference(qh, k, k[..., :value_dim], causal=causal,
                                        scale=_checked_scale(scale, c.shape[1]))
    return o[0].transpose(1, 0, 2), lse[0].T

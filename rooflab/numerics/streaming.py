"""Streaming attention over one query row, with the masking and error semantics of the kernels' tests.

Source: the chapter "FlashAttention and PagedAttention: what does each save?", sections "Online softmax
rescales old statistics when a new block arrives" and "Verify the arithmetic before writing a GPU kernel".
"""

from __future__ import annotations

import numpy as np

from ._checks import NumericsError, as_fp64, check_block


def _checked_row(scores: object, values: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = as_fp64(scores, "scores")
    v = as_fp64(values, "values")
    if s.ndim != 1:
        raise NumericsError(f"scores must be one row (1-D), got shape {s.shape}")
    if v.ndim not in (1, 2) or v.shape[0] != s.shape[0]:
        raise NumericsError(f"values must be [N] or [N, d] with N = {s.shape[0]}, got shape {v.shape}")
    if v.ndim == 2 and v.shape[1] < 1:
        raise NumericsError("vector values need at least one component (d >= 1)")
    if np.isnan(s).any() or np.isposinf(s).any():
        raise NumericsError("scores must be finite, or -inf for a masked position (NaN and +inf are refused)")
    visible = s != -np.inf
    if not np.isfinite(v[visible]).all():
        raise NumericsError("values at visible positions must be finite")
    if not visible.any():
        raise NumericsError("no visible key: every score is -inf (or the row is empty)")
    return s, v, visible


def streaming_attention(scores: object, values: object, block_size: int) -> float | np.ndarray:
    """softmax(scores) @ values for one query row, reading `block_size` keys at a time, in float64.

    Recurrence from m = -inf, l = 0, u = 0, over each block's visible positions:
    m' = max(m, max s_B); a = exp(m - m'); l' = a l + sum_B exp(s_j - m');
    u' = a u + sum_B exp(s_j - m') v_j; result u / l.
    Semantics: a score of -inf masks its position, which is skipped (its value is never
    read, so it may be anything); NaN or +inf in scores, or a non-finite value at a
    visible position, raise ValueError; so does a row with no visible key, and a
    block_size that is not an int >= 1 (bools are refused). Values are scalars ([N] ->
    float) or vectors ([N, d] -> [d]). Assumes sum |exp(s - m) v| stays within float64.
    """
    block = check_block(block_size, "block_size")
    s, v, visible = _checked_row(scores, values)
    m, l = -np.inf, 0.0
    u = np.zeros(v.shape[1:])
    for start in range(0, s.size, block):
        keep = visible[start:start + block]
        if not keep.any():
            continue                                   # a fully masked block changes nothing
        sb = s[start:start + block][keep]
        vb = v[start:start + block][keep]
        m_new = max(m, float(sb.max()))
        a = np.exp(m - m_new)                          # exp(-inf) = 0 on the first visible block
        w = np.exp(sb - m_new)
        l = a * l + w.sum()
        u = a * u + w @ vb
        m = m_new
    out = u / l
    return float(out) if out.ndim == 0 else out

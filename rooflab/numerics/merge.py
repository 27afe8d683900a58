"""Merging partial attention states (O, LSE) over disjoint key ranges: split-KV, cascade, prefix + suffix.

Source: the chapter "Naive attention and the online softmax", "The state that gets passed around is the
log-sum-exp", "The base case is a NaN factory" and "Scale first, then multiply"
(vLLM merge_attn_states.cu, SGLang's Triton merge_state; arXiv:2501.01005, section 2.2).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._checks import NumericsError, as_fp64, check_index


def identity_state(tokens: int, heads: int, head_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The empty state (O, LSE) = (0, -inf), shapes [tokens, heads, head_dim] and [tokens, heads].

    The identity of merge_states: merging it with any state returns that state.
    """
    shape = tuple(check_index(n, name) for n, name in ((tokens, "tokens"), (heads, "heads")))
    head_dim = check_index(head_dim, "head_dim")
    if min(*shape, head_dim) < 0:
        raise NumericsError(f"sizes must be >= 0, got tokens={tokens}, heads={heads}, head_dim={head_dim}")
    return np.zeros(shape + (head_dim,)), np.full(shape, -np.inf)


def _state(o: object, lse: object, side: str) -> tuple[np.ndarray, np.ndarray]:
    o = as_fp64(o, f"o_{side}")
    lse = as_fp64(lse, f"lse_{side}")
    if o.ndim != lse.ndim + 1 or o.shape[:-1] != lse.shape:
        raise NumericsError(f"o_{side} must be lse_{side}'s shape plus head_dim "
                            f"(e.g. [tokens, heads, head_dim] and [tokens, heads]); got {o.shape} and {lse.shape}")
    if np.isnan(lse).any():
        raise NumericsError(f"lse_{side} contains NaN")
    lse = np.where(lse == np.inf, -np.inf, lse)        # FA2 marks an empty range with +inf
    if not np.isfinite(o[lse > -np.inf]).all():
        raise NumericsError(f"o_{side} is not finite where lse_{side} is finite (a non-empty state)")
    return o, lse


def merge_states(o_a: object, lse_a: object, o_b: object, lse_b: object) -> tuple[np.ndarray, np.ndarray]:
    """Merge two partial attention states over disjoint key ranges; float64 whatever the input dtype.

    Formula: M = max(LSE_a, LSE_b); e_a = exp(LSE_a - M), e_b = exp(LSE_b - M);
    s_a = e_a / (e_a + e_b), s_b = e_b / (e_a + e_b); O = s_a O_a + s_b O_b;
    LSE = M + ln(e_a + e_b). The scales are formed first, so O is a convex combination
    and never leaves the range of its inputs. An LSE of +inf marks an empty side, like
    -inf; an empty side's O is never read. Both sides empty gives O = 0 and LSE = -inf
    exactly, never NaN. Shapes: O [..., head_dim] (e.g. [tokens, heads, head_dim]),
    LSE [...] (e.g. [tokens, heads]), the same for both sides.
    """
    o_a, lse_a = _state(o_a, lse_a, "a")
    o_b, lse_b = _state(o_b, lse_b, "b")
    if o_a.shape != o_b.shape:
        raise NumericsError(f"the two states differ in shape: {o_a.shape} and {o_b.shape}")
    m = np.maximum(lse_a, lse_b)
    both_empty = m == -np.inf
    m_shift = np.where(both_empty, 0.0, m)
    e_a = np.exp(lse_a - m_shift)                      # 0 for an empty side, 1 for the larger side
    e_b = np.exp(lse_b - m_shift)
    total = np.where(both_empty, 1.0, e_a + e_b)       # >= 1 unless both are empty
    s_a = (e_a / total)[..., None]
    s_b = (e_b / total)[..., None]
    with np.errstate(invalid="ignore"):                # an empty side's O may hold anything
        o = np.where(s_a > 0, s_a * o_a, 0.0) + np.where(s_b > 0, s_b * o_b, 0.0)
    lse = np.where(both_empty, -np.inf, m_shift + np.log(total))
    return o, lse


def merge_many(outputs: Sequence[object] | np.ndarray,
               lses: Sequence[object] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold merge_states over partial states (split-KV), left to right from the identity.

    outputs [splits, ..., head_dim] and lses [splits, ...] (arrays or sequences of
    per-split arrays). Any order or tree of merges gives the same state up to rounding,
    because (O, LSE) under merge_states is a commutative monoid with identity (0, -inf).
    """
    if len(outputs) != len(lses):
        raise NumericsError(f"{len(outputs)} outputs but {len(lses)} LSEs")
    if len(outputs) == 0:
        raise NumericsError("merge_many needs at least one partial state")
    first_o, first_lse = _state(outputs[0], lses[0], "0")
    o, lse = np.zeros_like(first_o), np.full_like(first_lse, -np.inf)
    for o_i, lse_i in zip(outputs, lses):
        o, lse = merge_states(o, lse, o_i, lse_i)
    return o, lse

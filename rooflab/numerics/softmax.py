"""Softmax three ways: naive (one exp per logit), safe (three passes) and online (one pass, blockwise).

Source: the chapter "Naive attention and the online softmax", sections (1)-(3) and "Extending the
recurrence to the output"; Milakov and Gimelshein, arXiv:1805.02867. Logits may be -inf
(a masked position); NaN and +inf are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import NumericsError, as_fp64, check_block, check_finite, check_no_nan_or_pos_inf
from ..units import DType
from .formats import round_to_precision, state_dtype


def naive_softmax(logits: object, precision: DType = DType.fp64) -> np.ndarray:
    """Softmax as defined, exp(x_j) / sum_k exp(x_k), with every intermediate rounded to `precision`.

    Formula: e = rnd(exp x), s = rnd(sum e), p = rnd(e / s), over the last axis; exp and
    the sum are formed in float64, then rounded. No shift, so in fp16 one logit above
    11.09 makes e = inf, s = inf and p = inf / inf = NaN: that is the point of it.
    Source: the chapter "Naive attention and the online softmax", section (1).
    """
    x = as_fp64(logits, "logits")
    check_no_nan_or_pos_inf(x, "logits")
    with np.errstate(over="ignore", invalid="ignore"):
        e = round_to_precision(np.exp(x), precision)
        s = round_to_precision(e.sum(axis=-1, keepdims=True), precision)
        return round_to_precision(e / s, precision)


def safe_softmax(logits: object) -> np.ndarray:
    """The three-pass softmax in float64: m = max x, l = sum exp(x - m), p = exp(x - m) / l.

    Over the last axis. A row whose logits are all -inf (fully masked) gives zeros.
    Source: the chapter "Naive attention and the online softmax", section (2).
    """
    x = as_fp64(logits, "logits")
    check_no_nan_or_pos_inf(x, "logits")
    if x.shape[-1:] == (0,):
        return x.copy()
    m = x.max(axis=-1, keepdims=True)
    m_safe = np.where(m == -np.inf, 0.0, m)
    e = np.exp(x - m_safe)
    l = e.sum(axis=-1, keepdims=True)
    return e / np.where(l > 0, l, 1.0)


@dataclass(frozen=True)
class NormaliserStep:
    """The state after one block: running max m, sum l = sum exp(x - m), rescale alpha applied to the old l."""

    m: float
    l: float
    alpha: float


def normaliser_steps(logits: object, block: int) -> tuple[NormaliserStep, ...]:
    """The online softmax normaliser of one row of logits, block by block, in float64.

    Recurrence, from m = -inf, l = 0: m' = max(m, max x_B); alpha = exp(m - m');
    l' = alpha l + sum_{j in B} exp(x_j - m'). While no finite logit has been seen
    (m' = -inf) the state stays (-inf, 0) with alpha = 1. Returns one step per block.
    Source: the chapter "Naive attention and the online softmax", section (3) and "Verify it on numbers".
    """
    x = as_fp64(logits, "logits")
    block = check_block(block)
    if x.ndim != 1:
        raise NumericsError(f"logits must be one row (1-D), got shape {x.shape}")
    check_no_nan_or_pos_inf(x, "logits")
    m, l = -np.inf, 0.0
    steps = []
    for start in range(0, x.size, block):
        xb = x[start:start + block]
        m_new = max(m, float(xb.max()))
        if m_new == -np.inf:
            steps.append(NormaliserStep(m, l, 1.0))
            continue
        alpha = float(np.exp(m - m_new))
        l = alpha * l + float(np.exp(xb - m_new).sum())
        m = m_new
        steps.append(NormaliserStep(m, l, alpha))
    return tuple(steps)


def softmax_normaliser(logits: object, block: int) -> tuple[float, float]:
    """The pair (m, l) = (max x, sum exp(x - m)) of one row, computed online in blocks of `block`.

    The softmax of the row is exp(x - m) / l and its log-sum-exp is m + ln l. An empty or
    fully masked row gives (-inf, 0). See normaliser_steps for the recurrence.
    """
    steps = normaliser_steps(logits, block)
    return (steps[-1].m, steps[-1].l) if steps else (-np.inf, 0.0)


@dataclass(frozen=True)
class OnlineResult:
    """Online softmax-weighted sums of rows: out = acc / l, with the final state (m, l) per row."""

    out: np.ndarray     # [rows, d], float64; 0 for a row with no visible logit
    m: np.ndarray       # [rows], running max as stored in the state precision
    l: np.ndarray       # [rows], sum of exp(x - m) as stored in the state precision
    precision: DType
    block: int

    @property
    def lse(self) -> np.ndarray:
        """Log-sum-exp m + ln l per row; -inf for a row with no visible logit."""
        empty = self.m == -np.inf
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(empty, -np.inf, self.m + np.log(np.where(empty, 1.0, self.l)))


def _online_inputs(logits: object, values: object) -> tuple[np.ndarray, np.ndarray]:
    x = as_fp64(logits, "logits")
    v = as_fp64(values, "values")
    if x.ndim != 2:
        raise NumericsError(f"logits must be [rows, N], got shape {x.shape}")
    rows, n = x.shape
    if v.ndim == 2 and v.shape[0] == n:
        v = v[None]                                    # shared by all rows
    elif not (v.ndim == 3 and v.shape[:2] == (rows, n)):
        raise NumericsError(f"values must be [N, d] or [rows, N, d] with rows, N = {rows}, {n}; got {v.shape}")
    if v.shape[-1] < 1:
        raise NumericsError("values need at least one component (d >= 1)")
    check_no_nan_or_pos_inf(x, "logits")
    check_finite(v, "values")
    return x, v


def online_softmax(logits: object, values: object, block: int = 64,
                   precision: DType = DType.fp64) -> OnlineResult:
    """softmax(x) @ v per row in one blockwise pass, with the state (m, l, acc) kept in `precision`.

    Recurrence per row, from m = -inf, l = 0, acc = 0, for each block B of `block` logits:
    m' = max(m, max x_B); alpha = exp(m - m'); p_j = exp(x_j - m');
    l' = alpha l + sum_B p_j;  acc' = alpha acc + sum_B p_j v_j;  finally out = acc / l.
    Shapes: logits [rows, N]; values [N, d] (shared) or [rows, N, d]; out [rows, d].
    Emulation: every value written to the state (m', alpha l, the block sums, their sum,
    and the same for acc) is rounded to `precision`; exp, alpha and the sums inside a
    block are float64, as in a kernel whose block products are accumulated wide. The
    final division is float64, so the error measured is the state's alone. With fp16 or
    bf16 state the sums swamp and overflow: that is what this is for.
    Source: the chapter "Naive attention and the online softmax", section (3), "Extending the recurrence
    to the output" and "What has to be fp32".
    """
    x, v = _online_inputs(logits, values)
    block = check_block(block)
    precision = state_dtype(precision)

    def rnd(a: np.ndarray) -> np.ndarray:
        return round_to_precision(a, precision)

    rows, n = x.shape
    m = np.full(rows, -np.inf)
    l = np.zeros(rows)
    acc = np.zeros((rows, v.shape[-1]))
    for start in range(0, n, block):
        xb = x[:, start:start + block]                             # [rows, b]
        vb = v[:, start:start + block]                             # [1 or rows, b, d]
        with np.errstate(over="ignore", invalid="ignore"):         # a narrow state may overflow: let it
            m_new = rnd(np.maximum(m, xb.max(axis=1)))
            seen = m_new > -np.inf                                 # rows with a visible logit so far
            m_shift = np.where(seen, m_new, 0.0)
            alpha = np.where(seen, np.exp(m - m_shift), 1.0)       # m = -inf -> 0
            p = np.exp(xb - m_shift[:, None])                      # masked -> 0
            block_acc = p @ vb[0] if vb.shape[0] == 1 else np.einsum("rb,rbd->rd", p, vb)
            l = rnd(rnd(alpha * l) + rnd(p.sum(axis=1)))
            acc = rnd(rnd(alpha[:, None] * acc) + rnd(block_acc))
        m = m_new
    empty = m == -np.inf                                           # no visible logit in the row
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(empty[:, None], 0.0, acc / np.where(empty, 1.0, l)[:, None])
    return OnlineResult(out, m, l, precision, block)

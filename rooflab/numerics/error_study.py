"""How much precision the online-softmax state needs: output error against float64, measured.

Source: the chapter "Naive attention and the online softmax", "What has to be fp32" (every state variable
is a reduction). This shows the claim on random rows instead of asserting it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ._checks import NumericsError, check_block, check_index
from ..units import DType
from .formats import round_to_precision, state_dtype
from .softmax import online_softmax, safe_softmax

DEFAULT_SEQ_LENS = (512, 2048, 8192, 32768)
DEFAULT_PRECISIONS = (DType.fp16, DType.bf16, DType.fp32)


@dataclass(frozen=True)
class StateErrorRow:
    """Relative output error at one sequence length with the state in one precision."""

    seq_len: int
    precision: DType
    max_rel_error: float          # worst row of ||o - o_ref|| / ||o_ref||
    median_rel_error: float
    storage_rel_error: float      # median error of just storing o_ref in `precision`: the floor


def _rel_errors(out: np.ndarray, ref: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.linalg.norm(out - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
    return np.where(np.isnan(err), np.inf, err)                 # NaN output counts as the worst error


def state_precision_error(seq_lens: Sequence[int] = DEFAULT_SEQ_LENS,
                          precisions: Sequence[DType] = DEFAULT_PRECISIONS,
                          rows: int = 16, head_dim: int = 64, block: int = 64,
                          logit_std: float = 1.0, seed: int = 0) -> tuple[StateErrorRow, ...]:
    """Relative error of online softmax-attention output with (m, l, acc) kept in each precision.

    Data per sequence length N: logits [rows, N] ~ N(0, logit_std**2), values [N, head_dim]
    ~ N(0, 1), from numpy's default_rng(seed). Reference: three-pass softmax @ values in
    float64. Error per row: ||o - o_ref||_2 / ||o_ref||_2 (inf if the output is NaN).
    The state model is online_softmax's: every state write rounded, block sums wide.
    """
    rows, head_dim, seed = (check_index(x, name) for x, name in
                            ((rows, "rows"), (head_dim, "head_dim"), (seed, "seed")))
    block = check_block(block)
    if rows < 1 or head_dim < 1:
        raise NumericsError(f"rows and head_dim must be >= 1, got {rows} and {head_dim}")
    if not np.isfinite(logit_std) or logit_std <= 0:
        raise NumericsError(f"logit_std must be finite and > 0, got {logit_std}")
    seq_lens = [check_index(n, "seq_len") for n in seq_lens]
    if min(seq_lens, default=0) < 1:
        raise NumericsError(f"give one or more sequence lengths, each >= 1; got {seq_lens}")
    precisions = [state_dtype(p) for p in precisions]
    rng = np.random.default_rng(seed)
    out = []
    for n in seq_lens:
        logits = rng.normal(0.0, logit_std, (rows, n))
        values = rng.normal(0.0, 1.0, (n, head_dim))
        ref = safe_softmax(logits) @ values
        for precision in precisions:
            err = _rel_errors(online_softmax(logits, values, block, precision).out, ref)
            storage = _rel_errors(round_to_precision(ref, precision), ref)
            out.append(StateErrorRow(n, precision, float(err.max()), float(np.median(err)),
                                     float(np.median(storage))))
    return tuple(out)

"""Step times for a scheduler: floor and predicted seconds of a step holding D decodes (their contexts summing to C
tokens) and P prefill tokens, for arrays of (D, C, P).

`StepTimes` is the interface the closed form and the simulation call (millions of times: it must be vectorised).
`ReportStepTimes` is rooflab's adapter over `rooflab.step.step_report`, tabulated once:

    t(D, C, P) = rest(D + P) + attention_decode(D) x C + attention_prefill x P

- rest(N): every row of a decode step of N sequences except attention (projections, MLP or MoE, norms and
  elementwise, communication, logits): tabulated at N = 1, 4, 16, ... and interpolated linearly in N (the
  GEMMs' weights are read once a step, so a mixed step's N is its decodes plus its prefill tokens).
- attention_decode(D): a decode step's attention rows at batch D and the workload's mean decode context,
  per KV token (attention streams the KV, so its time is linear in the summed context at a batch);
  tabulated at D = 1, 8, 64, ... and interpolated in log D.
- attention_prefill: a causal prefill of the mean prompt's attention rows, per prompt token (a chunked prompt's
  chunks together do one causal prefill's work).

The floor of a step is the largest of its summed compute, memory and communication floors (everything
overlapped, as rooflab.step's t_floor_s); the prediction is the sum of the rows' predictions, None where the GPU
lacks a fit (then `predicted_s` returns None). Assumptions, stated: a prefill token's logits are not computed
except the last (one lm_head row per decode only); the prefill's attention per token is the mean prompt's.
When the step-table of issue 29 item 7 exists (`rooflab.step_table.StepTable`), `step_times` uses it instead.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Optional, Protocol

import numpy as np

from ..deployment import Deployment
from ..errors import InputError, shown
from ..specs import GpuSpec, ModelSpec


class StepTimes(Protocol):
    """Seconds of a step: `floor_s` and `predicted_s` of arrays of decodes, summed context and prefill tokens."""

    def floor_s(self, decodes, context_tokens, prefill_tokens) -> np.ndarray: ...

    def predicted_s(self, decodes, context_tokens, prefill_tokens) -> Optional[np.ndarray]: ...


@dataclass(frozen=True)
class _Parts:
    """Compute, memory and communication floors and the prediction (None: no fit) of some rows."""

    compute_s: float
    memory_s: float
    comm_s: float
    predicted_s: Optional[float]

    @classmethod
    def of(cls, rows) -> "_Parts":
        compute = sum(max(r.t_compute_s, r.t_exp_s) for r in rows if not r.is_communication)
        memory = sum(r.t_memory_s for r in rows if not r.is_communication)
        comm = sum(r.t_floor_s for r in rows if r.is_communication)
        predicted = None if any(r.t_predicted_s is None for r in rows) else sum(r.t_predicted_s for r in rows)
        return cls(compute, memory, comm, predicted)


def _grid(top: int, factor: int) -> list[int]:
    out, n = [], 1
    while n < top:
        out.append(n)
        n *= factor
    return out + [top]


@dataclass(frozen=True)
class ReportStepTimes:
    """step_report tabulated (the module docstring): arrays over the `rest` grid (tokens) and the attention grid
    (decodes), plus the prefill attention per token."""

    rest_tokens: np.ndarray
    rest: np.ndarray                 # [len(rest_tokens), 4]: compute, memory, comm, predicted (nan: none)
    att_decodes: np.ndarray
    att_per_token: np.ndarray        # [len(att_decodes), 4] per KV token
    prefill_per_token: np.ndarray    # [4] per prompt token
    label: str = ""

    @classmethod
    def build(cls, model: ModelSpec, gpu: GpuSpec, deployment: Deployment, context_len: int, prompt_len: int,
              max_decodes: int, max_tokens: int) -> "ReportStepTimes":
        """Tabulate for decodes up to `max_decodes` at mean context `context_len`, steps up to `max_tokens`
        tokens, and prompts of mean length `prompt_len`."""
        from ..step import step_report

        if not isinstance(deployment, Deployment):
            raise InputError(f"deployment must be a rooflab.Deployment, got {shown(deployment)}")
        context_len, prompt_len = max(1, int(round(context_len))), max(1, int(round(prompt_len)))
        max_tokens = max(int(max_tokens), int(max_decodes), 1)

        def report(batch, length, step="decode"):
            return step_report(model, gpu, batch=batch, context_len=length, step=step, deployment=deployment,
                               check_memory=False)

        small = deployment.page_size
        rest_tokens = _grid(max_tokens, 4)
        rest = [_Parts.of([r for r in report(n, small).rows if r.layer_type is None]) for n in rest_tokens]
        att_decodes = _grid(max(1, int(max_decodes)), 8)
        att = []
        for d in att_decodes:
            parts = _Parts.of([r for r in report(d, context_len).rows if r.layer_type is not None])
            att.append(_scaled(parts, 1.0 / (d * context_len)))
        pre = _Parts.of([r for r in report(1, prompt_len, "prefill").rows if r.layer_type is not None])
        label = f"step_report tabulated ({len(rest_tokens)} + {len(att_decodes)} + 1 steps)"
        return cls(np.asarray(rest_tokens, dtype=np.float64), _array(rest), np.asarray(att_decodes, np.float64),
                   _array(att), _array([_scaled(pre, 1.0 / prompt_len)])[0], label)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_predicts", not (np.isnan(self.rest[:, 3]).any()
                                                   or np.isnan(self.att_per_token[:, 3]).any()
                                                   or np.isnan(self.prefill_per_token[3])))
        object.__setattr__(self, "_log_decodes", np.log(self.att_decodes))

    @property
    def has_prediction(self) -> bool:
        return self._predicts

    def _terms(self, decodes, context_tokens, prefill_tokens, columns) -> np.ndarray:
        """The rows' terms in `columns` (0 compute, 1 memory, 2 communication, 3 predicted): [len(D), columns]."""
        d = np.asarray(decodes, dtype=np.float64).reshape(-1)
        c = np.asarray(context_tokens, dtype=np.float64).reshape(-1)
        p = np.asarray(prefill_tokens, dtype=np.float64).reshape(-1)
        n = d + p
        rest = _lerp(self.rest_tokens, self.rest[:, columns], n)          # linear past the grid's end too
        att = _lerp(self._log_decodes, self.att_per_token[:, columns], np.log(np.maximum(d, 1.0)), clamp=True)
        return (np.where(n > 0, 1.0, 0.0)[:, None] * rest + np.where(d > 0, c, 0.0)[:, None] * att
                + p[:, None] * self.prefill_per_token[columns])

    def floor_s(self, decodes, context_tokens, prefill_tokens) -> np.ndarray:
        return self._terms(decodes, context_tokens, prefill_tokens, slice(0, 3)).max(axis=1)

    def predicted_s(self, decodes, context_tokens, prefill_tokens) -> Optional[np.ndarray]:
        if not self._predicts:
            return None
        return self._terms(decodes, context_tokens, prefill_tokens, slice(3, 4))[:, 0]


    def _coefficients(self, estimate: str):
        """A plain-Python function (decodes, prefill tokens) -> per column (rest, attention per KV token, prefill
        per token) lists: the terms of a step are rest + attention x context + prefill x tokens, column by
        column (floor: compute, memory, communication; predicted: one)."""
        rest_x, att_x = self.rest_tokens.tolist(), self._log_decodes.tolist()
        cols = (0, 1, 2) if estimate == "floor" else (3,)
        rest = [self.rest[:, k].tolist() for k in cols]
        att = [self.att_per_token[:, k].tolist() for k in cols]
        pre = [float(self.prefill_per_token[k]) for k in cols]

        def at(xs, ys, i, x, clamp):
            if len(xs) == 1:
                return ys[0]
            w = (x - xs[i]) / (xs[i + 1] - xs[i])
            w = min(max(w, 0.0), 1.0) if clamp else max(w, 0.0)
            return ys[i] + w * (ys[i + 1] - ys[i])

        def coefficients(d: float, p: float):
            n = d + p
            i = min(max(bisect.bisect_right(rest_x, n) - 1, 0), max(len(rest_x) - 2, 0))
            ld = math.log(max(d, 1.0))
            j = min(max(bisect.bisect_right(att_x, ld) - 1, 0), max(len(att_x) - 2, 0))
            a = [at(rest_x, ys, i, n, False) if n > 0 else 0.0 for ys in rest]
            b = [at(att_x, ys, j, ld, True) if d > 0 else 0.0 for ys in att]
            return a, b, pre

        return coefficients

    def one(self, estimate: str):
        """A plain-Python function (decodes, context_tokens, prefill_tokens) -> seconds of one step, for callers
        that price steps one at a time (the simulation); the same numbers as floor_s / predicted_s (None: no
        prediction)."""
        if estimate != "floor" and not self._predicts:
            return None
        coefficients = self._coefficients(estimate)

        def time_s(d: float, c: float, p: float) -> float:
            a, b, pre = coefficients(d, p)
            return max(a[k] + b[k] * c + pre[k] * p for k in range(len(a)))

        return time_s

    def run(self, estimate: str):
        """A function (decodes, first context, steps) -> seconds of each of `steps` decode-only steps whose summed
        context grows by `decodes` a step: at a fixed batch every term is a + b x context, so one evaluation of
        the coefficients serves the whole run (None: no prediction)."""
        if estimate != "floor" and not self._predicts:
            return None
        coefficients = self._coefficients(estimate)

        def times_s(d: float, c0: float, steps: int) -> np.ndarray:
            a, b, _ = coefficients(d, 0.0)
            contexts = c0 + d * np.arange(steps, dtype=np.float64)
            out = a[0] + b[0] * contexts
            for k in range(1, len(a)):
                out = np.maximum(out, a[k] + b[k] * contexts)
            return out

        return times_s


def _lerp(xs: np.ndarray, ys: np.ndarray, x: np.ndarray, clamp: bool = False) -> np.ndarray:
    """Piecewise-linear ys[:, k] at x: clamped at the ends (`clamp`), else clamped below and extended from the last
    two points above."""
    if len(xs) == 1:
        return np.broadcast_to(ys[0], (len(x), ys.shape[1]))
    i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(xs) - 2)
    w = (x - xs[i]) / (xs[i + 1] - xs[i])
    w = np.clip(w, 0.0, 1.0) if clamp else np.maximum(w, 0.0)
    return ys[i] + w[:, None] * (ys[i + 1] - ys[i])


def _scaled(parts: _Parts, k: float) -> _Parts:
    return _Parts(parts.compute_s * k, parts.memory_s * k, parts.comm_s * k,
                  None if parts.predicted_s is None else parts.predicted_s * k)


def _array(parts: list[_Parts]) -> np.ndarray:
    return np.asarray([[p.compute_s, p.memory_s, p.comm_s, np.nan if p.predicted_s is None else p.predicted_s]
                       for p in parts], dtype=np.float64)


def step_times(model: ModelSpec, gpu: GpuSpec, deployment: Deployment, context_len: int, prompt_len: int,
               max_decodes: int, max_tokens: int) -> StepTimes:
    """The step-time function for a deployment: issue 29's StepTable where it exists, else ReportStepTimes."""
    return ReportStepTimes.build(model, gpu, deployment, context_len, prompt_len, max_decodes, max_tokens)

"""Serving metrics as the benchmark harnesses define them (vllm-project/vllm, vllm/benchmarks/serve.py,
`calculate_metrics`, at commit 009e6d4a; InferenceX's utils/bench_serving/benchmark_serving.py is a copy):

- TTFT: from sending a request to its first output token.
- TPOT: per request, (E2E - TTFT) / (output tokens - 1), over requests with more than one output token (the
  first token excluded).
- ITL: every gap between consecutive output tokens of every request, pooled.
- E2E (E2EL): from sending a request to its last token.
- output throughput: all output tokens over the benchmark's duration (first send to last token).
- percentiles: numpy.percentile's default (linear interpolation), p50 is the median.
Seconds inside (the harnesses print milliseconds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PERCENTILES = (50.0, 90.0, 99.0)


@dataclass(frozen=True)
class Distribution:
    """Mean and the p50 / p90 / p99 of one metric, seconds."""

    mean_s: float
    p50_s: float
    p90_s: float
    p99_s: float

    @classmethod
    def of(cls, values: np.ndarray, weights: np.ndarray | None = None) -> "Distribution":
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0:
            return cls(0.0, 0.0, 0.0, 0.0)
        if weights is None:
            p = np.percentile(values, PERCENTILES)
            return cls(float(values.mean()), *map(float, p))
        weights = np.asarray(weights, dtype=np.float64)
        return cls(float(np.average(values, weights=weights)), *map(float, weighted_percentile(values, weights,
                                                                                                 PERCENTILES)))


def weighted_percentile(values: np.ndarray, weights: np.ndarray, percentiles) -> np.ndarray:
    """numpy.percentile's linear interpolation on `values` each repeated `weights` times (whole weights)."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    keep = w > 0
    v, w = v[keep], w[keep]
    ends = np.cumsum(w)                           # the last (0-based + 1) rank each value covers
    total = ends[-1]
    out = []
    for q in percentiles:
        rank = q / 100.0 * (total - 1)            # numpy's virtual index
        lo, hi = int(np.floor(rank)), int(np.ceil(rank))
        v_lo = v[np.searchsorted(ends, lo + 1)]
        v_hi = v[np.searchsorted(ends, hi + 1)]
        out.append(v_lo + (rank - lo) * (v_hi - v_lo))
    return np.asarray(out)


def tpot_of(e2e_s: np.ndarray, ttft_s: np.ndarray, output_len: np.ndarray) -> np.ndarray:
    """Per-request TPOT of the requests with more than one output token."""
    many = output_len > 1
    return (e2e_s[many] - ttft_s[many]) / (output_len[many] - 1)

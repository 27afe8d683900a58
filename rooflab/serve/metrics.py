"""Serving metrics as the benchmark harnesses define them (vllm-project/vllm, vllm/benchmarks/serve.py,
`calculate_metrics`, at commit 009e6d4a; InferenceX's utils/bench_serving/benchmark_serving.py is a copy):

- TTFT: from sending a request to its first output token.
- TPOT: per request, (E2E - TTFT) / (output tokens - 1), over requests with more than one output token (the
  first token excluded).
- ITL: every gap between consecutive output tokens of every request, pooled.
- E2E (E2EL): from sending a request to its last token.
- output throughput: all output tokens over the benchmark's duration (first send to last token).
- percentiles: numpy.percentile's default (linear interpolation), p50 is the median.
Seconds inside (the harnesses print milliseconds). `Simulation` is what a simulated run reports
(rooflab.serve.simulate).
"""

from __future__ import annotations

import dataclasses
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


@dataclass(frozen=True)
class Simulation:
    """One simulated benchmark run: per-metric distributions, throughput, and what the scheduler did."""

    estimate: str
    load: str
    num_requests: int
    duration_s: float
    ttft: Distribution
    tpot: Distribution
    itl: Distribution
    e2e: Distribution
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    requests_per_s: float
    preemptions: int
    steps: int
    mean_decodes_per_step: float
    num_gpus: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_frame(self):
        import pandas as pd

        rows = []
        for metric in ("ttft", "tpot", "itl", "e2e"):
            d = getattr(self, metric)
            for stat in ("mean", "p50", "p90", "p99"):
                rows.append({"estimate": self.estimate, "load": self.load, "metric": f"{metric}_s",
                             "statistic": stat, "value": getattr(d, f"{stat}_s")})
        for metric in ("output_tokens_per_s", "output_tokens_per_s_per_gpu", "requests_per_s"):
            rows.append({"estimate": self.estimate, "load": self.load, "metric": metric, "statistic": "",
                         "value": getattr(self, metric)})
        return pd.DataFrame(rows)

"""A serving workload: request lengths and how requests arrive, as the benchmark harnesses draw them.

Lengths (tokens, whole numbers >= 1):

- `Lengths.fixed(L)`: every request L (trtllm-bench's token-norm-dist with stdev 0).
- `Lengths.vllm_random(L, range_ratio)`: `vllm bench serve --dataset-name random` draws each length uniformly
  from the whole numbers in [floor(L (1 - r)), ceil(L (1 + r))] (vllm-project/vllm, vllm/benchmarks/datasets.py,
  `RandomDataset.get_sampling_params`, at commit 009e6d4a; the output's low end at least 1).
- `Lengths.inferencex_random(L, range_ratio)`: InferenceX's client (SemiAnalysisAI/InferenceX,
  utils/bench_serving/benchmark_serving.py, `sample_random_requests`, at 843c6254) and SGLang's bench_serving draw
  from [int(L r), L] (r = 0: [1, L] after SGLang's floor of one token).
- `Lengths.from_file(path)`: one length a line (or a CSV's first column): an empirical distribution.

Arrivals:

- `ClosedLoop(n)`: `--max-concurrency n` with every request queued at once: a finished request is replaced at once.
- `RequestRate(rate, burstiness)`: `--request-rate` with `--burstiness`: gaps drawn from a gamma distribution of
  shape b and scale 1 / (rate b) (b = 1: Poisson), then rescaled so the last request is sent at N / rate, as
  vllm/benchmarks/serve.py `get_request` does (commit 009e6d4a). rate inf sends every request at time 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ..cost.common import real_number, whole_number
from ..errors import InputError, SpecError, shown
from ..limits import MAX_TOKENS

#: Most requests one simulation takes.
MAX_REQUESTS = 10_000_000


@dataclass(frozen=True)
class Lengths:
    """A length distribution: uniform over the whole numbers [low, high], or the empirical `values`."""

    low: int
    high: int
    values: Optional[tuple[int, ...]] = None
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "low", whole_number(self.low, "shortest length", maximum=MAX_TOKENS))
        object.__setattr__(self, "high", whole_number(self.high, "longest length", maximum=MAX_TOKENS))
        if self.high < self.low:
            raise InputError(f"length range [{self.low:,}, {self.high:,}] is empty")

    @classmethod
    def fixed(cls, length: int) -> "Lengths":
        length = whole_number(length, "length", maximum=MAX_TOKENS)
        return cls(length, length, label=f"{length}")

    @classmethod
    def vllm_random(cls, length: int, range_ratio: float = 0.0) -> "Lengths":
        length = whole_number(length, "length", maximum=MAX_TOKENS)
        r = real_number(range_ratio, "--random-range-ratio", 0, 1)
        if r >= 1:
            raise InputError("--random-range-ratio must be below 1 (vllm bench serve refuses 1)")
        return cls(max(1, math.floor(length * (1 - r))), math.ceil(length * (1 + r)),
                   label=f"{length} +-{r:g}")

    @classmethod
    def inferencex_random(cls, length: int, range_ratio: float = 0.0) -> "Lengths":
        length = whole_number(length, "length", maximum=MAX_TOKENS)
        r = real_number(range_ratio, "--random-range-ratio", 0, 1)
        return cls(max(1, int(length * r)), length, label=f"[{max(1, int(length * r))}, {length}]")

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "Lengths":
        """One whole number a line (a CSV: its first column; a header line and '#' comments skipped)."""
        path = Path(path)
        values = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            cell = line.split(",")[0].strip()
            if not cell or cell.startswith("#"):
                continue
            try:
                value = int(cell)
            except ValueError:
                if not values and number == 1:
                    continue                      # a header
                raise SpecError(str(path), f"line {number}", cell, "is not a whole number of tokens") from None
            if not 1 <= value <= MAX_TOKENS:
                raise SpecError(str(path), f"line {number}", value, f"is outside [1, {MAX_TOKENS:,}] tokens")
            values.append(value)
        if not values:
            raise SpecError(str(path), None, None, "holds no lengths")
        return cls(min(values), max(values), tuple(values), label=path.name)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else (self.low + self.high) / 2

    def moment(self, power: int) -> float:
        """E[L^power] (exact for the uniform whole numbers)."""
        if self.values:
            return float(np.mean(np.asarray(self.values, dtype=np.float64) ** power))
        xs = np.arange(self.low, self.high + 1, dtype=np.float64) if self.high - self.low < 200_000 else \
            np.linspace(self.low, self.high, 200_001)
        return float(np.mean(xs ** power))

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.values:
            return rng.choice(np.asarray(self.values, dtype=np.int64), size=n)
        return rng.integers(self.low, self.high + 1, size=n, dtype=np.int64)

    def describe(self) -> str:
        return self.label or (f"{self.low}" if self.low == self.high else f"[{self.low}, {self.high}]")


@dataclass(frozen=True)
class Workload:
    """Input and output lengths of the requests (tokens)."""

    input: Lengths
    output: Lengths

    def __post_init__(self) -> None:
        for name in ("input", "output"):
            if not isinstance(getattr(self, name), Lengths):
                raise InputError(f"{name} must be rooflab.serve.Lengths, got {shown(getattr(self, name))}")

    @classmethod
    def fixed(cls, input_len: int, output_len: int) -> "Workload":
        return cls(Lengths.fixed(input_len), Lengths.fixed(output_len))

    @property
    def max_len(self) -> int:
        return self.input.high + self.output.high

    def describe(self) -> str:
        return f"{self.input.describe()} in / {self.output.describe()} out"


@dataclass(frozen=True)
class ClosedLoop:
    """`--max-concurrency n`, every request queued: n requests in flight, each replaced when it finishes."""

    concurrency: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "concurrency", whole_number(self.concurrency, "concurrency (--max-concurrency)",
                                                             maximum=MAX_TOKENS))

    def describe(self) -> str:
        return f"concurrency {self.concurrency}"


@dataclass(frozen=True)
class RequestRate:
    """`--request-rate` (requests/s; inf: all at once) with `--burstiness` (1: Poisson; gamma otherwise);
    `max_concurrency` caps requests in flight as `--max-concurrency` does beside a rate."""

    rate_per_s: float
    burstiness: float = 1.0
    max_concurrency: Optional[int] = None

    def __post_init__(self) -> None:
        rate = self.rate_per_s
        if not (isinstance(rate, float) and math.isinf(rate) and rate > 0):
            object.__setattr__(self, "rate_per_s", real_number(rate, "request rate (--request-rate)", 0, 1e9,
                                                               lo_open=True))
        object.__setattr__(self, "burstiness", real_number(self.burstiness, "--burstiness", 0, 1e6, lo_open=True))
        if self.max_concurrency is not None:
            object.__setattr__(self, "max_concurrency", whole_number(self.max_concurrency, "--max-concurrency",
                                                                     maximum=MAX_TOKENS))

    def arrivals(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Send times (s) of n requests, as vllm bench serve's get_request computes them."""
        n = whole_number(n, "requests (--num-prompts)", maximum=MAX_REQUESTS)
        if math.isinf(self.rate_per_s):
            return np.zeros(n)
        theta = 1.0 / (self.rate_per_s * self.burstiness)
        gaps = rng.gamma(shape=self.burstiness, scale=theta, size=n)
        times = np.cumsum(gaps)
        if times[-1] > 0:
            times *= (n / self.rate_per_s) / times[-1]
        return times

    def describe(self) -> str:
        rate = "inf" if math.isinf(self.rate_per_s) else f"{self.rate_per_s:g}/s"
        kind = "Poisson" if self.burstiness == 1 else f"gamma, burstiness {self.burstiness:g}"
        return f"request rate {rate} ({kind})"


Load = Union[ClosedLoop, RequestRate]

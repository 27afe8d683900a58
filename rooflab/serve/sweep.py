"""Sweeps over concurrency (the throughput-interactivity curve) and the SLO search.

`concurrency_sweep` solves the closed form (steady.py) at each concurrency from 1 to the running limit (the
scheduler's and the KV cache's): output tokens/s per GPU against tokens/s per user (1 / TPOT), floors beside
predictions. `slo_search` finds the largest concurrency per replica whose TTFT and TPOT stay within the SLOs
(mean figures of the closed form; both only grow with concurrency, so a bisection), and the replicas and GPUs a
target request rate needs: ceil(rate / (requests/s of one replica at that concurrency)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ..cost.common import real_number, whole_number
from ..errors import InputError
from ..limits import MAX_TOKENS
from .replica import Replica
from .steady import ESTIMATES, Steady, SteadyState, solve, steady_state

#: The columns of a sweep's to_frame(), after replica and estimate.
COLUMNS = ("concurrency", "running", "decodes_per_step", "ttft_s", "tpot_s", "itl_s", "e2e_s", "requests_per_s",
           "output_tokens_per_s", "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_user", "kv_bound",
           "prefill_bound")


def default_concurrencies(limit: int, top: Optional[int] = None) -> list[int]:
    """1, 2, 4, ... up to `top` (default the running limit), and the limit itself."""
    top = limit if top is None else min(top, max(limit, 1) * 4)
    out, c = [], 1
    while c < top:
        out.append(c)
        c *= 2
    return sorted(set(out + [max(1, top)]))


@dataclass(frozen=True)
class ConcurrencySweep:
    """Steady states of one replica at each concurrency."""

    label: str
    gpu: str
    num_gpus: int
    states: tuple[SteadyState, ...]
    kv_limit: int
    running_limit: int
    provenance: str = ""              # where the predictions come from, or why there are none

    def series(self, estimate: str) -> list[Steady]:
        return [s.floor if estimate == "floor" else s.predicted for s in self.states
                if (s.floor if estimate == "floor" else s.predicted) is not None]

    def records(self) -> list[dict]:
        """One dict a (concurrency, estimate): to_frame()'s rows, without pandas (the CLI's table)."""
        rows = []
        for state in self.states:
            for steady in (state.floor, state.predicted):
                if steady is None:
                    continue
                row = {"replica": self.label, "gpu": self.gpu, "num_gpus": self.num_gpus,
                       "estimate": steady.estimate}
                row.update({k: getattr(steady, k) for k in COLUMNS})
                rows.append(row)
        return rows

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(self.records(), columns=["replica", "gpu", "num_gpus", "estimate", *COLUMNS])


def concurrency_sweep(replica: Replica, concurrencies: Optional[Sequence[int]] = None) -> ConcurrencySweep:
    """The curve at `concurrencies` (default: powers of two from 1 to the running limit, and the limit)."""
    limit = replica.running_limit
    if limit < 1:
        raise InputError(f"no request fits the KV cache ({replica.describe()})")
    grid = default_concurrencies(limit) if concurrencies is None else \
        [whole_number(c, "concurrency", maximum=MAX_TOKENS) for c in concurrencies]
    if not grid:
        raise InputError("concurrency: give at least one")
    states = tuple(steady_state(replica, c) for c in grid)
    return ConcurrencySweep(replica.describe(), replica.gpu.name, replica.num_gpus, states, replica.kv_limit, limit,
                            getattr(replica.steps, "provenance", ""))


@dataclass(frozen=True)
class SloAnswer:
    """The largest concurrency per replica within the SLOs, and what a target rate needs (None: nothing meets)."""

    estimate: str
    ttft_slo_s: Optional[float]
    tpot_slo_s: Optional[float]
    concurrency: Optional[int]
    state: Optional[Steady]
    target_requests_per_s: Optional[float]
    replicas: Optional[int]
    gpus: Optional[int]
    gpus_per_replica: int
    binding: str                      # what stops a larger concurrency: 'ttft', 'tpot', 'kv', 'running limit' or 'max concurrency'

    def to_dict(self) -> dict:
        import dataclasses

        out = dataclasses.asdict(self)
        return out

    def to_frame(self):
        import pandas as pd

        row = {k: v for k, v in self.to_dict().items() if k != "state"}
        if self.state is not None:
            row.update({f"at_{k}": getattr(self.state, k) for k in ("ttft_s", "tpot_s", "e2e_s", "requests_per_s",
                                                                      "output_tokens_per_s_per_gpu")})
        return pd.DataFrame([row])


def slo_search(replica: Replica, ttft_slo_s: Optional[float] = None, tpot_slo_s: Optional[float] = None,
               target_requests_per_s: Optional[float] = None, estimate: str = "predicted",
               max_concurrency: Optional[int] = None) -> Optional[SloAnswer]:
    """The largest concurrency (1 .. the running limit, or `max_concurrency` if smaller) whose mean TTFT <=
    ttft_slo_s and TPOT <= tpot_slo_s, by `estimate` (None where there is no prediction); with a target rate, the
    replicas and GPUs it needs."""
    if estimate not in ESTIMATES:
        raise InputError(f"estimate must be floor or predicted, got {estimate!r}")
    if ttft_slo_s is None and tpot_slo_s is None:
        raise InputError("give --ttft-slo, --tpot-slo or both")
    ttft = None if ttft_slo_s is None else real_number(ttft_slo_s, "--ttft-slo (s)", 0, 1e6, lo_open=True)
    tpot = None if tpot_slo_s is None else real_number(tpot_slo_s, "--tpot-slo (s)", 0, 1e6, lo_open=True)
    rate = None if target_requests_per_s is None else real_number(target_requests_per_s, "--target-rate", 0, 1e12,
                                                                  lo_open=True)

    def meets(c: int):
        s = solve(replica, c, estimate)
        if s is None:
            return None, None
        why = "ttft" if ttft is not None and s.ttft_s > ttft else "tpot" if tpot is not None and s.tpot_s > tpot \
            else ""
        return s, why

    limit = replica.running_limit
    if max_concurrency is not None:
        limit = min(limit, whole_number(max_concurrency, "--max-concurrency", maximum=MAX_TOKENS))
    first, why = meets(1)
    if first is None:
        return None
    gpus = replica.num_gpus
    if why:
        return SloAnswer(estimate, ttft, tpot, None, None, rate, None, None, gpus, why)
    lo, hi = 1, limit
    top, top_why = meets(hi)
    if not top_why:
        lo, best = hi, top
        binding = ("kv" if limit == replica.kv_limit else "running limit" if limit == replica.running_limit
                   else "max concurrency")
    else:
        best, binding = first, top_why
        while lo < hi - 1:
            mid = (lo + hi) // 2
            s, w = meets(mid)
            if w:
                hi, binding = mid, w
            else:
                lo, best = mid, s
    replicas = None if rate is None else max(1, math.ceil(rate / best.requests_per_s - 1e-12))
    return SloAnswer(estimate, ttft, tpot, lo, best, rate, replicas, None if replicas is None else replicas * gpus,
                     gpus, binding)

"""The fixed-concurrency steady state in closed form: continuous batching with chunked prefill, as a formula.

A closed loop of c requests (`--max-concurrency c`, every request queued): R = min(c, max_num_seqs, KV limit)
run at once, the rest wait (per attention rank under data-parallel attention: below). Of the running ones, D
decode and W are in their prefill. Per request: P prompt
tokens computed (after prefix-cache hits), O output tokens, the first from the prefill's last step, O - 1 decode
steps. With τ the mean step time a decoding request sees and T_pre the time from admission to the first token:

    completions per step   m = D / (O - 1)                    (each decode step finishes 1 / (O - 1) of a request)
    throughput             X = D / ((O - 1) τ)   requests/s;  output tokens/s = X E[O]
    Little's law           R = D + X T_pre   ->   D = R / (1 + T_pre / ((O - 1) τ))
    queue (c > R)          T_queue = (c - R) / X

The n requests that enter in a step (Poisson with mean m; a closed loop's completions are nearly independent once
lengths vary) bring n P prefill tokens:

    mixed (vLLM V1, SGLang --enable-mixed-chunk, TensorRT-LLM)   a step holds D decodes and min(B - D, n P)
        prefill tokens (B: --max-num-batched-tokens); τ = E_n[t(D, D L, min(B - D, n P))]; a prompt longer than
        B - D takes ceil(n P / (B - D)) steps; past B (O - 1) / (P + O - 1) decodes the prefill budget binds.
    apart (SGLang's default, vLLM V0 without chunked prefill)   a decode step t(D, D L, 0), then, when n > 0,
        prefill steps of up to B tokens
        each (decodes wait): τ = t(D, D L, 0) + E_n[ceil(n P / B) t(0, 0, min(B, n P))].

Speculative decoding (Deployment.speculative: k drafts verified a step at acceptance a): each decode step scores
q = k + 1 tokens a sequence (the step table's q_len; its draft's cost with it) and emits E = (1 - a^(k+1)) / (1 - a)
tokens in expectation, so a request takes (O - 1) / E decode steps, the decodes use D q of the step's token budget,
TPOT = τ / E and tok/s/user = E / τ (vllm bench serve's TPOT: (E2E - TTFT) / (O - 1)); ITL stays τ, a streamed
chunk a step. E is the mean: the spread of accepted lengths is not priced, except that a request with tokens left
takes at least one step (a short output).

Data-parallel attention over N ranks (SGLang's --enable-dp-attention --dp N; Replica.ranks): requests are dealt
evenly, each rank schedules its own into its own KV pool (Replica.rank_kv_limit, rank_running_limit; SGLang splits
--max-running-requests and --chunked-prefill-size over the ranks), and the ranks step together (the MoE's
collectives wait for every rank), so every request moves at the busiest rank's pace: the equations above run for
R = min(ceil(c / N), the rank's limit), and the throughput counts min(c, N R) requests running. A step's prefill
arrivals are those of every rank with requests (Poisson of N m), the busiest rank's ceil(n / N) of them set its prefill: one rank
prefilling makes every rank's step a prefill step (sglang 0.5.12 srt/managers/scheduler_dp_attn_mixin.py:112-113
gathers is_extend_in_batch over the DP group). D, the prefill tokens a step and the step's time are a rank's; the
dealing's imbalance past the ceiling (SGLang's default balancer is round-robin, blind to load:
srt/managers/data_parallel_controller.py:571-585, so varied lengths drift the ranks apart) and the idle ranks' dummy
steps are not priced.

L is the mean context a decode step reads (Replica.mean_context_tokens). T_pre is the size-biased mean of the
prefill steps a request waits for (a request is likelier to enter in a step with many). The equations are
solved by fixed-point iteration. Metrics as vllm bench serve defines them (rooflab.serve.metrics): TTFT =
T_queue + T_pre, TPOT = τ, ITL mean τ, E2E = TTFT + E[O - 1] τ; per user: 1 / TPOT (InferenceX's interactivity);
under speculative decoding as below.

Preemption: when R would exceed the pages the KV cache holds, R is held at the KV limit (Replica.kv_limit) and the
rest queue; vLLM gets there by preempting (recomputing) the request scheduled last, which the simulation models
and this closed form does not price (the recomputed prefill is left out; `kv_bound` says when it applies).
Each figure comes twice: from the step floors (physical, for this schedule) and from the step predictions.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..cost.common import whole_number
from ..limits import MAX_TOKENS
from .replica import Replica
from .scheduler import Scheduler

ESTIMATES = ("floor", "predicted")


@dataclass(frozen=True)
class Steady:
    """The steady state of one estimate (floor or predicted) at one concurrency; seconds and tokens/s."""

    estimate: str
    concurrency: int
    running: float                    # R: requests running at once (over every attention rank)
    decodes_per_step: float           # D: one rank's (the busiest) decodes a step
    prefill_tokens_per_step: float
    step_s: float                     # τ: the mean step a decoding request sees
    ttft_s: float
    tpot_s: float
    itl_s: float
    e2e_s: float
    queue_s: float
    requests_per_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s_per_user: float
    kv_bound: bool                    # R held at the KV limit (preemption would occur beyond it)
    prefill_bound: bool               # the step's token budget limits the prefills


@dataclass(frozen=True)
class SteadyState:
    """Floor and prediction at one concurrency (`predicted` None where the GPU lacks fits)."""

    replica_label: str
    num_gpus: int
    floor: Steady
    predicted: Optional[Steady]
    kv_limit: int
    running_limit: int

    def to_dict(self) -> dict:
        return {"replica": self.replica_label, "num_gpus": self.num_gpus, "kv_limit": self.kv_limit,
                "running_limit": self.running_limit, "floor": dataclasses.asdict(self.floor),
                "predicted": None if self.predicted is None else dataclasses.asdict(self.predicted)}

    def to_frame(self):
        import pandas as pd

        rows = [dataclasses.asdict(s) for s in (self.floor, self.predicted) if s is not None]
        frame = pd.DataFrame(rows)
        frame.insert(0, "replica", self.replica_label)
        frame["num_gpus"] = self.num_gpus
        return frame


def _step_fn(replica: Replica, estimate: str):
    if estimate == "floor":
        return replica.steps.floor_s
    fn = replica.steps.predicted_s
    probe = fn(np.array([1.0]), np.array([1.0]), np.array([0.0]))
    return None if probe is None else fn


def _poisson(m: float, top: int) -> tuple[np.ndarray, np.ndarray]:
    """n = 0..top and P(n) for a Poisson of mean m, the tail folded into top."""
    n = np.arange(top + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        logp = n * math.log(m) - m - np.array([math.lgamma(k + 1) for k in range(top + 1)]) if m > 0 else \
            np.where(n == 0, 0.0, -np.inf)
    p = np.exp(logp)
    p[-1] += max(0.0, 1.0 - p.sum())
    return n, p


def _mix(t, scheduler: Scheduler, d: float, context: float, prompt: float,
         decodes: float, q: int = 1, ranks: float = 1) -> tuple[float, float, float, bool]:
    """(τ, T_pre, prefill tokens a step, prefill-bound) at D decodes, `decodes` the decode steps a request takes
    (E[O] - 1, over E under speculative decoding), each decode `q` tokens of the step's budget. Over `ranks`
    attention ranks with requests (those that step together, at most the deployment's) the step's arrivals are
    theirs (Poisson of N m) and the busiest rank's ceil(n / N) prefills set the step (one rank's prefill makes every
    rank's step a prefill step). Mixed steps: a step holds at most its room of prefill tokens; what a step's
    arrivals bring past it is a backlog the steps after work off, so every step's room takes its share of the spill
    (the steps carry the prompts' tokens, min(room, m P) a step on average)."""
    budget = float(scheduler.max_num_batched_tokens)
    m = d / max(1e-9, decodes) * ranks                          # arrivals a step over the ranks
    top = int(max(8, m + 8 * math.sqrt(m + 1) + 2))
    total, p = _poisson(m, top)
    n = np.ceil(total / max(1.0, ranks))                        # the busiest rank's
    if scheduler.mixed:
        room = max(1.0, budget - d * q)
        tokens = np.minimum(room, n * prompt)
        spill = max(0.0, min(room, float(np.sum(p * n)) * prompt) - float(np.sum(p * tokens)))
        free = room - tokens                                            # the room each step has left
        if spill > 0 and float(np.sum(p * free)) > 0:                   # the backlog fills it, in proportion
            tokens = tokens + free * min(1.0, spill / float(np.sum(p * free)))
            tokens = np.where(tokens < 1.0, 0.0, tokens)                # less than a token: none
        steps = np.maximum(1.0, np.ceil(n * prompt / room))
        t_n = np.asarray(t(np.full_like(n, d), np.full_like(n, d * context), tokens), dtype=np.float64)
        tau = float(np.sum(p * t_n))
        wait = (steps + 1) / 2 * t_n                      # a request's share of a multi-step prefill
        bound = m / ranks * prompt > room                  # a rank's prefill tokens past its room
    else:
        tokens = np.minimum(budget, n * prompt)
        steps = np.where(n > 0, np.ceil(n * prompt / budget), 0.0)
        t_pre = np.asarray(t(np.zeros_like(n), np.zeros_like(n), tokens), dtype=np.float64) * steps
        t_dec = float(np.asarray(t(np.array([d]), np.array([d * context]), np.array([0.0])))[0]) if d > 0 else 0.0
        tau = t_dec + float(np.sum(p * t_pre))
        wait = t_pre
        bound = False
    size = total * p                                            # a request is likelier in a step with many
    t_first = float(np.sum(size * wait) / np.sum(size)) if np.sum(size) > 0 else float(wait[min(1, len(wait) - 1)])
    return tau, t_first, float(np.sum(p * tokens)), bool(bound)


def solve(replica: Replica, concurrency: int, estimate: str = "predicted") -> Optional[Steady]:
    """One estimate's steady state at `concurrency` (None: no prediction for this GPU)."""
    concurrency = whole_number(concurrency, "concurrency (--max-concurrency)", maximum=MAX_TOKENS)
    t = _step_fn(replica, estimate)
    if t is None:
        return None
    w = replica.workload
    spec = replica.deployment.speculative
    per_step, q = (spec.tokens_per_step, spec.query_tokens) if spec is not None else (1.0, 1)
    left = max(w.output.mean - 1.0, 1e-9)                         # tokens a request decodes
    decodes = max(left / per_step, min(left, 1.0))                # decode steps a request takes: one at least
    prompt = replica.scheduler.prefill_tokens(w.input.mean)
    context = replica.mean_context_tokens
    ranks = replica.ranks
    if replica.rank_running_limit < 1:
        raise_kv(replica)
    running = float(min(-(-concurrency // ranks), replica.rank_running_limit))     # the busiest rank's
    d = running * decodes / (decodes + 1.0)
    budget = replica.scheduler.max_num_batched_tokens
    cap = budget * decodes / (prompt + decodes * q) if replica.scheduler.mixed else float("inf")
    everyone = min(float(concurrency), running * ranks)          # running over the ranks
    active = everyone / running                                    # the ranks with requests
    for _ in range(200):
        tau, t_pre, p_step, bound = _mix(t, replica.scheduler, d, context, prompt, decodes, q, active)
        target = min(running / (1.0 + t_pre / (decodes * tau)), cap, running)
        if abs(target - d) < 1e-9 * max(1.0, d):
            d = target
            break
        d = 0.5 * d + 0.5 * target
    tau, t_pre, p_step, bound = _mix(t, replica.scheduler, d, context, prompt, decodes, q, active)
    x = d / (decodes * tau) * active                               # requests/s over the ranks
    queue = (concurrency - everyone) / x if concurrency > everyone else 0.0
    # Little's law over the running requests: those past the D decoding wait in prefill (more than _mix's T_pre where
    # the step's token budget binds the decodes)
    t_pre = max(t_pre, everyone / x - decodes * tau)
    ttft = queue + t_pre
    e2e = ttft + decodes * tau
    out = concurrency / e2e * w.output.mean
    tpot = decodes * tau / left
    return Steady(estimate, concurrency, everyone, d, p_step, tau, ttft, tpot, tau, e2e, queue, concurrency / e2e,
                  out, out / replica.num_gpus, 1.0 / tpot,
                  everyone < concurrency and running == replica.rank_kv_limit,
                  bool(bound or d >= cap * (1 - 1e-6)))


def raise_kv(replica: Replica) -> None:
    from ..errors import InputError

    raise InputError(f"no request fits: the KV cache holds {replica.kv_tokens:,} tokens, a request needs "
                     f"{replica.mean_context_tokens:,.0f} on average ({replica.describe()})")


def steady_state(replica: Replica, concurrency: int) -> SteadyState:
    """Floor and prediction at `concurrency`."""
    floor = solve(replica, concurrency, "floor")
    return SteadyState(replica.describe(), replica.num_gpus, floor, solve(replica, concurrency, "predicted"),
                       replica.kv_limit, replica.running_limit)

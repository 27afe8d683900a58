"""A discrete-event simulation of an engine's scheduler under a request rate or a closed-loop concurrency.

Built on SimPy (pip `simpy`, MIT, pure Python, maintained since 2002, version 4): its processes and events are the
clients, the arrivals and the engine loop, and its clock orders them, so rooflab keeps no event loop of its own.
Chosen over salabim and ciw because it has no dependencies and no animation or queue-network layer to carry,
and because a scheduler is naturally one process that yields the time of each step.

The engine process repeats: schedule a step as the engine would (rooflab.serve.scheduler), then wait its time from
the step-time function. Scheduling, as vLLM V1 does it (mixed): running decodes first (one token each), an
unfinished prompt's next chunk, then waiting requests in arrival order while the token budget, the running limit
and free KV pages allow. SGLang without --enable-mixed-chunk: a prefill step (new requests, up to
--chunked-prefill-size tokens) whenever one can be admitted, else a decode step of everything running.
KV pages: a request holds ceil(tokens / page_size) pages; when a decode cannot get a page, the request scheduled
last is preempted (vLLM's recompute: its pages freed, back to the front of the queue, its prompt and the tokens
it had generated prefilled again), counted in `preemptions`; no waiting request is admitted again until the running
decodes have taken a step (vLLM V1 schedules no waiting request in a step that preempted; SGLang retracts decodes
and raises its reserve for them), which is what keeps a full cache from re-admitting its victim forever.

Runs of decode-only steps between events (an arrival, a finish, a page shortage) are advanced together, their
step times from one vectorised call, which is what makes 10,000 requests take about a second
(benchmarks/serve_simulation.py). Metrics per rooflab.serve.metrics (vllm bench serve's definitions); ITL pools
every decode step's gap once per request that received a token at its end.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass
from typing import Optional

import numpy as np
import simpy

from ..cost.common import whole_number
from ..errors import InputError, shown
from .metrics import Distribution, tpot_of
from .replica import Replica
from .steady import ESTIMATES
from .workload import MAX_REQUESTS, ClosedLoop, RequestRate

#: Decode steps advanced in one go at most (bounds the vectorised call).
MAX_RUN = 4096


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


class _Engine:
    """The engine process and its state (arrays per request; `running` in admission order)."""

    def __init__(self, env: simpy.Environment, replica: Replica, step, inputs: np.ndarray, outputs: np.ndarray,
                 one=None, run=None):
        self.env, self.r, self.step = env, replica, step
        self.one = one or (lambda d, c, p: float(step(np.array([d]), np.array([c]), np.array([p]))[0]))
        self.run_times = run or (lambda d, c0, k: np.asarray(step(np.full(k, d), c0 + d * np.arange(k, dtype=np.float64),
                                                                 np.zeros(k)), dtype=np.float64))
        s = replica.scheduler
        self.budget = s.max_num_batched_tokens
        self.max_running = replica.scheduler.running_cap
        self.mixed = s.mixed
        self.page = replica.page_size
        self.free_pages = replica.kv_tokens // self.page
        n = len(inputs)
        self.prompt = inputs.astype(np.int64)                       # KV tokens of the prompt
        self.compute = np.maximum(1, np.round(inputs * (1 - s.prefix_cache_hit_rate))).astype(np.int64)
        self.cached = self.prompt - self.compute
        self.out = outputs.astype(np.int64)
        self.todo = self.compute.copy()                               # prompt tokens still to compute
        self.gen = np.zeros(n, np.int64)                              # output tokens emitted
        self.pages = np.zeros(n, np.int64)
        self.sent = np.full(n, np.nan)
        self.first = np.full(n, np.nan)
        self.done_at = np.full(n, np.nan)
        self.events: list[Optional[simpy.Event]] = [None] * n
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.wake: Optional[simpy.Event] = None
        self.next_arrival = math.inf                                  # set by the arrival process
        self.preemptions = 0
        self.hold_admission = False                                   # set by a preemption until decodes advance
        self.itl_gaps: list = []                                      # arrays (decode runs) and one-gap lists
        self.itl_counts: list[int] = []                               # gaps of each entry of itl_gaps
        self.itl_weights: list[int] = []                              # requests that received a token at each
        self.steps = 0
        self.decode_steps_tokens = 0
        self.last_token_step_end = 0.0
        self.finished = 0

    # ---- clients
    def submit(self, i: int) -> simpy.Event:
        self.sent[i] = self.env.now
        self.events[i] = ev = self.env.event()
        self.waiting.append(i)
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()
        return ev

    # ---- pages
    def _pages_for(self, tokens) -> np.ndarray:
        return -(-np.asarray(tokens, np.int64) // self.page)

    def _kv_len(self, i: int) -> int:
        return int(self.prompt[i] - self.todo[i] + self.gen[i] - (1 if self.gen[i] else 0))

    def _preempt(self) -> None:
        i = self.running.pop()
        self.free_pages += int(self.pages[i])
        self.pages[i] = 0
        self.todo[i] = self.compute[i] + self.gen[i]                  # recompute prompt and generated tokens
        self.waiting.appendleft(i)
        self.preemptions += 1
        self.hold_admission = True

    def _next_chunk(self, i: int, room: int) -> int:
        """The next chunk of a running request's unfinished prompt: at most `room` tokens and what its pages and the
        free pages hold; its pages taken."""
        held = int(self.cached[i] + self.compute[i] + self.gen[i] - self.todo[i])    # KV tokens it already has
        fits = (int(self.pages[i]) + self.free_pages) * self.page - held
        chunk = int(min(self.todo[i], room, fits))
        if chunk > 0:
            need = int(self._pages_for(held + chunk))
            self.free_pages -= need - int(self.pages[i])
            self.pages[i] = need
        return chunk

    # ---- one scheduling decision
    def _admit(self, room: int, prefill: list) -> int:
        """Admit waiting requests into `prefill` [(id, tokens)] while room, the running limit and pages allow."""
        while self.waiting and room > 0 and len(self.running) < self.max_running:
            i = self.waiting[0]
            chunk = int(min(self.todo[i], room))
            need = int(self._pages_for(self.cached[i] + chunk + (self.compute[i] + self.gen[i] - self.todo[i])))
            need = max(need, 1)
            if need - self.pages[i] > self.free_pages:
                break
            self.waiting.popleft()
            self.free_pages -= need - int(self.pages[i])
            self.pages[i] = need
            self.running.append(i)
            prefill.append((i, chunk))
            room -= chunk
        return room

    def run(self):
        env = self.env
        while True:
            if not self.running and not self.waiting:
                if self.finished == len(self.out):
                    return
                self.wake = env.event()
                yield self.wake
                self.wake = None
                continue
            ids = np.fromiter(self.running, np.int64, len(self.running))
            todo = self.todo[ids]
            prefill: list = []
            room = self.budget
            for i in ids[todo > 0]:                                   # unfinished prompts, in admission order
                chunk = self._next_chunk(int(i), room)
                if chunk > 0:
                    prefill.append((int(i), chunk))
                    room -= chunk
            decodes = ids[todo == 0]
            admit = not (self.hold_admission and len(decodes))         # after a preemption: decode first
            if self.mixed:
                if admit:
                    self._admit(room - len(decodes), prefill)
            else:
                if admit:
                    self._admit(room, prefill)
                if prefill:
                    decodes = decodes[:0]
            if not len(decodes) and not prefill:                      # nothing admissible: KV full of prefills
                if self.running:
                    self._preempt()
                    continue
                raise InputError("a waiting request cannot be admitted: its prompt needs more KV pages than the "
                                 f"cache holds ({self.r.kv_tokens:,} tokens)")
            if len(decodes) and not prefill:
                yield from self._decode_run(decodes)
            else:
                yield from self._mixed_step(decodes, prefill)

    def _mixed_step(self, ids: np.ndarray, prefill: list):
        if len(ids):                                                  # a decode may need a page for its token
            lens = self.prompt[ids] + self.gen[ids]
            need = int(np.sum(self._pages_for(lens) - self.pages[ids]))
            while need > self.free_pages and self.running:
                victim = self.running[-1]
                self._preempt()
                ids = ids[ids != victim]
                prefill = [(i, c) for i, c in prefill if i != victim]
                lens = self.prompt[ids] + self.gen[ids]
                need = int(np.sum(self._pages_for(lens) - self.pages[ids])) if len(ids) else 0
            if len(ids):
                self.free_pages -= need
                self.pages[ids] = self._pages_for(lens)
        context = float(np.sum(self.prompt[ids] + self.gen[ids])) if len(ids) else 0.0
        tokens = float(sum(c for _, c in prefill))
        t = self.one(float(len(ids)), context, tokens)
        yield self.env.timeout(t)
        self.steps += 1
        now = self.env.now
        if len(ids):
            self.hold_admission = False
            self.gen[ids] += 1
            self.itl_gaps.append([now - self.last_token_step_end])
            self.itl_counts.append(1)
            self.itl_weights.append(len(ids))
        done = [int(i) for i in ids[self.gen[ids] >= self.out[ids]]]
        for i, chunk in prefill:
            self.todo[i] -= chunk
            if self.todo[i] == 0:
                if self.gen[i] == 0:
                    self.gen[i] = 1
                if np.isnan(self.first[i]):
                    self.first[i] = now
                if self.gen[i] >= self.out[i]:
                    done.append(i)
        if len(ids) or self.mixed:                                    # a prefill-only step stalls the decodes
            self.last_token_step_end = now
        if done:
            self._finish(done)
            yield self.env.timeout(0)                                 # let the clients resubmit first

    def _decode_run(self, ids: np.ndarray):
        gen = self.gen[ids]
        left = self.out[ids] - gen
        k = int(min(MAX_RUN, left.min()))
        lens = self.prompt[ids] + gen                                 # KV once this step's token is appended
        held = int(self.pages[ids].sum())

        def need(steps: int) -> int:
            return int(self._pages_for(lens + steps - 1).sum()) - held

        bound = len(ids) * (k // self.page + 1)                      # pages k more tokens could take at most
        if bound > self.free_pages and need(k) > self.free_pages:
            if need(1) > self.free_pages:
                self._preempt()
                return
            lo, hi = 1, k
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if need(mid) <= self.free_pages else (lo, mid - 1)
            k = lo
        d = float(len(ids))
        c0 = float(lens.sum())
        if self._admissible():
            k = 1
        elif self.next_arrival < math.inf:                            # steps only grow: due / first step bounds k
            first = self.one(d, c0, 0.0)
            k = max(1, min(k, int((self.next_arrival - self.env.now) / max(first, 1e-12)) + 2))
        times = self.run_times(d, c0, k)
        ends = np.cumsum(times)
        if self.next_arrival < math.inf:
            j = int(np.searchsorted(ends, self.next_arrival - self.env.now, side="left"))
            k = max(1, min(k, j + 1))
        after = self._pages_for(lens + k - 1)
        self.free_pages -= int(after.sum()) - held
        self.pages[ids] = after
        start = self.env.now
        yield self.env.timeout(float(ends[k - 1]))
        self.hold_admission = False
        self.steps += k
        gaps = times[:k].copy()
        gaps[0] += start - self.last_token_step_end
        self.itl_gaps.append(gaps)
        self.itl_counts.append(k)
        self.itl_weights.append(len(ids))
        self.gen[ids] = gen + k
        self.last_token_step_end = self.env.now
        done = ids[left == k]
        if len(done):
            self._finish(done.tolist())
            yield self.env.timeout(0)                                 # let the clients resubmit first

    def _admissible(self) -> bool:
        return bool(self.waiting) and len(self.running) < self.max_running and self.free_pages > 0

    def _finish(self, ids: list) -> None:
        if not ids:
            return
        gone = set(ids)
        self.running = [i for i in self.running if i not in gone]
        for i in ids:
            self.done_at[i] = self.env.now
            self.free_pages += int(self.pages[i])
            self.pages[i] = 0
            self.finished += 1
            self.events[i].succeed()


def simulate(replica: Replica, load, num_requests: Optional[int] = None, seed: int = 0,
             estimate: str = "predicted") -> Optional[Simulation]:
    """Simulate `num_requests` requests (default: 10 x the concurrency as InferenceX sends, or 1,000 as vllm bench
    serve's --num-prompts) under `load` (ClosedLoop or RequestRate); step times from `estimate` ('floor' or
    'predicted'; None where the GPU has no prediction). Lengths drawn with numpy's Generator from `seed`."""
    if not isinstance(replica, Replica):
        raise InputError(f"replica must be a rooflab.serve.Replica, got {shown(replica)}")
    if not isinstance(load, (ClosedLoop, RequestRate)):
        raise InputError(f"load must be ClosedLoop or RequestRate, got {shown(load)}")
    if estimate not in ESTIMATES:
        raise InputError(f"estimate must be floor or predicted, got {shown(estimate)}")
    step = replica.steps.floor_s if estimate == "floor" else replica.steps.predicted_s
    if estimate == "predicted" and replica.steps.predicted_s(np.ones(1), np.ones(1), np.zeros(1)) is None:
        return None
    if num_requests is None:
        num_requests = 10 * load.concurrency if isinstance(load, ClosedLoop) else 1000
    n = whole_number(num_requests, "requests (--num-prompts)", maximum=MAX_REQUESTS)
    rng = np.random.default_rng(seed)
    inputs = replica.workload.input.draw(rng, n)
    outputs = replica.workload.output.draw(rng, n)
    env = simpy.Environment()
    one = replica.steps.one(estimate) if hasattr(replica.steps, "one") else None
    run = replica.steps.run(estimate) if hasattr(replica.steps, "run") else None
    engine = _Engine(env, replica, step, inputs, outputs, one, run)
    if isinstance(load, ClosedLoop):
        _closed_loop(env, engine, load.concurrency, n)
    else:
        env.process(_arrivals(env, engine, load.arrivals(rng, n), load.max_concurrency))
    env.process(engine.run())
    env.run()
    return _result(replica, engine, load, estimate)


def _closed_loop(env: simpy.Environment, engine: _Engine, concurrency: int, n: int) -> None:
    queue = iter(range(n))

    def client():
        for i in queue:
            yield engine.submit(i)

    for _ in range(min(concurrency, n)):
        env.process(client())


def _arrivals(env: simpy.Environment, engine: _Engine, times: np.ndarray, max_concurrency: Optional[int]):
    slots = simpy.Resource(env, capacity=max_concurrency) if max_concurrency else None

    def send(i):
        with slots.request() as slot:
            yield slot
            yield engine.submit(i)

    for i, t in enumerate(times):
        engine.next_arrival = float(t)
        if t > env.now:
            yield env.timeout(float(t) - env.now)
        if slots is None:
            engine.submit(i)
        else:
            env.process(send(i))
    engine.next_arrival = math.inf


def _result(replica: Replica, e: _Engine, load, estimate: str) -> Simulation:
    ttft = e.first - e.sent
    e2e = e.done_at - e.sent
    tpot = tpot_of(e2e, ttft, e.out)
    duration = float(np.nanmax(e.done_at) - np.nanmin(e.sent))
    gaps = np.concatenate(e.itl_gaps) if e.itl_gaps else np.zeros(0)
    weights = np.repeat(np.asarray(e.itl_weights, np.float64), e.itl_counts) if e.itl_weights else np.zeros(0)
    total_out = float(e.out.sum())
    rate = total_out / duration if duration > 0 else 0.0
    decode_steps = float(weights.sum())
    return Simulation(estimate, load.describe(), len(e.out), duration, Distribution.of(ttft), Distribution.of(tpot),
                      Distribution.of(gaps, weights), Distribution.of(e2e), rate, rate / replica.num_gpus,
                      len(e.out) / duration if duration > 0 else 0.0, e.preemptions, e.steps,
                      decode_steps / max(1, len(gaps)), replica.num_gpus)

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

Runs of decode-only steps between events (an arrival, a finish, a page shortage, an admission) are one timeout,
their step times from one call; the decoding requests are aggregates that a step updates whatever the batch
(rooflab.serve.decoding). That is what makes 10,000 requests take about a second (benchmarks/serve_simulation.py).
Metrics per rooflab.serve.metrics (vllm bench serve's definitions); ITL pools
every decode step's gap once per request that received a token at its end.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Optional

import numpy as np

from ..cost.common import whole_number
from ..errors import InputError, shown
from .decoding import DecodingSet
from .metrics import Distribution, Simulation, tpot_of
from .replica import Replica
from .steady import ESTIMATES
from .workload import MAX_REQUESTS, ClosedLoop, RequestRate

if TYPE_CHECKING:
    import simpy

#: Decode steps advanced in one go at most (bounds the vectorised call).
MAX_RUN = 4096


class _Engine:
    """The engine process and its state: plain-Python lists per request (numpy's per-call cost exceeds the work on
    a step's few requests); `running` and `prefilling` in admission order (dicts: ordered, O(1) removal); the
    decoding requests as aggregates (rooflab.serve.decoding), their gen and pages written back when they leave."""

    def __init__(self, env: simpy.Environment, replica: Replica, step, inputs: np.ndarray, outputs: np.ndarray,
                 one=None, run=None):
        self.env, self.r = env, replica
        self.one = one or (lambda d, c, p: float(step(np.array([d]), np.array([c]), np.array([p]))[0]))
        self.run_times = run or (lambda d, c0, k: np.asarray(step(np.full(k, d), c0 + d * np.arange(
            k, dtype=np.float64), np.zeros(k)), dtype=np.float64).tolist())
        s = replica.scheduler
        self.budget, self.max_running, self.mixed = s.max_num_batched_tokens, s.running_cap, s.mixed
        self.page = replica.page_size
        self.free_pages = replica.kv_tokens // self.page
        n = len(inputs)
        prompt = inputs.astype(np.int64)
        compute = np.maximum(1, np.round(inputs * (1 - s.prefix_cache_hit_rate))).astype(np.int64)
        self.out_tokens = outputs.astype(np.int64)
        self.prompt, self.compute = prompt.tolist(), compute.tolist()    # KV tokens of the prompt; computed ones
        self.cached = (prompt - compute).tolist()
        self.out = self.out_tokens.tolist()
        self.todo = list(self.compute)                                # prompt tokens still to compute
        self.gen, self.pages = [0] * n, [0] * n                       # output tokens emitted; KV pages held
        self.sent, self.first, self.done_at = [math.nan] * n, [math.nan] * n, [math.nan] * n
        self.events: list[Optional[simpy.Event]] = [None] * n
        self.waiting: deque[int] = deque()
        self.running: dict[int, None] = {}                            # dicts as ordered sets
        self.prefilling: dict[int, None] = {}                         # running, prompt unfinished
        self.seq, self.admissions = [0] * n, 0                        # admission order
        self.dec = DecodingSet(self.page)                             # running, prompt computed
        self.wake: Optional[simpy.Event] = None
        self.next_arrival = math.inf                                  # set by the arrival process
        self.hold_admission = False                                   # set by a preemption until decodes advance
        self.itl_gaps: list[float] = []                               # every decode step's gap
        self.itl_weights: list[int] = []                              # requests that received a token at each
        self.steps, self.finished, self.preemptions, self.last_token_step_end = 0, 0, 0, 0.0

    # ---- clients
    def submit(self, i: int) -> simpy.Event:
        self.sent[i] = self.env.now
        self.events[i] = ev = self.env.event()
        self.waiting.append(i)
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()
        return ev

    # ---- the decoding set
    def _stop_decoding(self, i: int) -> None:
        self.gen[i], self.pages[i] = self.dec.remove(i)

    def _advance(self, steps: int) -> list[int]:
        """The decoding requests took `steps` steps: the ones that finished, in admission order."""
        self.hold_admission = False
        done = self.dec.advance(steps)
        for i in done:
            self._stop_decoding(i)
        return done

    # ---- pages
    def _preempt(self) -> int:
        i, _ = self.running.popitem()                                 # the request scheduled last
        if i in self.prefilling:
            del self.prefilling[i]
        else:
            self._stop_decoding(i)
        self.free_pages += self.pages[i]
        self.pages[i] = 0
        self.todo[i] = self.compute[i] + self.gen[i]                  # recompute prompt and generated tokens
        self.waiting.appendleft(i)
        self.preemptions += 1
        self.hold_admission = True
        return i

    def _next_chunk(self, i: int, room: int) -> int:
        """The next chunk of a running request's unfinished prompt: at most `room` tokens and what its pages and the
        free pages hold; its pages taken."""
        held = self.cached[i] + self.compute[i] + self.gen[i] - self.todo[i]      # KV tokens it already has
        fits = (self.pages[i] + self.free_pages) * self.page - held
        chunk = min(self.todo[i], room, fits)
        if chunk > 0:
            need = -(-(held + chunk) // self.page)
            self.free_pages -= need - self.pages[i]
            self.pages[i] = need
        return chunk

    # ---- one scheduling decision
    def _admit(self, room: int, prefill: list) -> None:
        """Admit waiting requests into `prefill` [(id, tokens)] while room, the running limit and pages allow."""
        while self.waiting and room > 0 and len(self.running) < self.max_running:
            i = self.waiting[0]
            chunk, need = self._admission(i, room)
            if need - self.pages[i] > self.free_pages:
                break
            self.waiting.popleft()
            self.free_pages -= need - self.pages[i]
            self.pages[i] = need
            self.running[i] = self.prefilling[i] = None
            self.seq[i], self.admissions = self.admissions, self.admissions + 1
            prefill.append((i, chunk))
            room -= chunk

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
            prefill: list = []
            room = self.budget
            for i in self.prefilling:                                 # unfinished prompts, in admission order
                chunk = self._next_chunk(i, room)
                if chunk > 0:
                    prefill.append((i, chunk))
                    room -= chunk
            decodes = self.dec.count
            admit = not (self.hold_admission and decodes)             # after a preemption: decode first
            if self.mixed:
                if admit:
                    self._admit(room - decodes, prefill)
            else:
                if admit:
                    self._admit(room, prefill)
                if prefill:
                    decodes = 0
            if not decodes and not prefill:                           # nothing admissible: KV full of prefills
                if self.running:
                    self._preempt()
                    continue
                raise InputError("a waiting request cannot be admitted: its prompt needs more KV pages than the "
                                 f"cache holds ({self.r.kv_tokens:,} tokens)")
            if decodes and not prefill:
                yield from self._decode_run()
            else:
                yield from self._step(decodes > 0, prefill)

    def _step(self, decodes: bool, prefill: list):
        """One step of prefill chunks and, with `decodes`, every decoding request's next token."""
        d = 0
        if decodes:                                                   # a decode may need a page for its token
            need = self.dec.need(1)
            while need > self.free_pages and self.running:
                victim = self._preempt()
                prefill = [(i, c) for i, c in prefill if i != victim]
                need = self.dec.need(1)
            self.free_pages -= need
            d = self.dec.count
        context = float(self.dec.context_tokens) if d else 0.0
        t = self.one(float(d), context, float(sum(c for _, c in prefill)))
        yield self.env.timeout(t)
        self.steps += 1
        now = self.env.now
        done = []
        if d:
            done = self._advance(1)
            self.itl_gaps.append(now - self.last_token_step_end)
            self.itl_weights.append(d)
        for i, chunk in prefill:
            self.todo[i] -= chunk
            if self.todo[i] == 0:
                del self.prefilling[i]
                self.gen[i] = max(self.gen[i], 1)                      # the prefill's token (none if recomputed)
                if math.isnan(self.first[i]):
                    self.first[i] = now
                if self.gen[i] >= self.out[i]:
                    done.append(i)
                else:
                    self.dec.add(i, self.prompt[i], self.gen[i], self.pages[i], self.out[i], self.seq[i])
        if d or self.mixed:                                           # a prefill-only step stalls the decodes
            self.last_token_step_end = now
        if done:
            self._finish(done)
            yield self.env.timeout(0)                                 # let the clients resubmit first

    def _decode_run(self):
        """Decode-only steps up to the next event (a finish, an arrival, a page shortage), in one timeout."""
        k = min(MAX_RUN, self.dec.steps_to_finish())
        if self.dec.count * (k // self.page + 1) > self.free_pages and self.dec.need(k) > self.free_pages:
            if self.dec.need(1) > self.free_pages:
                self._preempt()
                return
            lo, hi = 1, k
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if self.dec.need(mid) <= self.free_pages else (lo, mid - 1)
            k = lo
        d = self.dec.count
        c0 = float(self.dec.context_tokens)
        start = self.env.now
        due = self.next_arrival - start
        if self._admissible():
            k = 1
        elif due < math.inf:                                          # steps only grow: due / first step bounds k
            first = self.one(float(d), c0, 0.0)
            k = max(1, min(k, int(due / max(first, 1e-12)) + 2))
        times = self.run_times(float(d), c0, k)
        end, taken = 0.0, 0
        for t in times:                                               # stop at the step the arrival falls in
            end += t
            taken += 1
            if taken == k or end >= due:
                break
        k = taken
        self.free_pages -= self.dec.need(k)
        yield self.env.timeout(end)
        self.steps += k
        self.itl_gaps.append(times[0] + (start - self.last_token_step_end))
        self.itl_gaps.extend(times[1:k])
        self.itl_weights.extend([d] * k)
        done = self._advance(k)
        self.last_token_step_end = self.env.now
        if done:
            self._finish(done)
            yield self.env.timeout(0)                                 # let the clients resubmit first

    def _admissible(self) -> bool:
        """Whether the next step admits a waiting request (_admit's test). A decode run keeps its batch and only
        takes pages, so a request that cannot be admitted now cannot be before the run's end."""
        if not self.waiting or len(self.running) >= self.max_running:
            return False
        i, room = self.waiting[0], self.budget - (self.dec.count if self.mixed else 0)
        return room > 0 and self._admission(i, room)[1] - self.pages[i] <= self.free_pages

    def _admission(self, i: int, room: int) -> tuple[int, int]:
        """(the chunk waiting request i would be admitted with, the pages it would then hold)."""
        chunk = min(self.todo[i], room)
        held = self.cached[i] + self.compute[i] + self.gen[i] - self.todo[i]      # KV tokens it keeps: cached
        return chunk, max(1, -(-(held + chunk) // self.page))

    def _finish(self, ids: list) -> None:
        now = self.env.now
        for i in ids:
            del self.running[i]
            self.done_at[i] = now
            self.free_pages += self.pages[i]
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
    if replica.ranks > 1:
        raise InputError(f"data-parallel attention over {replica.ranks} ranks is served in the closed form "
                         "(rooflab.serve.steady); the simulation runs one scheduler: drop --request-rate / --simulate")
    if replica.deployment.speculative is not None:
        raise InputError("speculative decoding is served in the closed form (rooflab.serve.steady: each decode step "
                         "emits the drafts' expected tokens); the simulation emits one token a decode step: drop "
                         "--request-rate / --simulate, or the speculative options")
    step = replica.steps.floor_s if estimate == "floor" else replica.steps.predicted_s
    if estimate == "predicted" and replica.steps.predicted_s(np.ones(1), np.ones(1), np.zeros(1)) is None:
        return None
    if num_requests is None:
        num_requests = 10 * load.concurrency if isinstance(load, ClosedLoop) else 1000
    n = whole_number(num_requests, "requests (--num-prompts)", maximum=MAX_REQUESTS)
    rng = np.random.default_rng(seed)
    inputs = replica.workload.input.draw(rng, n)
    outputs = replica.workload.output.draw(rng, n)
    import simpy       # here, not at the top: the closed form and `rooflab serve`'s curve never start it

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
    import simpy

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
    sent, done_at = np.asarray(e.sent), np.asarray(e.done_at)
    ttft = np.asarray(e.first) - sent
    e2e = done_at - sent
    tpot = tpot_of(e2e, ttft, e.out_tokens)
    duration = float(np.nanmax(done_at) - np.nanmin(sent))
    gaps = np.asarray(e.itl_gaps, np.float64)
    weights = np.asarray(e.itl_weights, np.float64)
    total_out = float(e.out_tokens.sum())
    rate = total_out / duration if duration > 0 else 0.0
    decode_steps = float(weights.sum())
    return Simulation(estimate, load.describe(), len(e.out), duration, Distribution.of(ttft), Distribution.of(tpot),
                      Distribution.of(gaps, weights), Distribution.of(e2e), rate, rate / replica.num_gpus,
                      len(e.out) / duration if duration > 0 else 0.0, e.preemptions, e.steps,
                      decode_steps / max(1, len(gaps)), replica.num_gpus)

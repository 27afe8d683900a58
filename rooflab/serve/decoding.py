"""The requests an engine is decoding, kept as aggregates over a shared clock (the simulation's fast path).

Every step that holds decodes gives each decoding request one token, so nothing per request changes between two
events (a request joining or leaving): a request's tokens are `tick - base`, so the set keeps

    summed context    C(tick) = sum(prompt + gen) = ctx_sum + count x tick
    pages             a request's KV length crosses a page boundary once every `page` steps, at the step its length
                      mod page says: `residues` counts the requests by that residue, so the pages a run of k steps
                      takes are count x (k // page) plus the residues the last k % page steps reach
    finishes          a heap of finish ticks (base + output tokens), tie-broken by admission order

which makes a decode step, or a run of them, cost the same whatever the batch (rooflab.serve.simulate). A request
whose prompt was recomputed after a preemption may hold the page its next token needs already (`ahead`): that
step takes none for it.
"""

from __future__ import annotations

import heapq


class DecodingSet:
    """Decoding requests by id: tokens, KV pages and finish ticks over the clock `tick` (the module docstring)."""

    def __init__(self, page_size: int):
        self.page = page_size
        self.tick = 0                                 # steps with decodes so far
        self.count = 0
        self.ctx_sum = 0                              # sum(prompt - base): C = ctx_sum + count x tick
        self.residues = [0] * page_size               # requests by (KV length - tick) mod page
        self.ahead: set[int] = set()                  # holding one page more than their KV needs
        self.members: dict[int, tuple[int, int, int]] = {}     # id -> (base, prompt, admission order)
        self.finishing: list[tuple[int, int, int]] = []         # (finish tick, admission order, id)

    def add(self, i: int, prompt: int, gen: int, pages: int, out: int, order: int) -> None:
        """Request i decodes from the next step on: a KV of `prompt` tokens and `gen` of its `out` tokens
        emitted (the last one not in the KV yet), holding `pages`."""
        base = self.tick - gen
        kv = prompt - base - 1                        # KV tokens less the tick
        self.members[i] = (base, prompt, order)
        self.ctx_sum += kv + 1
        self.residues[kv % self.page] += 1
        self.count += 1
        if pages > -(-(kv + self.tick) // self.page):
            self.ahead.add(i)
        heapq.heappush(self.finishing, (base + out, order, i))

    def remove(self, i: int) -> tuple[int, int]:
        """Request i leaves (finished or preempted): (its tokens emitted, the pages it holds)."""
        base, prompt, _ = self.members.pop(i)
        kv = prompt - base - 1
        self.ctx_sum -= kv + 1
        self.residues[kv % self.page] -= 1
        self.count -= 1
        pages = -(-(kv + self.tick) // self.page) + (i in self.ahead)
        self.ahead.discard(i)
        return self.tick - base, pages

    @property
    def context_tokens(self) -> int:
        """The decoding requests' summed KV length once this step's tokens are appended."""
        return self.ctx_sum + self.count * self.tick

    def need(self, steps: int) -> int:
        """Pages the next `steps` steps take: one each time a request's KV length reaches a page boundary."""
        full, part = divmod(steps, self.page)
        res, last = self.residues, -self.tick % self.page         # the residue that crosses first
        lo = last - part + 1                                      # ... and then down to this one
        crossing = sum(res[max(lo, 0):last + 1]) + (sum(res[lo + self.page:]) if lo < 0 else 0)
        return full * self.count + crossing - len(self.ahead)

    def _current(self, entry: tuple[int, int, int]) -> bool:
        member = self.members.get(entry[2])
        return member is not None and member[2] == entry[1]

    def steps_to_finish(self) -> int:
        """Steps until the next request finishes (the set is not empty)."""
        heap = self.finishing
        while not self._current(heap[0]):                          # a preempted request's entry
            heapq.heappop(heap)
        return heap[0][0] - self.tick

    def advance(self, steps: int) -> list[int]:
        """Every member took `steps` steps: the ids that finished, in admission order (still members: the caller
        removes them)."""
        self.tick += steps
        self.ahead.clear()
        done, heap = [], self.finishing
        while heap and heap[0][0] <= self.tick:
            entry = heapq.heappop(heap)
            if self._current(entry):
                done.append(entry[2])
        return done

"""The decoding set's aggregates against every request stepped one by one."""

import numpy as np
import pytest

from rooflab.serve.decoding import DecodingSet


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@pytest.mark.parametrize("page", [1, 16, 7])
def test_the_aggregates_are_the_requests_stepped_one_by_one(page):
    rng = np.random.default_rng(page)
    dec, explicit, order = DecodingSet(page), {}, 0            # explicit: id -> [prompt, gen, pages, out]
    for event in range(400):
        if rng.random() < 0.5 or not explicit:                 # a request starts decoding
            i, prompt, gen = event, int(rng.integers(1, 300)), int(rng.integers(1, 5))
            kv = prompt + gen - 1
            pages = _ceil(kv + 1, page) if rng.random() < 0.3 else _ceil(kv, page)   # recomputed: one ahead
            out = gen + int(rng.integers(1, 60))
            dec.add(i, prompt, gen, pages, out, order)
            explicit[i] = [prompt, gen, pages, out, order]
            order += 1
        elif rng.random() < 0.2:                               # preempted
            i = list(explicit)[-1]
            prompt, gen, pages, *_ = explicit.pop(i)
            assert dec.remove(i) == (gen, pages)
        else:                                                  # a run up to the next finish at most
            k = dec.steps_to_finish()
            assert k == min(r[3] - r[1] for r in explicit.values())
            k = int(rng.integers(1, k + 1))
            assert dec.context_tokens == sum(r[0] + r[1] for r in explicit.values())
            need = 0
            for r in explicit.values():
                after = _ceil(r[0] + r[1] + k - 1, page)       # the KV once the run's last token is appended
                need += after - r[2]
                r[1], r[2] = r[1] + k, after
            assert dec.need(k) == need
            done = dec.advance(k)
            finished = sorted((r[4], i) for i, r in explicit.items() if r[1] == r[3])
            assert done == [i for _, i in finished]            # in admission order
            for i in done:
                prompt, gen, pages, *_ = explicit.pop(i)
                assert dec.remove(i) == (gen, pages)
    assert dec.count == len(explicit)

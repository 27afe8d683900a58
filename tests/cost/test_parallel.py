"""Tests of rooflab/cost/parallel.py: the parallelism model of launches whose work units cannot fill the GPU.

Fewer units than slots, the tail of list scheduling, the closed forms of the schedule fraction against a heap
simulation, and the bounds of both fractions; num_sms, units_per_sm and the work refused where they are not
positive counts, and the same answer for every numeric form of a valid one.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rooflab.cost.flash import flash_prefill
from rooflab.cost.paged import paged_decode, recommend_splits
from rooflab.cost.parallel import parallel_fraction, schedule_fraction
from support import HUGE, heads, refused


@pytest.mark.parametrize("value", [0, -1, 1.5, True, 5e-324, 1e18, math.nan, math.inf, "132", [132, 66], Decimal("nan"),
                                   HUGE])
def test_num_sms_is_checked_wherever_it_enters(value):
    for call in (lambda: flash_prefill(heads(), 8192, num_sms=value),
                 lambda: paged_decode(heads(), [8192], 16, num_sms=value),
                 lambda: recommend_splits(heads(), [8192], value)):
        refused(call, "num_sms")


@pytest.mark.parametrize("value", [0, -0.0, -1, True, 5e-324, 1e-300, 1e18, math.nan, math.inf, "1", [], Decimal("nan")])
def test_units_per_sm_is_checked_wherever_it_enters(value):
    for call in (lambda: flash_prefill(heads(), 8192, num_sms=132, units_per_sm=value),
                 lambda: paged_decode(heads(), [8192], 16, num_sms=132, units_per_sm=value),
                 lambda: paged_decode(heads(), [8192], 16, units_per_sm=value)):
        refused(call, "units_per_sm")


def test_parallelism_arguments_in_any_numeric_form_give_the_same_answer():
    base = flash_prefill(heads(), 8192, num_sms=132, units_per_sm=1.5).kernel.parallel_fraction
    for n, k in ((np.int64(132), 1.5), (132.0, Fraction(3, 2)), (Decimal(132), np.float32(1.5))):
        assert flash_prefill(heads(), 8192, num_sms=n, units_per_sm=k).kernel.parallel_fraction == base
    assert flash_prefill(heads(), 8192, num_sms=None).kernel.parallel_fraction == 1.0
    assert paged_decode(heads(), [8192], 16, num_sms=None).parallel_fraction == 1.0


def test_fewer_units_than_slots():
    # 8 equal units on 132 slots keep 8/132 of the GPU busy, in either form of the model
    assert schedule_fraction([5.0] * 8, 132) == pytest.approx(8 / 132)
    assert float(parallel_fraction(40.0, 5.0, 132)) == pytest.approx(8 / 132)


def test_tail_of_list_scheduling():
    # 5 equal units on 4 slots: two rounds for 1.25 rounds of work
    assert schedule_fraction([1.0] * 5, 4) == pytest.approx(5 / 8)
    # the heaviest unit first packs the tail better than the heaviest last
    assert schedule_fraction([4, 1, 1, 1, 1], 2) > schedule_fraction([1, 1, 1, 1, 4], 2)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.1, 100), min_size=1, max_size=300), st.integers(1, 64), st.sampled_from([0.5, 1, 2]))
def test_schedule_fraction_bounds(work, sms, k):
    f = schedule_fraction(work, sms, k)
    slots = max(1, round(sms * k))
    assert 0 < f <= 1 + 1e-12
    # never better than the longest unit or the total work allow
    assert f <= float(parallel_fraction(sum(work), max(work), slots, 1.0)) + 1e-12


def test_parallel_fraction_bounds():
    assert parallel_fraction(8 * 100, 100, 132) == pytest.approx(8 / 132)
    assert parallel_fraction(1000 * 100, 100, 132) == 1.0
    assert parallel_fraction(1, 1, None) == 1.0
    # a ragged batch is held back by its longest unit
    assert parallel_fraction(200 + 10 * 10, 200, 4) == pytest.approx(300 / 800)


def _heap_schedule_fraction(work: list[float], slots: int) -> float:
    """The oracle: list scheduling simulated unit by unit with a heap of the slots' finish times, as
    schedule_fraction was written before its closed forms (issue 24)."""
    import heapq

    if len(work) <= slots:
        return sum(work) / (slots * max(work))
    finish = list(work[:slots])
    heapq.heapify(finish)
    for w in work[slots:]:
        heapq.heappush(finish, heapq.heappop(finish) + w)
    return sum(work) / (slots * max(finish))


def _flash_like(rng, causal: bool) -> list[float]:
    """Units as flash's launches issue them: ceil(T / B_r) query tiles a head, the heaviest first when causal."""
    t, block, heads = int(rng.integers(1, 5000)), int(rng.choice([16, 64, 128])), int(rng.integers(1, 80))
    tiles = np.arange(1, -(-t // block) + 1) * block if causal else np.full(-(-t // block), -(-t // block) * block)
    return np.tile(tiles[::-1], heads).astype(float).tolist()


@pytest.mark.parametrize("seed", range(40))
def test_schedule_fraction_equals_the_heap_simulation(seed):
    """The closed forms (one wave; equal units in whole waves) and the faster list scheduling give the heap
    simulation's answer on random work: uniform, random, flash-shaped causal and non-causal, ties, tiny and huge."""
    rng = np.random.default_rng(seed)
    sms, k = int(rng.integers(1, 200)), float(rng.choice([0.5, 1.0, 1.5, 2.0, 3.0, 8.0]))
    slots = max(1, int(round(sms * k)))
    n = int(rng.integers(1, 4 * slots + 50))
    cases = [[float(rng.integers(1, 9))] * n, rng.uniform(0.1, 100, n).tolist(), rng.integers(1, 4, n).astype(float).tolist(),
             (rng.uniform(1, 2, n) * 10.0 ** rng.integers(-200, 200)).tolist(), _flash_like(rng, True), _flash_like(rng, False)]
    for work in cases:
        assert schedule_fraction(work, sms, k) == pytest.approx(_heap_schedule_fraction(work, slots), rel=1e-12)
        assert schedule_fraction(np.asarray(work), sms, k) == pytest.approx(_heap_schedule_fraction(work, slots), rel=1e-12)


@pytest.mark.parametrize("work", [[], [0.0, 1.0], [-1.0], [math.nan], ["1"], [1 + 0j], None, [True]])
def test_schedule_fraction_refuses_work_that_is_not_positive_numbers(work):
    refused(lambda: schedule_fraction(work, 132), "unit_work")


def test_a_remembered_schedule_is_the_simulation_itself():
    """Launches of up to MEMO_MAX_UNITS units have their makespan remembered by their work's bytes: the same value
    as simulating them again, for the same work given anew, and none shared between different work or slots; a
    larger launch is simulated each time, to the same answer."""
    from rooflab.cost.parallel import MEMO_MAX_UNITS, _list_makespan, _remembered_makespan

    rng = np.random.default_rng(7)
    work = np.tile(np.arange(64, 0, -1) * 128.0, 40)
    for slots in (66, 132, 1056):
        first = schedule_fraction(work, 132, slots / 132)
        assert first == schedule_fraction(work.copy(), 132, slots / 132) == float(
            work.sum() / (slots * _list_makespan(work, slots)))
    shuffled = rng.permutation(work)
    assert _remembered_makespan(shuffled.tobytes(), 132) == _list_makespan(shuffled, 132)
    big = rng.integers(1, 50, MEMO_MAX_UNITS + 1).astype(float)
    assert schedule_fraction(big, 132) == pytest.approx(_heap_schedule_fraction(big.tolist(), 132), rel=1e-12)


@pytest.mark.parametrize("seed", range(30))
def test_the_makespan_a_wave_at_a_time_is_the_heap_simulation_exactly(seed):
    """_wave_makespan (NumPy, a wave of `slots` units a step) and the heap give the oracle's makespan to the last
    bit: flash-shaped work, random floats, ties, and works so unlike that adding one to another changes nothing."""
    import heapq

    from rooflab.cost.parallel import WAVE_MIN_SLOTS, _list_makespan, _wave_makespan

    def oracle(work: list[float], slots: int) -> float:
        finish = list(work[:slots])
        heapq.heapify(finish)
        for w in work[slots:]:
            heapq.heappush(finish, heapq.heappop(finish) + w)
        return max(finish)

    rng = np.random.default_rng(seed)
    slots = int(rng.choice([1, 2, 7, 66, 132, WAVE_MIN_SLOTS, 264, 1056]))
    n = int(rng.integers(slots + 1, 6 * slots + 400))
    cases = [np.asarray(_flash_like(rng, True)), np.asarray(_flash_like(rng, False)), rng.uniform(0.1, 100, n),
             rng.integers(1, 4, n).astype(float), rng.choice([1e-20, 1.0, 3.0, 1e20], n)]
    for work in cases:
        if work.size <= slots:
            continue
        want = oracle(work.tolist(), slots)
        assert _wave_makespan(work, slots) == want and _list_makespan(work, slots) == want


@pytest.mark.parametrize("seed", range(12))
def test_work_issued_repeats_times_over_is_the_tiled_launch_exactly(seed, monkeypatch):
    """schedule_fraction(unit_work, repeats=R) is schedule_fraction(np.tile(unit_work, R)) to the last bit: launches
    past MEMO_MAX_UNITS of flash-shaped work (whose slots' states come round: _periodic_makespan skips the cycles),
    random whole numbers in any order, and fractional work (tiled, simulated unit by unit). MEMO_MAX_UNITS is lowered
    so that launches of a few thousand units take those paths (the tiled oracle is simulated unit by unit)."""
    from rooflab.cost import parallel
    from rooflab.cost.parallel import _list_makespan, _periodic_makespan

    monkeypatch.setattr(parallel, "MEMO_MAX_UNITS", 256)
    MEMO_MAX_UNITS = parallel.MEMO_MAX_UNITS
    rng = np.random.default_rng(seed)
    slots = int(rng.choice([1, 7, 66, 114, 132, 264, 1056]))
    t, block = int(rng.integers(1, 9000)), int(rng.choice([64, 128]))
    tiles = -(-t // block)
    causal = np.arange(tiles, 0, -1) * 128.0
    for period in (causal, rng.permutation(causal), rng.integers(1, 5000, int(rng.integers(1, 300))).astype(float),
                   rng.uniform(0.5, 100.0, 50)):
        repeats = MEMO_MAX_UNITS // period.size + int(rng.integers(1, 300))
        tiled = np.tile(period, repeats)
        assert schedule_fraction(period, slots, 1.0, repeats=repeats) == schedule_fraction(tiled, slots, 1.0)
        if tiled.size > slots and np.all(period == np.floor(period)):
            assert _periodic_makespan(period, repeats, slots) == _list_makespan(tiled, slots)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, None, "2", [2], math.nan, 1e300, 10**400])
def test_repeats_is_refused_unless_a_whole_number_of_times(value):
    refused(lambda: schedule_fraction([1.0, 2.0], 132, repeats=value), "repeats")

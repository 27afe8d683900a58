"""The parallelism model (cost/parallel.py): launches whose work units cannot fill the GPU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflab import AttentionHeads
from rooflab.cost.flash import FlashTile, flash_prefill
from rooflab.cost.parallel import parallel_fraction, schedule_fraction

HEADS = AttentionHeads(32, 8, 128)


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


def test_flash_parallel_fraction():
    tile = FlashTile(128, 64)
    # 32 heads x 4 query tiles = 128 units on 132 SMs
    assert float(flash_prefill(HEADS, 512, tile=tile, num_sms=132).kernel.parallel_fraction) == pytest.approx(128 / 132)
    # a long non-causal launch keeps the GPU nearly full; causal's unequal tiles leave a tail
    full = float(flash_prefill(HEADS, 16384, tile=tile, num_sms=132, units_per_sm=2).kernel.parallel_fraction)
    causal = float(flash_prefill(HEADS, 2048, causal=True, tile=tile, num_sms=132, units_per_sm=2)
                   .kernel.parallel_fraction)
    assert full > 0.95 and causal < 0.8
    # no SM count: the ideal launch of the pure roofline
    assert float(flash_prefill(HEADS, 512).kernel.parallel_fraction) == 1.0


def test_flash_fraction_is_elementwise():
    t = np.array([512, 4096])
    cost = flash_prefill(HEADS, t, tile=FlashTile(128, 64), num_sms=132)
    assert cost.kernel.parallel_fraction.shape == (2,)
    for i, ti in enumerate(t):
        one = flash_prefill(HEADS, int(ti), tile=FlashTile(128, 64), num_sms=132)
        assert cost.kernel.parallel_fraction[i] == float(one.kernel.parallel_fraction)

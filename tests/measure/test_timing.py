"""The one timing module (rooflab.measure.timing) without a GPU: a Timing's figures from its samples, and torch's
eager loop on CPU (host clocks, the line-up called once after the warm-up)."""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.measure.timing import Timing


def test_a_timing_is_the_median_and_the_10th_and_90th_percentiles_of_its_samples():
    seconds = [5.0, 1.0, 4.0, 2.0, 3.0]
    t = Timing.of(seconds, "graph")
    assert (t.median_s, t.repeats, t.timing) == (3.0, 5, "graph")
    assert t.p10_s == pytest.approx(np.percentile(seconds, 10)) == pytest.approx(1.4)   # linear: 1 + 0.4 (2 - 1)
    assert t.p90_s == pytest.approx(4.6)
    assert Timing.of([2.0]).timing == "eager"


def test_torch_calls_on_cpu_time_each_call_with_host_clocks():
    torch = pytest.importorskip("torch")
    from rooflab.measure.timing import time_torch_calls

    calls, lined_up = [], []
    t = time_torch_calls(lambda i: calls.append(i), repeats=4, warmup=2, device=torch.device("cpu"),
                         line_up=lambda: lined_up.append(len(calls)))
    assert calls == [0, 1, 0, 1, 2, 3]          # the warm-up's calls, then the timed ones
    assert lined_up == [2]                      # once, after the warm-up
    assert t.repeats == 4 and t.timing == "eager" and 0 <= t.p10_s <= t.median_s <= t.p90_s

"""The concurrency sweep and the SLO search."""

import pytest

from rooflab.serve import concurrency_sweep, slo_search
from rooflab.serve.steady import solve


def test_sweep_runs_to_the_running_limit(replica):
    sweep = concurrency_sweep(replica)
    frame = sweep.to_frame()
    assert frame.concurrency.max() == replica.running_limit
    assert set(frame.estimate) == {"floor", "predicted"}


def test_slo_search_is_the_largest_concurrency_within(replica):
    tpot = solve(replica, 32, "predicted").tpot_s * 1.0001
    answer = slo_search(replica, tpot_slo_s=tpot, target_requests_per_s=100.0)
    assert answer.concurrency >= 32
    assert solve(replica, answer.concurrency + 1, "predicted").tpot_s > tpot
    assert answer.binding == "tpot"
    assert answer.gpus == answer.replicas * replica.num_gpus
    assert answer.replicas * answer.state.requests_per_s >= 100.0


def test_an_slo_nothing_meets(replica):
    answer = slo_search(replica, ttft_slo_s=1e-6)
    assert answer.concurrency is None and answer.binding == "ttft"

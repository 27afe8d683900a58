"""The closed form against the simulation (issue 30's agreement test) and its invariants."""

import pytest

from rooflab.serve import ClosedLoop, simulate, steady_state
from rooflab.serve.steady import solve

#: The issue's tolerance: closed form and simulation within 3% on throughput and mean TPOT.
AGREEMENT = 0.03


@pytest.mark.parametrize("concurrency", [4, 64])
def test_closed_form_agrees_with_the_simulation(replica, concurrency):
    for estimate in ("floor", "predicted"):
        closed = solve(replica, concurrency, estimate)
        sim = simulate(replica, ClosedLoop(concurrency), num_requests=40 * concurrency, estimate=estimate)
        assert sim.output_tokens_per_s == pytest.approx(closed.output_tokens_per_s, rel=AGREEMENT)
        assert sim.tpot.mean_s == pytest.approx(closed.tpot_s, rel=AGREEMENT)


def test_floor_is_below_the_prediction_and_grows_with_concurrency(replica):
    low, high = steady_state(replica, 1), steady_state(replica, 128)
    for state in (low, high):
        assert state.floor.tpot_s <= state.predicted.tpot_s
        assert state.floor.output_tokens_per_s >= state.predicted.output_tokens_per_s
    assert high.floor.tpot_s > low.floor.tpot_s
    assert high.predicted.output_tokens_per_s > low.predicted.output_tokens_per_s


def test_past_the_kv_limit_requests_queue(replica):
    beyond = solve(replica, replica.running_limit * 2, "floor")
    assert beyond.running == replica.running_limit
    assert beyond.queue_s > 0
    assert beyond.ttft_s > solve(replica, replica.running_limit, "floor").ttft_s


def test_to_frame_has_both_estimates(replica):
    frame = steady_state(replica, 8).to_frame()
    assert list(frame.estimate) == ["floor", "predicted"]

"""Progress lines of long GPU work (bench, calibrate): step, time spent, an estimate of what is left.
"""

from __future__ import annotations

import io

from rooflab.progress import Progress, duration_text


def test_duration_text():
    assert [duration_text(s) for s in (0, 38.4, 61, 177, 3599, 3840)] == ["0s", "38s", "1m 01s", "2m 57s",
                                                                          "59m 59s", "1h 04m"]


def test_estimate_is_mean_step_time_times_steps_left():
    now = [0.0]
    out = io.StringIO()
    bar = Progress(4, out, clock=lambda: now[0])
    now[0] = 10.0
    bar.step("first")                     # 10 s for 1 step: 3 left -> ~30 s
    now[0] = 30.0
    bar.step("second", finished=False)    # a line within step 2 (another implementation of the same case)
    bar.step("second")                    # 30 s for 2 steps: 2 left -> ~30 s
    lines = out.getvalue().splitlines()
    assert lines[0] == "[1/4    10s, ~30s left] first"
    assert lines[1] == "[2/4    30s, ~1m 30s left] second"   # 30 s for the 1 finished step, 3 left
    assert lines[2] == "[2/4    30s, ~30s left] second"


def test_silent_without_a_stream():
    bar = Progress(3, None)
    bar.step("x")
    assert bar.done == 1

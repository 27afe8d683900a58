"""Progress lines for long GPU work (bench, calibrate): step i of n, the time spent and an estimate of what is left.

    [ 12/49   38s, ~2m 57s left] flash T=8192 h=32/8 d=128 fp16 ...

The estimate is the mean time per finished step times the steps left (steps differ, so it is a guide,
not a promise). Lines go to stderr so that stdout stays the result.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def duration_text(seconds: float) -> str:
    """'38s', '2m 57s', '1h 04m'."""
    s = int(round(max(0.0, seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


class Progress:
    """Counts steps of a known total and writes one line per step to `stream` (None: silent)."""

    def __init__(self, total: int, stream: TextIO | None = sys.stderr, clock=time.perf_counter):
        self.total, self.stream, self.clock = max(1, int(total)), stream, clock
        self.started = clock()
        self.done = 0

    def prefix(self, step: int | None = None) -> str:
        """'[ 12/49   38s, ~2m 57s left]' for step `step` (default: the next one), counting finished steps."""
        i = self.done + 1 if step is None else step
        elapsed = self.clock() - self.started
        left = "" if self.done == 0 else f", ~{duration_text(elapsed / self.done * (self.total - self.done))} left"
        width = len(str(self.total))
        return f"[{i:{width}d}/{self.total} {duration_text(elapsed):>6s}{left}]"

    def step(self, text: str, finished: bool = True) -> None:
        """Write a line for the current step; `finished` counts it as done (the estimate uses finished steps)."""
        if finished:
            self.done += 1
        if self.stream is not None:
            self.stream.write(f"{self.prefix(self.done if finished else None)} {text}\n")
            self.stream.flush()


__all__ = ["Progress", "duration_text"]

"""Tests of rooflab/_entry.py, the console script's first code: the command runs with one OpenBLAS thread (unless the
user chose), with the collector on and start-up's modules frozen. (Its interrupt handling: test_fuzz_hostile.py.)"""

from __future__ import annotations

import gc
import os

import rooflab.cli
from rooflab import _entry


def _started(monkeypatch) -> dict:
    """What the command sees when _entry.main starts it (the CLI's main replaced by a probe)."""
    seen = {}

    def probe() -> None:
        seen.update(threads=os.environ.get("OPENBLAS_NUM_THREADS"), collecting=gc.isenabled(),
                    frozen=gc.get_freeze_count())

    monkeypatch.setattr(rooflab.cli, "main", probe)
    try:
        _entry.main()
    finally:
        gc.unfreeze()                   # the test process's objects back where its collections walk them
    return seen


def test_the_command_runs_with_one_openblas_thread_the_collector_on_and_start_up_frozen(monkeypatch):
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    seen = _started(monkeypatch)
    assert seen == {"threads": "1", "collecting": True, "frozen": seen["frozen"]} and seen["frozen"] > 0


def test_a_users_openblas_threads_are_kept(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert _started(monkeypatch)["threads"] == "3"

"""Tests of rooflab/_entry.py, the console script's first code: the command runs with one OpenBLAS thread (unless the
user chose), with the collector on and start-up's modules frozen. (Its interrupt handling: test_fuzz_hostile.py.)"""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

import rooflab.cli
import rooflab.output
from rooflab import _entry


def _started(monkeypatch) -> dict:
    """What the command sees when _entry.main starts it (the CLI's main replaced by a probe)."""
    seen = {}

    def probe() -> None:
        seen.update(threads=os.environ.get("OPENBLAS_NUM_THREADS"), collecting=gc.isenabled(),
                    frozen=gc.get_freeze_count())

    monkeypatch.setattr(rooflab.cli, "main", probe)
    # main() calls output.finish_once_written(), a process-wide switch: restore it after the test, or every later
    # in-process command in this worker ignores SIGINT / SIGTERM / SIGHUP once it writes (test_output's signal test
    # then saw SIGHUP ignored, depending on which tests shared its xdist worker)
    monkeypatch.setattr(rooflab.output, "_FINISH_ONCE_WRITTEN", rooflab.output._FINISH_ONCE_WRITTEN)
    monkeypatch.setattr(rooflab.output, "_FINISHING", rooflab.output._FINISHING)
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


@pytest.mark.parametrize("words, loaded", [(["plot", "capacity"], True), (["report"], False), ([], False)])
def test_a_plot_command_loads_matplotlib_with_the_cli(words, loaded):
    """`rooflab plot ...` finds matplotlib loaded (and frozen) when it starts; other commands do not load it."""
    code = ("import sys, rooflab.cli; sys.argv = ['rooflab', *sys.argv[1:]]; "
            "rooflab.cli.main = lambda: print('matplotlib.figure' in sys.modules, 'matplotlib.backends.backend_agg' "
            "in sys.modules); from rooflab._entry import main; main()")
    done = subprocess.run([sys.executable, "-c", code, *words], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [str(loaded)] * 2


def test_a_matplotlib_that_cannot_load_is_left_to_the_command(tmp_path):
    """An unknown MPLBACKEND makes matplotlib's import fail: the start-up goes on, and the command says what is
    wrong (exit 2, one line, no traceback)."""
    env = {**os.environ, "MPLBACKEND": "no-such-backend"}
    done = subprocess.run([sys.executable, "-m", "rooflab", "plot", "capacity", "-o", "x.png"], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert not (tmp_path / "x.png").exists()
    assert done.returncode == 2 and "MPLBACKEND" in done.stderr and "Traceback" not in done.stderr

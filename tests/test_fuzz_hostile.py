"""Issue 24's hostile round, kept: its finds as regressions, and a representative subset of its inputs.

The whole round (about 3,000 inputs of ten classes, minutes on two cores) is benchmarks/hostile_round.py; here every
STRIDE-th input of each in-process class and a few of each real-process class, so the suite stays fast.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys

import numpy as np
import pytest

from fuzz_support import ROOT, check_api

_spec = importlib.util.spec_from_file_location("hostile_round", ROOT / "benchmarks" / "hostile_round.py")
hostile = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("hostile_round", hostile)    # its dataclasses look their module up there
_spec.loader.exec_module(hostile)

#: One input in STRIDE of each in-process class; the real-process classes keep their first few.
STRIDE = 60
KEPT_PER_PROCESS_CLASS = 2
IN_PROCESS = ("hf_config", "yaml_spec", "options", "files", "engine_logs", "api", "numbers")
PROCESS = ("streams", "signals", "environment")


def _kept():
    for klass in IN_PROCESS:
        for item in itertools.islice(hostile.CLASSES[klass](), 0, None, STRIDE):
            yield pytest.param(item, id=f"{klass}: {item.label[:70]}")
    for klass in PROCESS:
        for item in itertools.islice(hostile.CLASSES[klass](), KEPT_PER_PROCESS_CLASS):
            yield pytest.param(item, id=f"{klass}: {item.label[:70]}")


@pytest.mark.parametrize("item", list(_kept()))
def test_hostile_input(item):
    problems = hostile.run_input(item)
    assert not problems, "\n".join(problems)


def test_every_hand_derived_number():
    """The numbers class whole: each figure against its formula (hostile_round.number_inputs says which)."""
    failed = {item.label: p for item in hostile.number_inputs() if (p := hostile.run_input(item))}
    assert not failed, failed


# --- the round's finds ------------------------------------------------------------------------------------------

def test_paging_lengths_refuse_a_zero_dimensional_array():
    """block_usage(np.array(5)) ended in TypeError 'iteration over a 0-d array' from inside paging._lengths."""
    from rooflab.paging import block_usage, fragmentation, shared_prefix_blocks

    check_api(lambda: block_usage(np.array(5), 16), ["request lengths"], expect_error=True)
    check_api(lambda: fragmentation(np.array(5), 16, 4096), ["request lengths"], expect_error=True)
    check_api(lambda: shared_prefix_blocks(1024, np.array(16), 16), ["suffix lengths"], expect_error=True)


def test_paging_lengths_refuse_masked_entries():
    """shared_prefix_blocks(1024, masked [--, 200], 16) priced the masked entry's hidden 100 as a real suffix."""
    from rooflab.paging import block_usage, shared_prefix_blocks

    masked = np.ma.masked_array([100, 200], [True, False])
    check_api(lambda: shared_prefix_blocks(1024, masked, 16), ["suffix lengths", "masked"], expect_error=True)
    check_api(lambda: block_usage(masked, 16), ["request lengths", "masked"], expect_error=True)
    assert block_usage(np.ma.masked_array([100, 200], [False, False]), 16).blocks == 7 + 13


def test_schedule_fraction_refuses_bytes():
    """schedule_fraction(b'4096', 2) read the bytes as four units of work 52, 48, 57, 54 and returned 0.995."""
    from rooflab.cost.parallel import schedule_fraction

    check_api(lambda: schedule_fraction(b"4096", 2), ["unit_work"], expect_error=True)
    check_api(lambda: schedule_fraction(bytearray(b"12"), 2), ["unit_work"], expect_error=True)


def test_numerics_integer_check_is_one_line_for_an_array():
    """expected_max_normal(masked array): the refusal quoted the array's repr over three lines."""
    from rooflab.errors import RooflabError
    from rooflab.numerics import expected_max_normal

    with pytest.raises(RooflabError) as info:
        expected_max_normal(np.ma.masked_array([1, 2], [True, False]))
    assert "\n" not in str(info.value) and "n must be an integer" in str(info.value)


def test_serve_with_one_running_request():
    """`rooflab serve --max-num-seqs 1`: the step table's decode grid has one point, its interpolation divided
    0 by 0 (a RuntimeWarning on stderr, then 'decodes, context_tokens and prefill_tokens must be finite')."""
    from fuzz_support import Case, check_cli, scratch

    with scratch() as folder:
        check_cli(Case(["serve", "-m", "llama-3-8b", "-g", "h100-sxm", "--max-num-seqs", "1"], expect=0), folder)
        check_cli(Case(["serve", "-m", "llama-3-8b", "-g", "h100-sxm", "--max-num-seqs", "1", "-f", "json"],
                       expect=0, json=True), folder)


@pytest.mark.parametrize("delay_s", [0.05, 0.3, 0.6, 0.8, 0.95, 1.1])
def test_ctrl_c_while_python_m_rooflab_loads(delay_s):
    """`python -m rooflab` imported the CLI before rooflab._entry's interrupt handler, so a Ctrl-C while it loaded
    (the first ~0.5-1 s) printed a KeyboardInterrupt traceback (or 'ImportError: initialization failed' when it
    landed inside matplotlib's import); the console script was already quiet. Either the signal lands before
    Python's start-up (killed by it: -2; or, under `python -m`, a traceback inside runpy's own imports, with no
    frame past the package's own lazy __init__: out of rooflab's reach) or it ends as 'error: interrupted', exit 130."""
    import os
    import signal
    import subprocess
    import time

    from fuzz_support import scratch

    with scratch() as folder:
        proc = subprocess.Popen([sys.executable, "-m", "rooflab", "plot", "capacity", "-o", "c.png"], cwd=folder,
                                env={**os.environ, "MPLBACKEND": "Agg"}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(delay_s)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert "Traceback" not in err or not any(w in err for w in ("rooflab/cli", "_entry.py", "__main__.py")), \
            err[-600:]
        if "Traceback" in err:         # Python's runpy, before rooflab: its own exit status
            return
        assert proc.returncode in (0, 130, -signal.SIGINT), (proc.returncode, err[-300:])
        assert not (proc.returncode and (folder / "c.png").exists())
        assert sorted(p.name for p in folder.iterdir()) in ([], ["c.png"])

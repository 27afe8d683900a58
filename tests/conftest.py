"""Shared test configuration: GPU tests skip, with a reason, where there is no usable GPU; hypothesis runs
derandomised, without an example database and without deadlines, so a run's outcome depends on the code alone
(never on the machine's load: no test asserts on time); where pytest-xdist is installed (the test extra has it)
a CPU run spreads over the machine's cores."""

from __future__ import annotations

import os
import re

import pytest

try:                                    # the test extra has hypothesis; a GPU machine's bare run may not
    from hypothesis import HealthCheck, settings
except ImportError:
    pass
else:
    settings.register_profile("rooflab", derandomize=True, database=None, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("rooflab")

os.environ.setdefault("MPLBACKEND", "Agg")
# One OpenBLAS thread a process, as the console script runs (rooflab/_entry.py), unless the caller chose: NumPy's
# OpenBLAS starts a thread a core in each worker and in each `rooflab` the tests start, and they spin waiting for work
# on the cores the other worker needs. Set before NumPy loads here, so the workers and their subprocesses inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# The parsed-spec cache (rooflab/load/disk_cache.py) goes to a folder of this process's own, never the user's.
os.environ["ROOFLAB_CACHE_DIR"] = __import__("tempfile").mkdtemp(prefix="rooflab-spec-cache-")


def _wants_workers(config) -> bool:
    """Spread the run over worker processes: xdist is loaded, no -n / -p no:xdist was given, this is not a
    worker, and the run is not a GPU run (GPU tests must not share the GPU: their timings would interfere)."""
    if not config.pluginmanager.hasplugin("xdist") or os.environ.get("PYTEST_XDIST_WORKER"):
        return False
    if getattr(config.option, "numprocesses", None) is not None:   # -n N (or -n 0) was given
        return False
    if _selects_gpu_tests(config.option.markexpr or "") or config.option.collectonly or config.option.usepdb:
        return False
    return True


def _selects_gpu_tests(markexpr: str) -> bool:
    """-m gpu (or any expression naming gpu other than `not gpu`) selects the GPU tests."""
    return re.search(r"(?<!not )\bgpu\b", markexpr) is not None


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Runs before xdist's own pytest_cmdline_main (a conftest registers after the plugin), which turns
    numprocesses into workers; at least 2, one a core beyond that (PYTEST_XDIST_AUTO_NUM_WORKERS overrides)."""
    if _wants_workers(config):
        config.option.numprocesses = max(2, config.hook.pytest_xdist_auto_num_workers(config=config))
        if config.option.dist == "no":
            config.option.dist = "worksteal"   # an idle worker takes queued tests from a busy one: the long
                                               # fuzz and notebook tests do not leave the other core idle


# Specs and validations several test files read, built once per test process (each is frozen).
@pytest.fixture(scope="session")
def h100():
    from rooflab.load import load_gpu

    return load_gpu("h100-sxm")


@pytest.fixture(scope="session")
def llama():
    from rooflab.load import load_model

    return load_model("llama-3-8b")


@pytest.fixture(scope="session")
def validation():
    """The bundled H200 sweep (measurements/h200-sweep.csv) validated: what the chart and validate tests read."""
    from rooflab.fit.validate import validate
    from rooflab.load import data_dir

    return validate(data_dir("measurements") / "h200-sweep.csv")


@pytest.fixture(scope="session")
def bundled_validation():
    """validate() on the whole bundled dataset (BUNDLED_DATASET), as `rooflab validate` with no file reads it."""
    from rooflab.fit.validate import validate

    return validate()


def _gpu_unavailable_reason() -> str | None:
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or a CUDA library that fails to load
        return f"no GPU: CuPy is not importable ({type(exc).__name__}); install rooflab[gpu] on a machine with an NVIDIA GPU"
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"no GPU: CuPy cannot reach a CUDA device ({type(exc).__name__})"
    if count < 1:
        return "no GPU: CuPy sees no CUDA device"
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    reason = _gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in gpu_items:
        item.add_marker(skip)

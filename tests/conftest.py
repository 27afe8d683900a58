"""Shared test configuration: GPU tests skip, with a reason, where there is no usable GPU; hypothesis runs
derandomised, without an example database and without deadlines, so a run's outcome depends on the code alone
(never on the machine's load: no test asserts on time)."""

from __future__ import annotations

import os

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

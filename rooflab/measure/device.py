"""The GPU a measurement runs on: CuPy (imported lazily), device facts, and the metadata every result carries."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
import subprocess
from pathlib import Path

from ..fit.records import spec_for_device
from ..load import available, load_gpu


def require_cupy():
    """CuPy with a usable CUDA device, or MissingGpuError saying what is missing and how to install it."""
    from ..kernels._runtime import cupy_module

    return cupy_module()


def device_name() -> str:
    cupy = require_cupy()
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def check_spec_matches(spec_name: str, device: str) -> None:
    """Refuse to record measurements of one GPU under another GPU's spec."""
    expected = spec_for_device(device)
    if expected is not None and expected != spec_name and not Path(spec_name).suffix:
        from ..errors import InputError

        raise InputError(f"this machine's GPU is '{device}' (spec {expected}), not {spec_name}; "
                         f"pass --gpu {expected} or a YAML file describing this GPU")


def _git_commit() -> str:
    """The checkout's commit; ROOFLAB_GIT_COMMIT names it where the tree travelled without .git."""
    if os.environ.get("ROOFLAB_GIT_COMMIT"):
        return os.environ["ROOFLAB_GIT_COMMIT"]
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists() or shutil.which("git") is None:
        return "unknown"
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "") if out.returncode == 0 else "unknown"


def _nvidia_smi(query: str) -> str:
    if shutil.which("nvidia-smi") is None:
        return "unknown"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"


def metadata(command: str, spec_name: str) -> dict[str, str]:
    """What a results file says about where and how it was measured."""
    from .. import __version__

    cupy = require_cupy()
    runtime = cupy.cuda.runtime.runtimeGetVersion()
    driver = cupy.cuda.runtime.driverGetVersion()
    try:
        import torch

        torch_version = torch.__version__
    except Exception:
        torch_version = "not installed"
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu_spec": spec_name,
        "device_name": device_name(),
        "driver": _nvidia_smi("driver_version"),
        "cuda_driver_api": f"{driver // 1000}.{driver % 1000 // 10}",
        "cuda_runtime": f"{runtime // 1000}.{runtime % 1000 // 10}",
        "cupy": cupy.__version__,
        "torch": torch_version,
        "clocks_sm_mem_mhz": _nvidia_smi("clocks.sm,clocks.mem"),
        "max_clocks_sm_mem_mhz": _nvidia_smi("clocks.max.sm,clocks.max.mem"),
        "memory_total_mib": _nvidia_smi("memory.total"),
        "cuda_visible_bytes": str(cupy.cuda.runtime.memGetInfo()[1]),
        "rooflab": __version__,
        "git_commit": _git_commit(),
        "host": platform.node(),
        "command": command,
    }


def default_spec() -> str:
    """The bundled spec of this machine's GPU, or an error asking for --gpu."""
    from ..errors import InputError

    name = device_name()
    spec = spec_for_device(name)
    if spec is None:
        raise InputError(f"no bundled spec matches this GPU ('{name}'); pass --gpu with a YAML file for it")
    load_gpu(spec)
    return spec

"""CuPy, imported only when a kernel is called; each kernel instantiation compiled once and cached.

The .cu sources live beside this file (one kernel a file) and are shipped in the wheel.
The headers they include (common.cuh, hopper.cuh) are inlined into each source at load time, so
NVRTC needs no include path and CuPy's on-disk kernel cache (keyed by source text) sees every
change to them. NVRTC compiles
for the current device's own architecture (sm_80, sm_86, sm_89, sm_90, ...), which CuPy picks
from its compute capability; the kernels need mma.sync, ldmatrix and cp.async: sm_80 or newer.
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import re
from importlib import resources
from typing import Any, Iterable

import numpy as np

from ..errors import MissingGpuError

INSTALL_HINT = 'pip install "rooflab[gpu]" (CUDA 12) or "rooflab[gpu-cuda13]" (CUDA 13)'
MIN_COMPUTE_CAPABILITY = 80
COMPILE_OPTIONS: tuple[str, ...] = ()  # NVRTC 12+ defaults to C++17; CuPy adds its own -arch and -ftz
#: Extra NVRTC options by source file. wgmma needs the arch-specific sm_90a target; CuPy then adds
#: its own -arch=sm_90 after it, and NVRTC 13 keeps sm_90a (checked: the cubin says sm_90a).
FILE_OPTIONS: dict[str, tuple[str, ...]] = {name: ("-arch=sm_90a",) for name in
                                             ("flash_fwd_hopper.cu", "flash_fwd_hopper_ws.cu", "wgmma_probe.cu",
                                              "mla_decode_hopper.cu")}
LOG2E = 1.4426950408889634
#: A null pointer for an optional kernel argument (8 zero bytes, the size of a device pointer).
NULL = np.uint64(0)

#: Storage dtypes by NumPy/CuPy name -> the CUDA C++ type the kernels are instantiated with.
CTYPES = {"float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float"}
HALF_TYPES = ("float16", "bfloat16")


def cupy_module() -> Any:
    """Return the cupy module, or raise MissingGpuError saying in one line what is missing.

    Cheap after the first call on a device (launchers call it every time): the device's
    compute capability is checked once and remembered.
    """
    try:
        import cupy
    except ImportError:
        raise MissingGpuError(f"CuPy is not installed: {INSTALL_HINT}") from None
    except Exception as exc:  # a CuPy whose CUDA libraries fail to load
        raise MissingGpuError(f"CuPy could not be imported ({type(exc).__name__}: {exc}); "
                              f"reinstall it for your CUDA version: {INSTALL_HINT}") from None
    try:
        device_id = cupy.cuda.runtime.getDevice()
    except Exception as exc:
        raise MissingGpuError(f"CuPy is installed but cannot reach a CUDA device ({type(exc).__name__}); "
                              f"rooflab's kernels need an NVIDIA GPU with compute capability 8.0 or newer") from None
    if device_id not in _CHECKED_DEVICES:
        _check_device(cupy, device_id)
        _CHECKED_DEVICES.add(device_id)
    return cupy


_CHECKED_DEVICES: set[int] = set()
_CAPABILITIES: dict[int, int] = {}


def compute_capability(cupy: Any) -> int:
    """The current device's compute capability as a number (90 for sm_90), remembered per device."""
    device_id = cupy.cuda.runtime.getDevice()
    if device_id not in _CAPABILITIES:
        _CAPABILITIES[device_id] = int(cupy.cuda.Device(device_id).compute_capability)
    return _CAPABILITIES[device_id]


def _check_device(cupy: Any, device_id: int) -> None:
    try:
        capability = int(cupy.cuda.Device(device_id).compute_capability)
    except Exception as exc:
        raise MissingGpuError(f"CuPy is installed but cannot reach a CUDA device ({type(exc).__name__}); "
                              f"rooflab's kernels need an NVIDIA GPU with compute capability 8.0 or newer") from None
    _CAPABILITIES[device_id] = capability
    if capability < MIN_COMPUTE_CAPABILITY:
        raise MissingGpuError(f"GPU {device_id} has compute capability {capability / 10:.1f}; rooflab's kernels "
                              f"need 8.0 or newer (A100, L4, H100, H200, ...)")


@functools.lru_cache(maxsize=None)
def multiprocessor_count(device_id: int) -> int:
    cupy = cupy_module()
    return int(cupy.cuda.Device(device_id).attributes["MultiProcessorCount"])


_INCLUDE = re.compile(r'^#include "([A-Za-z0-9_]+\.cuh)"$', re.MULTILINE)


@functools.lru_cache(maxsize=None)
def kernel_source(filename: str) -> str:
    """The text of one .cu file with the headers it includes (common.cuh, hopper.cuh) inlined, each once."""
    here = resources.files(__package__)
    seen: set[str] = set()

    def inline(text: str) -> str:
        def one(match: re.Match) -> str:
            header = match.group(1)
            if header in seen:
                return ""
            seen.add(header)
            return inline(here.joinpath(header).read_text(encoding="utf-8"))
        return _INCLUDE.sub(one, text)

    return inline(here.joinpath(filename).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _compiled(filename: str, name_expression: str, device_id: int) -> Any:
    cupy = cupy_module()
    module = cupy.RawModule(code=kernel_source(filename), options=COMPILE_OPTIONS + FILE_OPTIONS.get(filename, ()),
                            name_expressions=(name_expression,))
    return module.get_function(name_expression)


def kernel(filename: str, name_expression: str) -> Any:
    """The compiled kernel `name_expression` (e.g. 'merge_states<__half, 8, 2>') of `filename`."""
    cupy = cupy_module()
    return _compiled(filename, name_expression, cupy.cuda.runtime.getDevice())


def compile_all(items: Iterable[tuple[str, str]], workers: int = 16) -> int:
    """Compile many (filename, name_expression) pairs at once; NVRTC runs without the GIL."""
    items = list(dict.fromkeys(items))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(kernel, f, n) for f, n in items]:
            future.result()
    return len(items)


_SMEM_SET: dict[int, int] = {}


def launch(kern: Any, grid: tuple[int, int, int], block: tuple[int, int, int], args: tuple,
           shared_mem_bytes: int = 0) -> None:
    """Launch, raising the kernel's dynamic shared-memory limit first when it needs more than 48 KiB."""
    if shared_mem_bytes > 48 * 1024:
        key = id(kern)
        if _SMEM_SET.get(key, 0) < shared_mem_bytes:
            kern.max_dynamic_shared_size_bytes = shared_mem_bytes
            _SMEM_SET[key] = shared_mem_bytes
    kern(grid, block, args, shared_mem=shared_mem_bytes)


# ---------------------------------------------------------------- argument checks

_DTYPE_NAMES: dict[Any, str] = {}


def dtype_name(x: Any) -> str:
    """x.dtype.name, cached by dtype: NumPy computes .name in Python (about 5 us a call), and the
    launchers ask for it several times a call."""
    dt = x.dtype
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = dt.name
    return name


def ctype(x: Any) -> str:
    return CTYPES[dtype_name(x)]


def check_array(cupy: Any, x: Any, name: str, dtypes: Iterable[str], ndim: int | None = None) -> None:
    """ValueError unless x is a C-contiguous CuPy array of one of `dtypes` (and `ndim` dims)."""
    dtypes = tuple(dtypes)
    if not isinstance(x, cupy.ndarray):
        raise ValueError(f"{name} must be a cupy.ndarray, got {type(x).__name__}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(x.shape)}")
    if dtype_name(x) not in dtypes:
        raise ValueError(f"{name} must be one of {', '.join(dtypes)}, got {dtype_name(x)}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (call cupy.ascontiguousarray first)")


def check_out(cupy: Any, out: Any, name: str, shape: tuple, dtype_name_: str) -> None:
    check_array(cupy, out, name, (dtype_name_,))
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(out.shape)}")


def check_scale(scale: float | None, head_dim: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0, got {scale}")
    return scale


def check_grid_dim(value: int, name: str, limit: int = 65535) -> None:
    if value > limit:
        raise ValueError(f"{name} = {value} exceeds the launch limit of {limit}")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------- visibility: window, chunk, sinks

#: common.cuh's MASK_NONE, MASK_CAUSAL, MASK_LOCAL (causal plus a window and / or chunk).
MASK_NONE, MASK_CAUSAL, MASK_LOCAL = 0, 1, 2
INT32_MAX = 2**31 - 1


def check_count(value: Any, name: str, low: int = 1, high: int = INT32_MAX) -> int:
    """A whole number in [low, high] (bools refused), else ValueError naming the argument and value."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number in {low}..{high}, got {value!r}")
    return int(value)


def check_visibility(causal: bool, window: Any, chunk: Any) -> tuple[int, int, int]:
    """(MASK, W, C) for the kernels: W and C are 0 when not given; a window or chunk needs causal=True."""
    w = 0 if window is None else check_count(window, "window")
    c = 0 if chunk is None else check_count(chunk, "chunk")
    if (w or c) and not causal:
        what = f"window={window}" if w else f"chunk={chunk}"
        raise ValueError(f"{what} is a causal mask (query i sees keys up to i); pass causal=True with it")
    return (MASK_LOCAL if (w or c) else MASK_CAUSAL if causal else MASK_NONE), w, c


def check_sinks(cupy: Any, sinks: Any, heads: int) -> Any:
    """sinks: None, or a C-contiguous float32 CuPy array [heads] of natural-log logits (values not read here)."""
    if sinks is None:
        return NULL
    check_array(cupy, sinks, "sinks", ("float32",), ndim=1)
    if sinks.shape[0] != heads:
        raise ValueError(f"sinks must have one logit per query head, shape ({heads},), got {tuple(sinks.shape)}")
    return sinks

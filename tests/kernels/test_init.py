"""Tests of rooflab/kernels/__init__.py without CuPy: the package imports in a fresh interpreter, the
launchers raise an error saying what is missing and how to install it, and the kernel files are the ones
the package lists.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

import pytest

import rooflab.kernels as kernels
from rooflab.errors import MissingGpuError


KERNEL_FILES = sorted(p.name for p in resources.files("rooflab.kernels").iterdir() if p.name.endswith(".cu"))


def test_import_without_cupy_in_a_fresh_interpreter():
    code = ("import sys; sys.modules['cupy'] = None\n"
            "import rooflab, rooflab.kernels\n"
            "assert 'cupy' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
            "print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


CALLS = {
    "softmax_rows": lambda: kernels.softmax_rows(None),
    "naive_attention": lambda: kernels.naive_attention(None, None, None),
    "flash_attention": lambda: kernels.flash_attention(None, None, None),
    "paged_decode": lambda: kernels.paged_decode(None, None, None, None, None),
    "paged_decode_partial": lambda: kernels.paged_decode_partial(None, None, None, None, None, 2),
    "merge_partials": lambda: kernels.merge_partials(None, None),
    "merge_states": lambda: kernels.merge_states(None, None, None, None),
    "precompile": lambda: kernels.precompile(),
    "attention_scores": lambda: kernels.attention_scores(None, None),
    "masked_softmax": lambda: kernels.masked_softmax(None, 1.0),
    "attention_values": lambda: kernels.attention_values(None, None),
    "mla_decode": lambda: kernels.mla_decode(None, None, None, None),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_launchers_without_cupy_raise_missing_gpu_error(monkeypatch, name):
    monkeypatch.setitem(sys.modules, "cupy", None)                   # `import cupy` now fails
    with pytest.raises(MissingGpuError) as info:
        CALLS[name]()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("CuPy is not installed")
    assert 'pip install "rooflab[gpu]"' in message and "rooflab[gpu-cuda13]" in message


def test_the_kernel_files_are_the_ones_the_package_lists():
    assert {"flash_fwd.cu", "flash_fwd_hopper.cu", "flash_fwd_hopper_ws.cu", "wgmma_probe.cu", "paged_decode.cu",
            "merge_partials.cu", "merge_states.cu", "softmax_rows.cu"} <= set(KERNEL_FILES)
    for filename in KERNEL_FILES:
        assert filename in kernels.__doc__, f"{filename} is missing from rooflab.kernels' docstring"

"""rooflab.kernels on a machine without CuPy: imports work, calls say what is missing and how to install it."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources

import pytest

import rooflab.kernels as kernels
from rooflab.errors import MissingGpuError
from rooflab.kernels import _runtime, testing

KERNEL_FILES = ["softmax_rows.cu", "flash_fwd.cu", "paged_decode.cu", "merge_partials.cu", "merge_states.cu"]


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


@pytest.mark.parametrize("filename", KERNEL_FILES)
def test_each_source_holds_one_kernel_and_inlines_the_common_header(filename):
    text = resources.files("rooflab.kernels").joinpath(filename).read_text(encoding="utf-8")
    assert len(re.findall(r"__global__", text)) == 1, "one kernel a file"
    source = _runtime.kernel_source(filename)
    assert '#include "common.cuh"' not in source
    assert "mma16816" in source and "namespace rl" in source


@pytest.mark.parametrize("n, itemsize, expected", [
    (8192, 2, (8, 4, 256)),          # the [32, 8192, 8192] fp16 target: 16-byte loads, 4 in flight
    (8192, 4, (4, 4, 512)),
    (1, 2, (1, 1, 1)),
    (1000, 2, (8, 4, 32)),
    (4097, 2, (1, 8, 1024)),         # odd length: scalar loads
    (32768, 2, (8, 4, 1024)),
    (32768, 4, (4, 8, 1024)),
])
def test_softmax_config(n, itemsize, expected):
    vec, items, tpr = kernels.softmax_config(n, itemsize)
    assert (vec, items, tpr) == expected
    assert vec * items * tpr >= n


@pytest.mark.parametrize("n, itemsize, nst", [(8192, 2, 4), (8192, 4, 2), (1000, 2, 0), (20000, 2, 0), (4097, 2, 0)])
def test_softmax_plan_streams_long_aligned_rows(n, itemsize, nst):
    from rooflab.kernels.attention import softmax_plan

    vec, items, tpr, depth = softmax_plan(n, itemsize)
    assert depth == nst
    if depth:
        assert vec * itemsize == 16 and tpr > 32 and depth * items * tpr * 16 <= 64 * 1024


def test_softmax_config_refuses_rows_it_cannot_hold():
    with pytest.raises(ValueError, match="longer than the single-pass softmax"):
        kernels.softmax_config(2**15 + 1, 2)


def test_every_tolerance_has_a_reason():
    for key, tol in testing.TOLERANCES.items():
        assert tol.reason and tol.rel_l2 > 0, key

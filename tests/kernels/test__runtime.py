"""Tests of rooflab/kernels/_runtime.py without CuPy: each source holds one kernel and inlines the common
header, and visibility arguments are checked before anything else.
"""

from __future__ import annotations

import re
from importlib import resources

import pytest

from rooflab.kernels import _runtime


KERNEL_FILES = sorted(p.name for p in resources.files("rooflab.kernels").iterdir() if p.name.endswith(".cu"))


@pytest.mark.parametrize("filename", KERNEL_FILES)
def test_each_source_holds_one_kernel_and_inlines_the_common_header(filename):
    text = resources.files("rooflab.kernels").joinpath(filename).read_text(encoding="utf-8")
    assert len(re.findall(r"__global__", text)) == 1, "one kernel a file"
    source = _runtime.kernel_source(filename)
    assert "#include \"" not in source, "every local header is inlined"
    assert source.count("struct OnlineState {") == 1, "common.cuh inlined exactly once"
    assert "mma16816" in source and "namespace rl" in source


@pytest.mark.parametrize("name, kwargs, match", [
    ("flash_attention", {"window": 0, "causal": True}, "window"),
    ("flash_attention", {"chunk": 1.5, "causal": True}, "chunk"),
    ("flash_attention", {"window": 16}, "causal=True"),
])
def test_visibility_arguments_are_checked_before_anything_else(name, kwargs, match):
    from rooflab.kernels._runtime import check_visibility

    with pytest.raises(ValueError, match=match):
        check_visibility(kwargs.get("causal", False), kwargs.get("window"), kwargs.get("chunk"))

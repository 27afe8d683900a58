"""Tests of rooflab/engines/sglang.py: SGLang's default static memory fraction."""

from __future__ import annotations

import pytest

from rooflab import load_gpu
from rooflab.engines import Engine, parse_accounting
from rooflab.engines.sglang import default_fraction


H100 = load_gpu("h100-sxm")


@pytest.mark.parametrize("version, tp, gpu, expected", [
    ("v0.4", 1, H100, 0.88), ("v0.4", 2, H100, 0.87), ("v0.4", 4, H100, 0.85), ("v0.4", 8, H100, 0.81),
    ("v0.5", 1, H100, 0.835),     # reserve 512 + 8192 x 1.5 + 256 x 2 + 128 = 13,440 MiB of 81,559
    ("v0.5", 1, load_gpu("rtx-4090"), round((24564 - (512 + 3072 + 48 + 128)) / 24564, 3))])
def test_sglang_default_fraction(version, tp, gpu, expected):
    assert default_fraction(parse_accounting(Engine.sglang, version), tp, gpu) == expected

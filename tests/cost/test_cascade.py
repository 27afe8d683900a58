"""Tests of rooflab/cost/cascade.py: cascade decode reads a shared prefix once; its break-even against plain
paged decode, and its lengths checked (an InputError naming the argument).
"""

from __future__ import annotations

import pytest

from rooflab.cost.cascade import breakeven_prefix_len, cascade_decode
from rooflab.cost.paged import paged_decode
from rooflab.load import load_model
from support import heads, refused


LLAMA = load_model("llama-3-8b")


def test_cascade_reads_the_prefix_once():
    n, prefix, suffix = 32, 4096, 100
    c = cascade_decode(LLAMA.heads, prefix, [suffix] * n)
    kv_token = 2 * 8 * 128 * 2   # one layer, fp16
    # plain reads the prefix n times, cascade once: the saving is (n - 1) prefix tokens, less the overhead
    assert float(c.saved_bytes) == pytest.approx((n - 1) * prefix * kv_token, rel=0.01)
    assert float(c.saved_bytes) < (n - 1) * prefix * kv_token
    assert float(c.flops) == float(paged_decode(LLAMA.heads, [prefix + suffix] * n).flops)


def test_cascade_breakeven():
    p = breakeven_prefix_len(LLAMA.heads, 8)
    assert float(cascade_decode(LLAMA.heads, p, [1] * 8).saved_bytes) > 0
    assert float(cascade_decode(LLAMA.heads, p - 1, [1] * 8).saved_bytes) <= 0
    assert breakeven_prefix_len(LLAMA.heads, 1) == 0


def test_cascade_checks_its_lengths():
    refused(lambda: cascade_decode(heads(), "1024", [16]), "prefix")
    refused(lambda: cascade_decode(heads(), 1024, [-1]), "suffix")
    refused(lambda: cascade_decode(heads(), 1024, "16"), "suffix")

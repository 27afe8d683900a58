"""Tests of rooflab/hf/common.py: compressing a layer stack into a pattern reproduces every stack."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from rooflab.hf.common import compress


# --- the stack and the exporter -------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("abc"), min_size=1, max_size=40))
def test_compress_reproduces_every_stack(names):
    first, pattern = compress(names)
    assert list(first) + [pattern[i % len(pattern)] for i in range(len(first), len(names))] == names
    assert len(first) + len(pattern) <= len(names)

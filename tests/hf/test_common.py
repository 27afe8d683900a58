"""Hugging Face config.json as a model spec: the configs' own rules, strict reading, and errors naming file,
field and value (exit 2 from the CLI).

Configs here are small dicts written for the rule under test (a real file's fields where one is at hand);
the real files are read in tests/hf/test_init.py (test_real_config_loads_to_the_bundled_spec).
"""

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

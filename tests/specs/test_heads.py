"""Tests of rooflab/specs/heads.py: sharding heads across tensor-parallel ranks (query heads split, KV heads
replicated past H_kv), and head counts that are not counts, do not divide, or cannot split evenly refused.
"""

from __future__ import annotations

import pytest

from rooflab import load_model
from rooflab.errors import InputError, SpecError
from rooflab.specs import AttentionHeads


LLAMA70 = load_model("llama-3-70b")


# --- sharding heads ---------------------------------------------------------------------------

@pytest.mark.parametrize("tp, qo, kv", [(1, 64, 8), (2, 32, 4), (4, 16, 2), (8, 8, 1), (16, 4, 1), (32, 2, 1)])
def test_shard_splits_query_heads_and_replicates_kv_heads_past_h_kv(tp, qo, kv):
    heads = LLAMA70.heads.shard(tp)
    assert (heads.num_qo_heads, heads.num_kv_heads, heads.head_dim) == (qo, kv, 128)


@pytest.mark.parametrize("tp, needle", [(0, "whole number"), (3, "query heads"), (True, "whole number"),
                                        (2.0, "whole number")])
def test_shard_bad_sizes(tp, needle):
    with pytest.raises(InputError, match=needle):
        LLAMA70.heads.shard(tp)


def test_shard_needs_an_even_kv_split():
    # 40 query heads and 8 KV heads (made up): tp 5 divides the query heads but not the KV heads,
    # and tp 20 is past h_kv without being a multiple of it
    from rooflab.specs import AttentionHeads
    heads = AttentionHeads(40, 8, 128)
    with pytest.raises(InputError, match="KV heads"):
        heads.shard(5)
    with pytest.raises(InputError, match="replicated"):
        heads.shard(20)


def test_heads_refuse_what_is_not_a_head_count():
    for bad in (0, -8, 8.5, True, "8"):
        with pytest.raises(SpecError):
            AttentionHeads(32, bad, 128)


def test_heads_must_divide():
    with pytest.raises(Exception, match="multiple"):
        AttentionHeads(32, 5, 128)

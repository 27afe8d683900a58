"""Tests of rooflab/cost/dcp.py: decode context parallelism. The KV shard as whole pages dealt out, the
pieces by hand, DCP halving the KV a rank reads, and more ranks than pages or bad arguments refused by name.
"""

from __future__ import annotations

import pytest

from rooflab.cost.dcp import check_dcp, dcp_decode, shard_tokens
from rooflab.cost.paged import paged_decode_uniform
from rooflab.errors import InputError
from rooflab.specs import AttentionHeads
from rooflab.units import DType


LLAMA = AttentionHeads(32, 8, 128)


def test_shard_is_whole_pages_dealt_out():
    assert shard_tokens(1000, 2, 16) == 512          # 63 pages -> 32 on the fullest rank
    assert shard_tokens(1000, 1, 16) == 1000
    assert shard_tokens(131072, 2, 16) == 65536
    assert shard_tokens(20, 2, 16) == 16


def test_pieces_by_hand():
    c = dcp_decode(LLAMA, 131072, 8, 2, 16, DType.fp16, num_splits=4)
    rows = 8 * 32
    assert c.gather_bytes_per_rank == rows * 129 * 4                  # B h (d + 1) fp32: 132,096 bytes
    assert float(c.unpack.hbm_bytes) == 2 * 2 * rows * 129 * 4         # read and write the N gathered states
    assert float(c.merge.hbm_bytes) == rows * 2 * 129 * 4 + rows * 128 * 2   # N (d + 1) 4 in, d b out
    assert float(c.local.kv_bytes) == 8 * 65536 * 8 * 256 * 2          # half the KV: B L/2 h_kv (d + d_v) b
    assert float(c.local.merge.hbm_bytes) == rows * 4 * 129 * 4 + rows * 129 * 4   # S splits in, fp32 o + lse out


def test_dcp_halves_the_kv_a_rank_reads():
    for n in (2, 4, 8):
        c = dcp_decode(LLAMA, 1 << 20, 1, n, 16)
        assert float(c.local.kv_bytes) == pytest.approx(float(paged_decode_uniform(LLAMA, 1 << 20, 1).kv_bytes) / n)


def test_dcp_past_the_pages_is_an_error():
    with pytest.raises(InputError, match="larger than the context in pages"):
        check_dcp(9, 128, 16)                              # 8 pages
    assert check_dcp(8, 128, 16) == 8
    with pytest.raises(InputError, match="--dcp"):
        check_dcp(0, 128, 16)


@pytest.mark.parametrize("args, named", [((8192, 0), "world_size"), ((8192, 2, 0), "page size"),
                                         ((-1, 2), "context length"), ((float("nan"), 2), "context length")])
def test_shard_tokens_checks_its_arguments(args, named):
    """world_size 0 and page_size 0 divided by zero; a negative context gave a negative token count."""
    with pytest.raises(InputError, match=named):
        shard_tokens(*args)

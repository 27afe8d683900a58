"""Tests of rooflab/cost/fused_moe.py: the shipped H200 tile config and the live programs of one fused_moe launch."""

import re

import pytest

from rooflab.cost.fused_moe import SHIPPED_H200_TILES, fused_tiles, shipped_tile
from rooflab.fit.moe_fit import read_moe_csv
from rooflab.load.bundled import data_dir

FUSED_CSV = data_dir("measurements") / "moe" / "h200-fused-moe-block-fp8.csv"


def test_every_measured_row_ran_the_tile_the_model_counts():
    """The fit (rooflab.fit.moe_fit.fit_fused) counts tiles with shipped_tile; each row of its campaign records the
    BLOCK_M, key and BLOCK_N the benchmark launched (benchmarks/h200_early2025_decode_kernels.py's own copy of the
    shipped file): the two must be the same config, or the fitted tau prices other programs than were timed."""
    _, rows = read_moe_csv(FUSED_CSV)
    assert rows
    for row in rows:
        found = re.match(r"BLOCK_M (\d+); config key M=(\d+): BN (\d+)", row["note"])
        assert found, row["note"]
        block_m, key, block_n = (int(g) for g in found.groups())
        assert shipped_tile(row["tokens"]) == (block_m, block_n) == SHIPPED_H200_TILES[key], row


@pytest.mark.parametrize("tokens, key", [(1, 1), (3, 2), (100, 96), (112, 96), (113, 128), (5000, 4096)])
def test_the_nearest_key_is_taken_the_smaller_on_a_tie(tokens, key):
    """try_get_optimal_moe_config: min over the file's keys of |key - M| (3 is 1 from 2 and 4: 2, the smaller)."""
    assert shipped_tile(tokens) == SHIPPED_H200_TILES[key]


def test_tiles_by_hand():
    """32 tokens, 256 pairs over 160 experts, the down GEMM (n 7168): key 32 is (64, 128), so
    160 x ceil(256 / (160 x 64)) x ceil(7168 / 128) = 160 x 1 x 56 programs; 512 tokens, 4096 pairs over 256
    experts, gate/up (n 512): 256 x ceil(4096 / (256 x 64)) x ceil(512 / 128) = 256 x 1 x 4."""
    assert fused_tiles(32, 256, 160, 7168) == 160 * 56
    assert fused_tiles(512, 4096, 256, 512) == 256 * 4
    assert fused_tiles(1, 8, 8, 512) == 8 * 1 * 8                  # key 1: (16, 64)
    assert fused_tiles(32, 0, 0, 7168) == 0.0

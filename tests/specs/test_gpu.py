"""Tests of rooflab/specs/gpu.py.

From the suites this file gathers:

Bad input at the Python API's doors: specs, the YAML schema, counts and sizes, writes, bounded work.

The CLI's share is in the fuzz suite (tests/test_fuzz_*.py); these pin each door's behaviour once.

Golden figures for one layer of Llama-3-8B on an H100 SXM in fp16, T = 8192 unless stated.

Every number here is derived in the chapter "Naive attention and the online softmax",
in the opening part (cited as "chapter 1, <passage>"): the S tensor, the
three-kernel traffic count, the intensity reconciliation and the time floors.
rooflab computes them from the YAML specs; nothing below is fed in but the workload.
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import DType, load_gpu
from rooflab.errors import SpecError


# --- specs are checked on every construction ---------------------------------------------------------

def test_replace_checks_the_new_value():
    gpu = load_gpu("h100-sxm")
    with pytest.raises(SpecError) as err:
        dataclasses.replace(gpu, hbm_bandwidth_bytes_per_s=-3.35e12)
    assert err.value.field == "hbm_bandwidth_bytes_per_s"


@pytest.fixture(scope="module")
def h100():
    return load_gpu("h100-sxm")


def test_ridge_point_is_295(h100):
    # chapter 1, "Against the H100 SXM ridge point of I* = 295 FLOP/byte fixed in section 0.4"
    assert h100.ridge_flop_per_byte(DType.fp16) == pytest.approx(989.4e12 / 3.35e12)
    assert round(h100.ridge_flop_per_byte(DType.fp16)) == 295

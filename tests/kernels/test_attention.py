"""Tests of rooflab/kernels/attention.py without CuPy: the softmax kernel's configuration and plan (long
aligned rows streamed; rows it cannot hold refused).
"""

from __future__ import annotations

import pytest

import rooflab.kernels as kernels


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

"""The whole-model step (rooflab.step): its rows by hand, invariants, the measured step it predicts, bad input, the
CLI, and the distributed bench's code paths on CPU (gloo, tiny shapes).
"""

from __future__ import annotations

import pytest

from rooflab.cost.gemm import gemm
from rooflab.units import DType


def test_gemm_by_hand():
    # Llama-3-8B's MLP down projection at one row: 2 x 4096 x 14336 FLOPs over the 117 MB weight, 1.0 FLOP/byte
    c = gemm(1, 4096, 14336, DType.bf16)
    assert float(c.flops) == 2 * 4096 * 14336
    assert float(c.hbm_bytes) == 4096 * 14336 * 2 + (14336 + 4096) * 2
    assert float(c.weight_bytes) == 4096 * 14336 * 2
    assert float(gemm(8, 10, 10, DType.bf16, weight_bits=4, groups=3).weight_bytes) == 3 * 10 * 10 * 0.5


@pytest.mark.parametrize("kwargs, named", [({"weight_bits": 0}, "weight_bits"), ({"weight_bits": -4}, "weight_bits"),
                                           ({"weight_bits": float("nan")}, "weight_bits"),
                                           ({"m": 10**300}, "GEMM m"), ({"k": float("inf")}, "GEMM k")])
def test_gemm_refuses_bit_widths_and_sizes_past_reason(kwargs, named):
    """weight_bits -4 gave negative bytes, NaN NaN bytes, and 10**300-wide GEMMs infinite FLOPs."""
    from rooflab.errors import InputError

    args = {"m": 16, "n": 4096, "k": 4096, **kwargs}
    with pytest.raises(InputError, match=named):
        gemm(args.pop("m"), args.pop("n"), args.pop("k"), **args)

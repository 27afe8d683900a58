"""GPU tests of rooflab/kernels/testing.py: the e4m3 encoder on the device matches the host's.

The fixtures `cp`, `rng` and `hopper` (tests/kernels/conftest.py) and the checks come from
tests/kernels/gpu_support.py: fresh random inputs, NaN-poisoned outputs, the tolerances of
rooflab.kernels.testing. Skipped, with a reason, where CuPy or a CUDA device is missing (tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.kernels import testing as kt

pytestmark = pytest.mark.gpu


def test_fp8_encode_on_the_device_matches_the_host(cp, rng):
    x = rng.standard_normal(100_000, dtype=cp.float32) * np.float32(100)
    ties = kt.e4m3_decode(np.arange(0x7F, dtype=np.uint8))
    x = cp.concatenate([x, cp.asarray((ties[:-1] + ties[1:]) / 2, dtype=cp.float32),
                        cp.asarray([np.inf, -np.inf, np.nan, 500.0, -0.0], dtype=cp.float32)])
    got = kt.e4m3_encode(x)
    assert got.dtype == cp.uint8
    assert np.array_equal(cp.asnumpy(got), kt.e4m3_encode(cp.asnumpy(x)))

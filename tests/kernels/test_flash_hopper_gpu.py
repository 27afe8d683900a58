"""GPU tests of rooflab/kernels/flash_hopper.py: the wgmma probe's two layouts on one tile (flash_attention's
Hopper kernel is tested through attention.py in test_attention_gpu.py).

The fixtures `cp`, `rng` and `hopper` (tests/kernels/conftest.py) and the checks come from
tests/kernels/gpu_support.py: fresh random inputs, NaN-poisoned outputs, the tolerances of
rooflab.kernels.testing. Skipped, with a reason, where CuPy or a CUDA device is missing (tests/conftest.py).
"""

from __future__ import annotations

import pytest

from rooflab.kernels import testing as kt

from .gpu_support import HALF, assert_close, normal

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", HALF)
def test_wgmma_probe_layouts(hopper, rng, dtype):
    """The two wgmma paths (shared-shared K-major; register A with an MN-major B) on one 64x128x128 tile."""
    from rooflab.kernels.flash_hopper import wgmma_probe

    a = normal(hopper, rng, (64, 128), dtype)
    bk = normal(hopper, rng, (128, 128), dtype)
    bv = normal(hopper, rng, (128, 128), dtype)
    c1, c2 = wgmma_probe(hopper, a, bk, bv)
    a64, bk64, bv64 = kt.to_float64(a), kt.to_float64(bk), kt.to_float64(bv)
    tol = kt.Tolerance(1e-5, 1e-4, 0.0, "exact 16-bit products summed in fp32 over k = 128")
    assert_close(c1, a64 @ bk64.T, tol, f"wgmma shared-shared {dtype}")
    assert_close(c2, a64 @ bv64, tol, f"wgmma register-A, MN-major B {dtype}")

"""GPU tests of rooflab/kernels/mla.py: MLA decode (bf16 / fp16 / fp8 latent cache, split-KV, the mma.sync
and Hopper wgmma kernels) against the fp64 oracle.

The fixtures `cp`, `rng` and `hopper` (tests/kernels/conftest.py) and the checks come from
tests/kernels/gpu_support.py: fresh random inputs, NaN-poisoned outputs, the tolerances of
rooflab.kernels.testing. Skipped, with a reason, where CuPy or a CUDA device is missing (tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflab import numerics
from rooflab.kernels import testing as kt

from .gpu_support import HALF, _mla_cache, assert_close_variants, assert_lse

pytestmark = pytest.mark.gpu


def _mla_check(cp, rng, dtype, heads, q_len, num_splits, kv=None, kv_scale=1.0, lens=(1, 64, 65, 700, 2000),
               mt=None, impl=None):
    from rooflab.kernels import mla_decode

    lens = [max(n, q_len) for n in lens]
    cache, latent = _mla_cache(cp, rng, lens, kv or dtype, kv_scale)
    q = kt.random_normal((len(lens), q_len, heads, 576), dtype, rng)
    q64 = kt.to_float64(q)
    refs = [numerics.mla_decode_reference(q64[b], cache.dense_float64(b)[0][0]) for b in range(len(lens))]
    ref_o, ref_lse = np.stack([r[0] for r in refs]), np.stack([r[1] for r in refs])
    out = kt.poison(cp.empty((len(lens), q_len, heads, 512), dtype=q.dtype))
    out_lse = kt.poison(cp.empty((len(lens), q_len, heads), dtype=cp.float32))
    scale_arg = {"kv_scale": kv_scale} if kv else {}
    o, lse = mla_decode(q, latent, cache.block_table, cache.context_lens, num_splits, out=out, out_lse=out_lse,
                        mt=mt, impl=impl, **scale_arg)
    assert o is out and lse is out_lse
    tol = kt.tolerance(q.dtype.name, "attention")
    what = f"mla {impl} {dtype} kv={kv or dtype} heads={heads} q_len={q_len} splits={num_splits} mt={mt}"
    if impl is None and mt is None and kv is None:                  # the default dispatch (wgmma on sm_90 >= 64 rows)
        from rooflab.kernels.mla import mla_default_impl
        what += f" (ran {mla_default_impl(cp, heads * q_len, False)})"
    assert_close_variants(o, ref_o, tol, what)
    assert_lse(lse, ref_lse, tol, what)


@pytest.mark.parametrize("heads", [16, 32, 128])
@pytest.mark.parametrize("q_len", [1, 2])
@pytest.mark.parametrize("num_splits", [1, 3])
def test_mla_decode_bf16(cp, rng, heads, q_len, num_splits):
    _mla_check(cp, rng, "bf16", heads, q_len, num_splits)


@pytest.mark.parametrize("heads, q_len", [(1, 1), (7, 3), (20, 1), (128, 8)])
def test_mla_decode_rows(cp, rng, heads, q_len):
    """Row counts that leave a partial row tile or chunk (q_len x h = 1, 21, 20, 1024)."""
    _mla_check(cp, rng, "fp16", heads, q_len, 1)


@pytest.mark.parametrize("mt", [1, 2, 4])
def test_mla_decode_row_tiles(cp, rng, mt):
    _mla_check(cp, rng, "bf16", 40, 1, 2, mt=mt)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("heads, q_len", [(16, 1), (128, 2)])
@pytest.mark.parametrize("num_splits", [1, 4])
@pytest.mark.parametrize("kv_scale", [1.0, 0.05])
def test_mla_decode_fp8(cp, rng, dtype, heads, q_len, num_splits, kv_scale):
    _mla_check(cp, rng, dtype, heads, q_len, num_splits, kv=kt.FP8_KV, kv_scale=kv_scale)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("heads, q_len", [(16, 1), (64, 1), (128, 2), (20, 3), (128, 8)])
@pytest.mark.parametrize("num_splits", [1, 3])
@pytest.mark.parametrize("impl", ["hopper", "hopper_tile", "hopper_tma"])
def test_mla_decode_hopper(hopper, rng, dtype, heads, q_len, num_splits, impl):
    """The wgmma kernels, the seesaw schedule (hopper, the default), the one-phase one kept beside it
    (hopper_tile) and the seesaw loading its tiles by TMA (hopper_tma): 64 rows a CTA (16 to 1024 rows: partial
    and several chunks), split-KV."""
    _mla_check(hopper, rng, dtype, heads, q_len, num_splits, impl=impl)


def test_mla_default_impl(hopper):
    from rooflab.kernels.mla import mla_default_impl

    assert mla_default_impl(hopper, 256, fp8=False) == "hopper"
    assert mla_default_impl(hopper, 16, fp8=False) == "mma"
    assert mla_default_impl(hopper, 256, fp8=True) == "mma"
    assert mla_default_impl(hopper, 256, fp8=False, mt=4) == "mma"


def test_mla_decode_hopper_large_logits(hopper, rng):
    from rooflab.kernels import mla_decode

    lens = [3000, 130]
    cache, latent = _mla_cache(hopper, rng, lens, "bf16")
    q = kt.random_normal((2, 2, 64, 576), "bf16", rng, std=4.0)     # scaled logits of std ~4
    q64 = kt.to_float64(q)
    refs = [numerics.mla_decode_reference(q64[b], cache.dense_float64(b)[0][0]) for b in range(2)]
    o, lse = mla_decode(q, latent, cache.block_table, cache.context_lens, out=kt.poison(hopper.empty(
        (2, 2, 64, 512), dtype=q.dtype)), impl="hopper")
    tol = kt.tolerance("bfloat16", "attention")
    assert_close_variants(o, np.stack([r[0] for r in refs]), tol, "mla hopper large logits")
    assert_lse(lse, np.stack([r[1] for r in refs]), tol, "mla hopper large logits")

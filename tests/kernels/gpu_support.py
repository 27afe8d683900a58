"""Fixtures and helpers shared by the GPU tests of rooflab/kernels/ (tests/kernels/test_*_gpu.py, and
tests/bench/test_ours_gpu.py): the CUDA kernels against the fp64 NumPy oracles of rooflab.numerics.

Every test draws fresh random inputs (the seed is printed, so a failure can be replayed), poisons the outputs
with NaN first so that an element a kernel never writes fails, and compares with the tolerances of
rooflab.kernels.testing.TOLERANCES (one table, with reasons). The attention variants' tests (window, chunk and
sinks, several new tokens, MLA decode) also poison the keys a decode kernel must not read, so a read of one
shows. Skipped, with a reason, where CuPy or a CUDA device is missing (tests/conftest.py); CuPy is imported
inside the `cp` fixture only, so the test files collect without it. Not collected itself (no test_ prefix).

`assert_close` is the check of the kernels' base tests, `assert_close_variants` that of the variants' tests
(the same check; its NaN message names a key read the kernel must not make too).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from rooflab.kernels import testing as kt


HALF = ["fp16", "bf16"]


# The base tests' precompile (the defaults and the tuning variants they run); the variants' tests called
# precompile() (the defaults only, a subset), so a whole run compiles the same set as before the split.
@pytest.fixture(scope="module")
def cp():
    import cupy

    from rooflab.kernels import precompile

    precompile(flash_variants=[(2, 4, 32), (1, 8, 64), (1, 4, 64)],
               hopper_variants=[(2, 128, True), (2, 128, False), (3, 128, False), (2, 64, True), (3, 64, True),
                                (2, 128, False, 3)])
    return cupy


@pytest.fixture
def rng(cp):
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed = {seed}")
    return cp.random.default_rng(seed)


@pytest.fixture(scope="module")
def hopper(cp):
    from rooflab.kernels._runtime import compute_capability
    from rooflab.kernels.flash_hopper import HOPPER_COMPUTE_CAPABILITY

    if compute_capability(cp) != HOPPER_COMPUTE_CAPABILITY:
        pytest.skip("the wgmma kernel needs an sm_90 GPU (H100 / H200)")
    return cp


def assert_close(out, ref: np.ndarray, tol: kt.Tolerance, what: str) -> None:
    got = kt.to_float64(out)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    assert not np.isnan(got).any(), f"{what}: {np.isnan(got).sum()} NaN elements (unwritten or wrong)"
    err = np.abs(got - ref)
    ref_norm, ref_max = np.linalg.norm(ref), np.abs(ref).max(initial=0.0)
    if ref_max == 0.0:
        assert err.max(initial=0.0) == 0.0, f"{what}: reference is all zeros, output is not"
        return
    rel_l2 = np.linalg.norm(got - ref) / ref_norm
    max_abs = err.max() / ref_max
    assert rel_l2 <= tol.rel_l2 and max_abs <= tol.max_abs, (
        f"{what}: rel_l2 {rel_l2:.3g} (tol {tol.rel_l2}), max_abs/max|ref| {max_abs:.3g} "
        f"(tol {tol.max_abs}); tolerance reason: {tol.reason}")


def assert_close_variants(out, ref: np.ndarray, tol: kt.Tolerance, what: str) -> None:
    got = kt.to_float64(out)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    assert not np.isnan(got).any(), f"{what}: {np.isnan(got).sum()} NaN elements (unwritten, or a key read it must not)"
    ref_max = np.abs(ref).max(initial=0.0)
    if ref_max == 0.0:
        assert np.abs(got).max(initial=0.0) == 0.0, f"{what}: reference is all zeros, output is not"
        return
    rel_l2 = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    max_abs = np.abs(got - ref).max() / ref_max
    assert rel_l2 <= tol.rel_l2 and max_abs <= tol.max_abs, (
        f"{what}: rel_l2 {rel_l2:.3g} (tol {tol.rel_l2}), max_abs/max|ref| {max_abs:.3g} (tol {tol.max_abs}); "
        f"tolerance reason: {tol.reason}")


def assert_lse(lse, ref: np.ndarray, tol: kt.Tolerance, what: str) -> None:
    got = kt.to_float64(lse)
    assert not np.isnan(got).any(), f"{what}: NaN in the LSE"
    empty = np.isneginf(ref)
    assert np.array_equal(np.isneginf(got), empty), f"{what}: -inf LSEs (empty rows) differ from the oracle"
    if (~empty).any():
        err = np.abs(got[~empty] - ref[~empty]).max()
        assert err <= tol.lse_abs, f"{what}: LSE error {err:.3g} > {tol.lse_abs}; {tol.reason}"


def normal(cp, rng, shape, dtype, std=1.0):
    return kt.random_normal(shape, dtype, rng, std)


def random_sinks(cp, rng, heads: int, dominant: bool = False):
    """N(0, 2^2) logits a head; with dominant, head 0's is 40 (far above any score: o -> 0, lse -> 40)."""
    s = rng.standard_normal(heads, dtype=cp.float32) * np.float32(2.0)
    if dominant:
        s[0] = 40.0
    return s


def _mla_cache(cp, rng, lens, kv, kv_scale=1.0):
    """A paged latent cache [pages, 64, 576] (kt.make_paged_cache with one 576-wide KV head; NaN in unused slots)."""
    args = {"k_scale": kv_scale, "v_scale": kv_scale} if kv == kt.FP8_KV else {}
    cache = kt.make_paged_cache(lens, 1, 576, 64, kv, seed=int(rng.integers(0, 2**31)), **args)
    latent = cache.k_cache.reshape(cache.k_cache.shape[0], 64, 576)
    return cache, latent

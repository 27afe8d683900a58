"""rooflab's CUDA kernels against the fp64 NumPy oracles of rooflab.numerics.

Every test draws fresh random inputs (the seed is printed, so a failure can be replayed),
poisons the outputs with NaN first so that an element a kernel never writes fails, and
compares with the tolerances of rooflab.kernels.testing.TOLERANCES (one table, with reasons).
Skipped, with a reason, where CuPy or a CUDA device is missing (tests/conftest.py).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from rooflab import numerics
from rooflab.kernels import testing as kt

pytestmark = pytest.mark.gpu

HALF = ["fp16", "bf16"]


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


# ---------------------------------------------------------------- softmax rows

@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("n", [1, 3, 8, 100, 1000, 4097, 8192, 20000, 32768])
def test_softmax_rows(cp, rng, dtype, n):
    s = normal(cp, rng, (3, 5, n), dtype, std=3.0)
    bits = s.view(cp.uint16 if s.dtype.itemsize == 2 else cp.uint32)
    neg_inf = {2: 0xFC00 if s.dtype.name == "float16" else 0xFF80, 4: 0xFF800000}[s.dtype.itemsize]
    bits[0, 1, :] = neg_inf                                      # a fully masked row -> zeros
    bits[1, 2, :: max(1, n // 3)] = neg_inf                      # some masked entries
    ref = numerics.safe_softmax(kt.to_float64(s))
    out = kt.nan_like(s)
    from rooflab.kernels import softmax_rows

    p = softmax_rows(s, out=out)
    assert p is out
    assert_close(p, ref, kt.tolerance(s.dtype.name, "rowwise"), f"softmax_rows {dtype} n={n}")


def test_softmax_rows_in_place(cp, rng):
    from rooflab.kernels import softmax_rows

    s = normal(cp, rng, (64, 8192), "fp16", std=2.0)
    ref = numerics.safe_softmax(kt.to_float64(s))
    softmax_rows(s, out=s)
    assert_close(s, ref, kt.tolerance("float16", "rowwise"), "softmax_rows in place")


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_masked_softmax_streaming_causal(cp, rng, dtype):
    """Long rows take the streaming (cp.async ring) variant; Tq < Tk puts the causal edge mid-row."""
    from rooflab.kernels.attention import masked_softmax, softmax_plan

    s = normal(cp, rng, (2, 3, 300, 4096), dtype, std=3.0)
    assert softmax_plan(4096, s.dtype.itemsize)[3] > 0
    logits = kt.to_float64(s) * 0.125
    cols, rows = np.arange(4096), np.arange(300)
    logits = np.where(cols[None, :] <= rows[:, None] + 4096 - 300, logits, -np.inf)
    ref = numerics.safe_softmax(logits)
    out = masked_softmax(s, 0.125, causal=True, out=kt.nan_like(s))
    assert_close(out, ref, kt.tolerance(s.dtype.name, "rowwise"), f"masked_softmax {dtype}")


# ---------------------------------------------------------------- naive attention

NAIVE_CASES = [  # B, h, h_kv, Tq, Tk, d
    (2, 4, 4, 77, 77, 64),
    (1, 8, 2, 128, 128, 128),
    (1, 4, 1, 1, 1, 64),
    (2, 4, 2, 5, 77, 64),       # Tq < Tk: queries aligned to the end of the keys
    (1, 2, 1, 40, 9, 64),       # Tq > Tk: causal rows before the first key see nothing
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("case", NAIVE_CASES, ids=lambda c: "x".join(map(str, c)))
def test_naive_attention(cp, rng, dtype, causal, case):
    from rooflab.kernels import naive_attention

    batch, heads, kv_heads, q_len, kv_len, d = case
    q = normal(cp, rng, (batch, heads, q_len, d), dtype)
    k = normal(cp, rng, (batch, kv_heads, kv_len, d), dtype)
    v = normal(cp, rng, (batch, kv_heads, kv_len, d), dtype)
    ref, _ = numerics.attention_reference(kt.to_float64(q), kt.to_float64(k), kt.to_float64(v), causal=causal)
    o = naive_attention(q, k, v, causal=causal)
    assert_close(o, ref, kt.tolerance(q.dtype.name, "naive"), f"naive {dtype} causal={causal} {case}")


# ---------------------------------------------------------------- flash attention

FLASH_CASES = [  # B, h, h_kv, Tq, Tk
    (1, 2, 2, 1, 1),
    (2, 4, 4, 17, 17),
    (1, 8, 2, 129, 129),
    (1, 8, 1, 300, 300),
    (1, 4, 2, 37, 300),         # Tq < Tk
    (1, 4, 4, 300, 37),         # Tq > Tk: causal rows with no visible key
    (2, 2, 1, 64, 64),
    (1, 2, 2, 1000, 1000),
]


def _flash_check(cp, rng, dtype, d, causal, case, std=1.0, variant=None, impl=None):
    from rooflab.kernels import flash_attention

    batch, heads, kv_heads, q_len, kv_len = case
    q = normal(cp, rng, (batch, heads, q_len, d), dtype, std)
    k = normal(cp, rng, (batch, kv_heads, kv_len, d), dtype, std)
    v = normal(cp, rng, (batch, kv_heads, kv_len, d), dtype)
    ref_o, ref_lse = numerics.attention_reference(kt.to_float64(q), kt.to_float64(k), kt.to_float64(v),
                                                  causal=causal)
    out, out_lse = kt.nan_like(q), kt.poison(cp.empty((batch, heads, q_len), dtype=cp.float32))
    o, lse = flash_attention(q, k, v, causal=causal, out=out, out_lse=out_lse, variant=variant, impl=impl)
    assert o is out and lse is out_lse
    tol = kt.tolerance(q.dtype.name, "attention")
    what = f"flash {dtype} d={d} causal={causal} {case} variant={variant} impl={impl}"
    assert_close(o, ref_o, tol, what)
    assert_lse(lse, ref_lse, tol, what)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("case", FLASH_CASES, ids=lambda c: "x".join(map(str, c)))
def test_flash_attention(cp, rng, dtype, d, causal, case):
    _flash_check(cp, rng, dtype, d, causal, case)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_large_logits(cp, rng, causal):
    """q, k with std 3: scaled logits of std ~9, so the running max moves a lot between tiles."""
    _flash_check(cp, rng, "fp16", 128, causal, (1, 4, 2, 333, 333), std=3.0)


@pytest.mark.parametrize("variant", [(2, 4, 32), (1, 8, 64), (2, 4, 64), (1, 4, 64)])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_variants(cp, rng, variant, causal):
    _flash_check(cp, rng, "bf16", 128, causal, (1, 4, 2, 250, 250), variant=variant)


# ---------------------------------------------------------------- flash attention, Hopper (wgmma)

HOPPER_CASES = [  # B, h, h_kv, Tq, Tk
    (1, 2, 2, 1, 1),
    (2, 4, 4, 17, 17),          # batch 2, group 1
    (1, 8, 2, 129, 129),        # group 4; T one past a 128-row / 128-key tile
    (1, 8, 1, 300, 300),        # group 8
    (1, 4, 2, 37, 300),         # Tq < Tk
    (1, 4, 4, 300, 37),         # Tq > Tk: causal rows with no visible key
    (2, 8, 1, 1000, 1000),      # batch 2, group 8, a partial last tile
    (1, 2, 2, 1024, 1024),      # whole tiles only
]


@pytest.fixture(scope="module")
def hopper(cp):
    from rooflab.kernels._runtime import compute_capability
    from rooflab.kernels.flash_hopper import HOPPER_COMPUTE_CAPABILITY

    if compute_capability(cp) != HOPPER_COMPUTE_CAPABILITY:
        pytest.skip("the wgmma kernel needs an sm_90 GPU (H100 / H200)")
    return cp


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


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("case", HOPPER_CASES, ids=lambda c: "x".join(map(str, c)))
def test_flash_attention_hopper(hopper, rng, dtype, causal, case):
    _flash_check(hopper, rng, dtype, 128, causal, case, impl="hopper")


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_hopper_large_logits(hopper, rng, causal):
    _flash_check(hopper, rng, "fp16", 128, causal, (1, 4, 2, 333, 333), std=3.0, impl="hopper")


@pytest.mark.parametrize("variant", [(2, 128, True), (2, 128, False), (3, 128, False), (2, 64, True),
                                     (3, 64, True), (2, 128, False, 2), (2, 128, False, 3)],
                         ids=lambda v: "-".join(map(str, v)))
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_hopper_variants(hopper, rng, variant, causal):
    _flash_check(hopper, rng, "bf16", 128, causal, (1, 4, 2, 700, 700), variant=variant, impl="hopper")


def test_flash_attention_hopper_refuses_d64(hopper, rng):
    from rooflab.kernels import flash_attention

    q = normal(hopper, rng, (1, 2, 10, 64), "fp16")
    with pytest.raises(ValueError, match="hopper"):
        flash_attention(q, q, q, impl="hopper")


def test_bench_names_the_flash_implementation_that_runs(hopper):
    # measurements must say which kernel was timed: the wgmma one (d 128 on sm_90) or the mma.sync one
    from rooflab.bench.cases import Case
    from rooflab.bench.ours import impl_name
    from rooflab.specs import AttentionHeads
    from rooflab.units import DType
    from rooflab.vocab import Kernel

    assert impl_name(Case(Kernel.flash, DType.fp16, seq_len=128)) == "rooflab_hopper"
    assert impl_name(Case(Kernel.flash, DType.fp16, AttentionHeads(32, 8, 64), seq_len=128)) == "rooflab"
    assert impl_name(Case(Kernel.paged, DType.fp16, context_lens=(64,), page_size=16)) == "rooflab"


def test_flash_attention_without_lse(cp, rng):
    from rooflab.kernels import flash_attention

    q = normal(cp, rng, (1, 2, 10, 64), "fp16")
    o, lse = flash_attention(q, q, q, return_lse=False)
    assert lse is None and o.shape == q.shape


# ---------------------------------------------------------------- paged decode

LENS = [1, 15, 16, 17, 100, 257, 1000, 33]


def _decode_reference(cache: kt.PagedCache, q64: np.ndarray, b: int, start: int | None = None,
                      stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The fp64 oracle over the cache as stored (an fp8 cache: its decoded codes times their scales)."""
    k64, v64 = (x[None] for x in cache.dense_float64(b))
    qb = q64[b][None, :, None, :]                                   # [1, h, 1, d]
    if start is None:
        o, lse = numerics.attention_reference(qb, k64, v64)
    else:
        o, lse = numerics.partial_attention(qb, k64, v64, start, stop)
    return o[0, :, 0], lse[0, :, 0]


def _decode_check(cp, rng, dtype, d, page_size, heads, kv_heads, num_splits, lens=LENS, kv=None, scales=(1.0, 1.0),
                  q_std=1.0):
    """kv None: a cache in q's dtype; kv = kt.FP8_KV: e4m3 codes with (k_scale, v_scale) = scales."""
    from rooflab.kernels import paged_decode

    seed = int(rng.integers(0, 2**31))
    scale_args = {"k_scale": scales[0], "v_scale": scales[1]} if kv else {}
    cache = kt.make_paged_cache(lens, kv_heads, d, page_size, kv or dtype, seed=seed, **scale_args)
    q = normal(cp, rng, (len(lens), heads, d), dtype, q_std)
    q64 = kt.to_float64(q)
    refs = [_decode_reference(cache, q64, b) for b in range(len(lens))]
    ref_o, ref_lse = np.stack([r[0] for r in refs]), np.stack([r[1] for r in refs])
    out = kt.nan_like(q)
    out_lse = kt.poison(cp.empty((len(lens), heads), dtype=cp.float32))
    o, lse = paged_decode(q, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens,
                          num_splits=num_splits, return_lse=True, out=out, out_lse=out_lse, **cache.scales)
    assert o is out and lse is out_lse
    tol = kt.tolerance(q.dtype.name, "attention")
    what = f"paged {dtype} kv={kv or dtype} d={d} page={page_size} heads={heads}/{kv_heads} splits={num_splits}"
    if kv:
        what += f" scales={scales}"
    assert_close(o, ref_o, tol, what)
    assert_lse(lse, ref_lse, tol, what)


@pytest.mark.parametrize("page_size", [1, 7, 16, 256])
@pytest.mark.parametrize("heads", [(8, 8), (32, 8), (12, 2), (40, 1)], ids=lambda h: f"{h[0]}-{h[1]}")
@pytest.mark.parametrize("num_splits", [1, 4])
def test_paged_decode_pages_and_groups(cp, rng, page_size, heads, num_splits):
    _decode_check(cp, rng, "fp16", 128, page_size, heads[0], heads[1], num_splits)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("num_splits", [1, 5, 64])
def test_paged_decode_dtypes(cp, rng, dtype, d, num_splits):
    _decode_check(cp, rng, dtype, d, 16, 32, 8, num_splits)


@pytest.mark.parametrize("page_size", [16, 5])
@pytest.mark.parametrize("kv", [None, kt.FP8_KV])
def test_paged_decode_partial_splits(cp, rng, page_size, kv):
    """Each split against partial_attention over its whole-page key range; empty splits are (0, -inf)."""
    from rooflab.kernels import paged_decode_partial

    lens, heads, kv_heads, d, splits = [1, 40, 16, 700], 8, 2, 128, 6
    scales = {"k_scale": 0.1, "v_scale": 0.7} if kv else {}
    cache = kt.make_paged_cache(lens, kv_heads, d, page_size, kv or "bf16", seed=int(rng.integers(0, 2**31)),
                                **scales)
    q = normal(cp, rng, (len(lens), heads, d), "bf16")
    q64 = kt.to_float64(q)
    out = kt.poison(cp.empty((splits, len(lens), heads, d), dtype=cp.float32))
    out_lse = kt.poison(cp.empty((splits, len(lens), heads), dtype=cp.float32))
    o_part, lse_part = paged_decode_partial(q, cache.k_cache, cache.v_cache, cache.block_table,
                                            cache.context_lens, splits, out=out, out_lse=out_lse, **scales)
    tol = kt.tolerance("bfloat16", "attention")
    for b, n in enumerate(lens):
        span = math.ceil(math.ceil(n / page_size) / splits) * page_size
        for z in range(splits):
            start = min(n, z * span)
            stop = min(n, start + span)
            ref_o, ref_lse = _decode_reference(cache, q64, b, start, stop)
            what = f"partial kv={kv or 'bf16'} b={b} split={z} keys [{start}, {stop})"
            assert_close(o_part[z, b], ref_o, tol, what)
            assert_lse(lse_part[z, b], ref_lse, tol, what)


# ---------------------------------------------------------------- paged decode, fp8 (e4m3) KV cache
# The oracle runs on the decoded cache, so the tolerances are those of 16-bit attention (the kernel
# widens e4m3 to fp16 / bf16 exactly). Scales (k, v) = (0.02, 3.0) put K's codes near the top of the
# e4m3 range and many of V's among the subnormals.

FP8_SCALES = [(1.0, 1.0), (0.02, 3.0)]


@pytest.mark.parametrize("page_size", [16, 1])
@pytest.mark.parametrize("heads", [(32, 8), (64, 8)], ids=lambda h: f"group{h[0] // h[1]}")
@pytest.mark.parametrize("num_splits", [1, 4])
@pytest.mark.parametrize("scales", FP8_SCALES, ids=lambda s: f"k{s[0]}-v{s[1]}")
def test_paged_decode_fp8(cp, rng, page_size, heads, num_splits, scales):
    _decode_check(cp, rng, "fp16", 128, page_size, heads[0], heads[1], num_splits, kv=kt.FP8_KV, scales=scales)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("num_splits", [1, 64])
def test_paged_decode_fp8_dtypes(cp, rng, dtype, d, num_splits):
    _decode_check(cp, rng, dtype, d, 16, 32, 8, num_splits, kv=kt.FP8_KV, scales=(0.5, 2.0))


@pytest.mark.parametrize("heads", [(8, 8), (12, 2), (40, 1)], ids=lambda h: f"{h[0]}-{h[1]}")
@pytest.mark.parametrize("page_size", [7, 256])
def test_paged_decode_fp8_other_groups_and_pages(cp, rng, heads, page_size):
    """Group 1, 6 and 40 (two row tiles and two head chunks); pages that are not a power of two."""
    _decode_check(cp, rng, "bf16", 128, page_size, heads[0], heads[1], 3, kv=kt.FP8_KV, scales=(0.02, 3.0))


def test_paged_decode_fp8_large_logits(cp, rng):
    """q of std 8: scaled logits of std ~8, so the running max moves a lot between tiles."""
    _decode_check(cp, rng, "fp16", 128, 16, 32, 8, 1, lens=[2000, 3, 517], kv=kt.FP8_KV, scales=(0.05, 1.0),
                  q_std=8.0)


def test_fp8_encode_on_the_device_matches_the_host(cp, rng):
    x = rng.standard_normal(100_000, dtype=cp.float32) * np.float32(100)
    ties = kt.e4m3_decode(np.arange(0x7F, dtype=np.uint8))
    x = cp.concatenate([x, cp.asarray((ties[:-1] + ties[1:]) / 2, dtype=cp.float32),
                        cp.asarray([np.inf, -np.inf, np.nan, 500.0, -0.0], dtype=cp.float32)])
    got = kt.e4m3_encode(x)
    assert got.dtype == cp.uint8
    assert np.array_equal(cp.asnumpy(got), kt.e4m3_encode(cp.asnumpy(x)))


# ---------------------------------------------------------------- merges

def _lse_pattern(cp, rng, shape):
    """Random finite LSEs for both sides, with the empty-state cases planted in some rows."""
    la = rng.standard_normal(shape, dtype=cp.float32) * 3
    lb = rng.standard_normal(shape, dtype=cp.float32) * 3
    inf = np.float32(np.inf)
    flat_a, flat_b = la.reshape(-1), lb.reshape(-1)
    cases = [(inf, None), (-inf, None), (None, inf), (None, -inf), (-inf, -inf), (inf, inf), (inf, -inf),
             (np.float32(80.0), np.float32(-80.0))]
    for i, (a, b) in enumerate(cases):
        if a is not None:
            flat_a[i] = a
        if b is not None:
            flat_b[i] = b
    return la, lb


def _empty_sides_nan(cp, o, lse):
    """An empty side's O may hold anything: make it NaN, which the kernel must never read."""
    bits = o.view(cp.uint16 if o.dtype.itemsize == 2 else cp.uint32)
    nan = {("float16", 2): 0x7E00, ("bfloat16", 2): 0x7FC0, ("float32", 4): 0x7FC00000}[(o.dtype.name, o.dtype.itemsize)]
    bits[cp.isinf(lse)] = nan


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("d", [128, 64, 6, 5])
def test_merge_states(cp, rng, dtype, d):
    from rooflab.kernels import merge_states

    tokens, heads = 37, 5
    o_a = normal(cp, rng, (tokens, heads, d), dtype)
    o_b = normal(cp, rng, (tokens, heads, d), dtype)
    lse_a, lse_b = _lse_pattern(cp, rng, (tokens, heads))
    ref_o, ref_lse = numerics.merge_states(kt.to_float64(o_a), kt.to_float64(lse_a),
                                           kt.to_float64(o_b), kt.to_float64(lse_b))
    _empty_sides_nan(cp, o_a, lse_a)
    _empty_sides_nan(cp, o_b, lse_b)
    out, out_lse = kt.nan_like(o_a), kt.nan_like(lse_a)
    o, lse = merge_states(o_a, lse_a, o_b, lse_b, out=out, out_lse=out_lse)
    tol = kt.tolerance(o_a.dtype.name, "rowwise")
    assert_close(o, ref_o, tol, f"merge {dtype} d={d}")
    assert_lse(lse, ref_lse, tol, f"merge {dtype} d={d}")
    o2, lse2 = merge_states(o_a, lse_a, o_b, lse_b, return_lse=False)
    assert lse2 is None
    assert_close(o2, ref_o, tol, f"merge {dtype} d={d} without LSE")


@pytest.mark.parametrize("rows_per_thread", [1, 4])
def test_merge_states_rows_per_thread(cp, rng, rows_per_thread):
    from rooflab.kernels import merge_states

    o_a, o_b = normal(cp, rng, (129, 3, 128), "bf16"), normal(cp, rng, (129, 3, 128), "bf16")
    lse_a, lse_b = _lse_pattern(cp, rng, (129, 3))
    ref_o, ref_lse = numerics.merge_states(kt.to_float64(o_a), kt.to_float64(lse_a),
                                           kt.to_float64(o_b), kt.to_float64(lse_b))
    o, lse = merge_states(o_a, lse_a, o_b, lse_b, out=kt.nan_like(o_a), out_lse=kt.nan_like(lse_a),
                          rows_per_thread=rows_per_thread)
    tol = kt.tolerance("bfloat16", "rowwise")
    assert_close(o, ref_o, tol, f"merge rows_per_thread={rows_per_thread}")
    assert_lse(lse, ref_lse, tol, f"merge rows_per_thread={rows_per_thread}")


def test_merge_states_unaligned(cp, rng):
    """Pointers off 16-byte alignment fall back to narrower vectors."""
    from rooflab.kernels import merge_states

    tokens, heads, d = 11, 3, 128
    n = tokens * heads * d
    base_a, base_b = normal(cp, rng, (n + 1,), "fp16"), normal(cp, rng, (n + 1,), "fp16")
    o_a, o_b = base_a[1:].reshape(tokens, heads, d), base_b[1:].reshape(tokens, heads, d)
    lse_a, lse_b = _lse_pattern(cp, rng, (tokens, heads))
    ref_o, ref_lse = numerics.merge_states(kt.to_float64(o_a), kt.to_float64(lse_a),
                                           kt.to_float64(o_b), kt.to_float64(lse_b))
    o, lse = merge_states(o_a, lse_a, o_b, lse_b)
    tol = kt.tolerance("float16", "rowwise")
    assert_close(o, ref_o, tol, "merge unaligned")
    assert_lse(lse, ref_lse, tol, "merge unaligned")


def test_merge_states_past_2_31_elements(cp, rng):
    """A [rows, 128] fp16 merge with more than 2^31 elements: 64-bit indices all the way to the end."""
    from rooflab.kernels import merge_states

    d = 128
    rows = 2**31 // d + 4099
    o_a = cp.full((rows, 1, d), 1.0, dtype=cp.float16)
    o_b = cp.full((rows, 1, d), 3.0, dtype=cp.float16)
    lse_a = rng.standard_normal((rows, 1), dtype=cp.float32)
    lse_b = rng.standard_normal((rows, 1), dtype=cp.float32)
    tail = slice(rows - 3000, rows)                                 # random data where indices pass 2^31
    o_a[tail] = normal(cp, rng, (3000, 1, d), "fp16")
    o_b[tail] = normal(cp, rng, (3000, 1, d), "fp16")
    out = kt.nan_like(o_a)
    o, lse = merge_states(o_a, lse_a, o_b, lse_b, out=out)
    head = slice(0, rows - 3000)                                    # 1 * s_a + 3 * s_b, row by row
    w_b = 1.0 / (1.0 + cp.exp(lse_a[head].astype(cp.float64) - lse_b[head]))
    expect = 1.0 + 2.0 * w_b                                        # [rows - 3000, 1]
    err = cp.abs(o[head].astype(cp.float32) - expect.astype(cp.float32)[..., None]).max()
    assert float(err) <= 2e-3, f"constant part: max error {float(err):.3g}"
    assert not bool(cp.isnan(o[head]).any())
    ref_o, ref_lse = numerics.merge_states(kt.to_float64(o_a[tail]), kt.to_float64(lse_a[tail]),
                                           kt.to_float64(o_b[tail]), kt.to_float64(lse_b[tail]))
    tol = kt.tolerance("float16", "rowwise")
    assert_close(o[tail], ref_o, tol, "merge past 2^31, tail rows")
    assert_lse(lse[tail], ref_lse, tol, "merge past 2^31, tail rows")


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("splits", [1, 3, 16])
@pytest.mark.parametrize("d", [128, 64])
def test_merge_partials(cp, rng, dtype, splits, d):
    from rooflab.kernels import merge_partials

    batch, heads = 3, 5
    o_part = rng.standard_normal((splits, batch, heads, d), dtype=cp.float32)
    lse_part = rng.standard_normal((splits, batch, heads), dtype=cp.float32) * 3
    lse_part[:, 0, 0] = -np.inf                                     # a row with every split empty
    lse_part[0, 1, :] = np.inf                                      # FA2's +inf marks an empty split too
    lse_part[-1, 2, 1] = -np.inf
    ref_o, ref_lse = numerics.merge_many(kt.to_float64(o_part), kt.to_float64(lse_part))
    o_part[cp.isinf(lse_part)] = np.nan                             # never read
    target = kt.resolve_dtype(dtype)
    out = kt.poison(cp.empty((batch, heads, d), dtype=target))
    out_lse = kt.nan_like(lse_part[0])
    o, lse = merge_partials(o_part, lse_part, target, out=out, out_lse=out_lse)
    tol = kt.tolerance(target.name, "rowwise")
    assert_close(o, ref_o, tol, f"merge_partials {dtype} S={splits}")
    assert_lse(lse, ref_lse, tol, f"merge_partials {dtype} S={splits}")


# ---------------------------------------------------------------- argument checks

def test_launchers_refuse_bad_arguments(cp, rng):
    from rooflab.kernels import flash_attention, merge_states, paged_decode, softmax_rows

    q = normal(cp, rng, (1, 4, 16, 128), "fp16")
    k = normal(cp, rng, (1, 3, 16, 128), "fp16")
    with pytest.raises(ValueError, match="multiple of KV heads"):
        flash_attention(q, k, k)
    with pytest.raises(ValueError, match="head_dim"):
        x = normal(cp, rng, (1, 2, 16, 96), "fp16")
        flash_attention(x, x, x)
    with pytest.raises(ValueError, match="C-contiguous"):
        flash_attention(q.transpose(0, 2, 1, 3), q, q)
    with pytest.raises(ValueError, match="float16, bfloat16"):
        x = q.astype(cp.float32)
        flash_attention(x, x, x)
    with pytest.raises(ValueError, match="cupy.ndarray"):
        softmax_rows(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="lse_a and lse_b"):
        o = normal(cp, rng, (4, 2, 64), "fp16")
        merge_states(o, cp.zeros((4, 3), cp.float32), o, cp.zeros((4, 3), cp.float32))
    cache = kt.make_paged_cache([5, 9], 2, 64, 16, "fp16", seed=1)
    qd = normal(cp, rng, (2, 4, 64), "fp16")
    with pytest.raises(ValueError, match="int32"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table.astype(cp.int64), cache.context_lens)
    with pytest.raises(ValueError, match="num_splits"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, num_splits=0)
    with pytest.raises(ValueError, match="fp8"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, k_scale=2.0)
    fp8 = kt.make_paged_cache([5, 9], 2, 64, 16, kt.FP8_KV, seed=1)
    with pytest.raises(ValueError, match="both be fp8"):
        paged_decode(qd, fp8.k_cache, cache.v_cache, cache.block_table, cache.context_lens)
    with pytest.raises(ValueError, match="v_scale"):
        paged_decode(qd, fp8.k_cache, fp8.v_cache, fp8.block_table, fp8.context_lens, v_scale=0.0)

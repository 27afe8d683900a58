"""The attention variants' kernels against the fp64 oracles of rooflab.numerics.variants: sliding window,
chunk and sinks in flash prefill (mma.sync and Hopper wgmma) and paged decode (split-KV too), several new
tokens in paged decode (fp16 / bf16 and the fp8 cache), MLA decode (bf16 / fp16 / fp8, split-KV).

As tests/test_kernels_gpu.py: fresh random inputs a test (the seed is printed), outputs poisoned with NaN
first, the tolerances of rooflab.kernels.testing.TOLERANCES (one table, with reasons). Keys a decode
kernel must not read (before every new token's window) are NaN too, so a read of one shows. Skipped,
with a reason, where CuPy or a CUDA device is missing (tests/conftest.py).
"""

from __future__ import annotations

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

    precompile()
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


def random_sinks(cp, rng, heads: int, dominant: bool = False):
    """N(0, 2^2) logits a head; with dominant, head 0's is 40 (far above any score: o -> 0, lse -> 40)."""
    s = rng.standard_normal(heads, dtype=cp.float32) * np.float32(2.0)
    if dominant:
        s[0] = 40.0
    return s


# ---------------------------------------------------------------- flash prefill: window, chunk, sinks

FLASH_CASES = [  # B, h, h_kv, Tq, Tk
    (1, 4, 2, 300, 300),
    (2, 8, 1, 1000, 1000),      # group 8, batch 2, a partial last tile
    (1, 4, 2, 37, 600),         # Tq < Tk: the queries at the end
    (1, 4, 4, 300, 37),         # Tq > Tk: rows whose window holds no key
]
MASKS = [  # window, chunk
    (1, None),                  # a window of one key: each row sees itself only
    (64, None),
    (200, None),
    (5000, None),               # a window longer than the context: causal
    (None, 128),
    (None, 100),                # a chunk that does not divide the tiles
    (256, 96),                  # both
]


def _flash_variant_check(cp, rng, dtype, d, case, window, chunk, sinks, impl, std=1.0):
    from rooflab.kernels import flash_attention

    batch, heads, kv_heads, q_len, kv_len = case
    q = kt.random_normal((batch, heads, q_len, d), dtype, rng, std)
    k = kt.random_normal((batch, kv_heads, kv_len, d), dtype, rng, std)
    v = kt.random_normal((batch, kv_heads, kv_len, d), dtype, rng)
    s = random_sinks(cp, rng, heads, dominant=True) if sinks else None
    ref_o, ref_lse = numerics.masked_attention_reference(
        kt.to_float64(q), kt.to_float64(k), kt.to_float64(v), window=window, chunk=chunk,
        sinks=None if s is None else cp.asnumpy(s))
    out, out_lse = kt.nan_like(q), kt.poison(cp.empty((batch, heads, q_len), dtype=cp.float32))
    o, lse = flash_attention(q, k, v, causal=True, out=out, out_lse=out_lse, impl=impl, window=window, chunk=chunk,
                             sinks=s)
    tol = kt.tolerance(q.dtype.name, "attention")
    what = f"flash {impl} {dtype} d={d} {case} window={window} chunk={chunk} sinks={sinks}"
    assert_close(o, ref_o, tol, what)
    assert_lse(lse, ref_lse, tol, what)


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: f"w{m[0]}-c{m[1]}")
@pytest.mark.parametrize("case", FLASH_CASES, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("dtype", HALF)
def test_flash_window_chunk_mma(cp, rng, mask, case, dtype):
    _flash_variant_check(cp, rng, dtype, 128, case, *mask, sinks=False, impl="mma")


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: f"w{m[0]}-c{m[1]}")
@pytest.mark.parametrize("case", FLASH_CASES, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("dtype", HALF)
def test_flash_window_chunk_hopper(hopper, rng, mask, case, dtype):
    _flash_variant_check(hopper, rng, dtype, 128, case, *mask, sinks=False, impl="hopper")


@pytest.mark.parametrize("impl", ["mma", "hopper"])
@pytest.mark.parametrize("mask", [(None, None), (64, None), (None, 100)], ids=lambda m: f"w{m[0]}-c{m[1]}")
@pytest.mark.parametrize("case", FLASH_CASES, ids=lambda c: "x".join(map(str, c)))
def test_flash_sinks(cp, rng, impl, mask, case):
    """Sinks in the denominator (head 0's dominates); with a window and without (plain causal)."""
    from rooflab.kernels.flash_hopper import hopper_supported

    if impl == "hopper" and not hopper_supported(cp, 128):
        pytest.skip("the wgmma kernel needs an sm_90 GPU")
    _flash_variant_check(cp, rng, "bf16", 128, case, *mask, sinks=True, impl=impl)


def test_flash_sinks_non_causal_and_d64(cp, rng):
    from rooflab.kernels import flash_attention

    q = kt.random_normal((1, 4, 100, 64), "fp16", rng)
    k = kt.random_normal((1, 2, 130, 64), "fp16", rng)
    s = random_sinks(cp, rng, 4)
    ref_o, ref_lse = numerics.masked_attention_reference(kt.to_float64(q), kt.to_float64(k), kt.to_float64(k),
                                                         causal=False, sinks=cp.asnumpy(s))
    o, lse = flash_attention(q, k, k, sinks=s, out=kt.nan_like(q))
    tol = kt.tolerance("float16", "attention")
    assert_close(o, ref_o, tol, "flash sinks non-causal d 64")
    assert_lse(lse, ref_lse, tol, "flash sinks non-causal d 64")


@pytest.mark.parametrize("impl", ["mma", "hopper"])
def test_flash_window_large_logits(cp, rng, impl):
    from rooflab.kernels.flash_hopper import hopper_supported

    if impl == "hopper" and not hopper_supported(cp, 128):
        pytest.skip("the wgmma kernel needs an sm_90 GPU")
    _flash_variant_check(cp, rng, "fp16", 128, (1, 4, 2, 700, 700), 150, None, sinks=True, impl=impl, std=3.0)


@pytest.mark.parametrize("impl", ["mma", "hopper"])
def test_flash_window_skips_tiles_before_it(cp, rng, impl):
    """Keys in the tiles wholly before every query's window are NaN: a kernel that loaded them would give NaN."""
    from rooflab.kernels import flash_attention
    from rooflab.kernels.flash_hopper import hopper_supported

    if impl == "hopper" and not hopper_supported(cp, 128):
        pytest.skip("the wgmma kernel needs an sm_90 GPU")
    q_len, kv_len, window = 64, 2000, 100
    q = kt.random_normal((1, 4, q_len, 128), "fp16", rng)
    k = kt.random_normal((1, 2, kv_len, 128), "fp16", rng)
    v = kt.random_normal((1, 2, kv_len, 128), "fp16", rng)
    ref_o, ref_lse = numerics.masked_attention_reference(kt.to_float64(q), kt.to_float64(k), kt.to_float64(v),
                                                         window=window)
    first = kv_len - q_len - window + 1                             # the first query's first key
    dead = first // 128 * 128                                       # whole 128-key (and 64-key) tiles before it
    kt.poison(k[:, :, :dead])
    kt.poison(v[:, :, :dead])
    o, lse = flash_attention(q, k, v, causal=True, window=window, impl=impl, out=kt.nan_like(q))
    tol = kt.tolerance("float16", "attention")
    assert_close(o, ref_o, tol, f"flash {impl} window, NaN before it")
    assert_lse(lse, ref_lse, tol, f"flash {impl} window, NaN before it")


# ---------------------------------------------------------------- paged decode: window, sinks, q_len

LENS = [1, 15, 16, 17, 100, 257, 1000, 33]


def _decode_reference(cache, q64, b, q_len, window, chunk, sinks, start=None, stop=None):
    """fp64 oracle for sequence b: q64 [B, q_len, h, d] -> (o [q_len, h, d], lse [q_len, h])."""
    k64, v64 = (x[None] for x in cache.dense_float64(b))
    qb = q64[b].transpose(1, 0, 2)[None]                           # [1, h, q_len, d]
    o, lse = numerics.masked_attention_reference(qb, k64, v64, window=window, chunk=chunk, sinks=sinks,
                                                 kv_start=start or 0, kv_stop=stop)
    return o[0].transpose(1, 0, 2), lse[0].T


def _paged_check(cp, rng, dtype, page_size, heads, kv_heads, q_len, num_splits, window=None, chunk=None,
                 sinks=False, lens=LENS, kv=None, scales=(1.0, 1.0), d=128, four_d=True):
    from rooflab.kernels import paged_decode

    lens = [max(n, q_len) for n in lens]
    scale_args = {"k_scale": scales[0], "v_scale": scales[1]} if kv else {}
    cache = kt.make_paged_cache(lens, kv_heads, d, page_size, kv or dtype, seed=int(rng.integers(0, 2**31)),
                                **scale_args)
    shape = (len(lens), q_len, heads, d) if four_d else (len(lens), heads, d)
    q = kt.random_normal(shape, dtype, rng)
    q64 = kt.to_float64(q).reshape(len(lens), q_len, heads, d)
    s = random_sinks(cp, rng, heads, dominant=True) if sinks else None
    s64 = None if s is None else cp.asnumpy(s)
    refs = [_decode_reference(cache, q64, b, q_len, window, chunk, s64) for b in range(len(lens))]
    ref_o = np.stack([r[0] for r in refs]).reshape(shape)
    ref_lse = np.stack([r[1] for r in refs]).reshape(shape[:-1])
    kt.poison_keys_before(cache, [kt.decode_key_range(n, q_len, window, chunk)[0] for n in lens])
    out, out_lse = kt.nan_like(q), kt.poison(cp.empty(shape[:-1], dtype=cp.float32))
    o, lse = paged_decode(q, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens,
                          num_splits=num_splits, return_lse=True, out=out, out_lse=out_lse, window=window,
                          chunk=chunk, sinks=s, **cache.scales)
    assert o is out and lse is out_lse
    tol = kt.tolerance(q.dtype.name, "attention")
    what = (f"paged {dtype} kv={kv or dtype} page={page_size} heads={heads}/{kv_heads} q_len={q_len} "
            f"splits={num_splits} window={window} chunk={chunk} sinks={sinks}")
    assert_close(o, ref_o, tol, what)
    assert_lse(lse, ref_lse, tol, what)


@pytest.mark.parametrize("q_len", [1, 2, 4, 8])
@pytest.mark.parametrize("heads", [(32, 8), (8, 8), (40, 1)], ids=lambda h: f"{h[0]}-{h[1]}")
@pytest.mark.parametrize("num_splits", [1, 3])
def test_paged_multi_token(cp, rng, q_len, heads, num_splits):
    """q_len new tokens, causal among themselves; group x q_len rows of 4 to 320 (one to ten row chunks)."""
    _paged_check(cp, rng, "fp16", 16, heads[0], heads[1], q_len, num_splits)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("q_len", [1, 5])
@pytest.mark.parametrize("mask", [(1, None), (7, None), (50, None), (300, None), (5000, None), (None, 64),
                                  (None, 50), (40, 64)], ids=lambda m: f"w{m[0]}-c{m[1]}")
@pytest.mark.parametrize("num_splits", [1, 4])
def test_paged_window_chunk(cp, rng, dtype, q_len, mask, num_splits):
    _paged_check(cp, rng, dtype, 16, 32, 8, q_len, num_splits, *mask)


@pytest.mark.parametrize("page_size", [1, 7, 256])
@pytest.mark.parametrize("q_len", [1, 3])
def test_paged_window_pages(cp, rng, page_size, q_len):
    _paged_check(cp, rng, "bf16", page_size, 12, 2, q_len, 2, window=90, sinks=True)


@pytest.mark.parametrize("q_len", [1, 4])
@pytest.mark.parametrize("num_splits", [1, 5])
@pytest.mark.parametrize("window", [None, 64])
def test_paged_sinks(cp, rng, q_len, num_splits, window):
    """The sink joins the denominator once, also when split-KV merges several partial states."""
    _paged_check(cp, rng, "bf16", 16, 32, 8, q_len, num_splits, window=window, sinks=True)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("q_len", [1, 4, 8])
@pytest.mark.parametrize("num_splits", [1, 4])
def test_paged_fp8_multi_token_window(cp, rng, dtype, q_len, num_splits):
    _paged_check(cp, rng, dtype, 16, 32, 8, q_len, num_splits, window=100, kv=kt.FP8_KV, scales=(0.02, 3.0))


def test_paged_multi_token_d64_and_3d_q(cp, rng):
    _paged_check(cp, rng, "fp16", 16, 32, 8, 3, 2, d=64, window=33)
    _paged_check(cp, rng, "fp16", 16, 32, 8, 1, 1, window=33, sinks=True, four_d=False)


@pytest.mark.parametrize("window", [None, 70])
def test_paged_partial_splits_with_window(cp, rng, window):
    """Each split against the oracle over its key range (kt.split_ranges mirrors the kernel); sinks in split 0."""
    from rooflab.kernels import paged_decode_partial

    lens, heads, kv_heads, d, splits, q_len, page = [4, 40, 300, 700], 8, 2, 128, 5, 3, 16
    cache = kt.make_paged_cache(lens, kv_heads, d, page, "bf16", seed=int(rng.integers(0, 2**31)))
    q = kt.random_normal((len(lens), q_len, heads, d), "bf16", rng)
    s = random_sinks(cp, rng, heads)
    q64, s64 = kt.to_float64(q), cp.asnumpy(s)
    out = kt.poison(cp.empty((splits, len(lens), q_len, heads, d), dtype=cp.float32))
    out_lse = kt.poison(cp.empty((splits, len(lens), q_len, heads), dtype=cp.float32))
    o_part, lse_part = paged_decode_partial(q, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens,
                                            splits, out=out, out_lse=out_lse, window=window, sinks=s)
    tol = kt.tolerance("bfloat16", "attention")
    for b, n in enumerate(lens):
        for z, (start, stop) in enumerate(kt.split_ranges(n, splits, page, q_len, window)):
            ref_o, ref_lse = _decode_reference(cache, q64, b, q_len, window, None, s64 if z == 0 else None,
                                               start, stop)
            what = f"partial b={b} split={z} keys [{start}, {stop}) window={window}"
            assert_close(o_part[z, b], ref_o, tol, what)
            assert_lse(lse_part[z, b], ref_lse, tol, what)


# ---------------------------------------------------------------- MLA decode

def _mla_cache(cp, rng, lens, kv, kv_scale=1.0):
    """A paged latent cache [pages, 64, 576] (kt.make_paged_cache with one 576-wide KV head; NaN in unused slots)."""
    args = {"k_scale": kv_scale, "v_scale": kv_scale} if kv == kt.FP8_KV else {}
    cache = kt.make_paged_cache(lens, 1, 576, 64, kv, seed=int(rng.integers(0, 2**31)), **args)
    latent = cache.k_cache.reshape(cache.k_cache.shape[0], 64, 576)
    return cache, latent


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
    assert_close(o, ref_o, tol, what)
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
def test_mla_decode_hopper(hopper, rng, dtype, heads, q_len, num_splits):
    """The wgmma kernel: 64 rows a CTA (16 to 1024 rows: partial and several chunks), split-KV."""
    _mla_check(hopper, rng, dtype, heads, q_len, num_splits, impl="hopper")


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
    assert_close(o, np.stack([r[0] for r in refs]), tol, "mla hopper large logits")
    assert_lse(lse, np.stack([r[1] for r in refs]), tol, "mla hopper large logits")


# ---------------------------------------------------------------- bad input: ValueError before any launch

def test_new_arguments_are_refused_by_name(cp, rng):
    from rooflab.kernels import flash_attention, mla_decode, paged_decode

    q = kt.random_normal((1, 4, 16, 128), "fp16", rng)
    k = kt.random_normal((1, 2, 16, 128), "fp16", rng)
    for bad in (0, -3, 2.5, True, 2**31):
        with pytest.raises(ValueError, match="window"):
            flash_attention(q, k, k, causal=True, window=bad)
        with pytest.raises(ValueError, match="chunk"):
            flash_attention(q, k, k, causal=True, chunk=bad)
    with pytest.raises(ValueError, match="window=8 is a causal mask"):
        flash_attention(q, k, k, window=8)
    with pytest.raises(ValueError, match="sinks"):
        flash_attention(q, k, k, causal=True, sinks=cp.zeros(3, cp.float32))
    with pytest.raises(ValueError, match="sinks"):
        flash_attention(q, k, k, causal=True, sinks=cp.zeros(4, cp.float16))
    with pytest.raises(ValueError, match="variant"):
        flash_attention(q, k, k, causal=True, window=8, impl="hopper", variant=(2, 128, False))
    cache = kt.make_paged_cache([20, 9], 2, 128, 16, "fp16", seed=1)
    with pytest.raises(ValueError, match="q_len"):
        paged_decode(kt.random_normal((2, 9, 4, 128), "fp16", rng), cache.k_cache, cache.v_cache,
                     cache.block_table, cache.context_lens)
    qd = kt.random_normal((2, 2, 4, 128), "fp16", rng)
    with pytest.raises(ValueError, match="window"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, window=0)
    with pytest.raises(ValueError, match="sinks"):
        paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, sinks=cp.zeros(2, cp.float32))
    with pytest.raises(ValueError, match="q must be"):
        paged_decode(kt.random_normal((2, 4, 128), "fp16", rng)[None, None], cache.k_cache, cache.v_cache,
                     cache.block_table, cache.context_lens)
    mcache, latent = _mla_cache(cp, rng, [70, 3], "bf16")
    qm = kt.random_normal((2, 1, 16, 576), "bf16", rng)
    with pytest.raises(ValueError, match="576"):
        mla_decode(kt.random_normal((2, 1, 16, 512), "bf16", rng), latent, mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="page_size"):
        mla_decode(qm, latent.reshape(-1, 32, 576), mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="latent_cache"):
        mla_decode(qm, latent.view(cp.float16), mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="kv_scale"):
        mla_decode(qm, latent, mcache.block_table, mcache.context_lens, kv_scale=2.0)
    with pytest.raises(ValueError, match="heads"):
        mla_decode(kt.random_normal((2, 1, 129, 576), "bf16", rng), latent, mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="q_len"):
        mla_decode(kt.random_normal((2, 9, 16, 576), "bf16", rng), latent, mcache.block_table, mcache.context_lens)
    with pytest.raises(ValueError, match="mt"):
        mla_decode(qm, latent, mcache.block_table, mcache.context_lens, mt=3)
    with pytest.raises(ValueError, match="num_splits"):
        mla_decode(qm, latent, mcache.block_table, mcache.context_lens, num_splits=0)
    with pytest.raises(ValueError, match="impl"):
        mla_decode(qm, latent, mcache.block_table, mcache.context_lens, impl="wgmma")
    fcache, flatent = _mla_cache(cp, rng, [70, 3], kt.FP8_KV)
    with pytest.raises(ValueError, match="impl='hopper'"):
        mla_decode(qm, flatent, fcache.block_table, fcache.context_lens, impl="hopper")

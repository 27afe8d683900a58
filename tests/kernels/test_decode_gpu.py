"""GPU tests of rooflab/kernels/decode.py: paged decode (16-bit and fp8 caches, split-KV, several new tokens,
sliding window, chunk and sinks) and the merges of partial states, against the fp64 oracles.

The fixtures `cp`, `rng` and `hopper` (tests/kernels/conftest.py) and the checks come from
tests/kernels/gpu_support.py: fresh random inputs, NaN-poisoned outputs, the tolerances of
rooflab.kernels.testing. Skipped, with a reason, where CuPy or a CUDA device is missing (tests/conftest.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rooflab import numerics
from rooflab.kernels import testing as kt

from .gpu_support import HALF, assert_close, assert_close_variants, assert_lse, normal, random_sinks

pytestmark = pytest.mark.gpu


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


# ---------------------------------------------------------------- paged decode: window, sinks, q_len

def _decode_reference_variants(cache, q64, b, q_len, window, chunk, sinks, start=None, stop=None):
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
    refs = [_decode_reference_variants(cache, q64, b, q_len, window, chunk, s64) for b in range(len(lens))]
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
    assert_close_variants(o, ref_o, tol, what)
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
            ref_o, ref_lse = _decode_reference_variants(cache, q64, b, q_len, window, None, s64 if z == 0 else None,
                                               start, stop)
            what = f"partial b={b} split={z} keys [{start}, {stop}) window={window}"
            assert_close_variants(o_part[z, b], ref_o, tol, what)
            assert_lse(lse_part[z, b], ref_lse, tol, what)


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

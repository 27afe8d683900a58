"""GPU tests of rooflab/kernels/attention.py: softmax rows, naive and flash attention (mma.sync and the
Hopper wgmma kernel), and flash prefill's sliding window, chunk and sinks, against the fp64 oracles.

The fixtures `cp`, `rng` and `hopper` (tests/kernels/conftest.py) and the checks come from
tests/kernels/gpu_support.py: fresh random inputs, NaN-poisoned outputs, the tolerances of
rooflab.kernels.testing. Skipped, with a reason, where CuPy or a CUDA device is missing (tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflab import numerics
from rooflab.kernels import testing as kt

from .gpu_support import HALF, assert_close, assert_close_variants, assert_lse, normal, random_sinks

pytestmark = pytest.mark.gpu


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


def test_flash_attention_without_lse(cp, rng):
    from rooflab.kernels import flash_attention

    q = normal(cp, rng, (1, 2, 10, 64), "fp16")
    o, lse = flash_attention(q, q, q, return_lse=False)
    assert lse is None and o.shape == q.shape


# ---------------------------------------------------------------- flash prefill: window, chunk, sinks

FLASH_CASES_VARIANTS = [  # B, h, h_kv, Tq, Tk
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
    assert_close_variants(o, ref_o, tol, what)
    assert_lse(lse, ref_lse, tol, what)


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: f"w{m[0]}-c{m[1]}")
@pytest.mark.parametrize("case", FLASH_CASES_VARIANTS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("dtype", HALF)
def test_flash_window_chunk_mma(cp, rng, mask, case, dtype):
    _flash_variant_check(cp, rng, dtype, 128, case, *mask, sinks=False, impl="mma")


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: f"w{m[0]}-c{m[1]}")
@pytest.mark.parametrize("case", FLASH_CASES_VARIANTS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("dtype", HALF)
def test_flash_window_chunk_hopper(hopper, rng, mask, case, dtype):
    _flash_variant_check(hopper, rng, dtype, 128, case, *mask, sinks=False, impl="hopper")


@pytest.mark.parametrize("impl", ["mma", "hopper"])
@pytest.mark.parametrize("mask", [(None, None), (64, None), (None, 100)], ids=lambda m: f"w{m[0]}-c{m[1]}")
@pytest.mark.parametrize("case", FLASH_CASES_VARIANTS, ids=lambda c: "x".join(map(str, c)))
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
    assert_close_variants(o, ref_o, tol, "flash sinks non-causal d 64")
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
    assert_close_variants(o, ref_o, tol, f"flash {impl} window, NaN before it")
    assert_lse(lse, ref_lse, tol, f"flash {impl} window, NaN before it")

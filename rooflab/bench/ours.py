"""rooflab's own kernels for one benchmark case: fresh random inputs, a launch, and a check on a slice.

Each runner returns (launch, check): `launch()` enqueues the kernel(s) on the current stream;
`check()` runs it once on NaN-poisoned outputs and returns the norm-wise relative error of a
slice of the output against the fp64 oracle of rooflab.numerics (the slice keeps the oracle
cheap at benchmark sizes; the GPU tests check whole tensors at smaller sizes).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..units import DType
from ..vocab import Kernel
from .cases import Case

Runner = tuple[Callable[[], object], Callable[[], float]]

#: Query rows of each checked head that the oracle recomputes.
CHECK_ROWS = 64
#: Per-tensor scale of the benchmark's fp8 caches: codes of N(0, 1) x 64, so +-6 sigma stays under
#: e4m3's 448 (the scale a per-tensor amax / 448 calibration would pick for such data, rounded).
FP8_BENCH_SCALE = 1.0 / 64


def impl_name(case: Case) -> str:
    """The `impl` a measurement of rooflab's kernel records: "rooflab", or "rooflab_hopper" where the
    flash call takes the wgmma kernel (sm_90, d 128), so each implementation is fitted on its own."""
    if case.kernel is Kernel.flash:
        from ..kernels.attention import flash_default_impl

        if flash_default_impl(case.heads.head_dim) == "hopper":
            return "rooflab_hopper"
    return "rooflab"


def runner(case: Case, rng: np.random.Generator) -> Runner:
    """(launch, check) for rooflab's implementation of `case`."""
    from ..kernels._runtime import cupy_module

    cupy = cupy_module()
    seed = int(rng.integers(1 << 30))
    build = {Kernel.naive: _naive, Kernel.naive_softmax: _softmax, Kernel.flash: _flash, Kernel.paged: _paged,
             Kernel.split_kv: _paged, Kernel.merge: _merge}[case.kernel]
    return build(case, cupy.random.default_rng(seed), seed)


def _rel(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def _qkv(case: Case, rng: Any) -> tuple[Any, Any, Any]:
    from ..kernels.testing import random_normal

    h = case.heads
    q = random_normal((case.batch, h.num_qo_heads, case.seq_len, h.head_dim), case.dtype.value, rng)
    k = random_normal((case.batch, h.num_kv_heads, case.seq_len, h.head_dim), case.dtype.value, rng)
    v = random_normal((case.batch, h.num_kv_heads, case.seq_len, h.head_dim), case.dtype.value, rng)
    return q, k, v


def attention_error(out: Any, q: Any, k: Any, v: Any, case: Case, lse: Any = None) -> float:
    """Worst relative error of the last CHECK_ROWS rows of the first and last head (and their LSE)."""
    from ..kernels.testing import to_float64
    from ..numerics import attention_reference

    g = case.heads.group_size
    rows = slice(max(0, case.seq_len - CHECK_ROWS), case.seq_len)
    worst = 0.0
    for b in sorted({0, case.batch - 1}):
        for head in (0, case.heads.num_qo_heads - 1):
            kv = head // g
            ref, ref_lse = attention_reference(to_float64(q[b:b + 1, head:head + 1, rows]),
                                               to_float64(k[b:b + 1, kv:kv + 1]),
                                               to_float64(v[b:b + 1, kv:kv + 1]), causal=case.causal)
            worst = max(worst, _rel(to_float64(out[b:b + 1, head:head + 1, rows]), ref))
            if lse is not None:
                got = to_float64(lse[b:b + 1, head:head + 1, rows])
                worst = max(worst, float(np.max(np.abs(got - ref_lse)) / np.max(np.abs(ref_lse))))
    return worst


def _naive(case: Case, rng: Any, seed: int) -> Runner:
    from ..kernels import naive_attention

    q, k, v = _qkv(case, rng)

    def check():
        return attention_error(naive_attention(q, k, v, causal=case.causal), q, k, v, case)

    return lambda: naive_attention(q, k, v, causal=case.causal), check


def _softmax(case: Case, rng: Any, seed: int) -> Runner:
    from ..kernels import softmax_rows
    from ..kernels.testing import nan_like, random_normal, to_float64

    h = case.heads
    s = random_normal((case.batch, h.num_qo_heads, case.seq_len, case.seq_len), case.dtype.value, rng, std=3.0)
    p = nan_like(s)

    def check():
        softmax_rows(s, out=p)
        x = to_float64(s[0, 0, :8])
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return _rel(to_float64(p[0, 0, :8]), e / e.sum(axis=-1, keepdims=True))

    return lambda: softmax_rows(s, out=p), check


def _flash(case: Case, rng: Any, seed: int) -> Runner:
    from ..kernels import flash_attention
    from ..kernels.testing import nan_like

    from ..kernels._runtime import cupy_module

    cupy = cupy_module()
    q, k, v = _qkv(case, rng)
    out = nan_like(q)
    lse = cupy.full(q.shape[:3], np.nan, dtype=cupy.float32)

    def launch():
        return flash_attention(q, k, v, causal=case.causal, out=out, out_lse=lse)

    def check():
        launch()
        return attention_error(out, q, k, v, case, lse)

    return launch, check


def _paged(case: Case, rng: Any, seed: int) -> Runner:
    from ..kernels import paged_decode
    from ..kernels.testing import FP8_KV, make_paged_cache, nan_like, random_normal, to_float64
    from ..numerics import attention_reference

    h = case.heads
    fp8 = case.kv_dtype is DType.fp8_e4m3
    if case.kv_dtype not in (None, case.dtype) and not fp8:
        raise ValueError(f"rooflab's paged decode takes a KV cache in q's dtype or fp8_e4m3, not {case.kv_dtype}")
    scales = {"k_scale": FP8_BENCH_SCALE, "v_scale": FP8_BENCH_SCALE} if fp8 else {}
    cache = make_paged_cache(case.context_lens, h.num_kv_heads, h.head_dim, case.page_size,
                             FP8_KV if fp8 else case.dtype.value, seed=seed, **scales)
    q = random_normal((len(case.context_lens), h.num_qo_heads, h.head_dim), case.dtype.value, rng)
    out = nan_like(q)

    def launch():
        return paged_decode(q, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens,
                            num_splits=case.splits, out=out, **cache.scales)

    def check():
        launch()
        worst = 0.0
        for b in sorted({0, len(case.context_lens) - 1}):
            k, v = cache.dense_float64(b)
            ref, _ = attention_reference(to_float64(q[b])[None, :, None, :], k[None], v[None])
            worst = max(worst, _rel(to_float64(out[b]), ref[0, :, 0, :]))
        return worst

    return launch, check


def _merge(case: Case, rng: Any, seed: int) -> Runner:
    from ..kernels import merge_states
    from ..kernels.testing import nan_like, random_normal, to_float64
    from ..kernels._runtime import cupy_module
    from ..numerics import merge_states as merge_reference

    cupy = cupy_module()
    h, n = case.heads, case.tokens
    o_a = random_normal((n, h.num_qo_heads, h.head_dim), case.dtype.value, rng)
    o_b = random_normal((n, h.num_qo_heads, h.head_dim), case.dtype.value, rng)
    lse_a = rng.standard_normal((n, h.num_qo_heads), dtype=cupy.float32) * np.float32(3)
    lse_b = rng.standard_normal((n, h.num_qo_heads), dtype=cupy.float32) * np.float32(3)
    out = nan_like(o_a)

    def launch():
        return merge_states(o_a, lse_a, o_b, lse_b, out=out, return_lse=False)

    def check():
        launch()
        sl = slice(0, min(n, 512))
        ref, _ = merge_reference(to_float64(o_a[sl]), to_float64(lse_a[sl]), to_float64(o_b[sl]),
                                 to_float64(lse_b[sl]))
        return _rel(to_float64(out[sl]), ref)

    return launch, check

"""rooflab's own kernels for one benchmark case: fresh random inputs, a launch, and a check on a slice.

Each runner returns (launch, check): `launch()` enqueues the kernel(s) on the current stream;
`check()` runs it once on NaN-poisoned outputs and returns the norm-wise relative error of a
slice of the output against the fp64 oracle of rooflab.numerics (the slice keeps the oracle
cheap at benchmark sizes; the GPU tests check whole tensors at smaller sizes). Windows, chunks,
sinks and several new tokens are checked against numerics.masked_attention_reference, MLA decode
against numerics.mla_decode_reference.
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
    flash call (full or windowed) takes the wgmma kernel (sm_90, d 128) or MLA decode takes its wgmma
    kernel (sm_90, a 16-bit latent, >= 64 query rows a sequence), so each implementation is fitted on its own."""
    if case.kernel in (Kernel.flash, Kernel.flash_window):
        from ..kernels.attention import flash_default_impl

        if flash_default_impl(case.heads.head_dim) == "hopper":
            return "rooflab_hopper"
    if case.kernel is Kernel.mla_decode:
        from ..kernels._runtime import cupy_module
        from ..kernels.mla import mla_default_impl

        rows = case.q_len * case.heads.num_qo_heads
        if mla_default_impl(cupy_module(), rows, case.kv_dtype is DType.fp8_e4m3) == "hopper":
            return "rooflab_hopper"
    return "rooflab"


def runner(case: Case, rng: np.random.Generator) -> Runner:
    """(launch, check) for rooflab's implementation of `case`."""
    from ..kernels._runtime import cupy_module

    cupy = cupy_module()
    seed = int(rng.integers(1 << 30))
    build = {Kernel.naive: _naive, Kernel.naive_softmax: _softmax, Kernel.flash: _flash,
             Kernel.flash_window: _flash, Kernel.paged: _paged, Kernel.split_kv: _paged, Kernel.paged_window: _paged,
             Kernel.paged_multi: _paged, Kernel.mla_decode: _mla, Kernel.merge: _merge}[case.kernel]
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


def _window(case: Case) -> dict[str, Any]:
    """The launchers' window and chunk arguments (None where the case has none)."""
    return {"window": case.window or None, "chunk": case.chunk or None}


def _sinks(case: Case, rng: Any) -> Any:
    """fp32 [h] sink logits, N(0, 2^2) (the GPU tests' spread), or None for a case without sinks."""
    if not case.sinks:
        return None
    from ..kernels._runtime import cupy_module

    cupy = cupy_module()
    return rng.standard_normal(case.heads.num_qo_heads, dtype=cupy.float32) * np.float32(2.0)


def _lse_error(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def attention_error(out: Any, q: Any, k: Any, v: Any, case: Case, lse: Any = None, sinks: Any = None) -> float:
    """Worst relative error of the last CHECK_ROWS rows of the first and last head (and their LSE).

    The oracle sees the case's window, chunk and `sinks` (fp32 [h] on the device, or None) through
    numerics.masked_attention_reference; the last rows are the last query positions, as it places them.
    """
    from ..kernels._runtime import cupy_module
    from ..kernels.testing import to_float64
    from ..numerics import attention_reference, masked_attention_reference

    g = case.heads.group_size
    rows = slice(max(0, case.seq_len - CHECK_ROWS), case.seq_len)
    sink_logits = None if sinks is None else cupy_module().asnumpy(sinks).astype(np.float64)
    masked = bool(case.window or case.chunk or sink_logits is not None)
    worst = 0.0
    for b in sorted({0, case.batch - 1}):
        for head in (0, case.heads.num_qo_heads - 1):
            kv = head // g
            qh, kh, vh = (to_float64(q[b:b + 1, head:head + 1, rows]), to_float64(k[b:b + 1, kv:kv + 1]),
                          to_float64(v[b:b + 1, kv:kv + 1]))
            if masked:
                ref, ref_lse = masked_attention_reference(
                    qh, kh, vh, causal=case.causal, **_window(case),
                    sinks=None if sink_logits is None else sink_logits[head:head + 1])
            else:
                ref, ref_lse = attention_reference(qh, kh, vh, causal=case.causal)
            worst = max(worst, _rel(to_float64(out[b:b + 1, head:head + 1, rows]), ref))
            if lse is not None:
                worst = max(worst, _lse_error(to_float64(lse[b:b + 1, head:head + 1, rows]), ref_lse))
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
    sinks = _sinks(case, rng)
    out = nan_like(q)
    lse = cupy.full(q.shape[:3], np.nan, dtype=cupy.float32)

    def launch():
        return flash_attention(q, k, v, causal=case.causal, out=out, out_lse=lse, sinks=sinks, **_window(case))

    def check():
        launch()
        return attention_error(out, q, k, v, case, lse, sinks)

    return launch, check


def _paged(case: Case, rng: Any, seed: int) -> Runner:
    """Paged decode (split-KV with splits > 1), q_len new tokens a sequence ([B, q_len, h, d] when q_len > 1),
    with the case's window, chunk and sinks; checked on the first and last sequence over the keys they see."""
    from ..kernels import paged_decode
    from ..kernels._runtime import cupy_module
    from ..kernels.testing import FP8_KV, decode_key_range, make_paged_cache, nan_like, random_normal, to_float64
    from ..numerics import masked_attention_reference

    h = case.heads
    fp8 = case.kv_dtype is DType.fp8_e4m3
    if case.kv_dtype not in (None, case.dtype) and not fp8:
        raise ValueError(f"rooflab's paged decode takes a KV cache in q's dtype or fp8_e4m3, not {case.kv_dtype}")
    scales = {"k_scale": FP8_BENCH_SCALE, "v_scale": FP8_BENCH_SCALE} if fp8 else {}
    cache = make_paged_cache(case.context_lens, h.num_kv_heads, h.head_dim, case.page_size,
                             FP8_KV if fp8 else case.dtype.value, seed=seed, **scales)
    batch = len(case.context_lens)
    rows = (batch, case.q_len, h.num_qo_heads) if case.q_len > 1 else (batch, h.num_qo_heads)
    q = random_normal(rows + (h.head_dim,), case.dtype.value, rng)
    sinks = _sinks(case, rng)
    sink_logits = None if sinks is None else cupy_module().asnumpy(sinks).astype(np.float64)
    out = nan_like(q)

    def launch():
        return paged_decode(q, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens,
                            num_splits=case.splits, out=out, sinks=sinks, **_window(case), **cache.scales)

    def check():
        launch()
        worst = 0.0
        for b in sorted({0, batch - 1}):
            first = decode_key_range(case.context_lens[b], case.q_len, **_window(case))[0]
            first -= first % case.chunk if case.chunk else 0        # a chunk boundary keeps the chunks' positions
            k, v = _keys_from(cache, b, first)                     # [h_kv, ctx - first, d]
            qb = to_float64(q[b]).reshape(case.q_len, h.num_qo_heads, h.head_dim).transpose(1, 0, 2)
            ref, _ = masked_attention_reference(qb[None], k[None], v[None], causal=True, **_window(case),
                                                sinks=sink_logits)
            got = to_float64(out[b]).reshape(case.q_len, h.num_qo_heads, h.head_dim).transpose(1, 0, 2)
            worst = max(worst, _rel(got, ref[0]))
        return worst

    return launch, check


def _keys_from(cache: Any, b: int, first: int) -> tuple[np.ndarray, np.ndarray]:
    """Sequence b's keys and values from position `first` on, as the kernel sees them: float64 [h_kv, ctx - first, d]
    (an fp8 cache decoded times its scales). Keys before `first` are seen by no new token; dropping them moves
    every position by the same amount, which a window or causal mask does not notice (nor a chunk, from a
    chunk boundary)."""
    from ..kernels._runtime import cupy_module
    from ..kernels.testing import e4m3_decode, to_float64

    cupy = cupy_module()
    k, v = (cupy.ascontiguousarray(x[:, first:]) for x in cache.dense(b))
    if cache.fp8:
        return e4m3_decode(k) * cache.k_scale, e4m3_decode(v) * cache.v_scale
    return to_float64(k), to_float64(v)


def _mla(case: Case, rng: Any, seed: int) -> Runner:
    """MLA decode over a paged latent cache [pages, 64, 576] (16-bit, or fp8 e4m3 codes at FP8_BENCH_SCALE);
    o and the LSE written (the bytes cost/mla.py counts); checked on the first and last sequence."""
    from ..kernels import mla_decode
    from ..kernels._runtime import cupy_module
    from ..kernels.testing import FP8_KV, make_paged_cache, poison, random_normal, to_float64
    from ..numerics import mla_decode_reference

    cupy = cupy_module()
    h = case.heads
    fp8 = case.kv_dtype is DType.fp8_e4m3
    if case.kv_dtype not in (None, case.dtype) and not fp8:
        raise ValueError(f"rooflab's MLA decode takes a latent cache in q's dtype or fp8_e4m3, not {case.kv_dtype}")
    kv_scale = FP8_BENCH_SCALE if fp8 else 1.0
    scales = {"k_scale": kv_scale, "v_scale": kv_scale} if fp8 else {}
    # one 576-wide "KV head": the latent is k_cache (v_cache, built alongside, is not read)
    cache = make_paged_cache(case.context_lens, 1, h.head_dim, case.page_size, FP8_KV if fp8 else case.dtype.value,
                             seed=seed, **scales)
    latent = cache.k_cache.reshape(cache.k_cache.shape[0], case.page_size, h.head_dim)
    batch = len(case.context_lens)
    rows = (batch, case.q_len, h.num_qo_heads)
    q = random_normal(rows + (h.head_dim,), case.dtype.value, rng)
    out = poison(cupy.empty(rows + (h.value_dim,), dtype=q.dtype))
    lse = cupy.full(rows, np.nan, dtype=cupy.float32)

    def launch():
        return mla_decode(q, latent, cache.block_table, cache.context_lens, case.splits, out=out, out_lse=lse,
                          kv_scale=kv_scale)

    def check():
        launch()
        worst = 0.0
        for b in sorted({0, batch - 1}):
            ref, ref_lse = mla_decode_reference(to_float64(q[b]), cache.dense_float64(b)[0][0], h.value_dim)
            worst = max(worst, _rel(to_float64(out[b]), ref), _lse_error(to_float64(lse[b]), ref_lse))
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

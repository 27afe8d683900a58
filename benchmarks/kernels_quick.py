"""Quick timings of rooflab's kernels on the performance-target shapes, next to same-run ceilings.

Run on a GPU machine from the repository root:  python3 benchmarks/kernels_quick.py [--json out.json]
Timings: rooflab.measure.timing (CUDA events, warm-up first, the L2 flushed before every repeat, the
median), or CUDA-graph replays (measure.timing.time_cupy_graph) where the launcher's Python would
show; inputs of split-KV are also rotated among several copies. FLOPs and bytes are rooflab's cost
functions' (cost/merge.py, naive.py, paged.py, flash.py): compulsory bytes (each input read once,
each output written once), FLOPs over the visible pairs (half of the square when causal, also for
naive's GEMMs, which compute every score). The figures in brackets are the reference figures of an H200
measured before these kernels (2026-11-30: copy 4.22 TB/s, PyTorch's SDPA flash 356 / 298 TFLOP/s at
T 8192, 32 heads, d 128, non-causal / causal; KERNELS.md's opening) and the performance targets.
"""

from __future__ import annotations

import argparse
import json
import time
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy as cp  # noqa: E402

from rooflab import kernels as K  # noqa: E402
from rooflab.measure.timing import L2Flusher, time_cupy_graph, time_gpu  # noqa: E402
from rooflab.cost.flash import flash_prefill  # noqa: E402
from rooflab.cost.merge import merge_pair  # noqa: E402
from rooflab.cost.naive import naive_prefill  # noqa: E402
from rooflab.cost.paged import paged_decode  # noqa: E402
from rooflab.kernels import testing as kt  # noqa: E402
from rooflab.specs import AttentionHeads  # noqa: E402
from rooflab.units import DType  # noqa: E402

REFERENCE_COPY_TBS = 4.22   # an H200's copy bandwidth measured before these kernels (docstring)
ROWS: list[dict] = []
#: Llama-3-8B's attention heads: every attention shape below.
HEADS = AttentionHeads(32, 8, 128)
_FLUSH: list[L2Flusher] = []


def bench_ms(fn, warmup: int = 3, repeat: int = 15) -> float:
    """Median milliseconds of fn(i) (i counts the calls), timed by rooflab.measure.timing.time_gpu."""
    if not _FLUSH:
        _FLUSH.append(L2Flusher())
    calls = iter(range(1 << 62))
    return time_gpu(lambda: fn(next(calls)), warmup=warmup, repeats=repeat, flush=_FLUSH[0]).median_s * 1e3


def graph_ms(fn, calls: int = 20, replays: int = 10) -> float:
    return time_cupy_graph(fn, calls, replays).median_s * 1e3


def host_us(fn, calls: int = 300) -> float:
    """Host time of one launcher call (validation + launch), without waiting for the GPU."""
    fn(0)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for i in range(calls):
        fn(i)
    t1 = time.perf_counter()
    cp.cuda.Device().synchronize()
    return (t1 - t0) / calls * 1e6


def report(name: str, ms: float, nbytes: float | None = None, flops: float | None = None,
           copy_tbs: float | None = None, note: str = "") -> None:
    row = {"name": name, "ms": ms}
    text = f"{name:<58} {ms:9.4f} ms"
    if nbytes is not None:
        tbs = nbytes / (ms * 1e-3) / 1e12
        row["TB/s"] = tbs
        text += f"  {tbs:6.3f} TB/s"
        if copy_tbs:
            row["pct_copy"] = 100 * tbs / copy_tbs
            text += f"  {100 * tbs / copy_tbs:5.1f}% of copy"
    if flops is not None:
        tf = flops / (ms * 1e-3) / 1e12
        row["TFLOP/s"] = tf
        text += f"  {tf:7.1f} TFLOP/s"
    if note:
        row["note"] = note
        text += f"  [{note}]"
    ROWS.append(row)
    print(text, flush=True)


def copy_ceiling() -> float:
    n = 2 * 2**30
    src, dst = cp.empty(n, dtype=cp.uint8), cp.empty(n, dtype=cp.uint8)
    src.fill(1)
    ms = bench_ms(lambda i: dst.data.copy_from_device_async(src.data, n))
    tbs = 2 * n / (ms * 1e-3) / 1e12
    report("device-to-device copy 2 GiB (read + written)", ms, 2 * n, note=f"reference {REFERENCE_COPY_TBS} TB/s")
    return tbs


def merge(copy_tbs: float, rng) -> None:
    tokens, heads, d = 16384, 32, 128
    o_a, o_b = (kt.random_normal((tokens, heads, d), "bf16", rng) for _ in range(2))
    lse_a, lse_b = (rng.standard_normal((tokens, heads), dtype=cp.float32) for _ in range(2))
    out, out_lse = cp.empty_like(o_a), cp.empty_like(lse_a)
    nbytes = float(merge_pair(tokens, heads, d, DType.bf16, write_lse=True).hbm_bytes)
    call = lambda i: K.merge_states(o_a, lse_a, o_b, lse_b, out=out, out_lse=out_lse)
    report("merge_states 16k x 32 x 128 bf16 (events)", bench_ms(call, repeat=30), nbytes, copy_tbs=copy_tbs)
    for rows in (1, 2):
        call = lambda i, rows=rows: K.merge_states(o_a, lse_a, o_b, lse_b, out=out, out_lse=out_lse,
                                                   rows_per_thread=rows)
        report(f"merge_states 16k x 32 x 128 bf16 (graph) rows/thread {rows}", graph_ms(call), nbytes,
               copy_tbs=copy_tbs, note="target >= 90% of copy; PyTorch eager 0.34 TB/s")


def softmax(copy_tbs: float, rng) -> None:
    s = kt.random_normal((32, 8192, 8192), "fp16", rng, std=2.0)
    p = cp.empty_like(s)
    from rooflab.kernels.attention import masked_softmax

    ms = bench_ms(lambda i: K.softmax_rows(s, out=p), repeat=10)
    nbytes = float(naive_prefill(HEADS, 8192, 1, DType.fp16).softmax.hbm_bytes)    # S read, P written
    report("softmax_rows [32, 8192, 8192] fp16", ms, nbytes, copy_tbs=copy_tbs,
           note="target >= 85% of copy; PyTorch softmax 0.91 TB/s")
    ms = bench_ms(lambda i: masked_softmax(s.reshape(1, 32, 8192, 8192), 0.0884, True,
                                           out=p.reshape(1, 32, 8192, 8192)), repeat=10)
    nbytes = float(naive_prefill(HEADS, 8192, 1, DType.fp16, causal=True).softmax.hbm_bytes)
    report("masked_softmax causal [1, 32, 8192, 8192] fp16", ms, nbytes, copy_tbs=copy_tbs)


def naive(copy_tbs: float, rng) -> None:
    from rooflab.kernels.attention import attention_scores, attention_values, masked_softmax

    q = kt.random_normal((1, 32, 8192, 128), "fp16", rng)
    k, v = (kt.random_normal((1, 8, 8192, 128), "fp16", rng) for _ in range(2))
    for causal in (False, True):
        cost = naive_prefill(HEADS, 8192, 1, DType.fp16, causal)
        ms = bench_ms(lambda i: K.naive_attention(q, k, v, causal=causal), repeat=5)
        report(f"naive_attention T=8192 32/8 d128 fp16 causal={causal}", ms, flops=float(cost.flops),
               note="PyTorch naive 1.42 + 9.40 + 1.08 = 11.9 ms")
    full = naive_prefill(HEADS, 8192, 1, DType.fp16)             # the GEMMs below compute every score
    s = attention_scores(q, k)
    report("  of which S = QK^T (cuBLAS)", bench_ms(lambda i: attention_scores(q, k), repeat=5),
           flops=float(full.qk.flops))
    p = cp.empty_like(s)
    report("  of which masked_softmax causal", bench_ms(lambda i: masked_softmax(s, 0.0884, True, out=p), repeat=5),
           float(cost.softmax.hbm_bytes), copy_tbs=copy_tbs)
    report("  of which O = PV (cuBLAS)", bench_ms(lambda i: attention_values(p, v), repeat=5),
           flops=float(full.pv.flops))


def paged(copy_tbs: float, rng) -> None:
    batch, ctx, heads, kv_heads, d = 128, 8192, 32, 8, 128
    cache = kt.make_paged_cache([ctx] * batch, kv_heads, d, 16, "fp16", seed=1, spare_pages=0)
    q = kt.random_normal((batch, heads, d), "fp16", rng)
    out = cp.empty_like(q)
    nbytes = float(paged_decode(HEADS, [ctx] * batch, 16, DType.fp16).hbm_bytes)   # K, V, Q, O, table, lengths
    for config in [(4, 3), (4, 2), (8, 2)]:
        call = lambda i: K.paged_decode(q, cache.k_cache, cache.v_cache, cache.block_table,
                                        cache.context_lens, out=out, config=config)
        report(f"paged_decode B=128 ctx=8192 32/8 d128 fp16 page16 cfg={config}", graph_ms(call, calls=5),
               nbytes, copy_tbs=copy_tbs, note="graph; target >= 85%; SDPA flash dense 2.62 TB/s")


def split(copy_tbs: float, rng) -> None:
    ctx, heads, kv_heads, d = 32768, 32, 8, 128
    caches = [kt.make_paged_cache([ctx], kv_heads, d, 16, "fp16", seed=10 + i, spare_pages=0) for i in range(4)]
    q = kt.random_normal((1, heads, d), "fp16", rng)
    out = cp.empty_like(q)
    out_lse = cp.empty((1, heads), dtype=cp.float32)
    for splits in [1, 8, 16, 32, 48, 64, 128]:
        cost = paged_decode(HEADS, [ctx], 16, DType.fp16, num_splits=splits)
        o_part = cp.empty((splits, 1, heads, d), dtype=cp.float32)
        lse_part = cp.empty((splits, 1, heads), dtype=cp.float32)

        def both(i, splits=splits, o_part=o_part, lse_part=lse_part):
            c = caches[i % 4]
            if splits == 1:
                K.paged_decode(q, c.k_cache, c.v_cache, c.block_table, c.context_lens, out=out)
                return
            K.paged_decode_partial(q, c.k_cache, c.v_cache, c.block_table, c.context_lens, splits,
                                   out=o_part, out_lse=lse_part)
            K.merge_partials(o_part, lse_part, q.dtype, out=out, out_lse=out_lse)

        def partial(i, splits=splits, o_part=o_part, lse_part=lse_part):
            c = caches[i % 4]
            K.paged_decode_partial(q, c.k_cache, c.v_cache, c.block_table, c.context_lens, splits,
                                   out=o_part, out_lse=lse_part)

        nbytes = float(cost.hbm_bytes)                    # attention launch (partials with S > 1) and merge
        report(f"paged_decode+merge B=1 ctx=32768 32/8 d128 S={splits} (events)", bench_ms(both, repeat=40),
               nbytes, copy_tbs=copy_tbs)
        report(f"paged_decode+merge B=1 ctx=32768 32/8 d128 S={splits} (graph)", graph_ms(both), nbytes,
               copy_tbs=copy_tbs, note="target >= 50% of copy; SDPA flash batch 1 0.55 TB/s")
        if splits > 1:
            report(f"  of which paged_decode_partial S={splits} (graph)", graph_ms(partial),
                   float(cost.attention.hbm_bytes), copy_tbs=copy_tbs)
            report(f"  of which merge_partials S={splits} (graph)",
                   graph_ms(lambda i: K.merge_partials(o_part, lse_part, q.dtype, out=out, out_lse=out_lse)),
                   float(cost.merge.hbm_bytes), copy_tbs=copy_tbs)


def overhead(copy_tbs: float, rng) -> None:
    """Host microseconds a launcher call costs (checks + launch); a GPU timing that brackets
    the Python call includes it, a CUDA graph replay does not."""
    q = kt.random_normal((1, 32, 128), "fp16", rng)
    cache = kt.make_paged_cache([4096], 8, 128, 16, "fp16", seed=3, spare_pages=0)
    o_part = cp.empty((32, 1, 32, 128), dtype=cp.float32)
    lse_part = cp.empty((32, 1, 32), dtype=cp.float32)
    out, out_lse = cp.empty_like(q), cp.empty((1, 32), dtype=cp.float32)
    o_a = kt.random_normal((64, 32, 128), "bf16", rng)
    l_a = rng.standard_normal((64, 32), dtype=cp.float32)
    o_m, l_m = cp.empty_like(o_a), cp.empty_like(l_a)
    calls = {
        "paged_decode_partial": lambda i: K.paged_decode_partial(q, cache.k_cache, cache.v_cache, cache.block_table,
                                                                 cache.context_lens, 32, out=o_part, out_lse=lse_part),
        "merge_partials": lambda i: K.merge_partials(o_part, lse_part, q.dtype, out=out, out_lse=out_lse),
        "paged_decode (S=1)": lambda i: K.paged_decode(q, cache.k_cache, cache.v_cache, cache.block_table,
                                                       cache.context_lens, out=out),
        "merge_states": lambda i: K.merge_states(o_a, l_a, o_a, l_a, out=o_m, out_lse=l_m),
        "an empty RawKernel launch": None,
    }
    from rooflab.kernels._runtime import kernel

    kern = kernel("merge_partials.cu", "merge_partials<__half, 8>")
    calls["an empty RawKernel launch"] = lambda i: kern((1, 1, 1), (32, 1, 1), (o_part, lse_part, out, out_lse,
                                                       np.int32(0), np.int64(0), np.int32(128)))
    for name, fn in calls.items():
        us = host_us(fn)
        print(f"host overhead {name:<40} {us:7.1f} us a call", flush=True)
        ROWS.append({"name": f"host overhead {name}", "us": us})


def flash(rng) -> None:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    batch, heads, kv_heads, t, d = 1, 32, 8, 8192, 128
    q = kt.random_normal((batch, heads, t, d), "fp16", rng)
    k, v = (kt.random_normal((batch, kv_heads, t, d), "fp16", rng) for _ in range(2))
    variants = [K.FLASH_VARIANTS[d], (2, 4, 32), (1, 8, 64)]
    tq, tk, tv = (torch.as_tensor(x, device="cuda") for x in (q, k, v))
    for causal in (False, True):
        f = float(flash_prefill(AttentionHeads(heads, kv_heads, d), t, batch, DType.fp16, causal).flops)
        for variant in dict.fromkeys(variants):
            ms = bench_ms(lambda i: K.flash_attention(q, k, v, causal=causal, variant=variant), repeat=10)
            report(f"flash_attention T=8192 32/8 d128 fp16 causal={causal} {variant}", ms, flops=f,
                   note="target: SDPA flash 356 / 298")
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            try:
                call = lambda: F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, enable_gqa=True)
                ref = call()
                how = "enable_gqa"
            except RuntimeError:
                ke, ve = (x.repeat_interleave(heads // kv_heads, dim=1) for x in (tk, tv))
                call = lambda: F.scaled_dot_product_attention(tq, ke, ve, is_causal=causal)
                ref = call()
                how = "K/V expanded"
            ms = bench_ms(lambda i: call(), repeat=10)
        report(f"torch SDPA flash backend, same shape, causal={causal} ({how})", ms, flops=f,
               note="reference 356 / 298")
        o, _ = K.flash_attention(q, k, v, causal=causal)
        diff = torch.as_tensor(o, device="cuda").float() - ref.float()
        rel = (diff.norm() / ref.float().norm()).item()
        print(f"  rooflab vs torch flash output, causal={causal}: rel_l2 {rel:.2e}", flush=True)
        ROWS.append({"name": f"flash vs torch rel_l2 causal={causal}", "rel_l2": rel})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="write the rows here as JSON")
    parser.add_argument("--only", default="copy,merge,softmax,naive,paged,split,overhead,flash")
    args = parser.parse_args()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    print(f"device: {props['name'].decode()}  SMs {props['multiProcessorCount']}  "
          f"L2 {props['l2CacheSize'] / 2**20:.0f} MiB  CuPy {cp.__version__}", flush=True)
    K.precompile(dtypes=("fp16", "bf16"), head_dims=(128,), flash_variants=[(2, 4, 32), (1, 8, 64)])
    rng = cp.random.default_rng(0)
    only = set(args.only.split(","))
    copy_tbs = copy_ceiling() if "copy" in only else REFERENCE_COPY_TBS
    for name, fn in [("merge", merge), ("softmax", softmax), ("naive", naive), ("paged", paged),
                     ("split", split), ("overhead", overhead)]:
        if name in only:
            fn(copy_tbs, rng)
            cp.get_default_memory_pool().free_all_blocks()
    if "flash" in only:
        flash(rng)
    if args.json:
        args.json.write_text(json.dumps({"device": props["name"].decode(), "rows": ROWS}, indent=1))


if __name__ == "__main__":
    main()

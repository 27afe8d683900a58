"""Timings of the attention variants' kernels on the issue's target shapes, beside same-run ceilings and peers.

Run on the H200 from the repository root:  python3 benchmarks/kernels_new_variants.py --out DIR [--only SECTION]
Sections (all by default):
  refactor  the shapes whose speed the shared online-softmax state must not move: flash T 8192, 32 / 8 heads,
            d 128, fp16, causal and not (wgmma and mma.sync kernels); paged decode B 128 x 8192; split-KV
            1 x 8192 S 17; merge_states 16k x 32 x 128 bf16; each timed alternately with the same kernel
            before the refactor (--baseline: its sources, common.cuh inlined) in three rounds
  window    flash prefill T 32768, window 4096, 32 / 8, d 128, fp16, against causal full attention at T 32768
            (ours and torch SDPA's flash / cuDNN) and FlexAttention with a sliding-window block mask (compiled)
  paged     windowed paged decode B 64 x 32768, window 4096; multi-token decode B 128 x 8192, q_len 1 / 2 / 4 / 8
  mla       MLA decode bf16 B 128 x 8192: h 16 (memory-bound) and h 128, q_len 2 (compute-bound), beside a torch
            bmm composition on a dense latent (impls: mma; hopper = the wgmma kernel's seesaw schedule; hopper_tile = its
            one-phase schedule)
  mla_ab    hopper_tma against hopper: outputs compared (B 128, full and random lengths),
            7 alternating rounds (the order turned every round) on h 128 q_len 2 and h 16 q_len 1, then B 4 x 32768
            h 128 q_len 2 against the seesaw with split-KV S 1 / 8 (only with --only mla_ab; env MLA_AB_IMPLS,
            MLA_AB_ROUNDS choose the impls and rounds)
  mla_power the seesaw h 128 q_len 2 and the GEMM peer, each cold (after 3 s idle) and hot (after 3 s of launches),
            twice (only with --only mla_power; log the clocks beside it with nvidia-smi -lms)
Timing: rooflab.bench.timing (CUDA events, 3 warm-ups, the L2 flushed by a 512 MiB read before every repeat,
median of 20); torch peers with time_torch. Ceilings measured in the same run: a 2 GiB device-to-device copy
(bytes read + written) and an 8192^3 bf16 torch matmul. Writes DIR/variants.csv (one row a timing) and
DIR/variants.json, and prints a short table last.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cupy as cp  # noqa: E402
import torch  # noqa: E402

from rooflab.measure.timing import L2Flusher, time_gpu, time_torch  # noqa: E402
from rooflab.kernels import (flash_attention, merge_states, mla_decode, paged_decode, precompile,  # noqa: E402
                             testing as kt)
from rooflab.kernels.mla import mla_flops  # noqa: E402

ROWS: list[dict] = []
SUMMARY: list[str] = []
CEIL: dict[str, float] = {}
FLUSH_BYTES = 512 << 20


def record(name: str, impl: str, timing, flops: float | None = None, nbytes: float | None = None,
           note: str = "") -> dict:
    row = {"name": name, "impl": impl, "median_s": timing.median_s, "p10_s": timing.p10_s, "p90_s": timing.p90_s,
           "flops": flops or "", "bytes": nbytes or "", "note": note}
    if flops:
        row["tflop_s"] = flops / timing.median_s / 1e12
    if nbytes:
        row["tb_s"] = nbytes / timing.median_s / 1e12
        if "copy_tb_s" in CEIL:
            row["pct_copy"] = 100 * row["tb_s"] / CEIL["copy_tb_s"]
    ROWS.append(row)
    text = f"{name:<62} {impl:<20} {timing.median_s * 1e3:9.4f} ms"
    if flops:
        text += f" {row['tflop_s']:7.1f} TFLOP/s"
    if nbytes:
        text += f" {row['tb_s']:6.3f} TB/s"
        if "pct_copy" in row:
            text += f" {row['pct_copy']:5.1f}% copy"
    print(text + (f"  [{note}]" if note else ""), flush=True)
    return row


def gpu(fn, flush, repeats: int = 20):
    return time_gpu(fn, warmup=3, repeats=repeats, flush=flush)


def tt(fn, repeats: int = 20):
    return time_torch(fn, warmup=3, repeats=repeats, flush_bytes=FLUSH_BYTES)


def rel_l2(a, b) -> float:
    a, b = a.float(), b.float()
    return float(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b))


def ceilings(flush) -> None:
    n = 2 << 30
    src, dst = cp.empty(n, dtype=cp.uint8), cp.empty(n, dtype=cp.uint8)
    src.fill(1)
    t = gpu(lambda: dst.data.copy_from_device_async(src.data, n), flush)
    CEIL["copy_tb_s"] = 2 * n / t.median_s / 1e12
    record("device-to-device copy 2 GiB (read + written)", "cupy", t, nbytes=2 * n)
    del src, dst
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t = tt(lambda: a @ b, repeats=10)
    CEIL["gemm_bf16_tflop_s"] = 2 * 8192**3 / t.median_s / 1e12
    record("matmul 8192^3 bf16 (random data)", "torch", t, flops=2 * 8192**3)


def flash_inputs(t: int, dtype=torch.float16, seed: int = 0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(1, 32, t, 128, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(1, 8, t, 128, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(1, 8, t, 128, device="cuda", dtype=dtype, generator=g)
    return q, k, v


class Baseline:
    """The kernels as they were before the shared online-softmax state (sources from commit 81881a2 with
    common.cuh inlined, in a folder carried to the device), launched with their old signatures, so the
    refactor is timed against its own past in the same run rather than against another day's sweep."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.modules: dict = {}

    def fn(self, filename: str, name: str, options: tuple = ()):
        key = (filename, name)
        if key not in self.modules:
            mod = cp.RawModule(code=(self.folder / filename).read_text(), options=options, name_expressions=(name,))
            self.modules[key] = mod.get_function(name)
        return self.modules[key]


def ab(name: str, new_fn, old_fn, flush, rounds: int = 3, **kw) -> tuple[float, float]:
    """Time the new and the old kernel alternately (rounds x 20 repeats each); returns the medians of the
    round medians, new and old, and records both."""
    new_t, old_t = [], []
    for _ in range(rounds):
        new_t.append(gpu(new_fn, flush))
        old_t.append(gpu(old_fn, flush))
    pick = lambda ts: sorted(ts, key=lambda t: t.median_s)[len(ts) // 2]
    tn, to = pick(new_t), pick(old_t)
    spread = lambda ts: (max(t.median_s for t in ts) - min(t.median_s for t in ts)) / pick(ts).median_s * 100
    record(name, "rooflab (after)", tn, note=f"round medians spread {spread(new_t):.1f}%", **kw)
    record(name, "rooflab (before)", to, note=f"round medians spread {spread(old_t):.1f}%", **kw)
    SUMMARY.append(f"A {name}: after {tn.median_s * 1e6:.1f} us, before {to.median_s * 1e6:.1f} us "
                   f"({tn.median_s / to.median_s:.3f}x; round spreads {spread(new_t):.1f}% / {spread(old_t):.1f}%)")
    return tn.median_s, to.median_s


def refactor(flush, baseline: Baseline | None = None) -> None:
    """Task A: the kernels the shared state touched, against the same kernels before it (same run) when the
    baseline folder is there, else against the bundled sweep's figures."""
    from rooflab.kernels._runtime import LOG2E, launch
    from rooflab.kernels.attention import flash_smem_bytes
    from rooflab.kernels.flash_hopper import hopper_smem_bytes

    q, k, v = flash_inputs(8192)
    cq, ck, cv = (cp.from_dlpack(x) for x in (q, k, v))
    o, lse = cp.empty_like(cq), cp.empty((1, 32, 8192), dtype=cp.float32)
    base_args = (cq, ck, cv, o, lse, np.int32(8192), np.int32(8192), np.int32(32), np.int32(4),
                 np.float32(LOG2E / math.sqrt(128)))
    before = {("hopper", False): 1.8409e-3, ("hopper", True): 0.9829e-3, ("mma", False): 2.9637e-3,
              ("mma", True): 1.6370e-3}
    for impl in ("hopper", "mma"):
        for causal in (False, True):
            flops = 4 * 32 * 8192**2 * 128 / (2 if causal else 1)
            new_fn = lambda: flash_attention(cq, ck, cv, causal=causal, impl=impl, out=o, out_lse=lse)
            c = "true" if causal else "false"
            if baseline is None:
                t = gpu(new_fn, flush)
                record(f"flash T 8192 32/8 d128 fp16 causal={causal}", f"rooflab_{impl}", t, flops=flops,
                       note=f"bundled sweep {before[(impl, causal)] * 1e3:.4f} ms")
                continue
            if impl == "hopper":
                kern = baseline.fn("flash_fwd_hopper.cu", f"flash_fwd_hopper_ws<__half, 128, 2, false, {c}>",
                                   ("-arch=sm_90a",))
                old_fn = lambda: launch(kern, (64, 32, 1), (384, 1, 1), base_args, hopper_smem_bytes((2, 128, False, 2)))
            else:
                kern = baseline.fn("flash_fwd.cu", f"flash_fwd<__half, 128, 2, 4, 64, {c}>")
                old_fn = lambda: launch(kern, (64, 32, 1), (128, 1, 1), base_args, flash_smem_bytes(128, 2, 4))
            ab(f"flash {impl} T 8192 32/8 d128 fp16 causal={causal}", new_fn, old_fn, flush, flops=flops)
    del q, k, v, cq, ck, cv, o, lse
    cache = kt.make_paged_cache([8192] * 128, 8, 128, 16, "fp16", seed=1, spare_pages=0)
    qd = kt.random_normal((128, 32, 128), "fp16", cp.random.default_rng(2))
    od = cp.empty_like(qd)
    kv_bytes = 2 * 128 * 8192 * 8 * 128 * 2
    new_fn = lambda: paged_decode(qd, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, out=od)
    if baseline is None:
        record("paged decode B 128 x 8192 32/8 d128 fp16 page 16", "rooflab", gpu(new_fn, flush), nbytes=kv_bytes)
    else:
        kern = baseline.fn("paged_decode.cu", "paged_decode<__half, __half, 128, 1, 4, 3, false>")
        args = (qd, cache.k_cache, cache.v_cache, cache.block_table, np.int32(cache.block_table.shape[1]),
                cache.context_lens, od, np.uint64(0), np.int32(32), np.int32(4), np.int32(1), np.int32(16),
                np.int32(4), np.float32(LOG2E / math.sqrt(128)), np.float32(1.0))
        ab("paged decode B 128 x 8192 32/8 d128 fp16 page 16", new_fn,
           lambda: launch(kern, (8, 128, 1), (128, 1, 1), args, 96 * 1024), flush, nbytes=kv_bytes)
    del cache
    cache = kt.make_paged_cache([8192], 8, 128, 16, "fp16", seed=3, spare_pages=0)
    q1 = kt.random_normal((1, 32, 128), "fp16", cp.random.default_rng(4))
    o1 = cp.empty_like(q1)
    t = gpu(lambda: paged_decode(q1, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens,
                                 num_splits=17, out=o1), flush)
    record("split-KV + merge 1 x 8192 32/8 d128 fp16 S 17", "rooflab", t, nbytes=2 * 8192 * 8 * 128 * 2,
           note="bundled sweep 22.90 us")
    rng = cp.random.default_rng(5)
    o_a, o_b = (kt.random_normal((16384, 32, 128), "bf16", rng) for _ in range(2))
    l_a, l_b = (rng.standard_normal((16384, 32), dtype=cp.float32) for _ in range(2))
    out, out_lse = cp.empty_like(o_a), cp.empty_like(l_a)
    nbytes = 3 * o_a.nbytes + 3 * l_a.nbytes
    new_fn = lambda: merge_states(o_a, l_a, o_b, l_b, out=out, out_lse=out_lse)
    if baseline is None:
        record("merge_states 16k x 32 x 128 bf16", "rooflab", gpu(new_fn, flush), nbytes=nbytes)
    else:
        kern = baseline.fn("merge_states.cu", "merge_states<__nv_bfloat16, 8, 1>")
        rows = 16384 * 32
        args = (o_a, l_a, o_b, l_b, out, out_lse, np.int64(rows), np.int32(128))
        ab("merge_states 16k x 32 x 128 bf16", new_fn,
           lambda: launch(kern, (rows // 16, 1, 1), (16, 16, 1), args), flush, nbytes=nbytes)


def visible_pairs(t: int, window: int | None = None, chunk: int | None = None) -> int:
    if window:
        w = min(window, t)
        return w * (w + 1) // 2 + (t - w) * w
    if chunk:
        full, r = divmod(t, chunk)
        return full * chunk * (chunk + 1) // 2 + r * (r + 1) // 2
    return t * (t + 1) // 2


def window_prefill(flush) -> None:
    t_len, window = 32768, 4096
    q, k, v = flash_inputs(t_len)
    cq, ck, cv = (cp.from_dlpack(x) for x in (q, k, v))
    o, lse = cp.empty_like(cq), cp.empty((1, 32, t_len), dtype=cp.float32)
    fl = lambda pairs: 4 * 32 * pairs * 128
    p_causal, p_win = visible_pairs(t_len), visible_pairs(t_len, window)
    res = {}
    for impl in ("hopper", "mma"):
        res[("causal", impl)] = gpu(lambda: flash_attention(cq, ck, cv, causal=True, impl=impl, out=o, out_lse=lse),
                                    flush, repeats=10)
        record(f"flash T 32768 causal full 32/8 d128 fp16", f"rooflab_{impl}", res[("causal", impl)],
               flops=fl(p_causal))
        res[("window", impl)] = gpu(lambda: flash_attention(cq, ck, cv, causal=True, impl=impl, window=window,
                                                            out=o, out_lse=lse), flush)
        record(f"flash T 32768 window 4096 32/8 d128 fp16", f"rooflab_{impl}", res[("window", impl)],
               flops=fl(p_win))
    ours_window = torch.from_dlpack(o).clone()
    sinks = cp.asarray(np.random.default_rng(0).standard_normal(32), dtype=cp.float32)
    t = gpu(lambda: flash_attention(cq, ck, cv, causal=True, window=window, sinks=sinks, out=o, out_lse=lse), flush)
    record("flash T 32768 window 4096 + sinks", "rooflab_hopper", t, flops=fl(p_win))
    t = gpu(lambda: flash_attention(cq, ck, cv, causal=True, chunk=8192, out=o, out_lse=lse), flush)
    record("flash T 32768 chunk 8192 (Llama 4)", "rooflab_hopper", t, flops=fl(visible_pairs(t_len, chunk=8192)))
    ratio = p_win / p_causal
    for impl in ("hopper", "mma"):
        allowed = 1.15 * res[("causal", impl)].median_s * ratio
        got = res[("window", impl)].median_s
        SUMMARY.append(f"B1 window T32k W4096 {impl}: {got * 1e3:.3f} ms vs 1.15 x causal {res[('causal', impl)].median_s * 1e3:.3f}"
                       f" ms x pairs {ratio:.4f} = {allowed * 1e3:.3f} ms -> {'MET' if got <= allowed else 'MISSED'}"
                       f" ({got / (res[('causal', impl)].median_s * ratio):.3f}x the scaled causal time)")
    from torch.nn.attention import SDPBackend, sdpa_kernel
    qg, kg, vg = q, k.repeat_interleave(4, 1), v.repeat_interleave(4, 1)
    for name, backend in (("torch_flash", SDPBackend.FLASH_ATTENTION), ("torch_cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            def run(backend=backend):
                with sdpa_kernel(backend):
                    return torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
            record("sdpa T 32768 causal full 32/8 (K/V repeated) d128 fp16", name, tt(run, repeats=10),
                   flops=fl(p_causal))
        except Exception as exc:                                    # a backend missing on this build
            print(f"{name}: {type(exc).__name__}: {exc}", flush=True)
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        def sliding(b, h, q_idx, kv_idx):
            return (q_idx >= kv_idx) & (q_idx - kv_idx < window)

        t0 = time.time()
        block_mask = create_block_mask(sliding, B=None, H=None, Q_LEN=t_len, KV_LEN=t_len, device="cuda")
        flex = torch.compile(flex_attention)
        out = flex(q, k, v, block_mask=block_mask, enable_gqa=True)
        torch.cuda.synchronize()
        compile_s = time.time() - t0
        err = rel_l2(ours_window, out)
        tf = tt(lambda: flex(q, k, v, block_mask=block_mask, enable_gqa=True))
        record("FlexAttention T 32768 sliding window 4096 (compiled)", "torch_flex", tf, flops=fl(p_win),
               note=f"compile {compile_s:.0f} s; rel_l2 vs ours {err:.2e}")
        best = min(res[("window", "hopper")].median_s, res[("window", "mma")].median_s)
        SUMMARY.append(f"B1 vs FlexAttention: flex {tf.median_s * 1e3:.3f} ms / ours {best * 1e3:.3f} ms = "
                       f"{tf.median_s / best:.2f}x -> {'MET' if tf.median_s / best >= 1.5 else 'MISSED'} (target >= 1.5x);"
                       f" rel_l2 ours vs flex {err:.1e}")
    except Exception as exc:
        traceback.print_exc()
        SUMMARY.append(f"B1 FlexAttention did not run: {type(exc).__name__}: {str(exc)[:200]}")


def paged_variants(flush) -> None:
    batch, ctx, window = 64, 32768, 4096
    cache = kt.make_paged_cache([ctx] * batch, 8, 128, 16, "fp16", seed=6, spare_pages=0)
    rng = cp.random.default_rng(7)
    q = kt.random_normal((batch, 32, 128), "fp16", rng)
    o = cp.empty_like(q)
    win_bytes = 2 * batch * window * 8 * 128 * 2 + 2 * q.nbytes
    args = (cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens)
    best = None
    for splits in (1, 2):
        t = gpu(lambda: paged_decode(q, *args, num_splits=splits, window=window, out=o), flush)
        record(f"paged decode B 64 x 32768 window 4096 S {splits}", "rooflab", t, nbytes=win_bytes)
        best = t if best is None or t.median_s < best.median_s else best
    sinks = cp.zeros(32, dtype=cp.float32)
    t = gpu(lambda: paged_decode(q, *args, window=window, sinks=sinks, out=o), flush)
    record("paged decode B 64 x 32768 window 4096 + sinks", "rooflab", t, nbytes=win_bytes)
    pct = win_bytes / best.median_s / 1e12 / CEIL["copy_tb_s"] * 100
    SUMMARY.append(f"B2 windowed decode B64 x 32k W4096: {best.median_s * 1e6:.1f} us = {pct:.1f}% of copy on the "
                   f"window's bytes -> {'MET' if pct >= 90 else 'MISSED'} (target >= 90%)")
    del cache
    batch, ctx = 128, 8192
    cache = kt.make_paged_cache([ctx] * batch, 8, 128, 16, "fp16", seed=8, spare_pages=0)
    args = (cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens)
    kv_bytes = 2 * batch * ctx * 8 * 128 * 2
    times = {}
    for q_len in (1, 2, 4, 8):
        qm = kt.random_normal((batch, q_len, 32, 128), "fp16", rng)
        om = cp.empty_like(qm)
        times[q_len] = gpu(lambda: paged_decode(qm, *args, out=om), flush)
        record(f"paged decode B 128 x 8192 q_len {q_len} 32/8 fp16", "rooflab", times[q_len],
               nbytes=kv_bytes + 2 * qm.nbytes, flops=4 * 32 * 128 * batch * (q_len * ctx - q_len * (q_len - 1) // 2))
    pct = (kv_bytes + 2 * batch * 4 * 32 * 128 * 2) / times[4].median_s / 1e12 / CEIL["copy_tb_s"] * 100
    r = times[4].median_s / times[1].median_s
    SUMMARY.append(f"B3 multi-token B128 x 8k q_len 4: {times[4].median_s * 1e6:.1f} us = {pct:.1f}% of copy, "
                   f"{r:.3f}x q_len 1 ({times[1].median_s * 1e6:.1f} us) -> "
                   f"{'MET' if pct >= 90 and r <= 1.1 else 'MISSED'} (targets >= 90%, <= 1.1x)")
    del cache
    cache = kt.make_paged_cache([ctx] * batch, 8, 128, 16, kt.FP8_KV, seed=9, spare_pages=0)
    for q_len in (1, 4):
        qm = kt.random_normal((batch, q_len, 32, 128), "fp16", rng)
        om = cp.empty_like(qm)
        t = gpu(lambda: paged_decode(qm, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, out=om),
                flush)
        record(f"paged decode B 128 x 8192 q_len {q_len} fp8 KV", "rooflab", t, nbytes=kv_bytes // 2)


def mla(flush) -> None:
    batch, ctx = 128, 8192
    pages = ctx // 64
    g = torch.Generator(device="cuda").manual_seed(11)
    dense = torch.randn(batch * pages, 64, 576, device="cuda", dtype=torch.bfloat16, generator=g)
    latent = cp.from_dlpack(dense)
    table = cp.arange(batch * pages, dtype=cp.int32).reshape(batch, pages)   # sequence b: pages b * 128 ..
    lens = cp.full(batch, ctx, dtype=cp.int32)
    c = dense.view(batch, ctx, 576)
    scale = 1 / math.sqrt(576)
    lat_bytes = batch * ctx * 576 * 2
    for heads, q_len, target in ((16, 1, "memory"), (128, 2, "compute")):
        qt = torch.randn(batch, q_len, heads, 576, device="cuda", dtype=torch.bfloat16, generator=g)
        cq = cp.from_dlpack(qt)
        o = cp.empty((batch, q_len, heads, 512), dtype=cq.dtype)
        lse = cp.empty((batch, q_len, heads), dtype=cp.float32)
        pairs = batch * (q_len * ctx - q_len * (q_len - 1) // 2)
        flops = mla_flops(heads, pairs)
        nbytes = lat_bytes + qt.numel() * 2 + o.size * 2
        best = None
        best_impl = None
        for impl, mt, splits in (("mma", None, 1), ("mma", None, 2), ("mma", 4, 1), ("hopper", None, 1),
                                 ("hopper", None, 2), ("hopper_tile", None, 1),
                                 (None, None, 1)):
            if heads * q_len <= 32 and mt == 4:
                continue
            if splits > 1:
                fn = lambda: mla_decode(cq, latent, table, lens, splits, mt=mt, impl=impl)
            else:
                fn = lambda: mla_decode(cq, latent, table, lens, out=o, out_lse=lse, mt=mt, impl=impl)
            try:
                t = gpu(fn, flush)
            except Exception as exc:
                print(f"mla {impl} mt={mt} S={splits}: {type(exc).__name__}: {exc}", flush=True)
                continue
            record(f"MLA decode bf16 B 128 x 8192 h {heads} q_len {q_len} mt {mt} S {splits}", f"rooflab_{impl or 'default'}", t,
                   flops=flops, nbytes=nbytes)
            if best is None or t.median_s < best.median_s:
                best, best_impl = t, f"{impl} mt {mt} S {splits}"
        SUMMARY.append(f"B4 MLA h{heads} q{q_len}: fastest {best_impl}")
        mla_decode(cq, latent, table, lens, out=o, out_lse=lse)
        qr = qt.reshape(batch, q_len * heads, 576)

        def peer():
            s = torch.bmm(qr, c.transpose(1, 2)) * scale
            p = torch.softmax(s.float(), dim=-1).to(torch.bfloat16)
            return torch.bmm(p, c[:, :, :512])

        tp = tt(peer, repeats=10)
        record(f"MLA decode bf16 B 128 x 8192 h {heads} q_len {q_len} (dense, no causal)", "torch_bmm", tp,
               flops=flops, nbytes=nbytes)
        err = rel_l2(torch.from_dlpack(o).reshape(batch, q_len * heads, 512), peer()) if q_len == 1 else float("nan")
        if target == "memory":
            pct = nbytes / best.median_s / 1e12 / CEIL["copy_tb_s"] * 100
            SUMMARY.append(f"B4 MLA h16 B128 x 8k bf16: {best.median_s * 1e6:.1f} us = {pct:.1f}% of copy -> "
                           f"{'MET' if pct >= 90 else 'MISSED'} (target >= 90%); torch bmm {tp.median_s * 1e6:.1f} us;"
                           f" rel_l2 vs torch {err:.1e}")
        else:
            tf = flops / best.median_s / 1e12
            SUMMARY.append(f"B4 MLA h128 q2 B128 x 8k bf16: {best.median_s * 1e6:.1f} us = {tf:.0f} TFLOP/s "
                           f"({tf / CEIL['gemm_bf16_tflop_s'] * 100:.0f}% of same-run GEMM "
                           f"{CEIL['gemm_bf16_tflop_s']:.0f}) -> {'MET' if tf >= 590 else 'MISSED'} (target 590); "
                           f"torch bmm {flops / tp.median_s / 1e12:.0f} TFLOP/s")


def mla_ab(flush, rounds: int = 7) -> None:
    """Other wgmma schedules (MLA_AB_IMPLS, default hopper_tma) against the seesaw (hopper), alternating in `rounds`
    rounds of 20 repeats each, on h 128 q_len 2 and h 16 q_len 1 (B 128 x 8192 bf16); first their outputs against
    each other there and on 128 random lengths (2 .. 8192)."""
    batch, ctx = 128, 8192
    pages = ctx // 64
    g = torch.Generator(device="cuda").manual_seed(11)
    dense = torch.randn(batch * pages, 64, 576, device="cuda", dtype=torch.bfloat16, generator=g)
    latent = cp.from_dlpack(dense)
    table = cp.arange(batch * pages, dtype=cp.int32).reshape(batch, pages)
    impls = tuple(os.environ.get("MLA_AB_IMPLS", "hopper,hopper_tma").split(","))
    rounds = int(os.environ.get("MLA_AB_ROUNDS", rounds))
    for lens_kind in ("full", "random"):
        if lens_kind == "full":
            lens = cp.full(batch, ctx, dtype=cp.int32)
        else:
            lens = cp.asarray(np.random.default_rng(5).integers(2, ctx + 1, batch), dtype=cp.int32)
        for heads, q_len in ((128, 2), (16, 1), (128, 8)):
            qt = torch.randn(batch, q_len, heads, 576, device="cuda", dtype=torch.bfloat16, generator=g)
            cq = cp.from_dlpack(qt)
            res = {i: mla_decode(cq, latent, table, lens, impl=i) for i in impls}
            o_a, l_a = (cp.asnumpy(x).astype(np.float64) for x in res["hopper"])
            for other in impls[1:]:
                o_b, l_b = (cp.asnumpy(x).astype(np.float64) for x in res[other])
                err = float(np.linalg.norm(o_a - o_b) / np.linalg.norm(o_a))
                lerr = float(np.max(np.abs(l_a - l_b)))
                ok = np.isfinite(o_b).all() and err < 2e-3 and lerr < 1e-3
                SUMMARY.append(f"AB check {lens_kind} h{heads} q{q_len}: {other} vs seesaw rel_l2 {err:.1e}, "
                               f"max |lse diff| {lerr:.1e} -> {'OK' if ok else 'MISMATCH'}")
                print(SUMMARY[-1], flush=True)
    lens = cp.full(batch, ctx, dtype=cp.int32)
    for heads, q_len in ((128, 2), (16, 1)):
        qt = torch.randn(batch, q_len, heads, 576, device="cuda", dtype=torch.bfloat16, generator=g)
        cq = cp.from_dlpack(qt)
        o = cp.empty((batch, q_len, heads, 512), dtype=cq.dtype)
        lse = cp.empty((batch, q_len, heads), dtype=cp.float32)
        pairs = batch * (q_len * ctx - q_len * (q_len - 1) // 2)
        flops = mla_flops(heads, pairs)
        med = {i: [] for i in impls}
        for r in range(rounds):
            for impl in impls if r % 2 == 0 else impls[::-1]:      # the order turned every round
                t = gpu(lambda: mla_decode(cq, latent, table, lens, out=o, out_lse=lse, impl=impl), flush)
                med[impl].append(t.median_s)
                record(f"MLA decode bf16 B 128 x 8192 h {heads} q_len {q_len} A/B round {r}", f"rooflab_{impl}", t,
                       flops=flops)
        for impl in impls:
            m = float(np.median(med[impl]))
            SUMMARY.append(f"AB h{heads} q{q_len} {impl:<18} rounds " + " ".join(f"{x * 1e3:.4f}" for x in med[impl])
                           + f" ms; median {m * 1e3:.4f} ms = {flops / m / 1e12:.1f} TFLOP/s")
        for other in impls[1:]:
            ratio = float(np.median(med[other])) / float(np.median(med["hopper"]))
            wins = sum(b < a for a, b in zip(med["hopper"], med[other]))
            SUMMARY.append(f"AB h{heads} q{q_len}: {other} / seesaw = {ratio:.4f} (faster in {wins} of {rounds} rounds)")


def mla_power(flush) -> None:
    """The seesaw (h 128 q_len 2, B 128 x 8192) and the 8192^3 bf16 GEMM peer, each timed cold (after 3 s idle) and
    hot (after 3 s of back-to-back launches), alternately twice: whether the power cap moves them alike."""
    batch, ctx, heads, q_len = 128, 8192, 128, 2
    pages = ctx // 64
    g = torch.Generator(device="cuda").manual_seed(11)
    dense = torch.randn(batch * pages, 64, 576, device="cuda", dtype=torch.bfloat16, generator=g)
    latent = cp.from_dlpack(dense)
    table = cp.arange(batch * pages, dtype=cp.int32).reshape(batch, pages)
    lens = cp.full(batch, ctx, dtype=cp.int32)
    cq = cp.from_dlpack(torch.randn(batch, q_len, heads, 576, device="cuda", dtype=torch.bfloat16, generator=g))
    o = cp.empty((batch, q_len, heads, 512), dtype=cq.dtype)
    lse = cp.empty((batch, q_len, heads), dtype=cp.float32)
    flops = mla_flops(heads, batch * (q_len * ctx - q_len * (q_len - 1) // 2))
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    mla_fn = lambda: mla_decode(cq, latent, table, lens, out=o, out_lse=lse, impl="hopper")  # noqa: E731
    gemm_fn = lambda: a @ b  # noqa: E731

    def heat(fn, seconds=3.0):
        t0 = time.time()
        while time.time() - t0 < seconds:
            for _ in range(50):
                fn()
            cp.cuda.Device().synchronize()
            torch.cuda.synchronize()

    for rnd in range(2):
        for what, fn, fl in (("mla", mla_fn, flops), ("gemm", gemm_fn, 2 * 8192**3)):
            for state in ("cold", "hot"):
                if state == "cold":
                    time.sleep(3.0)
                else:
                    heat(fn)
                print(f"mark {what} {state} {rnd} {time.time():.3f}", flush=True)
                t = gpu(mla_fn, flush) if what == "mla" else tt(gemm_fn, repeats=20)
                record(f"{what} {state} round {rnd}", what, t, flops=fl)
                SUMMARY.append(f"power {what:<4} {state} round {rnd}: {t.median_s * 1e3:.4f} ms = "
                               f"{fl / t.median_s / 1e12:.0f} TFLOP/s")


SECTIONS = {"refactor": refactor, "window": window_prefill, "paged": paged_variants, "mla": mla, "mla_ab": mla_ab,
            "mla_power": mla_power}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".out")
    ap.add_argument("--only", action="append", choices=sorted(SECTIONS))
    ap.add_argument("--baseline", default=".out/baseline", help="folder of the pre-refactor sources (refactor A/B)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    print(f"precompiled {precompile()} instantiations in {time.time() - t0:.0f} s", flush=True)
    flush = L2Flusher()
    ceilings(flush)
    baseline = Baseline(Path(args.baseline)) if Path(args.baseline).is_dir() else None
    for name in args.only or [n for n in SECTIONS if n not in ("mla_ab", "mla_power")]:
        try:
            SECTIONS[name](flush, baseline) if name == "refactor" else SECTIONS[name](flush)
        except Exception as exc:                                    # keep the other sections' figures
            traceback.print_exc()
            SUMMARY.append(f"{name}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
        cp.get_default_memory_pool().free_all_blocks()
        torch.cuda.empty_cache()
    keys = sorted({k for r in ROWS for k in r})
    with open(out / "variants.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(ROWS)
    (out / "variants.json").write_text(json.dumps({"ceilings": CEIL, "rows": ROWS, "summary": SUMMARY}, indent=1))
    print("\n==== summary (same-run ceilings: copy {:.3f} TB/s, bf16 GEMM {:.0f} TFLOP/s)".format(
        CEIL.get("copy_tb_s", float("nan")), CEIL.get("gemm_bf16_tflop_s", float("nan"))))
    print("\n".join(SUMMARY))


if __name__ == "__main__":
    main()

"""DeepSeek-R1's decode kernels at TP 8 on one H200 as early-2025 vLLM (0.7.3) and SGLang (0.4.3.post2) ran them
(issue 29): our own Triton kernels, written here from the engines' algorithms and launch configurations (read in
their PyPI wheels; no code copied), timed at the published rows' exact shapes.

1. The fused MoE expert GEMM over block-fp8 weights (vllm/model_executor/layers/fused_moe/fused_moe.py
   fused_moe_kernel, sglang/srt/layers/moe/fused_moe_triton/fused_moe.py, the same algorithm): the token-expert
   pairs sorted by expert and each expert's run padded to BLOCK_M (moe_align_block_size); one program a (BLOCK_M
   pairs, BLOCK_N columns) tile of one expert; per K step a [BLOCK_M, 128] fp8 activation tile with its per-token
   group scales and a [128, BLOCK_N] fp8 weight tile with its [128, 128] block scale; gate/up [pairs, 7168] x
   [7168, 512] (top-k addressing of the token rows), down [pairs, 256] x [256, 7168] times the routing weight.
   Launch config: both engines' shipped H200 file E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,
   block_shape=[128,128] (the same values in both): M 32 -> BLOCK_M 64, BLOCK_N 128, BLOCK_K 128, GROUP_SIZE_M 1,
   4 warps, 3 stages; M 64 and 96 (the nearest key to 100) -> the same with GROUP_SIZE_M 32. A diagnostic variant
   `bm16` (BLOCK_M 16, the rest the same) shows what the padding to 64 costs. Routing: top-8 of 256 experts drawn
   uniformly a token (rooflab's expected-experts-touched assumption).
2. MLA decode attention over the latent cache (576 = 512 + 64 rope, bf16; 16 query heads a GPU at TP 8; V the
   first 512 of the latent; grouped split-KV kernel, vllm/attention/ops/triton_decode_attention.py and
   sglang/srt/layers/attention/triton_ops/decode_attention.py `_decode_grouped_att_m_fwd`): one program a
   (sequence, 16 heads, split), BLOCK_N 32 tokens a step, 4 warps, 2 stages, then a second kernel merging the
   splits. vLLM 0.7.3 TRITON_MLA: 4 splits (triton_mla.py, num_kv_splits=4), page 16; SGLang 0.4.3.post2: 8 splits
   (server_args triton_attention_num_kv_splits), page 1 (a token index table).

Timing: CALLS launches captured in one CUDA graph, WARM replays, REPEATS timed replays with CUDA events; seconds =
median replay / launches. Both kernels rotate copies of what a launch reads from HBM (MLA its cache, the fused
MoE its expert weights, more launches a graph where more copies are needed) so that 4 x L2 passes between two
reads of one copy: no row times an L2-warm read. Inputs random (never zeros); every variant checked once against a
float32 torch reference (rel_error). Shapes: the published rows' batches 32, 64 (dstack, context 3600 = 3200 + 800 /
2) and 100 (vLLM PR 13747, context 3500 = 3000 + 1000 / 2), and for the fit of the fused kernel (rooflab.fit.moe_fit)
1 .. 512 tokens a step, each at the shipped config's key nearest it; MLA also at batches 8 .. 128 and context 1024.

    python3 benchmarks/h200_early2025_decode_kernels.py --out DIR [--commit SHA]
    # DIR/h200-early2025-decode.csv (every row) and DIR/h200-fused-moe-block-fp8.csv (the fused kernel's
    # engine-config rows in benchmarks/moe_gemm.py's columns)
"""

from __future__ import annotations

import argparse
import datetime
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

CALLS, WARM, REPEATS = 10, 3, 15
HIDDEN, FFN, EXPERTS, TOPK, GROUP = 7168, 256, 256, 8, 128       # DeepSeek-V3 at TP 8 (ffn 2048 / 8)
HEADS, LORA, ROPE = 16, 512, 64                                   # 128 heads / 8; kv_lora_rank; rope dims
SHAPES = ((32, 3600), (64, 3600), (100, 3500))                    # (batch, context) of the published rows
#: the shipped H200 config (both engines' files hold the same values): M key -> (BLOCK_M, BLOCK_N, BLOCK_K,
#: GROUP_SIZE_M, warps, stages); the engine takes the key nearest the step's tokens M (try_get_optimal_moe_config)
ENGINE_MOE = {1: (16, 64, 128, 1, 4, 5), 2: (16, 128, 128, 16, 4, 3), 4: (64, 64, 128, 64, 4, 4),
              8: (64, 128, 128, 64, 4, 3), 16: (16, 256, 64, 32, 4, 3), 24: (64, 128, 128, 16, 4, 3),
              32: (64, 128, 128, 1, 4, 3), 48: (64, 128, 128, 32, 4, 3), 64: (64, 128, 128, 32, 4, 3),
              96: (64, 128, 128, 32, 4, 3), 128: (64, 128, 128, 16, 4, 3), 256: (64, 128, 128, 32, 4, 3),
              512: (64, 128, 128, 32, 4, 3)}
#: the fused kernel's tokens a step measured (the published rows' 32 / 64 / 100 among them), and the MLA shapes
MOE_BATCHES = (1, 4, 8, 16, 24, 32, 48, 64, 96, 100, 128, 256, 512)
MLA_SHAPES = ((8, 1024), (8, 3600), (16, 1024), (16, 3600), (32, 1024), (32, 3600), (64, 1024), (64, 3600),
              (100, 3500), (128, 1024), (128, 3600))
MLA = {"vllm_0.7.3_triton_mla": (4, 16), "sglang_0.4.3.post2_triton": (8, 1)}   # splits, page size
L2_BYTES = 50 * 2 ** 20
#: benchmarks/moe_gemm.py's columns: the fused kernel's engine-config rows in the form rooflab.fit.moe_fit reads
FIT_COLUMNS = ("model", "shard", "gemm", "impl", "dtype", "tokens", "pairs", "experts_local", "experts_touched",
               "max_pairs_per_expert", "n", "k", "flops", "weight_bytes", "seconds", "seconds_min", "repeats",
               "tflop_per_s", "rel_error", "note")
COLUMNS = ("kernel", "variant", "batch", "context", "pairs", "experts_touched", "n", "k", "block_m", "splits",
           "page", "flops", "hbm_bytes", "seconds", "seconds_min", "repeats", "tb_per_s", "rel_error", "note")


@triton.jit
def moe_block_fp8(a, a_s, b, b_s, c, w, sorted_ids, expert_of_block, padded_total, n, k, em, valid_pairs,
                  s_am, s_asm, s_be, s_bn, s_bse, s_bsn, s_cm,
                  TOP_K: tl.constexpr, MUL_W: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GROUP_M: tl.constexpr, QG: tl.constexpr):
    """c[pair, n] = sum_k a[pair // TOP_K, k] b[e, n, k] (dequantised by block), e = the pair's expert."""
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(em, BM)
    blocks_n = tl.cdiv(n, BN)
    in_group = GROUP_M * blocks_n
    first_m = (pid // in_group) * GROUP_M
    size_m = tl.minimum(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    if pid_m * BM >= tl.load(padded_total):
        return
    pair = tl.load(sorted_ids + pid_m * BM + tl.arange(0, BM)).to(tl.int64)
    live = pair < valid_pairs
    row = pair // TOP_K
    expert = tl.load(expert_of_block + pid_m).to(tl.int64)
    cols = (pid_n * BN + tl.arange(0, BN)).to(tl.int64)
    ks = tl.arange(0, BK)
    a_ptr = a + row[:, None] * s_am + ks[None, :]
    b_ptr = b + expert * s_be + cols[None, :] * s_bn + ks[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for step in range(0, tl.cdiv(k, BK)):
        x = tl.load(a_ptr, mask=live[:, None], other=0.0)
        y = tl.load(b_ptr)
        group = step * BK // QG
        sx = tl.load(a_s + row * s_asm + group, mask=live, other=0.0)
        sy = tl.load(b_s + expert * s_bse + (cols // QG) * s_bsn + group)
        acc += tl.dot(x, y) * sx[:, None] * sy[None, :]
        a_ptr += BK
        b_ptr += BK
    if MUL_W:
        acc = acc * tl.load(w + pair, mask=live, other=0.0)[:, None]
    tl.store(c + pair[:, None] * s_cm + cols[None, :], acc.to(tl.bfloat16), mask=live[:, None])


@triton.jit
def mla_split(q, kv, table, seqlens, mid, lse, sm_scale, s_qb, s_qh, s_kv, s_tb, s_mb, s_mh, s_ms,
              H: tl.constexpr, PAGE: tl.constexpr, SPLITS: tl.constexpr, BN: tl.constexpr, BH: tl.constexpr,
              DL: tl.constexpr, DR: tl.constexpr):
    """One (sequence, head block, split): softmax(q k^T) v over the split's tokens, V = the latent's first DL."""
    seq = tl.program_id(0)
    heads = tl.program_id(1) * BH + tl.arange(0, BH)
    split = tl.program_id(2)
    hm = heads < H
    dl = tl.arange(0, DL)
    dr = tl.arange(0, DR)
    qn = tl.load(q + seq * s_qb + heads[:, None] * s_qh + dl[None, :], mask=hm[:, None], other=0.0)
    qr = tl.load(q + seq * s_qb + heads[:, None] * s_qh + DL + dr[None, :], mask=hm[:, None], other=0.0)
    length = tl.load(seqlens + seq)
    per = tl.cdiv(length, SPLITS)
    start = split * per
    end = tl.minimum(start + per, length)
    m = tl.full((BH,), float("-inf"), tl.float32)
    den = tl.zeros((BH,), tl.float32)
    acc = tl.zeros((BH, DL), tl.float32)
    for t0 in range(start, end, BN):
        tok = t0 + tl.arange(0, BN)
        tm = tok < end
        page = tl.load(table + seq * s_tb + tok // PAGE, mask=tm, other=0).to(tl.int64)
        slot = page * PAGE + tok % PAGE
        kn = tl.load(kv + slot[:, None] * s_kv + dl[None, :], mask=tm[:, None], other=0.0)
        kr = tl.load(kv + slot[:, None] * s_kv + DL + dr[None, :], mask=tm[:, None], other=0.0)
        score = (tl.dot(qn, tl.trans(kn)) + tl.dot(qr, tl.trans(kr))) * sm_scale
        score = tl.where(tm[None, :], score, float("-inf"))
        m_new = tl.maximum(m, tl.max(score, 1))
        p = tl.exp(score - m_new[:, None])
        alpha = tl.exp(m - m_new)
        acc = acc * alpha[:, None] + tl.dot(p.to(kn.dtype), kn)
        den = den * alpha + tl.sum(p, 1)
        m = m_new
    base = seq * s_mb + heads * s_mh + split * s_ms
    if end > start:
        tl.store(mid + base[:, None] + dl[None, :], acc / den[:, None], mask=hm[:, None])
        tl.store(lse + seq * H * SPLITS + heads * SPLITS + split, m + tl.log(den), mask=hm)
    else:
        tl.store(lse + seq * H * SPLITS + heads * SPLITS + split, tl.full((BH,), float("-inf"), tl.float32),
                 mask=hm)


@triton.jit
def mla_merge(mid, lse, out, s_mb, s_mh, s_ms, H: tl.constexpr, SPLITS: tl.constexpr, DL: tl.constexpr):
    """One (sequence, head): the splits' partial outputs weighted by exp(lse - max)."""
    seq = tl.program_id(0)
    head = tl.program_id(1)
    dl = tl.arange(0, DL)
    sp = tl.arange(0, SPLITS)
    ls = tl.load(lse + seq * H * SPLITS + head * SPLITS + sp)
    top = tl.max(ls, 0)
    wt = tl.where(ls == float("-inf"), 0.0, tl.exp(ls - top))
    part = tl.load(mid + seq * s_mb + head * s_mh + sp[:, None] * s_ms + dl[None, :], mask=(wt > 0)[:, None],
                   other=0.0)
    o = tl.sum(part * wt[:, None], 0) / tl.sum(wt, 0)
    tl.store(out + (seq * H + head) * DL + dl, o.to(tl.bfloat16))


def timed(fns) -> tuple[float, float]:
    """Capture the closures in one graph; median and min replay time / len(fns)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for fn in fns[:2]:
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for fn in fns:
            fn()
    for _ in range(WARM):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3 / len(fns))
    del g
    return statistics.median(times), min(times)


def quantize_groups(x, f8):
    """x [r, c] -> (fp8 [r, c], scales [r, c / GROUP]) with per-(row, 128-column group) amax scaling."""
    r, c = x.shape
    g = x.float().view(r, c // GROUP, GROUP)
    s = g.abs().amax(-1).clamp(min=1e-6) / 448.0
    return (g / s[..., None]).to(f8).view(r, c), s.contiguous()


def quantize_blocks(w, f8):
    """w [E, n, k] -> (fp8 [E, n, k], scales [E, n / GROUP, k / GROUP]): one amax scale a 128 x 128 block."""
    e, n, k = w.shape
    g = w.view(e, n // GROUP, GROUP, k // GROUP, GROUP)
    s = g.abs().amax(dim=(2, 4)).clamp(min=1e-6) / 448.0
    q = (g / s[:, :, None, :, None]).to(f8).view(e, n, k)
    return q, s.contiguous()


def align(topk_ids, bm: int):
    """The pairs sorted by expert, each expert's run padded to bm (sentinel = pairs); an expert a bm block."""
    dev = topk_ids.device
    flat = topk_ids.flatten().long()
    pairs = flat.numel()
    counts = torch.bincount(flat, minlength=EXPERTS)
    padded = (counts + bm - 1) // bm * bm
    starts = torch.cumsum(padded, 0) - padded
    order = torch.argsort(flat, stable=True)
    first = torch.cumsum(counts, 0) - counts
    rank = torch.arange(pairs, device=dev) - first[flat[order]]
    size = pairs + EXPERTS * (bm - 1)
    ids = torch.full((size,), pairs, dtype=torch.int32, device=dev)
    ids[starts[flat[order]] + rank] = order.to(torch.int32)
    blocks = torch.repeat_interleave(torch.arange(EXPERTS, device=dev), padded // bm)
    expert_of_block = torch.zeros(triton.cdiv(size, bm), dtype=torch.int32, device=dev)
    expert_of_block[:blocks.numel()] = blocks.to(torch.int32)
    total = padded.sum().to(torch.int32).reshape(1)
    return ids, expert_of_block, total, int((counts > 0).sum()), int(counts.max())


def weight_copies(pool, need):
    """pool[0] and clones of it until len(pool) >= need: the same values at other addresses (L2 tags addresses)."""
    while len(pool) < need:
        pool.append(tuple(t.clone() for t in pool[0]))
    return pool[:need]


def moe_rows(f8, errors, l2_bytes):
    """The fused kernel's rows. Each timed graph rotates over enough copies of the expert weights (and their
    scales) that at least 4 x L2 of other weight bytes pass between two reads of one copy, and holds at least CALLS
    launches (more where more copies are needed): at 1-4 tokens a launch reads 15-53 MB, under the H200's L2, so ten
    launches over one copy time an L2-warm read (issue 29 review). Routing and activations stay the same across the
    copies (the touched set is the row's; activations are L2-resident in an engine too, written by the layer before)."""
    rows = []
    dev = "cuda"
    w1_pool = [quantize_blocks(torch.randn(EXPERTS, 2 * FFN, HIDDEN, device=dev) * HIDDEN ** -0.5, f8)]
    w2_pool = [quantize_blocks(torch.randn(EXPERTS, HIDDEN, FFN, device=dev) * FFN ** -0.5, f8)]
    w1q, w1s = w1_pool[0]
    w2q, w2s = w2_pool[0]
    for batch in MOE_BATCHES:
        key = min(ENGINE_MOE, key=lambda m: abs(m - batch))
        topk_ids = torch.rand(batch, EXPERTS, device=dev).topk(TOPK, dim=1).indices.to(torch.int32)
        weights = torch.rand(batch, TOPK, device=dev)
        variants = [("engine_config", ENGINE_MOE[key])]
        if batch in dict(SHAPES):
            variants.append(("bm16", (16,) + ENGINE_MOE[key][1:]))
        for variant, cfg in variants:
            bm, bn, bk, gm, warps, stages = cfg
            ids, eob, total, touched, most = align(topk_ids, bm)
            pairs = batch * TOPK
            x = torch.randn(batch, HIDDEN, device=dev)
            xq, xs = quantize_groups(x, f8)
            h = torch.randn(pairs, FFN, device=dev)
            hq, hs = quantize_groups(h, f8)
            out1 = torch.empty(pairs, 2 * FFN, device=dev, dtype=torch.bfloat16)
            out2 = torch.empty(pairs, HIDDEN, device=dev, dtype=torch.bfloat16)
            for gemm, a, a_s, b, b_s, c, top, mul, n, k in (
                    ("gate_up", xq, xs, w1q, w1s, out1, TOPK, False, 2 * FFN, HIDDEN),
                    ("down", hq, hs, w2q, w2s, out2, 1, True, HIDDEN, FFN)):
                name = f"moe {gemm} {variant} B={batch}"
                grid = (triton.cdiv(ids.numel(), bm) * triton.cdiv(n, bn),)
                one = touched * n * k + touched * (n // GROUP) * (k // GROUP) * 4     # a launch's weight bytes
                copies = max(1, math.ceil(4 * l2_bytes / one))
                pool = weight_copies(w1_pool if gemm == "gate_up" else w2_pool, copies)

                def launch(a=a, a_s=a_s, b=b, b_s=b_s, c=c, top=top, mul=mul, n=n, k=k, grid=grid):
                    moe_block_fp8[grid](a, a_s, b, b_s, c, weights, ids, eob, total, n, k, ids.numel(), pairs,
                                        a.stride(0), a_s.stride(0), b.stride(0), b.stride(1), b_s.stride(0),
                                        b_s.stride(1), c.stride(0), TOP_K=top, MUL_W=mul, BM=bm, BN=bn, BK=bk,
                                        GROUP_M=gm, QG=GROUP, num_warps=warps, num_stages=stages)
                try:
                    c.fill_(float("nan"))
                    launch()
                    torch.cuda.synchronize()
                    flat = topk_ids.flatten().long()
                    ref = torch.empty(pairs, n, device=dev)
                    adq = (a.float().view(a.shape[0], k // GROUP, GROUP) * a_s[..., None]).view(a.shape[0], k)
                    for e in torch.unique(flat).tolist():
                        sel = (flat == e).nonzero().flatten()
                        bdq = (b[e].float().view(n // GROUP, GROUP, k // GROUP, GROUP)
                               * b_s[e][:, None, :, None]).view(n, k)
                        ref[sel] = adq[sel // top] @ bdq.t()
                    if mul:
                        ref *= weights.flatten()[:, None]
                    got = c.float()
                    rel = ((got - ref).norm() / ref.norm()).item()
                    if not math.isfinite(rel):
                        raise RuntimeError("output not fully written (NaN)")
                    calls = max(CALLS, copies)
                    med, mn = timed([lambda i=i, launch=launch, pool=pool: launch(b=pool[i % copies][0],
                                                                                  b_s=pool[i % copies][1])
                                     for i in range(calls)])
                except Exception as exc:                    # noqa: BLE001 (recorded; the next variant runs)
                    errors[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                    torch.cuda.synchronize()
                    continue
                wbytes = touched * n * k                     # fp8: each touched expert's weight read once
                hbm = wbytes + pairs * (k + n * 2) + touched * (n // GROUP) * (k // GROUP) * 4
                rows.append(dict(kernel=f"moe_{gemm}", variant=variant, batch=batch, context="", pairs=pairs, most=most,
                                 experts_touched=touched, n=n, k=k, block_m=bm, splits="", page="",
                                 flops=2 * pairs * n * k, hbm_bytes=hbm, seconds=f"{med:.4e}",
                                 seconds_min=f"{mn:.4e}", repeats=REPEATS, tb_per_s=f"{hbm / med / 1e12:.2f}",
                                 rel_error=f"{rel:.2e}",
                                 note=f"config key M={key}: BN {bn} BK {bk} GROUP_M {gm} warps {warps} "
                                      f"stages {stages}; {copies} weight copies rotated over {calls} launches"))
    return rows


def mla_rows(errors):
    rows = []
    dev = "cuda"
    scale = (128 + ROPE) ** -0.5                       # DeepSeek's softmax scale before YaRN's mscale (any works)
    for batch, context in MLA_SHAPES:
        for variant, (splits, page) in MLA.items():
            name = f"mla {variant} B={batch}"
            try:
                pages_a_seq = triton.cdiv(context, page)
                one = batch * pages_a_seq * page * (LORA + ROPE) * 2
                copies = max(1, min(CALLS, math.ceil(4 * L2_BYTES / one)))
                caches, tables = [], []
                for _ in range(copies):
                    caches.append(torch.randn(batch * pages_a_seq * page, LORA + ROPE, device=dev,
                                              dtype=torch.bfloat16))
                    tables.append(torch.randperm(batch * pages_a_seq, device=dev).to(torch.int32)
                                  .view(batch, pages_a_seq).contiguous())
                lens = torch.full((batch,), context, dtype=torch.int32, device=dev)
                q = torch.randn(batch, HEADS, LORA + ROPE, device=dev, dtype=torch.bfloat16)
                mid = torch.empty(batch, HEADS, splits, LORA, device=dev, dtype=torch.float32)
                lse = torch.empty(batch, HEADS, splits, device=dev, dtype=torch.float32)
                out = torch.empty(batch, HEADS, LORA, device=dev, dtype=torch.bfloat16)

                def launch(i, kv=None):
                    kv_i, tb = caches[i % copies], tables[i % copies]
                    mla_split[(batch, triton.cdiv(HEADS, 16), splits)](
                        q, kv_i, tb, lens, mid, lse, scale, q.stride(0), q.stride(1), kv_i.stride(0),
                        tb.stride(0), mid.stride(0), mid.stride(1), mid.stride(2), H=HEADS, PAGE=page,
                        SPLITS=splits, BN=32, BH=16, DL=LORA, DR=ROPE, num_warps=4, num_stages=2)
                    mla_merge[(batch, HEADS)](mid, lse, out, mid.stride(0), mid.stride(1), mid.stride(2), H=HEADS,
                                              SPLITS=splits, DL=LORA, num_warps=4)
                out.fill_(float("nan"))
                launch(0)
                torch.cuda.synchronize()
                kv0, tb0 = caches[0], tables[0]
                ref = torch.empty(batch, HEADS, LORA, device=dev)
                for s in range(batch):
                    slots = (tb0[s].long()[:, None] * page + torch.arange(page, device=dev)[None, :]).flatten()
                    kk = kv0[slots[:context]].float()
                    p = torch.softmax(q[s].float() @ kk.t() * scale, -1)
                    ref[s] = p @ kk[:, :LORA]
                rel = ((out.float() - ref).norm() / ref.norm()).item()
                if not math.isfinite(rel):
                    raise RuntimeError("output not fully written (NaN)")
                med, mn = timed([lambda i=i: launch(i) for i in range(CALLS)])
            except Exception as exc:                        # noqa: BLE001 (recorded; the next variant runs)
                errors[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                torch.cuda.synchronize()
                continue
            hbm = batch * context * (LORA + ROPE) * 2 + batch * HEADS * (LORA + ROPE) * 2 \
                + batch * HEADS * LORA * 2 + 2 * batch * HEADS * splits * (LORA + 1) * 4
            flops = 2 * batch * HEADS * context * (LORA + ROPE + LORA)
            rows.append(dict(kernel="mla_decode", variant=variant, batch=batch, context=context, pairs="",
                             experts_touched="", n="", k="", block_m="", splits=splits, page=page, flops=flops,
                             hbm_bytes=hbm, seconds=f"{med:.4e}", seconds_min=f"{mn:.4e}", repeats=REPEATS,
                             tb_per_s=f"{hbm / med / 1e12:.2f}", rel_error=f"{rel:.2e}",
                             note="stage 1 (BLOCK_N 32, BLOCK_H 16, 4 warps, 2 stages) + merge, one graph node each"))
            del caches, tables
            torch.cuda.empty_cache()
    return rows


def copy_rate():
    """A device-to-device copy's bytes read + written a second, eager (a copy captured in a graph becomes a memcpy
    node, which the first run measured at 2.76 TB/s), median of 10 after 2 warm."""
    x = torch.randn(2 ** 29, device="cuda")
    y = torch.empty_like(x)
    times = []
    for _ in range(12):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        y.copy_(x)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return 2 * x.numel() * 4 / statistics.median(times[2:])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--commit", default="")
    args = p.parse_args()
    start = time.time()
    torch.manual_seed(0)
    f8 = torch.float8_e4m3fn
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "device_name": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "cuda_runtime": torch.version.cuda, "git_commit": args.commit or "unknown",
            "command": " ".join(["python3", *sys.argv]), "calls_a_graph": CALLS, "warm_replays": WARM,
            "repeats": REPEATS, "routing": "top-8 of 256 experts uniformly at random a token"}
    try:
        meta["nvidia_smi_driver_maxsm_maxmem_power"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as exc:                               # noqa: BLE001 (recorded, not fatal)
        meta["nvidia_smi"] = f"failed: {exc}"
    errors: dict[str, str] = {}
    meta["copy_bytes_per_s"] = f"{copy_rate():.4e}"
    l2_bytes = max(L2_BYTES, torch.cuda.get_device_properties(0).L2_cache_size)
    meta["l2_bytes_rotation_sized_for"] = l2_bytes
    meta["moe_weight_rotation"] = ("each fused row's graph rotates ceil(4 x L2 / a launch's weight bytes) copies of "
                                   "the expert weights over max(calls_a_graph, copies) launches")
    rows = moe_rows(f8, errors, l2_bytes)
    torch.cuda.empty_cache()
    rows += mla_rows(errors)
    meta["wall_s"] = f"{time.time() - start:.1f}"
    for key, why in errors.items():
        meta[f"error {key}"] = why
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "h200-early2025-decode.csv", "w") as fh:
        for key, value in meta.items():
            fh.write(f"# {key}: {value}\n")
        fh.write(",".join(COLUMNS) + "\n")
        for r in rows:
            fh.write(",".join(str(r.get(c, "")) for c in COLUMNS) + "\n")
    with open(out / "h200-fused-moe-block-fp8.csv", "w") as fh:
        for key, value in meta.items():
            fh.write(f"# {key}: {value}\n")
        fh.write(",".join(FIT_COLUMNS) + "\n")
        for r in rows:
            if r["kernel"].startswith("moe_") and r["variant"] == "engine_config":
                fit = dict(model="deepseek-v3", shard="tp8", gemm=r["kernel"][4:], impl="triton_fused_moe",
                           dtype="fp8_e4m3", tokens=r["batch"], pairs=r["pairs"], experts_local=EXPERTS,
                           experts_touched=r["experts_touched"], max_pairs_per_expert=r["most"], n=r["n"], k=r["k"],
                           flops=r["flops"], weight_bytes=r["experts_touched"] * r["n"] * r["k"],
                           seconds=r["seconds"], seconds_min=r["seconds_min"], repeats=r["repeats"],
                           tflop_per_s=f"{r['flops'] / float(r['seconds']) / 1e12:.1f}", rel_error=r["rel_error"],
                           note=f"BLOCK_M {r['block_m']}; " + r["note"])
                fh.write(",".join(str(fit[c]) for c in FIT_COLUMNS) + "\n")
    for key, value in meta.items():
        print(f"# {key}: {value}")
    print(f"{'kernel':12} {'variant':26} {'B':>4} {'ctx':>5} {'touched':>7} {'us':>9} {'TB/s':>6} {'rel_err':>9}")
    for r in rows:
        print(f"{r['kernel']:12} {r['variant']:26} {r['batch']:>4} {str(r['context']):>5} "
              f"{str(r['experts_touched']):>7} {float(r['seconds']) * 1e6:>9.1f} {r['tb_per_s']:>6} "
              f"{r['rel_error']:>9}")


if __name__ == "__main__":
    main()

"""The tp section of the multi-GPU bench: a tensor-parallel attention layer with its all-reduce.

    per rank: q = x Wq, kv = x Wkv (h / N and h_kv / N heads), paged decode over the rank's KV heads,
    y = o Wo, all-reduce(y); against N = 1, the whole layer on one GPU. The model width is the model's
    (ops.MODEL; 256 on the CPU path).
"""

from __future__ import annotations

import math

from ...vocab import Kernel
from .context import Ctx, free_memory, time_best
from .ops import (HEAD_DIM, HEADS, KV_HEADS, MODEL, PAGE, emit, graph_calls, ops_for, recommended_splits, rel_err,
                  torch_dtype)

TP_FULL = ((1, 8192), (8, 8192), (64, 8192), (1, 32768), (8, 32768), (64, 32768))
TP_TINY = ((1, 64), (2, 128))
#: The model's width (256 on the CPU path).
HIDDEN = MODEL.hidden_size


def section_tp(ctx: Ctx) -> None:
    for batch, context in (TP_TINY if ctx.tiny else TP_FULL):
        if not ctx.agree(10.0):
            ctx.note("skipped", f"tp from {batch}x{context} on: deadline")
            return
        _tp_case(ctx, batch, context)
        free_memory(ctx)


def _tp_layer(ctx: Ctx, x, wq, wkv, wo, k, v, table, lens, heads: int, kv_heads: int, reduce: bool):
    """fn(i) for one attention layer over `heads` query heads (preallocated buffers); all-reduce if `reduce`."""
    import torch
    import torch.distributed as dist

    ops, batch = ops_for(ctx), x.shape[0]
    splits = recommended_splits(ctx, batch, int(lens[0]), kv_heads, heads)
    f32 = dict(device=ctx.device, dtype=torch.float32)
    q = torch.empty((batch, heads * HEAD_DIM), device=ctx.device, dtype=x.dtype)
    kv = torch.empty((batch, 2 * kv_heads * HEAD_DIM), device=ctx.device, dtype=x.dtype)
    o = torch.empty((batch, heads, HEAD_DIM), device=ctx.device, dtype=x.dtype)
    y = torch.empty((batch, wo.shape[0]), device=ctx.device, dtype=x.dtype)
    scratch = (torch.empty((splits, batch, heads, HEAD_DIM), **f32), torch.empty((splits, batch, heads), **f32))
    q3 = q.view(batch, heads, HEAD_DIM)

    def layer(i: int) -> None:
        torch.mm(x, wq.t(), out=q)
        torch.mm(x, wkv.t(), out=kv)                     # the new token's K and V (the cache append is not timed)
        ops.decode(q3, k, v, table, lens, splits, o, scratch)
        torch.mm(o.view(batch, heads * HEAD_DIM), wo.t(), out=y)
        if reduce:
            dist.all_reduce(y)
    return layer, y, splits


def _tp_case(ctx: Ctx, batch: int, context: int) -> None:
    import torch

    n, r, dev, dt = ctx.world, ctx.rank, ctx.device, torch_dtype(ctx)
    hidden = HIDDEN if ctx.cuda else 256
    gen = torch.Generator(device=dev).manual_seed(99 + batch + context)
    scale = 1 / math.sqrt(hidden)
    x = torch.randn((batch, hidden), generator=gen, device=dev, dtype=dt)
    wq = torch.randn((HEADS * HEAD_DIM, hidden), generator=gen, device=dev, dtype=dt) * scale
    wkv = torch.randn((2 * KV_HEADS * HEAD_DIM, hidden), generator=gen, device=dev, dtype=dt) * scale
    wo = torch.randn((hidden, HEADS * HEAD_DIM), generator=gen, device=dev, dtype=dt) * scale
    pages = context // PAGE
    k = torch.randn((batch * pages, KV_HEADS, PAGE, HEAD_DIM), generator=gen, device=dev, dtype=dt)
    v = torch.randn((batch * pages, KV_HEADS, PAGE, HEAD_DIM), generator=gen, device=dev, dtype=dt)
    table = torch.arange(batch * pages, device=dev, dtype=torch.int32).view(batch, pages)
    lens = torch.full((batch,), context, device=dev, dtype=torch.int32)
    hq, hkv = HEADS // n, max(1, KV_HEADS // n)
    kv0 = (r * hq) // (HEADS // KV_HEADS)                       # the KV head of this rank's first query head
    wq_r = wq[r * hq * HEAD_DIM:(r + 1) * hq * HEAD_DIM].contiguous()
    wk_r = wkv[kv0 * HEAD_DIM:(kv0 + hkv) * HEAD_DIM]
    wv_r = wkv[(KV_HEADS + kv0) * HEAD_DIM:(KV_HEADS + kv0 + hkv) * HEAD_DIM]
    wkv_r = torch.cat([wk_r, wv_r]).contiguous()
    wo_r = wo[:, r * hq * HEAD_DIM:(r + 1) * hq * HEAD_DIM].contiguous()
    k_r, v_r = k[:, kv0:kv0 + hkv].contiguous(), v[:, kv0:kv0 + hkv].contiguous()
    one, y1, s1 = _tp_layer(ctx, x, wq, wkv, wo, k, v, table, lens, HEADS, KV_HEADS, reduce=False)
    shard, yn, sn = _tp_layer(ctx, x, wq_r, wkv_r, wo_r, k_r, v_r, table, lens, hq, hkv, reduce=n > 1)
    estimate = 2 * batch * context * KV_HEADS * HEAD_DIM * 2 / 4e12 + 40e-6
    t1 = time_best(ctx, one, graph_calls(estimate), 5, together=False)
    tn = time_best(ctx, shard, graph_calls(estimate / n), 5, together=True)
    one(0)
    shard(0)
    ctx.sync()
    err = rel_err(yn, y1)
    ctx.log(f"tp {batch}x{context}: one GPU {t1.median_s * 1e6:.1f} us, TP-{n} {tn.median_s * 1e6:.1f} us, "
            f"rel err {err:.1e}")
    if r == 0:
        lens_text = f"{context}x{batch}"
        emit(ctx, Kernel.tp_attention, t1, 1, batch=batch, context_lens=lens_text, page_size=PAGE, splits=s1)
        emit(ctx, Kernel.tp_attention, tn, n, batch=batch, context_lens=lens_text, page_size=PAGE, splits=sn,
              max_rel_err=err)

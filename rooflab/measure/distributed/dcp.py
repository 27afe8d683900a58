"""The dcp section of the multi-GPU bench: decode context parallelism against one GPU on the same KV.

    KV split by position over the N ranks (contiguous blocks of pages). Each rank runs paged decode on its block
    (split-KV inside at the count rooflab recommends for its share), merges its splits into one fp32 state
    (o, lse) in a packed buffer of B h (d + 1) values, all-gathers it, unpacks (two copies) and merges the N
    states with rooflab's merge_partials. Against it: one GPU running the same decode (its own recommended
    splits, then the merge) over the whole KV, both in CUDA graphs. The N = 1 rows are that single-GPU step;
    every rank runs it at once on its own GPU.
"""

from __future__ import annotations

import math

from ...vocab import Kernel
from .context import Ctx, free_memory, time_best
from .ops import (HEAD_DIM, HEADS, KV_HEADS, MIN_STREAM_BYTES, PAGE, emit, graph_calls, ops_for, recommended_splits,
                  rel_err, torch_dtype)

DCP_FULL = ((1, 32768), (1, 131072), (1, 524288), (1, 1048576), (2, 131072), (4, 131072), (8, 32768), (8, 65536),
            (8, 131072), (8, 262144), (8, 524288), (16, 131072), (32, 32768), (32, 131072), (32, 524288))
DCP_TINY = ((1, 64), (2, 128))

def section_dcp(ctx: Ctx) -> None:
    for batch, context in (DCP_TINY if ctx.tiny else DCP_FULL):
        if not ctx.agree(10.0):
            ctx.note("skipped", f"dcp from {batch}x{context} on: deadline")
            return
        _dcp_case(ctx, batch, context)
        free_memory(ctx)


def _dcp_case(ctx: Ctx, batch: int, context: int) -> None:
    import torch
    import torch.distributed as dist

    n, r, dev, dt = ctx.world, ctx.rank, ctx.device, torch_dtype(ctx)
    ops = ops_for(ctx)
    pages = context // PAGE                                  # per sequence, all ranks together
    share = pages // n
    full_bytes = 2 * batch * context * KV_HEADS * HEAD_DIM * (2 if ctx.cuda else 4)
    copies = max(1, min(4, math.ceil(MIN_STREAM_BYTES / full_bytes))) if ctx.cuda else 1
    gen = torch.Generator(device=dev).manual_seed(1234 + batch + context)
    shape = (copies, batch * pages, KV_HEADS, PAGE, HEAD_DIM)
    k = torch.randn(shape, generator=gen, device=dev, dtype=dt)
    v = torch.randn(shape, generator=gen, device=dev, dtype=dt)
    q = torch.randn((batch, HEADS, HEAD_DIM), generator=gen, device=dev, dtype=dt)
    table = torch.arange(batch * pages, device=dev, dtype=torch.int32).view(batch, pages)
    table_r = table[:, r * share:(r + 1) * share].contiguous()
    lens = torch.full((batch,), context, device=dev, dtype=torch.int32)
    lens_r = torch.full((batch,), share * PAGE, device=dev, dtype=torch.int32)
    s1, sn = recommended_splits(ctx, batch, context), recommended_splits(ctx, batch, share * PAGE)
    rows = batch * HEADS
    f32 = dict(device=dev, dtype=torch.float32)
    o1, scratch1 = torch.empty_like(q), (torch.empty((s1, batch, HEADS, HEAD_DIM), **f32),
                                         torch.empty((s1, batch, HEADS), **f32))
    send = torch.empty(rows * (HEAD_DIM + 1), **f32)
    send_o, send_lse = send[:rows * HEAD_DIM].view(batch, HEADS, HEAD_DIM), send[rows * HEAD_DIM:].view(batch, HEADS)
    part_o, part_lse = torch.empty((sn, batch, HEADS, HEAD_DIM), **f32), torch.empty((sn, batch, HEADS), **f32)
    gathered = torch.empty(n * send.numel(), **f32)
    all_o, all_lse = torch.empty((n, batch, HEADS, HEAD_DIM), **f32), torch.empty((n, batch, HEADS), **f32)
    o2 = torch.empty_like(q)

    def single(i: int) -> None:
        c = i % copies
        ops.decode(q, k[c], v[c], table, lens, s1, o1, scratch1)

    def local(i: int) -> None:                               # this rank's share of the KV, into the send buffer
        c = i % copies
        if sn == 1:
            ops.paged_partial(q, k[c], v[c], table_r, lens_r, 1, send_o.unsqueeze(0), send_lse.unsqueeze(0))
        else:
            ops.paged_partial(q, k[c], v[c], table_r, lens_r, sn, part_o, part_lse)
            ops.merge_partials(part_o, part_lse, send_o, send_lse)

    def dcp(i: int) -> None:
        local(i)
        dist.all_gather_into_tensor(gathered, send)
        packed = gathered.view(n, -1)
        all_o.copy_(packed[:, :rows * HEAD_DIM].view(n, batch, HEADS, HEAD_DIM))
        all_lse.copy_(packed[:, rows * HEAD_DIM:].view(n, batch, HEADS))
        ops.merge_partials(all_o, all_lse, o2)

    estimate = full_bytes / 4e12                             # one call reads one copy
    t1 = time_best(ctx, single, graph_calls(estimate), 5, together=False)
    tl = time_best(ctx, local, graph_calls(estimate / n), 5, together=False)
    tn = time_best(ctx, dcp, graph_calls(estimate / n), 5, together=True)
    single(0)
    dcp(0)
    ctx.sync()
    err = rel_err(o2, o1)
    ctx.note("dcp_local", {"batch": batch, "context": context, "world": n, "splits": sn, "local_s": tl.median_s,
                           "rank": r})
    ctx.log(f"dcp {batch}x{context}: one GPU {t1.median_s * 1e6:.1f} us ({s1} splits), DCP-{n} "
            f"{tn.median_s * 1e6:.1f} us (local {tl.median_s * 1e6:.1f} us, {sn} splits): "
            f"{t1.median_s / tn.median_s:.3f}x, rel err {err:.1e}")
    if r == 0:
        lens_text = f"{context}x{batch}"
        emit(ctx, Kernel.dcp_decode, t1, 1, batch=batch, context_lens=lens_text, page_size=PAGE, splits=s1)
        emit(ctx, Kernel.dcp_decode, tn, n, batch=batch, context_lens=lens_text, page_size=PAGE, splits=sn,
              max_rel_err=err)

"""The attention sections of `rooflab bench --distributed` (run by dist_worker): DCP decode, a tensor-parallel
attention layer, ring prefill. Llama-3-8B's attention shape throughout: 32 query / 8 KV heads, d 128, fp16.

    dcp    KV split by position over the N ranks (contiguous blocks of pages). Each rank runs paged decode
           on its block (split-KV inside at the count rooflab recommends for its share), merges its splits
           into one fp32 state (o, lse) in a packed buffer of B h (d + 1) values, all-gathers it, unpacks
           (two copies) and merges the N states with rooflab's merge_partials. Against it: one GPU running
           the same decode (its own recommended splits, then the merge) over the whole KV, both in CUDA
           graphs. The N = 1 rows are that single-GPU step; every rank runs it at once on its own GPU.
    tp     per rank: q = x Wq, kv = x Wkv (h / N and h_kv / N heads), paged decode over the rank's KV heads,
           y = o Wo, all-reduce(y); against N = 1, the whole layer on one GPU.
    ring   pass-KV ring prefill, non-causal: each rank holds T / N tokens of Q, K, V; at each of N steps it
           runs flash attention of its Q on the KV block it holds while sending that block on and receiving
           the next (batch_isend_irecv), and merges the step's (o, lse) into its running state (merge_states).
           Timed eagerly (a step is milliseconds); beside it the same loop without communication and flash
           attention over all T tokens on one GPU.

On CPU (gloo) the same code runs with TorchOps (reference attention in torch) and tiny shapes.
"""

from __future__ import annotations

import math
from typing import Any

from ..vocab import Kernel
from .dist_worker import Ctx, Times, as_cupy_cached, free_memory, on_torch_stream, time_eager, time_best
from .records import Measurement

HEADS, KV_HEADS, HEAD_DIM, PAGE = 32, 8, 128, 16
DCP_FULL = ((1, 32768), (1, 131072), (1, 524288), (1, 1048576), (2, 131072), (4, 131072), (8, 32768), (8, 65536),
            (8, 131072), (8, 262144), (8, 524288), (16, 131072), (32, 32768), (32, 131072), (32, 524288))
DCP_TINY = ((1, 64), (2, 128))
TP_FULL = ((1, 8192), (8, 8192), (64, 8192), (1, 32768), (8, 32768), (64, 32768))
TP_TINY = ((1, 64), (2, 128))
RING_FULL = (16384, 32768, 65536, 131072)
RING_TINY = (64, 128)
#: KV copies rotate so that a config's reads stay past the L2 (each call reads another copy).
MIN_STREAM_BYTES = 512 << 20
#: Units per SM of rooflab's decode kernel on the H200 (hardware/h200-sxm.yaml), for its split count.
DECODE_UNITS_PER_SM = 1.5


def recommended_splits(ctx: Ctx, batch: int, context_len: int, kv_heads: int = KV_HEADS, heads: int = HEADS) -> int:
    """rooflab's split count for this share of the KV (cost/paged.py), on this device's SM count."""
    from ..cost.batch import DecodeBatch
    from ..cost.paged import recommend_splits
    from ..specs import AttentionHeads

    sms = 132
    if ctx.cuda:
        import torch

        sms = torch.cuda.get_device_properties(ctx.device).multi_processor_count
    return recommend_splits(AttentionHeads(heads, kv_heads, HEAD_DIM), DecodeBatch.uniform(context_len, batch), sms,
                            PAGE, units_per_sm=DECODE_UNITS_PER_SM)


class TorchOps:
    """Reference attention in torch (fp32 arithmetic), writing into the given outputs: the CPU path."""

    def paged_partial(self, q, k, v, table, lens, splits, out_o, out_lse):
        import torch

        b, h, d = q.shape
        kv_heads, page = k.shape[1], k.shape[2]
        pages = table.shape[1]
        per = math.ceil(pages / splits)
        for s in range(splits):
            ids = table[:, s * per:(s + 1) * per].long()                      # [B, p]
            keys = k[ids].permute(0, 2, 1, 3, 4).reshape(b, kv_heads, -1, d).float()
            vals = v[ids].permute(0, 2, 1, 3, 4).reshape(b, kv_heads, -1, d).float()
            pos = torch.arange(keys.shape[2], device=keys.device) + s * per * page
            keys, vals = keys.repeat_interleave(h // kv_heads, 1), vals.repeat_interleave(h // kv_heads, 1)
            scores = torch.einsum("bhd,bhtd->bht", q.float(), keys) / math.sqrt(d)
            scores = scores.masked_fill(pos[None, None, :] >= lens[:, None, None], float("-inf"))
            lse = torch.logsumexp(scores, -1)
            out_o[s].copy_(torch.einsum("bht,bhtd->bhd", torch.exp(scores - lse[..., None]).nan_to_num(0.0), vals))
            out_lse[s].copy_(lse)

    def merge_partials(self, o_part, lse_part, out, out_lse=None):
        import torch

        lse = torch.logsumexp(lse_part, 0)
        w = torch.exp(lse_part - lse).nan_to_num(0.0)
        out.copy_((w[..., None] * o_part.float()).sum(0))
        if out_lse is not None:
            out_lse.copy_(lse)

    def decode(self, q, k, v, table, lens, splits, out, scratch):
        o_part, lse_part = scratch
        self.paged_partial(q, k, v, table, lens, splits, o_part, lse_part)
        self.merge_partials(o_part, lse_part, out)

    def flash(self, q, k, v, out, out_lse):
        import torch

        group = q.shape[1] // k.shape[1]
        kk, vv = k.float().repeat_interleave(group, 1), v.float().repeat_interleave(group, 1)
        scores = torch.einsum("bhqd,bhkd->bhqk", q.float(), kk) / math.sqrt(q.shape[-1])
        lse = torch.logsumexp(scores, -1)
        out.copy_(torch.einsum("bhqk,bhkd->bhqd", torch.exp(scores - lse[..., None]), vv))
        out_lse.copy_(lse)

    def merge_states(self, o_a, lse_a, o_b, lse_b, out, out_lse):
        import torch

        lse = torch.logaddexp(lse_a, lse_b)
        out.copy_(torch.exp(lse_a - lse)[..., None] * o_a.float() + torch.exp(lse_b - lse)[..., None] * o_b.float())
        out_lse.copy_(lse)


class GpuOps(TorchOps):
    """rooflab's CuPy kernels on torch's current stream; tensors must be preallocated (views are cached)."""

    def __init__(self, ctx: Ctx):
        self.ctx = ctx

    def paged_partial(self, q, k, v, table, lens, splits, out_o, out_lse):
        from ..kernels import paged_decode_partial

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            paged_decode_partial(c(q), c(k), c(v), c(table), c(lens), splits, out=c(out_o), out_lse=c(out_lse))

    def merge_partials(self, o_part, lse_part, out, out_lse=None):
        from ..kernels import merge_partials

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            merge_partials(c(o_part), c(lse_part), c(out).dtype, return_lse=out_lse is not None, out=c(out),
                           out_lse=None if out_lse is None else c(out_lse))

    def decode(self, q, k, v, table, lens, splits, out, scratch):
        if splits > 1:
            return super().decode(q, k, v, table, lens, splits, out, scratch)
        from ..kernels import paged_decode

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            paged_decode(c(q), c(k), c(v), c(table), c(lens), 1, out=c(out))

    def flash(self, q, k, v, out, out_lse):
        from ..kernels import flash_attention

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            flash_attention(c(q), c(k), c(v), causal=False, out=c(out), out_lse=c(out_lse))

    def merge_states(self, o_a, lse_a, o_b, lse_b, out, out_lse):
        from ..kernels import merge_states

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            merge_states(c(o_a), c(lse_a), c(o_b), c(lse_b), out=c(out), out_lse=c(out_lse))


def ops_for(ctx: Ctx) -> TorchOps:
    return GpuOps(ctx) if ctx.cuda else TorchOps()


def _dtype(ctx: Ctx):
    import torch

    return torch.float16 if ctx.cuda else torch.float32


def _rel_err(a, b) -> float:
    import torch

    a, b = a.float(), b.float()
    return float(torch.linalg.vector_norm(a - b) / max(float(torch.linalg.vector_norm(b)), 1e-30))


def _calls(seconds_each: float, budget_s: float = 0.02, most: int = 10) -> int:
    """Calls a graph captures: enough to fill about `budget_s` per replay (most `most`, at least 1)."""
    return max(1, min(most, int(budget_s / max(seconds_each, 1e-7))))


def _emit(ctx: Ctx, kernel: Kernel, t: Times, world: int, **fields: Any) -> None:
    ctx.emit(Measurement(kernel=kernel, impl="rooflab" if ctx.cuda else "torch_reference",
                         dtype="fp16" if ctx.cuda else "fp32", time_s=t.median_s, time_p10_s=t.p10_s,
                         time_p90_s=t.p90_s, repeats=t.repeats, world_size=world, timing=t.timing,
                         num_qo_heads=HEADS, num_kv_heads=KV_HEADS, head_dim=HEAD_DIM, **fields))


# ------------------------------------------------------------------ DCP decode

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

    n, r, dev, dt = ctx.world, ctx.rank, ctx.device, _dtype(ctx)
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
    t1 = time_best(ctx, single, _calls(estimate), 5, together=False)
    tl = time_best(ctx, local, _calls(estimate / n), 5, together=False)
    tn = time_best(ctx, dcp, _calls(estimate / n), 5, together=True)
    single(0)
    dcp(0)
    ctx.sync()
    err = _rel_err(o2, o1)
    ctx.note("dcp_local", {"batch": batch, "context": context, "world": n, "splits": sn, "local_s": tl.median_s,
                           "rank": r})
    ctx.log(f"dcp {batch}x{context}: one GPU {t1.median_s * 1e6:.1f} us ({s1} splits), DCP-{n} "
            f"{tn.median_s * 1e6:.1f} us (local {tl.median_s * 1e6:.1f} us, {sn} splits): "
            f"{t1.median_s / tn.median_s:.3f}x, rel err {err:.1e}")
    if r == 0:
        lens_text = f"{context}x{batch}"
        _emit(ctx, Kernel.dcp_decode, t1, 1, batch=batch, context_lens=lens_text, page_size=PAGE, splits=s1)
        _emit(ctx, Kernel.dcp_decode, tn, n, batch=batch, context_lens=lens_text, page_size=PAGE, splits=sn,
              max_rel_err=err)


# ------------------------------------------------------------------ tensor-parallel attention layer

HIDDEN = 4096      # Llama-3-8B's model width (256 on the CPU path)


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

    n, r, dev, dt = ctx.world, ctx.rank, ctx.device, _dtype(ctx)
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
    t1 = time_best(ctx, one, _calls(estimate), 5, together=False)
    tn = time_best(ctx, shard, _calls(estimate / n), 5, together=True)
    one(0)
    shard(0)
    ctx.sync()
    err = _rel_err(yn, y1)
    ctx.log(f"tp {batch}x{context}: one GPU {t1.median_s * 1e6:.1f} us, TP-{n} {tn.median_s * 1e6:.1f} us, "
            f"rel err {err:.1e}")
    if r == 0:
        lens_text = f"{context}x{batch}"
        _emit(ctx, Kernel.tp_attention, t1, 1, batch=batch, context_lens=lens_text, page_size=PAGE, splits=s1)
        _emit(ctx, Kernel.tp_attention, tn, n, batch=batch, context_lens=lens_text, page_size=PAGE, splits=sn,
              max_rel_err=err)




# ------------------------------------------------------------------ ring prefill (pass-KV)

def section_ring(ctx: Ctx) -> None:
    for tokens in (RING_TINY if ctx.tiny else RING_FULL):
        if not ctx.agree(15.0):
            ctx.note("skipped", f"ring from {tokens} tokens on: deadline")
            return
        _ring_case(ctx, tokens)
        free_memory(ctx)


def _ring_case(ctx: Ctx, tokens: int) -> None:
    import torch
    import torch.distributed as dist

    n, r, dev, dt = ctx.world, ctx.rank, ctx.device, _dtype(ctx)
    ops, local = ops_for(ctx), tokens // n
    gen = torch.Generator(device=dev).manual_seed(7 + tokens)
    q_all = torch.randn((1, HEADS, tokens, HEAD_DIM), generator=gen, device=dev, dtype=dt)
    kv_all = torch.randn((2, 1, KV_HEADS, tokens, HEAD_DIM), generator=gen, device=dev, dtype=dt)
    q = q_all[:, :, r * local:(r + 1) * local].contiguous()
    home = kv_all[:, :, :, r * local:(r + 1) * local].contiguous()     # [2 (K, V), 1, h_kv, T / N, d]
    recv = [torch.empty_like(home), torch.empty_like(home)]            # blocks arriving, two in turn
    f32 = dict(device=dev, dtype=torch.float32)
    o = [torch.empty_like(q) for _ in range(3)]              # running state, this step's, merged
    lse = [torch.empty((1, HEADS, local), **f32) for _ in range(3)]
    o_full, lse_full = torch.empty_like(q_all), torch.empty((1, HEADS, tokens), **f32)
    nxt, prv = (r + 1) % n, (r - 1) % n

    def ring(comm: bool) -> None:
        state = 0
        for step in range(n):
            cur = home if step == 0 or not comm else recv[(step - 1) % 2]
            reqs = []
            if comm and step < n - 1:
                reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, cur, nxt),
                                               dist.P2POp(dist.irecv, recv[step % 2], prv)])
            if step == 0:
                ops.flash(q, cur[0], cur[1], o[0], lse[0])
            else:
                ops.flash(q, cur[0], cur[1], o[1], lse[1])
                ops.merge_states(o[state], lse[state], o[1], lse[1], o[2 - state], lse[2 - state])
                state = 2 - state
            for req in reqs:
                req.wait()
        if state != 0:
            o[0].copy_(o[state])

    def single(i: int) -> None:
        ops.flash(q_all, kv_all[0], kv_all[1], o_full, lse_full)

    reps = 3 if tokens >= 65536 else 5
    t_ring = time_eager(ctx, lambda i: ring(True), reps, warmup=1)
    t_compute = time_eager(ctx, lambda i: ring(False), reps, warmup=1)
    t_one = time_eager(ctx, single, reps, warmup=1, together=False)
    ring(True)
    single(0)
    ctx.sync()
    err = _rel_err(o[0], o_full[:, :, r * local:(r + 1) * local])
    ctx.note("ring_compute_only", {"tokens": tokens, "world": n, "rank": r, "seconds": t_compute.median_s})
    ctx.log(f"ring {tokens} tokens: one GPU {t_one.median_s * 1e3:.2f} ms, ring-{n} {t_ring.median_s * 1e3:.2f} ms "
            f"(no communication {t_compute.median_s * 1e3:.2f} ms), rel err {err:.1e}")
    if r == 0:
        _emit(ctx, Kernel.ring_prefill, t_one, 1, seq_len=tokens, batch=1)
        _emit(ctx, Kernel.ring_prefill, t_ring, n, seq_len=tokens, batch=1, max_rel_err=err)

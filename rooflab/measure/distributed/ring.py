"""The ring section of the multi-GPU bench: ring-attention prefill, pass-KV, non-causal.

    Each rank holds T / N tokens of Q, K, V; at each of N steps it runs flash attention of its Q on the KV block
    it holds while sending that block on and receiving the next (batch_isend_irecv), and merges the step's
    (o, lse) into its running state (merge_states). Timed eagerly (a step is milliseconds); beside it the same
    loop without communication and flash attention over all T tokens on one GPU.
"""

from __future__ import annotations

from ...vocab import Kernel
from .context import Ctx, free_memory, time_eager
from .ops import HEAD_DIM, HEADS, KV_HEADS, emit, ops_for, rel_err, torch_dtype

RING_FULL = (16384, 32768, 65536, 131072)
RING_TINY = (64, 128)


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

    n, r, dev, dt = ctx.world, ctx.rank, ctx.device, torch_dtype(ctx)
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
    err = rel_err(o[0], o_full[:, :, r * local:(r + 1) * local])
    ctx.note("ring_compute_only", {"tokens": tokens, "world": n, "rank": r, "seconds": t_compute.median_s})
    ctx.log(f"ring {tokens} tokens: one GPU {t_one.median_s * 1e3:.2f} ms, ring-{n} {t_ring.median_s * 1e3:.2f} ms "
            f"(no communication {t_compute.median_s * 1e3:.2f} ms), rel err {err:.1e}")
    if r == 0:
        emit(ctx, Kernel.ring_prefill, t_one, 1, seq_len=tokens, batch=1)
        emit(ctx, Kernel.ring_prefill, t_ring, n, seq_len=tokens, batch=1, max_rel_err=err)

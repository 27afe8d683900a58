"""The check and collectives sections of the multi-GPU bench (run by worker.py).

    check        NCCL between the ranks: an all-reduce and an all-gather give the right values
    collectives  all-reduce, all-gather, reduce-scatter, all-to-all, send/recv, 64 KiB .. 1 GiB per rank,
                 timed eagerly and as CUDA-graph replays; one row per (collective, size, timing) on rank 0
"""

from __future__ import annotations

from ...fit.records import Measurement
from ...vocab import Kernel
from .context import Ctx, Times, failed, free_memory, time_eager, time_graph

COLLECTIVES = (Kernel.all_reduce, Kernel.all_gather, Kernel.reduce_scatter, Kernel.all_to_all, Kernel.send_recv)
#: Message sizes per rank: 64 KiB to 1 GiB in factors of 2 (the issue's range), or tiny ones on CPU.
FULL_SIZES = tuple(1 << p for p in range(16, 31))
TINY_SIZES = (1 << 12, 1 << 14, 1 << 16)

def section_check(ctx: Ctx) -> None:
    """An all-reduce and an all-gather across the ranks give the right values (NCCL works between the GPUs)."""
    import torch
    import torch.distributed as dist

    x = torch.full((1024,), float(ctx.rank + 1), device=ctx.device)
    dist.all_reduce(x)
    expected = ctx.world * (ctx.world + 1) / 2
    gathered = torch.empty(ctx.world * 4, device=ctx.device)
    dist.all_gather_into_tensor(gathered, torch.full((4,), float(ctx.rank), device=ctx.device))
    ok = bool(torch.all(x == expected)) and gathered.view(ctx.world, 4)[:, 0].tolist() == list(map(float, range(ctx.world)))
    ctx.note("check", {"all_reduce_sum_ok": bool(torch.all(x == expected)), "all_gather_ok": ok,
                       "backend": dist.get_backend()})
    ctx.log(f"check: all-reduce sum {x[0].item():g} (expected {expected:g}), all-gather "
            f"{gathered.view(ctx.world, 4)[:, 0].tolist()} -> {'ok' if ok else 'WRONG'}")
    if not ok:
        raise RuntimeError("collectives give wrong values between the ranks")


def _collective(kernel: Kernel, ctx: Ctx, nbytes: int):
    """fn(i) running one `kernel` of `nbytes` per rank on preallocated buffers (see comm.py for what
    bytes_per_rank means for each collective)."""
    import torch
    import torch.distributed as dist

    n, dev, world = nbytes // 2, ctx.device, ctx.world
    dtype = torch.bfloat16 if ctx.cuda else torch.float32
    if not ctx.cuda:
        n = nbytes // 4
    inp = torch.ones(n, dtype=dtype, device=dev)
    if kernel is Kernel.all_reduce:
        return lambda i: dist.all_reduce(inp)
    if kernel is Kernel.all_gather:
        out = torch.empty(n * world, dtype=dtype, device=dev)
        return lambda i: dist.all_gather_into_tensor(out, inp)
    if kernel is Kernel.reduce_scatter:                      # bytes_per_rank is each rank's output share
        big = torch.ones(n * world, dtype=dtype, device=dev)
        return lambda i: dist.reduce_scatter_tensor(inp, big)
    if kernel is Kernel.all_to_all:
        n -= n % world
        inp = inp[:n]
        out = torch.empty_like(inp)
        return lambda i: dist.all_to_all_single(out, inp)
    recv = torch.empty_like(inp)                             # send_recv: a ring shift, rank r -> r + 1
    nxt, prv = (ctx.rank + 1) % world, (ctx.rank - 1) % world

    def shift(i: int) -> None:
        ops = [dist.P2POp(dist.isend, inp, nxt), dist.P2POp(dist.irecv, recv, prv)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    return shift


def section_collectives(ctx: Ctx, sizes: tuple[int, ...]) -> None:
    """Each collective at each size, eager and (on GPU) in a CUDA graph; one row per (collective, size, timing)."""
    for kernel in COLLECTIVES:
        graphs = True
        for nbytes in sizes:
            if not ctx.agree(5.0):
                ctx.note("skipped", f"{kernel.value} from {nbytes} bytes on: deadline")
                return
            fn = None
            big = nbytes >= (64 << 20)
            try:
                fn = _collective(kernel, ctx, nbytes)
                _emit_collective(ctx, kernel, nbytes, time_eager(ctx, fn, repeats=10 if big else 30, warmup=3))
            except Exception as exc:                     # a collective the backend lacks: the others go on
                failed(ctx, f"{kernel.value} {nbytes} B eager", exc)
                break
            if ctx.cuda and graphs:
                try:
                    _emit_collective(ctx, kernel, nbytes, time_graph(ctx, fn, calls=3 if big else 20,
                                                                     replays=5 if big else 10))
                except Exception as exc:                 # not capturable here: eager timings go on
                    failed(ctx, f"{kernel.value} {nbytes} B graph", exc)
                    graphs = False
            fn = None
            free_memory(ctx)


def _emit_collective(ctx: Ctx, kernel: Kernel, nbytes: int, t: Times) -> None:
    if ctx.rank != 0:
        return
    ctx.emit(Measurement(kernel=kernel, impl="nccl" if ctx.cuda else "gloo", dtype="bf16" if ctx.cuda else "fp32",
                         time_s=t.median_s, time_p10_s=t.p10_s, time_p90_s=t.p90_s, repeats=t.repeats,
                         bytes_per_rank=nbytes, world_size=ctx.world, timing=t.timing))
    ctx.log(f"{kernel.value:15s} {nbytes:>12,d} B/rank {t.timing:5s} {t.median_s * 1e6:10.1f} us")

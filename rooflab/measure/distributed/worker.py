"""One rank of `rooflab bench --distributed`: torchrun starts one of these per GPU (or per CPU process, with gloo).

    torchrun --standalone --nproc-per-node N -m rooflab.measure.distributed.worker --out DIR [--section S ...]
        [--scale tiny] [--gpu SPEC]

Each rank appends its measurements to DIR/rank<r>.jsonl (one Measurement per line, and `note` lines) and logs
to DIR/rank<r>.log; the launcher (launch.py) assembles the measurement files from them. Sections,
in this order, each one's failure logged without stopping the others:

    check        NCCL between the ranks: an all-reduce and an all-gather give the right values (collectives.py)
    collectives  all-reduce, all-gather, reduce-scatter, all-to-all, send/recv, 64 KiB .. 1 GiB per rank,
                 timed eagerly and as CUDA-graph replays (collectives.py)
    dcp          decode context parallelism against one GPU on the same total KV (dcp.py)
    gemm, step   one GPU each, run side by side: the GEMM family on the last rank (gemm.py), the
                 Llama-3-8B decode step on rank 0 (step.py)
    tp           a tensor-parallel attention layer with its all-reduce (tp.py)
    ring         ring-attention prefill, pass-KV (ring.py)

On a GPU the attention work runs rooflab's CuPy kernels on torch's stream and is captured with the NCCL
collectives in CUDA graphs; on CPU (gloo, `--scale tiny`) the same code paths run with torch reference
ops and host timers, which is how the CPU tests exercise them. Every rank decides together whether to go
on (an all-reduce of "within the deadline"), so a rank never waits in a collective the others skipped.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, Optional

from ...fit.records import spec_for_device
from . import dcp, gemm, ring, step, tp
from .collectives import TINY_SIZES, FULL_SIZES, section_check, section_collectives
from .context import Ctx, free_memory

SECTIONS = ("check", "collectives", "dcp", "gemm", "step", "tp", "ring")
#: Seconds a rank waits in init_process_group or a collective before it gives up (no hang without peers).
PG_TIMEOUT_S = 120


# ------------------------------------------------------------------ driver

#: The kernel instantiations the sections launch (fp16, d 128, group 4 or 2 -> one row tile), compiled in parallel
#: up front so no section pays NVRTC inside its timing warm-up.
KERNELS = (("paged_decode.cu", "paged_decode<__half, __half, 128, 1, 4, 3, false, 0>"),
           ("paged_decode.cu", "paged_decode<__half, __half, 128, 1, 4, 3, true, 0>"),
           ("merge_partials.cu", "merge_partials<__half, 8>"), ("merge_partials.cu", "merge_partials<float, 8>"),
           ("merge_states.cu", "merge_states<__half, 8, 1>"),
           ("flash_fwd_hopper_ws.cu", "flash_fwd_hopper_ws<__half, 128, 2, false, 0>"))


def precompile(ctx: Ctx) -> None:
    from ...kernels._runtime import compile_all, compute_capability, cupy_module

    hopper = compute_capability(cupy_module()) == 90
    items = [k for k in KERNELS if hopper or "hopper" not in k[0]]
    t0 = time.time()
    compile_all(items, workers=len(items))
    ctx.log(f"compiled {len(items)} kernels in {time.time() - t0:.1f} s")


def run(ctx: Ctx, sections: tuple[str, ...]) -> None:
    together = {
        "check": lambda: section_check(ctx),
        "collectives": lambda: section_collectives(ctx, TINY_SIZES if ctx.tiny else FULL_SIZES),
        "dcp": lambda: dcp.section_dcp(ctx),
        "tp": lambda: tp.section_tp(ctx),
        "ring": lambda: ring.section_ring(ctx),
    }
    done_single = False
    for name in [s for s in SECTIONS if s in sections]:
        if name in together:
            _guarded(ctx, name, together[name])
        elif not done_single:                     # gemm and step: one GPU each, side by side
            done_single = True
            if "step" in sections and ctx.rank == 0:
                _guarded(ctx, "step", lambda: step.section_step(ctx), together=False)
            if "gemm" in sections and ctx.rank == ctx.world - 1:
                _guarded(ctx, "gemm", lambda: gemm.section_gemm(ctx), together=False)
            ctx.barrier()
    ctx.barrier()


def _guarded(ctx: Ctx, name: str, fn: Callable[[], None], together: bool = True) -> None:
    t0 = time.time()
    ctx.log(f"section {name}: start")
    try:
        fn()
        ctx.log(f"section {name}: done in {time.time() - t0:.1f} s")
    except Exception as exc:
        ctx.log(f"section {name}: FAILED after {time.time() - t0:.1f} s: {type(exc).__name__}: {exc}")
        ctx.log(traceback.format_exc())
        ctx.note("section_failed", f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
    free_memory(ctx)
    if together:
        ctx.barrier()


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="one rank of rooflab bench --distributed (started by torchrun)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--section", action="append", choices=SECTIONS, default=None)
    ap.add_argument("--scale", choices=("full", "tiny"), default="full")
    ap.add_argument("--gpu", default=None, help="the GPUs' spec (a bundled name or a YAML): their decode units "
                    "per SM; default: the one the device's name resolves to (the H200's on CPU)")
    ap.add_argument("--deadline-s", type=float, default=300.0, help="seconds from start after which no case starts")
    args = ap.parse_args(argv)

    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    cuda = torch.cuda.is_available() and args.scale == "full"
    if cuda:
        if torch.cuda.device_count() <= local:
            raise SystemExit(f"rank {rank}: local rank {local} but only {torch.cuda.device_count()} GPU(s)")
        torch.cuda.set_device(local)
        import cupy

        cupy.cuda.Device(local).use()
    gpu_spec = args.gpu or (spec_for_device(torch.cuda.get_device_name(local)) if cuda else "h200-sxm")
    if gpu_spec is None:
        raise SystemExit(f"rank {rank}: no bundled spec matches '{torch.cuda.get_device_name(local)}'; "
                         "pass --gpu with a YAML file for it")
    args.out.mkdir(parents=True, exist_ok=True)
    log_file = open(args.out / f"rank{rank}.log", "a")
    ctx = Ctx(rank, world, local, cuda, args.out, time.time() + args.deadline_s, args.scale == "tiny", log_file,
              gpu_spec=gpu_spec)
    timeout = datetime.timedelta(seconds=PG_TIMEOUT_S)
    if cuda:
        dist.init_process_group("nccl", timeout=timeout, device_id=ctx.device)
    else:
        dist.init_process_group("gloo", timeout=timeout)
    ctx.log(f"world {world}, backend {dist.get_backend()}, device {ctx.device}, torch {torch.__version__}, "
            f"NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}")
    try:
        if cuda:
            _guarded(ctx, "precompile", lambda: precompile(ctx), together=False)
        run(ctx, tuple(args.section or SECTIONS))
    finally:
        dist.destroy_process_group()
        log_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The block-fp8 layer's two small launches the step prices per call, timed on one GPU: the per-token-group
activation quantisation before each block-fp8 GEMM and the MoE layer's align (token-expert pairs sorted by expert
and padded to the fused kernel's BLOCK_M).

    act_quant   our Triton group quant (benchmarks/dense_fp8_block_gemm.py group_quant: one 128-element group a
                program, an fp32 scale each) of a [tokens, 7168] bf16 row block (DeepSeek-V3's hidden), launched as
                vLLM 0.7.3 launches its own (model_executor/layers/quantization/utils/fp8_utils.py:287-290: one
                program a group, num_warps 1, num_stages 1)
    moe_align   our one-kernel Triton align (benchmarks/step_deepseek_tp8_rank.py moe_align) of tokens x 8 pairs
                over 256 experts at BLOCK_M 64 (the shipped H200 config's for these sizes)

Each timed as benchmarks/moe_routing_launch.py times the routing: `graph` 200 calls captured in one CUDA graph,
replayed, wall time / 200; `eager` 200 calls issued back to back from Python, one synchronize; medians of 7, at
1, 8 and 64 tokens.

    python benchmarks/block_fp8_launch.py --out DIR     # writes DIR/h200-block-fp8-launch.csv
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

HIDDEN, EXPERTS, TOP_K, BLOCK_M, GROUP = 7168, 256, 8, 64, 128
BATCHES = (1, 8, 64)


def main() -> None:
    import torch
    import triton

    from dense_fp8_block_gemm import group_quant
    from moe_routing_launch import REPEATS, timed
    from step_deepseek_tp8_rank import moe_align

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    dev, rows = "cuda", []
    for b in BATCHES:
        x = torch.randn((b, HIDDEN), device=dev, dtype=torch.bfloat16)
        q = torch.empty((b, HIDDEN), device=dev, dtype=torch.float8_e4m3fn)
        s = torch.empty((b, HIDDEN // GROUP), device=dev, dtype=torch.float32)

        def quant():
            group_quant[(b * (HIDDEN // GROUP),)](x, q, s, b, HIDDEN, x.stride(0), q.stride(0), s.stride(0),
                                                   s.stride(1), G=GROUP, num_warps=1, num_stages=1)

        pairs = b * TOP_K
        topk = torch.randint(0, EXPERTS, (pairs,), device=dev, dtype=torch.int64)
        size = pairs + EXPERTS * (BLOCK_M - 1)
        ids = torch.full((size,), pairs, device=dev, dtype=torch.int32)
        eob = torch.zeros(triton.cdiv(size, BLOCK_M), device=dev, dtype=torch.int32)
        total = torch.zeros(1, device=dev, dtype=torch.int32)
        scratch = torch.zeros(2 * EXPERTS, device=dev, dtype=torch.int32)

        def align():
            moe_align[(1,)](topk, ids, eob, total, scratch, pairs, ids.numel(), eob.numel(), E=EXPERTS, BM=BLOCK_M,
                            PB=max(16, triton.next_power_of_2(pairs)), CH=1024, num_warps=4)

        quant()
        align()
        torch.cuda.synchronize()
        expected = sum(-(-int((topk == e).sum()) // BLOCK_M) * BLOCK_M for e in range(EXPERTS))
        assert int(total.item()) == expected, (int(total.item()), expected)
        scale = x.float().view(b, -1, GROUP).abs().amax(-1) / 448.0
        assert torch.allclose(s, scale, rtol=1e-6), "group scales"
        for name, fn in (("act_quant", quant), ("moe_align", align)):
            eager, graph = timed(fn, torch)
            rows += [(name, b, "eager", eager), (name, b, "graph", graph)]
            print(f"{name:10s} b={b:3d}  eager {eager * 1e6:7.2f} us  graph {graph * 1e6:7.2f} us", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1]).stdout.strip() or "unknown"
    clocks = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "device_name": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "cuda_runtime": torch.version.cuda, "git_commit": commit, "calls": 200, "repeats": REPEATS,
            "clocks_sm_mem_max_at_end": clocks,
            "shapes": f"act_quant [tokens, {HIDDEN}] bf16 -> e4m3, groups of {GROUP}; moe_align tokens x {TOP_K} "
                      f"pairs over {EXPERTS} experts, BLOCK_M {BLOCK_M}",
            "checks": "align's padded total against a count per expert; group scales against amax / 448",
            "command": "python benchmarks/block_fp8_launch.py --out $OUT"}
    lines = [f"# {k}: {v}" for k, v in meta.items()] + ["op,batch,timing,seconds,repeats"]
    lines += [f"{op},{b},{timing},{s:.4e},{REPEATS}" for op, b, timing, s in rows]
    (args.out / "h200-block-fp8-launch.csv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Eager against CUDA-graph launch time of a torch decode layer's small kernels and one projection GEMM.

The same ops rooflab.bench.gemm._small_ops times captured 50 to a graph (rms_norm, residual_add, silu_mul,
q_copy, kv_append at Llama-3-8B widths, fp16), and a bf16 QKV GEMM (m x 6144 x 4096), each timed two ways:

    eager   N calls issued back to back from Python, one synchronize, wall time / N (what --enforce-eager pays
            per launch: PyTorch's dispatch plus the CUDA launch, overlapped with the kernel where it can)
    graph   the same N calls captured in one CUDA graph, replayed; wall time / N

Run on the GPU: python benchmarks/eager_launch.py --out DIR; writes DIR/eager-launch.csv (op, batch, timing,
seconds, repeats) with the machine's metadata as '# key: value' lines. Medians of 7 repeats of N = 200.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
from pathlib import Path


def main() -> None:
    import torch
    import torch.nn.functional as F

    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    args = p.parse_args()
    dev, dtype = "cuda", torch.float16
    hidden, ffn, heads, kv_heads, d = 4096, 14336, 32, 8, 128
    calls, repeats = 200, 7
    rows = []
    for b in (1, 8, 64):
        x = torch.randn((b, hidden), device=dev, dtype=dtype)
        w = torch.ones(hidden, device=dev, dtype=dtype)
        gu = torch.randn((b, 2 * ffn), device=dev, dtype=dtype)
        qkv = torch.randn((b, (heads + 2 * kv_heads) * d), device=dev, dtype=dtype)
        q = torch.empty((b, heads, d), device=dev, dtype=dtype)
        cache = torch.zeros((b * 4, kv_heads, 16, d), device=dev, dtype=dtype)
        pages = torch.arange(b, device=dev) * 4 + 3
        xb = torch.randn((b, hidden), device=dev, dtype=torch.bfloat16)
        wb = torch.randn((6144, hidden), device=dev, dtype=torch.bfloat16)
        yb = torch.empty((b, 6144), device=dev, dtype=torch.bfloat16)
        ops = {
            "rms_norm": lambda: F.rms_norm(x, (hidden,), w, 1e-5),
            "residual_add": lambda: x + x,
            "silu_mul": lambda: F.silu(gu[:, :ffn]) * gu[:, ffn:],
            "q_copy": lambda: q.copy_(qkv[:, :heads * d].view(b, heads, d)),
            "kv_append": lambda: cache.__setitem__((pages, slice(None), 5),
                                                   qkv[:, heads * d:(heads + kv_heads) * d].view(b, kv_heads, d)),
            "gemm_qkv_bf16": lambda: torch.mm(xb, wb.t(), out=yb),
        }
        for name, fn in ops.items():
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
            eager = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                torch.cuda.synchronize()
                eager.append((time.perf_counter() - t0) / calls)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    fn()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(calls):
                    fn()
            g.replay()
            torch.cuda.synchronize()
            graph = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                g.replay()
                torch.cuda.synchronize()
                graph.append((time.perf_counter() - t0) / calls)
            for timing, ts in (("eager", eager), ("graph", graph)):
                rows.append((name, b, timing, statistics.median(ts), repeats))
                print(f"{name:14s} b {b:3d} {timing:5s} {statistics.median(ts) * 1e6:8.2f} us", flush=True)
            del g
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "device_name": props.name, "torch": torch.__version__, "cuda_runtime": torch.version.cuda,
            "calls": calls, "repeats": repeats, "command": "python benchmarks/eager_launch.py --out $OUT"}
    lines = [f"# {k}: {v}" for k, v in meta.items()] + ["op,batch,timing,seconds,repeats"]
    lines += [f"{n},{b},{t},{s:.4e},{r}" for n, b, t, s, r in rows]
    (out / "eager-launch.csv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

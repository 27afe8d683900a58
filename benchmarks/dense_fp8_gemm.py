"""Dense fp8 GEMMs as an fp8 engine's linear layers run them, against bf16 on the same shapes, on one GPU (issue 29).

The step priced an fp8 GEMM with the bf16 cuBLAS fit (hardware/h200-sxm.yaml's torch_cublas entry, fitted on
Llama-3-8B's bf16 shapes) against the fp8 tensor roof: an fp8 decode GEMM was assumed to stream its weights as
fast as a bf16 one. This campaign measures that assumption: torch._scaled_mm (cuBLASLt, e4m3 x e4m3 -> bf16) on the
projection and MLP shapes of the dense models the published fp8 step rows run, from GEMV-shaped decode (m = 1) to
prefill (m = 8192), with torch.mm in bf16 on the same shapes beside it.

    y [m, n] = x [m, k] W^T,  (n, k) per model and TP shard:
        llama-2-70b tp1 / tp2 / tp4   qkv (10240, 8192), o (8192, 8192), gate_up (57344, 8192), down (8192, 28672),
                                      n or k split over the TP ranks as the engines shard them (column / row)
        llama-2-7b tp1                qkv (12288, 4096), o (4096, 4096), gate_up (22016, 4096), down (4096, 11008)
        mistral-7b tp1                qkv (6144, 4096), o (4096, 4096), gate_up (28672, 4096), down (4096, 14336)
        llama-3-8b tp1                as mistral-7b, and lm_head (128256, 4096)

Implementations (column impl):
    scaled_mm           torch._scaled_mm, fp8 e4m3 operands, per-tensor (tensorwise) scales, bf16 out: an fp8
                        checkpoint with static per-tensor scales (TensorRT-LLM's and vLLM's fp8 per-tensor path)
    scaled_mm_rowwise   the same with rowwise scales (a [m, 1] activation scale, a [1, n] weight scale): dynamic
                        per-token activation scales; only where torch supports it here
    mm                  torch.mm in bf16 on the same shape (the control the existing bf16 fit describes)

Timing as benchmarks/moe_gemm.py: each variant captured CALLS times in one CUDA graph, cycling over enough weight
copies that a replay streams its weights from HBM (past the L2); WARM replays, then REPEATS timed with CUDA events;
seconds = median replay / CALLS. Inputs random normal; each fp8 shape's result is checked against a float32
reference of the same fp8 operands once (rel_error). The rows use benchmarks/moe_gemm.py's columns (one expert: a
dense GEMM is a grouped GEMM of one group), so rooflab.fit.moe_fit reads them.

Run on the GPU: python benchmarks/dense_fp8_gemm.py --out DIR [--commit SHA]; writes DIR/h200-dense-fp8-gemm.csv (committed as measurements/gemm/)
with the machine's metadata as '# key: value' lines, and prints a table last (TB/s of weight streamed at small m).
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

M = (1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
CALLS, WARM, REPEATS = 10, 3, 15
L2_BYTES = 50 * 2 ** 20
COLUMNS = ("model", "shard", "gemm", "impl", "dtype", "tokens", "pairs", "experts_local", "experts_touched",
           "max_pairs_per_expert", "n", "k", "flops", "weight_bytes", "seconds", "seconds_min", "repeats",
           "tflop_per_s", "rel_error", "note")


def shapes() -> list[tuple[str, str, str, int, int]]:
    """(model, shard, gemm, n, k) of every GEMM measured."""
    out = []
    l70 = {"qkv": (10240, 8192), "o": (8192, 8192), "gate_up": (57344, 8192), "down": (8192, 28672)}
    for tp in (1, 2, 4):
        for g, (n, k) in l70.items():
            out.append(("llama-2-70b", f"tp{tp}", g, n // tp if g in ("qkv", "gate_up") else n,
                        k // tp if g in ("o", "down") else k))
    for model, dims in (("llama-2-7b", {"qkv": (12288, 4096), "o": (4096, 4096), "gate_up": (22016, 4096),
                                        "down": (4096, 11008)}),
                        ("mistral-7b", {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096),
                                        "down": (4096, 14336)}),
                        ("llama-3-8b", {"lm_head": (128256, 4096)})):
        for g, (n, k) in dims.items():
            out.append((model, "tp1", g, n, k))
    return out


def main() -> None:
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--commit", default="")
    p.add_argument("--deadline-s", type=float, default=300.0)
    args = p.parse_args()
    start = time.time()
    dev = "cuda"
    torch.manual_seed(0)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "device_name": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda_runtime": torch.version.cuda, "git_commit": args.commit or "unknown",
            "command": " ".join(["python3", *sys.argv]), "calls_a_graph": CALLS, "warm_replays": WARM,
            "repeats": REPEATS, "scales": "scaled_mm: tensorwise (float32 scalars); scaled_mm_rowwise: [m,1] x [1,n]"}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
        meta["nvidia_smi_driver_maxsm_maxmem_power"] = q
    except Exception as exc:                                   # noqa: BLE001 (recorded, not fatal)
        meta["nvidia_smi"] = f"failed: {exc}"
    errors: dict[str, str] = {}
    rows: list[dict] = []

    def timed(fns) -> tuple[float, float]:
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

    f8 = torch.float8_e4m3fn
    one = torch.ones((), device=dev, dtype=torch.float32)
    for model, shard, gname, n, k in shapes():
        if time.time() - start > args.deadline_s:
            errors["deadline"] = f"stopped at {model} {shard} {gname}"
            break
        copies = max(1, min(CALLS, math.ceil(4 * L2_BYTES / (n * k))))      # fp8 bytes; bf16 streams twice that
        ws = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) * k ** -0.5 for _ in range(copies)]
        w8 = [w.to(f8) for w in ws]
        scale_b_row = torch.ones(1, n, device=dev, dtype=torch.float32)
        checked = False
        for m in M:
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            x8 = x.to(f8)
            scale_a_row = torch.ones(m, 1, device=dev, dtype=torch.float32)
            flops = 2 * m * n * k
            base = dict(model=model, shard=shard, gemm=gname, tokens=m, pairs=m, experts_local=1, experts_touched=1,
                        max_pairs_per_expert=m, n=n, k=k, flops=flops)

            def scaled(i, x8=x8):
                return torch._scaled_mm(x8, w8[i % copies].t(), one, one, out_dtype=torch.bfloat16)

            def rowwise(i, x8=x8, sa=scale_a_row):
                return torch._scaled_mm(x8, w8[i % copies].t(), sa, scale_b_row, out_dtype=torch.bfloat16)

            def mm(i, x=x):
                return torch.mm(x, ws[i % copies].t())

            for impl, dname, fn, wbytes in (("scaled_mm", "fp8_e4m3", scaled, n * k),
                                            ("scaled_mm_rowwise", "fp8_e4m3", rowwise, n * k),
                                            ("mm", "bf16", mm, 2 * n * k)):
                key = f"{model} {shard} {gname} {impl}"
                if key in errors:
                    continue
                rel = ""
                try:
                    if impl == "scaled_mm" and not checked:
                        out = fn(0).float()
                        ref = x8.float() @ w8[0].float().t()
                        rel = f"{((out - ref).norm() / ref.norm()).item():.2e}"
                        checked = True
                    med, mn = timed([lambda i=i, fn=fn: fn(i) for i in range(CALLS)])
                except Exception as exc:                        # noqa: BLE001 (recorded; the next variant runs)
                    errors[key] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                    torch.cuda.synchronize()
                    continue
                rows.append(dict(base, impl=impl, dtype=dname, weight_bytes=wbytes, seconds=f"{med:.4e}",
                                 seconds_min=f"{mn:.4e}", repeats=REPEATS, tflop_per_s=f"{flops / med / 1e12:.1f}",
                                 rel_error=rel, note=""))
        del ws, w8
        torch.cuda.empty_cache()
    meta["wall_s"] = f"{time.time() - start:.1f}"
    for key, why in errors.items():
        meta[f"error {key}"] = why
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "h200-dense-fp8-gemm.csv", "w") as fh:
        for key, value in meta.items():
            fh.write(f"# {key}: {value}\n")
        fh.write(",".join(COLUMNS) + "\n")
        for r in rows:
            fh.write(",".join(str(r.get(c, "")) for c in COLUMNS) + "\n")
    for key, value in meta.items():
        print(f"# {key}: {value}")
    index = {(r["model"], r["shard"], r["gemm"], r["tokens"], r["impl"]): r for r in rows}
    print(f"{'model':12} {'shard':5} {'gemm':8} {'m':>5}  {'fp8 TB/s':>8} {'row TB/s':>8} {'bf16 TB/s':>9} "
          f"{'fp8 TF/s':>8} {'bf16 TF/s':>9}")
    for (model, shard, gname, m, impl), r in index.items():
        if impl != "scaled_mm" or m not in (1, 64, 256, 8192):
            continue
        cells = []
        for other in ("scaled_mm", "scaled_mm_rowwise", "mm"):
            o = index.get((model, shard, gname, m, other))
            cells.append(f"{o['weight_bytes'] / float(o['seconds']) / 1e12:.2f}" if o else "-")
        bf = index.get((model, shard, gname, m, "mm"))
        print(f"{model:12} {shard:5} {gname:8} {m:>5}  {cells[0]:>8} {cells[1]:>8} {cells[2]:>9} "
              f"{r['tflop_per_s']:>8} {bf['tflop_per_s'] if bf else '-':>9}")


if __name__ == "__main__":
    main()

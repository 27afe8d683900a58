"""MoE expert GEMMs as the engines run them: grouped GEMMs over a GPU's experts, against one dense GEMM of the same
shape, on one GPU (issue 29).

Shapes (the expert up/gate GEMM [pairs, hidden] x [hidden, 2 ffn] and the down GEMM [pairs, ffn] x [ffn, hidden]):

    mixtral-8x7b tp1   8 experts a GPU, top-2, hidden 4096, ffn 14336, bf16
    mixtral-8x7b tp2   the same, ffn split over 2 GPUs (7168)
    deepseek-v3 ep8    256 routed experts top-8, EP 8 => 32 experts a GPU, hidden 7168, moe ffn 2048;
                       fp8 e4m3 (torch._scaled_grouped_mm, rowwise scales) where it runs, and bf16 always

tokens per step T in 1, 8, 32, 128, 512, 2048, 8192 (the expert group's tokens); this GPU's token-expert pairs are
ceil(T k / EP), spread over its experts balanced (expert i gets pairs // G, the first pairs % G one more).

Implementations (column impl):
    grouped_mm          torch._grouped_mm (bf16) / torch._scaled_grouped_mm (fp8), one launch for all experts
    loop_graph          a loop of per-expert torch.matmul over the touched experts (what a naive engine does)
    dense_mm            one dense torch.mm (bf16) / torch._scaled_mm (fp8, tensorwise) of m = pairs with one
                        expert's weight: the FLOPs of the grouped GEMM as rooflab priced them before this file

Timing: each variant captured CALLS times in one CUDA graph, cycling over enough weight copies that a replay reads
its weights from HBM rather than L2; the graph is replayed WARM times, then timed REPEATS times with CUDA events;
seconds = median replay / CALLS. Inputs random normal (never zeros); each grouped result is checked against a
float32 per-expert reference once a shape (rel_error column).

Run on the GPU: python benchmarks/moe_gemm.py --out DIR [--commit SHA]; writes DIR/h200-moe-gemm.csv with the
machine's metadata as '# key: value' lines and prints a table last.
The fit of these rows (hardware/h200-sxm.yaml's torch_grouped_mm and torch_scaled_grouped_mm entries):
rooflab.fit.moe_fit.fit_moe_campaign(Path('measurements/moe/h200-moe-gemm.csv'), load_gpu('h200-sxm')), written
with rooflab.fit.fitting_io.fitted_yaml (tests/fit/test_moe_fit.py pins the YAML to it).
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

TOKENS = (1, 8, 32, 128, 512, 2048, 8192)
#: name, shard, experts a GPU, top-k, EP, hidden, ffn a GPU, dtypes
CONFIGS = (
    ("mixtral-8x7b", "tp1", 8, 2, 1, 4096, 14336, ("bf16",)),
    ("mixtral-8x7b", "tp2", 8, 2, 1, 4096, 7168, ("bf16",)),
    ("deepseek-v3", "ep8", 32, 8, 8, 7168, 2048, ("fp8_e4m3", "bf16")),
)
CALLS, WARM, REPEATS = 10, 3, 15
L2_BYTES = 50 * 2 ** 20
COLUMNS = ("model", "shard", "gemm", "impl", "dtype", "tokens", "pairs", "experts_local", "experts_touched",
           "max_pairs_per_expert", "n", "k", "flops", "weight_bytes", "seconds", "seconds_min", "repeats",
           "tflop_per_s", "rel_error", "note")


def counts_of(pairs: int, groups: int) -> list[int]:
    return [pairs // groups + (1 if i < pairs % groups else 0) for i in range(groups)]


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
            "repeats": REPEATS, "routing": "balanced: ceil(T k / EP) pairs a GPU, spread evenly over its experts",
            "grouped_mm": str(hasattr(torch, "_grouped_mm")),
            "scaled_grouped_mm": str(hasattr(torch, "_scaled_grouped_mm"))}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
        meta["nvidia_smi_driver_maxsm_maxmem_power"] = q
    except Exception as exc:                                   # noqa: BLE001 (recorded, not fatal)
        meta["nvidia_smi"] = f"failed: {exc}"
    errors: dict[str, str] = {}
    rows: list[dict] = []

    def timed(fn_list) -> tuple[float, float]:
        """Capture fn_list (CALLS closures) in one graph; median and min replay time / CALLS."""
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for fn in fn_list[:2]:
                fn()                                           # warm: handles, autotuning, lazy modules
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for fn in fn_list:
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
            times.append(a.elapsed_time(b) * 1e-3 / len(fn_list))
        del g
        return statistics.median(times), min(times)

    f8 = getattr(torch, "float8_e4m3fn", None)
    for model, shard, groups, topk, ep, hidden, ffn, dtypes in CONFIGS:
        for dname in dtypes:
            fp8 = dname == "fp8_e4m3"
            for gname, n, k in (("gate_up", 2 * ffn, hidden), ("down", hidden, ffn)):
                if time.time() - start > args.deadline_s:
                    errors["deadline"] = f"stopped at {model} {shard} {dname} {gname}"
                    break
                wbytes_one = n * k * (1 if fp8 else 2)
                copies = max(1, min(CALLS, math.ceil(4 * L2_BYTES / wbytes_one)))   # even one touched expert leaves L2
                # weights [G, N, K] (row-major, as a checkpoint holds them); used as [G, K, N] column-major
                ws = [(torch.randn(groups, n, k, device=dev, dtype=torch.bfloat16) * k ** -0.5) for _ in range(copies)]
                w8 = [w.to(f8) for w in ws] if fp8 else None
                scale_b = torch.ones(groups, n, device=dev, dtype=torch.float32)
                checked = False
                for tokens in TOKENS:
                    pairs = math.ceil(tokens * topk / ep)
                    counts = counts_of(pairs, groups)
                    touched = sum(1 for c in counts if c)
                    offs = torch.tensor(list(_cumsum(counts)), device=dev, dtype=torch.int32)
                    x = torch.randn(pairs, k, device=dev, dtype=torch.bfloat16)
                    x8 = x.to(f8) if fp8 else None
                    scale_a = torch.ones(pairs, device=dev, dtype=torch.float32)
                    flops = 2 * pairs * n * k
                    wb = touched * wbytes_one
                    base = dict(model=model, shard=shard, gemm=gname, dtype=dname, tokens=tokens, pairs=pairs,
                                experts_local=groups, experts_touched=touched, max_pairs_per_expert=max(counts),
                                n=n, k=k, flops=flops)

                    def grouped(i, x=x, x8=x8, offs=offs, scale_a=scale_a):
                        if fp8:
                            return torch._scaled_grouped_mm(x8, w8[i % copies].transpose(-2, -1), scale_a, scale_b,
                                                            offs=offs, out_dtype=torch.bfloat16)
                        return torch._grouped_mm(x, ws[i % copies].transpose(-2, -1), offs=offs)

                    def loop(i, x=x, counts=counts):
                        w, outs, o = ws[i % copies], [], 0
                        for e, c in enumerate(counts):
                            if c:
                                outs.append(torch.matmul(x[o:o + c], w[e].t()))
                            o += c
                        return outs

                    def dense(i, x=x, x8=x8):
                        if fp8:
                            one = torch.ones((), device=dev, dtype=torch.float32)
                            return torch._scaled_mm(x8, w8[i % copies][0].t(), one, one, out_dtype=torch.bfloat16)
                        return torch.mm(x, ws[i % copies][0].t())

                    variants = [("grouped_mm", grouped), ("dense_mm", dense)]
                    if not fp8:
                        variants.append(("loop_graph", loop))
                    for impl, fn in variants:
                        key = f"{model} {shard} {dname} {gname} {impl} T={tokens}"
                        if key in errors:
                            continue
                        rel, note = "", ""
                        try:
                            if impl == "grouped_mm" and not checked:
                                out = fn(0).float()
                                ref = torch.cat([(x8.float() if fp8 else x.float())[o:o + c] @
                                                 (w8[0][e].float() if fp8 else ws[0][e].float()).t()
                                                 for e, (o, c) in enumerate(zip(_starts(counts), counts))])
                                rel = f"{((out - ref).norm() / ref.norm()).item():.2e}"
                                checked = tokens >= 32
                            med, mn = timed([lambda i=i: fn(i) for i in range(CALLS)])
                        except Exception as exc:                 # noqa: BLE001 (recorded; the next variant runs)
                            errors[key] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                            torch.cuda.synchronize()
                            continue
                        if impl == "dense_mm":
                            note = "one expert's weight, m = pairs"
                        rows.append(dict(base, impl=impl, weight_bytes=wbytes_one if impl == "dense_mm" else wb,
                                         seconds=f"{med:.4e}", seconds_min=f"{mn:.4e}", repeats=REPEATS,
                                         tflop_per_s=f"{flops / med / 1e12:.1f}", rel_error=rel, note=note))
                del ws, w8
                torch.cuda.empty_cache()
    meta["wall_s"] = f"{time.time() - start:.1f}"
    for key, why in errors.items():
        meta[f"error {key}"] = why
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "h200-moe-gemm.csv", "w") as fh:
        for key, value in meta.items():
            fh.write(f"# {key}: {value}\n")
        fh.write(",".join(COLUMNS) + "\n")
        for r in rows:
            fh.write(",".join(str(r.get(c, "")) for c in COLUMNS) + "\n")
    for key, value in meta.items():
        print(f"# {key}: {value}")
    print(f"{'model':13} {'shard':5} {'gemm':7} {'dtype':8} {'T':>5} {'pairs':>6} {'grouped us':>10} "
          f"{'loop us':>9} {'dense us':>9} {'grp TF/s':>8}")
    index = {(r["model"], r["shard"], r["gemm"], r["dtype"], r["tokens"], r["impl"]): r for r in rows}
    for r in rows:
        if r["impl"] != "grouped_mm":
            continue
        k0 = (r["model"], r["shard"], r["gemm"], r["dtype"], r["tokens"])
        us = {impl: (f"{float(index[(*k0, impl)]['seconds']) * 1e6:.1f}" if (*k0, impl) in index else "-")
              for impl in ("grouped_mm", "loop_graph", "dense_mm")}
        print(f"{r['model']:13} {r['shard']:5} {r['gemm']:7} {r['dtype']:8} {r['tokens']:>5} {r['pairs']:>6} "
              f"{us['grouped_mm']:>10} {us['loop_graph']:>9} {us['dense_mm']:>9} {r['tflop_per_s']:>8}")


def _cumsum(counts):
    total = 0
    for c in counts:
        total += c
        yield total


def _starts(counts):
    total = 0
    for c in counts:
        yield total
        total += c


if __name__ == "__main__":
    main()

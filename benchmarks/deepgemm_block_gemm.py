"""DeepGEMM's block-fp8 GEMM as SGLang 0.5.12 runs a DeepSeek-V3 / R1 checkpoint's dense linear layers on compute
capability 9.0, on one GPU, at the shapes and token counts of benchmarks/dense_fp8_block_gemm.py (issue 29).

SGLang 0.5.12's auto fp8 GEMM backend is deepgemm_w8a8_block_fp8_linear_with_fallback (sglang 0.5.12 wheel,
srt/layers/quantization/fp8_utils.py:445-463) where the weight's N is a multiple of 64 and K of 128
(fp8_utils.py:659); it quantises the activations per 128-group with column-major, TMA-aligned float32 scales
(fp8_utils.py:678-684, scale_ue8m0 = DEEPGEMM_SCALE_UE8M0, False off Blackwell: layers/deep_gemm_wrapper/
configurer.py:34-36; the layout srt/layers/quantization/fp8_kernel.py:474-483: float32 [k/128, align(m, 4)]
transposed and cut to [m, k/128]) and calls deep_gemm.fp8_gemm_nt((A, As), (B, Bs), C) with C bf16 [m, n]
(fp8_kernel.py:136-143, 1183-1198; layers/deep_gemm_wrapper/entrypoint.py:153-171), the weight's scales as the
checkpoint stores them (float32 [ceil(n/128), k/128], row-major; no UE8M0 requantisation off Blackwell,
srt/layers/quantization/fp8.py:521-537, model_loader/utils.py:252-258). Its JIT compiles with NVCC
(DG_JIT_USE_NVRTC = 0 unless SGL_DG_USE_NVRTC: deep_gemm_wrapper/compile_utils.py:42). This harness makes the same
call on the same layouts (deep_gemm from the sgl-deep-gemm 0.1.0 wheel the SGLang wheel requires).

    impl deepgemm   deep_gemm.fp8_gemm_nt, e4m3 x e4m3 -> bf16, recipe None (DeepGEMM's default for SM90: 1 x 128
                    activation, 128 x 128 weight scales, float32)

Shapes: benchmarks/dense_fp8_block_gemm.py's deepseek_shapes() with SGLang 0.5.x's fused q_a + kv_a projection
(qkv_a: N 1536 + 576 = 2112, K 7168; replicated, as q_a and kv_a), then benchmarks/dense_fp8_gemm.py's shapes();
m as there (1 .. 8192). Every shape's kernels are first compiled by a pool of worker processes sharing one JIT
cache (--compile-only), so the timed process finds them built.

Timing as benchmarks/dense_fp8_block_gemm.py: enough weight copies that 4 x L2 of other weights pass between two
reads of one copy, CALLS (or more) launches captured in one CUDA graph, WARM replays, REPEATS timed replays with
CUDA events; seconds = median replay / launches. Inputs random (never zeros): fp8 operands from random normals,
scales random in [0.5, 1.5) / 64; every row's result checked against a float32 reference of the dequantised
operands (rel_error), the output poisoned with NaN before.

    python3 benchmarks/deepgemm_block_gemm.py --out DIR [--commit SHA] [--deadline-s S] [--workers W]
    # DIR/h200-deepgemm-block-gemm.csv (benchmarks/moe_gemm.py's columns, one group)
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("DG_JIT_USE_NVRTC", "0")                 # as SGLang 0.5.12 sets it (compile_utils.py:42)

import torch

from dense_fp8_block_gemm import GROUP, MAX_CALLS, deepseek_shapes, dequant, relerr, smi, write
from dense_fp8_gemm import CALLS, COLUMNS, L2_BYTES, M, REPEATS, WARM, shapes as llama_shapes
from h200_early2025_decode_kernels import timed

OUT_NAME = "h200-deepgemm-block-gemm.csv"


def all_shapes() -> list[tuple[str, str, str, int, int]]:
    """deepseek_shapes() with SGLang's fused qkv_a after kv_a, then the dense fp8 campaign's shapes."""
    ds = deepseek_shapes()
    at = next(i for i, s in enumerate(ds) if s[2] == "kv_a") + 1
    return ds[:at] + [("deepseek-v3", "tp1", "qkv_a", 1536 + 576, 7168)] + ds[at:] + llama_shapes()


def act_scales(m: int, kb: int, dev) -> torch.Tensor:
    """float32 [m, kb] column-major with its column stride m rounded up to 4 (SGLang's scale_tma_aligned layout)."""
    aligned = (m + 3) // 4 * 4
    return ((torch.rand(kb, aligned, device=dev) + 0.5) / 64).t()[:m]


def weight_scales(n: int, kb: int, dev) -> torch.Tensor:
    """float32 [ceil(n / 128), kb] row-major: a block-fp8 checkpoint's weight_scale_inv as loaded."""
    return ((torch.rand(-(-n // GROUP), kb, device=dev) + 0.5) / 64).contiguous()


def compile_items(items: list[tuple[int, int, int]]) -> None:
    """Run one GEMM of each (m, n, k) so that DeepGEMM's JIT builds its kernel into the shared cache."""
    import deep_gemm
    f8 = torch.float8_e4m3fn
    for m, n, k in items:
        x = torch.randn(m, k, device="cuda").to(f8)
        w = torch.randn(n, k, device="cuda").to(f8)
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        try:
            deep_gemm.fp8_gemm_nt((x, act_scales(m, k // GROUP, "cuda")), (w, weight_scales(n, k // GROUP, "cuda")),
                                  out)
        except Exception as exc:                                 # noqa: BLE001 (the timed pass records it)
            print(f"compile {m}x{n}x{k}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    torch.cuda.synchronize()


def precompile(shapes, workers: int) -> float:
    """Every (m, n, k) compiled by `workers` processes (round robin); their wall seconds."""
    items = sorted({(m, n, k) for *_, n, k in shapes for m in M})
    start = time.time()
    procs = []
    for w in range(workers):
        part = items[w::workers]
        if part:
            arg = ";".join(f"{m},{n},{k}" for m, n, k in part)
            procs.append(subprocess.Popen([sys.executable, __file__, "--compile-only", arg]))
    for p in procs:
        p.wait()
    return time.time() - start


def check() -> dict:
    """One GEMM (m 64, DeepSeek-V3's q_a) against the float32 reference, with the first call's seconds (JIT)."""
    import deep_gemm
    f8 = torch.float8_e4m3fn
    m, n, k = 64, 1536, 7168
    x = (torch.randn(m, k, device="cuda") * 0.5).to(f8)
    w = (torch.randn(n, k, device="cuda") * 0.5).to(f8)
    sa, sw = act_scales(m, k // GROUP, "cuda"), weight_scales(n, k // GROUP, "cuda")
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    t0 = time.time()
    deep_gemm.fp8_gemm_nt((x, sa), (w, sw), out)
    torch.cuda.synchronize()
    first = time.time() - t0
    ref = dequant(x, sa, 1) @ dequant(w, sw, GROUP).t()
    return {"check_q_a_m64_rel_error": relerr(out, ref), "check_first_call_s": f"{first:.1f}"}


def eager_timed(fns) -> tuple[float, float]:
    """timed()'s median and min without a graph (launched eagerly between two events): used where DeepGEMM's
    launches cannot be captured, and said so in the row's note."""
    for fn in fns[:2]:
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for fn in fns:
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3 / len(fns))
    return statistics.median(times), min(times)


def gemm_rows(shape, errors) -> list[dict]:
    """deepgemm at every m of one (model, shard, gemm, n, k)."""
    import deep_gemm
    model, shard, gname, n, k = shape
    dev, f8 = "cuda", torch.float8_e4m3fn
    kb = k // GROUP
    copies = max(1, min(MAX_CALLS, math.ceil(4 * L2_BYTES / (n * k))))
    calls = max(CALLS, copies)
    ws = [(torch.randn(n, k, device=dev) * 0.5).to(f8) for _ in range(copies)]
    sws = [weight_scales(n, kb, dev) for _ in range(copies)]
    rows = []
    for m in M:
        x8 = (torch.randn(m, k, device=dev) * 0.5).to(f8)
        sa = act_scales(m, kb, dev)
        out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)

        def fn(i, x8=x8, sa=sa, out=out):
            deep_gemm.fp8_gemm_nt((x8, sa), (ws[i % copies], sws[i % copies]), out)
            return out

        key = f"{model} {shard} {gname} m={m}"
        try:
            out.fill_(float("nan"))
            fn(0)
            rel = relerr(out, dequant(x8, sa, 1) @ dequant(ws[0], sws[0], GROUP).t())
            how = "graph"
            try:
                med, mn = timed([lambda i=i: fn(i) for i in range(calls)])
            except RuntimeError as exc:                         # capture refused: eager, noted
                errors.setdefault("graph capture", str(exc).splitlines()[0][:200])
                torch.cuda.synchronize()
                med, mn = eager_timed([lambda i=i: fn(i) for i in range(calls)])
                how = "eager (no graph)"
        except Exception as exc:                                # noqa: BLE001 (recorded; the next m runs)
            errors[key] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            torch.cuda.synchronize()
            continue
        scale_bytes = -(-n // GROUP) * kb * 4
        rows.append(dict(model=model, shard=shard, gemm=gname, impl="deepgemm", dtype="fp8_e4m3", tokens=m, pairs=m,
                         experts_local=1, experts_touched=1, max_pairs_per_expert=m, n=n, k=k, flops=2 * m * n * k,
                         weight_bytes=n * k + scale_bytes, seconds=f"{med:.4e}", seconds_min=f"{mn:.4e}",
                         repeats=REPEATS, tflop_per_s=f"{2 * m * n * k / med / 1e12:.1f}", rel_error=rel,
                         note=f"act scales float32 column-major, stride align(m, 4); {copies} weight copies over "
                              f"{calls} launches" + ("" if how == "graph" else f"; {how}")))
    return rows


def table(rows) -> None:
    print(f"{'model':12} {'shard':5} {'gemm':14} {'m':>5} {'us':>9} {'TB/s':>6} {'TF/s':>7} {'rel':>9}")
    for r in rows:
        if r["tokens"] in (1, 64, 1024, 8192):
            print(f"{r['model']:12} {r['shard']:5} {r['gemm']:14} {r['tokens']:>5} {float(r['seconds']) * 1e6:9.2f} "
                  f"{r['weight_bytes'] / float(r['seconds']) / 1e12:6.2f} {r['tflop_per_s']:>7} {r['rel_error']:>9}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--commit", default="")
    p.add_argument("--deadline-s", type=float, default=300.0)
    p.add_argument("--workers", type=int, default=12)
    p.add_argument("--compile-only", default="")
    args = p.parse_args()
    if args.compile_only:
        compile_items([tuple(int(v) for v in it.split(",")) for it in args.compile_only.split(";")])
        return
    if not args.out:
        p.error("--out is required")
    start = time.time()
    torch.manual_seed(0)
    import deep_gemm
    import tvm_ffi
    nvcc = subprocess.run([os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc"), "--version"],
                          capture_output=True, text=True).stdout.strip().splitlines()
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "device_name": torch.cuda.get_device_name(0), "python": sys.version.split()[0],
            "torch": torch.__version__, "cuda_runtime": torch.version.cuda,
            "deep_gemm": f"{deep_gemm.__version__} (sgl-deep-gemm wheel)",
            "tvm_ffi": getattr(tvm_ffi, "__version__", "?"), "nvcc": nvcc[-1] if nvcc else "?",
            "dg_jit_use_nvrtc": os.environ.get("DG_JIT_USE_NVRTC"), "num_sms": deep_gemm.get_num_sms(),
            "git_commit": args.commit or "unknown", "command": " ".join(["python3", *sys.argv]),
            "calls_a_graph": f"{CALLS} (more where more weight copies are needed, up to {MAX_CALLS})",
            "warm_replays": WARM, "repeats": REPEATS,
            "scales": "A e4m3 [m, k], As float32 [m, k/128] stride (1, align(m, 4)); B e4m3 [n, k], Bs float32 "
                      "[ceil(n/128), k/128] row-major; C bf16 [m, n]; deep_gemm.fp8_gemm_nt((A, As), (B, Bs), C)",
            "driver_maxsm_maxmem_power": smi("driver_version,clocks.max.sm,clocks.max.mem,power.limit"),
            "clocks_sm_mem_at_start": smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")}
    meta.update(check())
    for key, value in meta.items():
        print(f"# {key}: {value}", flush=True)
    shapes = all_shapes()
    meta["precompile_s"] = f"{precompile(shapes, args.workers):.1f} ({args.workers} worker processes)"
    print(f"# precompile_s: {meta['precompile_s']}", flush=True)
    errors: dict[str, str] = {}
    rows = []
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for i, shape in enumerate(shapes):
        if time.time() - start > args.deadline_s:
            errors["deadline"] = f"stopped before {shape[:3]}"
            break
        rows += gemm_rows(shape, errors)
        torch.cuda.empty_cache()
        write(out / OUT_NAME, meta, COLUMNS, rows)
    meta["clocks_sm_mem_at_end"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    meta["wall_s"] = f"{time.time() - start:.1f}"
    for key, why in errors.items():
        meta[f"error {key}"] = why
    write(out / OUT_NAME, meta, COLUMNS, rows)
    for key, value in meta.items():
        print(f"# {key}: {value}")
    table(rows)


if __name__ == "__main__":
    main()

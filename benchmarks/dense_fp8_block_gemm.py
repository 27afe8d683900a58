"""Block-scaled fp8 GEMMs as a DeepSeek-V3 / R1 checkpoint's linear layers run them, beside per-tensor fp8 on the
same shapes, on one GPU; and the per-token-group activation quantisation that runs before each of them.

A block-fp8 checkpoint stores e4m3 weights with one float32 scale per 128 x 128 block; the engines quantise each
token's activations in groups of 128 (one float32 scale a group) right before the GEMM, which dequantises by block
inside its K loop:

    y [m, n] = sum over 128-groups g of (x8 [m, g] s_x [m, g]) (W8 [n, g]^T s_w [n / 128, g])

Implementations (column impl):
    scaled_mm_block   torch._scaled_mm (cuBLASLt), e4m3 x e4m3 -> bf16, scale_a 1 x 128 (float32 [m, k/128],
                      outer-dim-major: stride (1, m)), scale_b 128 x 128 (float32 [k/128, n/128]); the layout torch
                      accepted is in the metadata and each row's note. cuBLASLt refuses (NOT_SUPPORTED) a scale_a
                      stride that is not 16-byte aligned, so m not a multiple of 4 runs padded to one (the note
                      says so; the time is the padded GEMM's, as an engine padding its batch would run it). Where
                      k / 128 is not a multiple of 4 torch accepts only the unpadded ('plain') weight-scale layout,
                      and cuBLASLt computed wrong results with it on the H200 (2026-12-02: rel_error 0.38-0.70):
                      those rows' times are of no right GEMM (rooflab.fit.gemm_fit leaves them out)
    scaled_mm         torch._scaled_mm with per-tensor scales on the same shape (the control: the per-tensor fit's
                      implementation, measured again beside the block rows)
    triton_block      our own Triton kernel of the engines' w8a8 block-fp8 matmul algorithm (vLLM's and SGLang's
                      w8a8_block_fp8_matmul: one program a [BM, BN] tile, per 128-wide K step a dot of the fp8 tiles
                      times the [BM] activation group scales and the tile's weight block scale), at their default
                      config (BM 64, BN 128, BK 128, GROUP_M 32, 4 warps, 2 stages); written here, no code copied
    act_quant         (second CSV) our Triton kernel of per-token-group quantisation (vLLM's
                      per_token_group_quant_fp8: one program a 128-element group, amax / 448 the scale, scales
                      written column-major as scale_a above): bf16 [m, k] -> e4m3 [m, k] + float32 [m, k/128]

Shapes: DeepSeek-V3's dense projections at TP 1 and TP 8 (n, k): q_a (1536, 7168) and kv_a (576, 7168),
replicated; q_b (24576, 1536); kv_b (32768, 512); o (7168, 16384); the first 3 layers' MLP gate_up (36864, 7168) and
down (7168, 18432); the shared expert's gate_up (4096, 7168) and down (7168, 2048); n or k split over 8 ranks
(column / row parallel) at TP 8; then benchmarks/dense_fp8_gemm.py's shapes (shapes()); m as there (1 .. 8192).

Timing as benchmarks/dense_fp8_gemm.py: CALLS launches a graph (more where more weight copies are needed, so that
4 x L2 of other weights pass between two reads of one copy), WARM replays, REPEATS timed replays with CUDA events;
seconds = median replay / launches. Inputs random (never zeros): fp8 operands from random normals, scales random in
[0.5, 1.5) / 64; each shape's block result checked once against a float32 reference of the dequantised operands
(rel_error); outputs poisoned with NaN before the check.

    python3 benchmarks/dense_fp8_block_gemm.py --out DIR [--commit SHA] [--deadline-s S]
    # DIR/h200-dense-fp8-block-gemm.csv (benchmarks/moe_gemm.py's columns, one group) and DIR/h200-fp8-act-quant.csv
"""

from __future__ import annotations

import argparse
import datetime
import math
import subprocess
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

from dense_fp8_gemm import CALLS, COLUMNS, L2_BYTES, M, REPEATS, WARM, shapes as llama_shapes
from h200_early2025_decode_kernels import timed

GROUP = 128
MAX_CALLS = 64
QUANT_COLUMNS = ("kernel", "impl", "m", "k", "bytes", "seconds", "seconds_min", "repeats", "tb_per_s", "rel_error",
                 "note")
TRITON_CFG = dict(BM=64, BN=128, BK=128, GROUP_M=32, num_warps=4, num_stages=2)


def deepseek_shapes() -> list[tuple[str, str, str, int, int]]:
    """(model, shard, gemm, n, k) of DeepSeek-V3's dense projections at TP 1 and TP 8."""
    col = {"q_b": (24576, 1536), "kv_b": (32768, 512), "gate_up": (36864, 7168), "shared_gate_up": (4096, 7168)}
    row = {"o": (7168, 16384), "down": (7168, 18432), "shared_down": (7168, 2048)}
    rep = {"q_a": (1536, 7168), "kv_a": (576, 7168)}
    out = []
    for tp in (1, 8):
        for g, (n, k) in rep.items():
            if tp == 1:
                out.append(("deepseek-v3", "tp1", g, n, k))
        for g, (n, k) in col.items():
            out.append(("deepseek-v3", f"tp{tp}", g, n // tp, k))
        for g, (n, k) in row.items():
            out.append(("deepseek-v3", f"tp{tp}", g, n, k // tp))
    return out


@triton.jit
def block_fp8_mm(a, a_s, b, b_s, c, m, n, k, s_am, s_asm, s_ask, s_bn, s_bsn, s_bsk, s_cm,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """c[m, n] = sum_k a[m, k] s_a[m, k // 128] b[n, k] s_b[n // 128, k // 128] (BK = 128, one scale group)."""
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(m, BM)
    blocks_n = tl.cdiv(n, BN)
    in_group = GROUP_M * blocks_n
    first_m = (pid // in_group) * GROUP_M
    size_m = tl.minimum(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    rows = (pid_m * BM + tl.arange(0, BM)).to(tl.int64)
    cols = (pid_n * BN + tl.arange(0, BN)).to(tl.int64)
    rm = rows < m
    cn = cols < n
    ks = tl.arange(0, BK)
    a_ptr = a + rows[:, None] * s_am + ks[None, :]
    b_ptr = b + cols[None, :] * s_bn + ks[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for step in range(0, tl.cdiv(k, BK)):
        x = tl.load(a_ptr, mask=rm[:, None], other=0.0)
        y = tl.load(b_ptr, mask=cn[None, :], other=0.0)
        sx = tl.load(a_s + rows * s_asm + step * s_ask, mask=rm, other=0.0)
        sy = tl.load(b_s + (cols // BK) * s_bsn + step * s_bsk, mask=cn, other=0.0)
        acc += tl.dot(x, y) * sx[:, None] * sy[None, :]
        a_ptr += BK
        b_ptr += BK
    tl.store(c + rows[:, None] * s_cm + cols[None, :], acc.to(tl.bfloat16), mask=rm[:, None] & cn[None, :])


@triton.jit
def group_quant(x, q, s, m, k, s_xm, s_qm, s_sm, s_sg, G: tl.constexpr):
    """One 128-element group of a row: scale = max(amax, 1e-10) / 448; q = clamp(x / scale) in e4m3."""
    pid = tl.program_id(0)
    groups = k // G
    r = (pid // groups).to(tl.int64)
    g = pid % groups
    offs = g * G + tl.arange(0, G)
    v = tl.load(x + r * s_xm + offs).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(v)), 1e-10) / 448.0
    tl.store(q + r * s_qm + offs, tl.clamp(v / scale, -448.0, 448.0).to(q.dtype.element_ty))
    tl.store(s + r * s_sm + g * s_sg, scale)


def col_major(rows: int, cols: int, dev) -> torch.Tensor:
    """A float32 [rows, cols] with stride (1, rows): random scales in [0.5, 1.5) / 64."""
    return ((torch.rand(cols, rows, device=dev) + 0.5) / 64).t()


def weight_scales(nb: int, kb: int, layout: str, dev) -> torch.Tensor:
    """scale_b [kb, nb] for torch._scaled_mm's 128 x 128 weight scaling; scale_b.t() [nb, kb] row-major with its row
    stride padded to 4 ('padded') or not ('plain'), or scale_b itself contiguous ('kn')."""
    vals = (torch.rand(nb, kb, device=dev) + 0.5) / 64
    if layout == "padded":
        buf = torch.zeros(nb, -(-kb // 4) * 4, device=dev)
        buf[:, :kb] = vals
        return buf[:, :kb].t()
    if layout == "plain":
        return vals.t()
    return vals.t().contiguous()


def dequant(w8: torch.Tensor, s: torch.Tensor, rows_a_group: int) -> torch.Tensor:
    """float32 values of an fp8 [r, k] with scales [ceil(r / rows_a_group), k / 128] (rows_a_group 1 or 128)."""
    r, k = w8.shape
    full = s.repeat_interleave(rows_a_group, 0)[:r].repeat_interleave(GROUP, 1)[:, :k]
    return w8.float() * full


def relerr(out: torch.Tensor, ref: torch.Tensor) -> str:
    rel = ((out.float() - ref).norm() / ref.norm()).item()
    if not math.isfinite(rel):
        raise RuntimeError("output not fully written (NaN)")
    return f"{rel:.2e}"


def smi(fields: str) -> str:
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout.strip()
    except Exception as exc:                                   # noqa: BLE001 (recorded, not fatal)
        return f"failed: {exc}"


def gemm_rows(shape, f8, errors, layouts) -> list[dict]:
    """Every impl at every m of one (model, shard, gemm, n, k)."""
    model, shard, gname, n, k = shape
    dev = "cuda"
    nb, kb = -(-n // GROUP), -(-k // GROUP)
    copies = max(1, min(MAX_CALLS, math.ceil(4 * L2_BYTES / (n * k))))
    calls = max(CALLS, copies)
    ws = [(torch.randn(n, k, device=dev) * 0.5).to(f8) for _ in range(copies)]
    wsc_t = [((torch.rand(nb, kb, device=dev) + 0.5) / 64).contiguous() for _ in range(copies)]   # triton [nb, kb]
    one = torch.ones((), device=dev, dtype=torch.float32)
    layout = layouts.get(kb % 4 == 0)
    sbs = None
    rows, checked = [], set()
    for m in M:
        x8 = (torch.randn(m, k, device=dev) * 0.5).to(f8)
        sa = col_major(m, kb, dev)
        out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        base = dict(model=model, shard=shard, gemm=gname, tokens=m, pairs=m, experts_local=1, experts_touched=1,
                    max_pairs_per_expert=m, n=n, k=k, flops=2 * m * n * k)
        mp = -(-m // 4) * 4                                    # cuBLASLt wants 16-byte scale_a strides: m % 4 == 0
        xp = x8 if mp == m else torch.cat([x8, x8.new_zeros(mp - m, k)])
        sap = sa if mp == m else col_major(mp, kb, dev)
        if layout is None:                                     # find the weight-scale layout torch accepts here
            for cand in ("padded", "plain", "kn"):
                try:
                    torch._scaled_mm(xp, ws[0].t(), sap, weight_scales(nb, kb, cand, dev), out_dtype=torch.bfloat16)
                    torch.cuda.synchronize()
                    layout = layouts[kb % 4 == 0] = cand
                    break
                except Exception as exc:                        # noqa: BLE001 (recorded; tried again at the next m)
                    errors[f"layout {cand} kb%4={kb % 4} m={mp}"] = str(exc).splitlines()[0][:160]
        if sbs is None and layout is not None:
            sbs = [weight_scales(nb, kb, layout, dev) for _ in range(copies)]

        def block(i, xp=xp, sap=sap, m=m):
            return torch._scaled_mm(xp, ws[i % copies].t(), sap, sbs[i % copies], out_dtype=torch.bfloat16)[:m]

        def tensor(i, x8=x8):
            return torch._scaled_mm(x8, ws[i % copies].t(), one, one, out_dtype=torch.bfloat16)

        def tri(i, x8=x8, sa=sa, out=out, m=m):
            b, bs = ws[i % copies], wsc_t[i % copies]
            cfg = TRITON_CFG
            grid = (triton.cdiv(m, cfg["BM"]) * triton.cdiv(n, cfg["BN"]),)
            block_fp8_mm[grid](x8, sa, b, bs, out, m, n, k, x8.stride(0), sa.stride(0), sa.stride(1), b.stride(0),
                               bs.stride(0), bs.stride(1), out.stride(0), BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"],
                               GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            return out

        for impl, fn in (("scaled_mm_block", block), ("scaled_mm", tensor), ("triton_block", tri)):
            key = f"{model} {shard} {gname} {impl}"
            if key in errors or (impl == "scaled_mm_block" and layout is None):
                continue
            rel, note = "", ""
            try:
                if impl != "scaled_mm" and (impl not in checked or m in (1, 8192)):
                    out.fill_(float("nan"))
                    got = fn(0)
                    if impl == "scaled_mm_block":
                        ref = dequant(xp, sap, 1)[:m] @ dequant(ws[0], sbs[0].t(), GROUP).t()
                    else:
                        ref = dequant(x8, sa, 1) @ dequant(ws[0], wsc_t[0], GROUP).t()
                    rel = relerr(got, ref)
                    checked.add(impl)
                med, mn = timed([lambda i=i, fn=fn: fn(i) for i in range(calls)])
            except Exception as exc:                            # noqa: BLE001 (recorded; the next variant runs)
                errors[key] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                torch.cuda.synchronize()
                continue
            scale_bytes = nb * kb * 4 if impl != "scaled_mm" else 0
            if impl == "scaled_mm_block":
                note = f"scale_b layout {layout}" + (f"; m padded to {mp} rows" if mp != m else "")
            elif impl == "triton_block":
                note = "BM 64 BN 128 BK 128 GROUP_M 32 warps 4 stages 2"
            rows.append(dict(base, impl=impl, dtype="fp8_e4m3", weight_bytes=n * k + scale_bytes,
                             seconds=f"{med:.4e}", seconds_min=f"{mn:.4e}", repeats=REPEATS,
                             tflop_per_s=f"{2 * m * n * k / med / 1e12:.1f}", rel_error=rel,
                             note=f"{note}; {copies} weight copies over {calls} launches".lstrip("; ")))
    return rows


def quant_rows(ks, f8, errors) -> list[dict]:
    """The per-token-group quantisation kernel at every m of each k."""
    dev = "cuda"
    rows = []
    for k in ks:
        for m in M:
            copies = max(1, min(MAX_CALLS, math.ceil(4 * L2_BYTES / (3 * m * k))))
            calls = max(CALLS, copies)
            xs = [torch.randn(m, k, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
            q = torch.empty(m, k, device=dev, dtype=f8)
            s = torch.empty(k // GROUP, m, device=dev).t()

            def launch(i):
                x = xs[i % copies]
                group_quant[(m * (k // GROUP),)](x, q, s, m, k, x.stride(0), q.stride(0), s.stride(0), s.stride(1),
                                                 G=GROUP, num_warps=1)
            try:
                s.fill_(float("nan"))
                launch(0)
                g = xs[0].float().view(m, k // GROUP, GROUP)
                ref_s = g.abs().amax(-1).clamp(min=1e-10) / 448.0
                rel = relerr(s, ref_s)
                back = (q.float().view(m, k // GROUP, GROUP) * s[..., None]).view(m, k)
                rel = f"{rel}/{relerr(back, xs[0].float())}"
                med, mn = timed([lambda i=i: launch(i) for i in range(calls)])
            except Exception as exc:                            # noqa: BLE001 (recorded)
                errors[f"act_quant {m}x{k}"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                torch.cuda.synchronize()
                continue
            nbytes = m * k * 2 + m * k + m * (k // GROUP) * 4
            rows.append(dict(kernel="act_quant", impl="triton_group_quant", m=m, k=k, bytes=nbytes,
                             seconds=f"{med:.4e}", seconds_min=f"{mn:.4e}", repeats=REPEATS,
                             tb_per_s=f"{nbytes / med / 1e12:.3f}", rel_error=rel,
                             note=f"rel_error scales/roundtrip; {copies} input copies over {calls} launches"))
    return rows


def write(path: Path, meta: dict, columns, rows) -> None:
    with open(path, "w") as fh:
        for key, value in meta.items():
            fh.write(f"# {key}: {value}\n")
        fh.write(",".join(columns) + "\n")
        for r in rows:
            fh.write(",".join(str(r.get(c, "")) for c in columns) + "\n")


def table(rows) -> None:
    index = {(r["model"], r["shard"], r["gemm"], r["tokens"], r["impl"]): r for r in rows}
    print(f"{'model':12} {'shard':5} {'gemm':14} {'m':>5}  {'blk TB/s':>8} {'pt TB/s':>8} {'tri TB/s':>8} "
          f"{'blk TF/s':>8} {'pt TF/s':>8} {'tri TF/s':>8}")
    seen = set()
    for (model, shard, gname, m, impl) in index:
        if m not in (1, 64, 8192) or (model, shard, gname, m) in seen:
            continue
        seen.add((model, shard, gname, m))
        cells, rates = [], []
        for other in ("scaled_mm_block", "scaled_mm", "triton_block"):
            o = index.get((model, shard, gname, m, other))
            cells.append(f"{o['weight_bytes'] / float(o['seconds']) / 1e12:.2f}" if o else "-")
            rates.append(o["tflop_per_s"] if o else "-")
        print(f"{model:12} {shard:5} {gname:14} {m:>5}  " + " ".join(f"{c:>8}" for c in cells) + " "
              + " ".join(f"{c:>8}" for c in rates))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--commit", default="")
    p.add_argument("--deadline-s", type=float, default=300.0)
    args = p.parse_args()
    start = time.time()
    torch.manual_seed(0)
    f8 = torch.float8_e4m3fn
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "device_name": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "cuda_runtime": torch.version.cuda,
            "git_commit": args.commit or "unknown", "command": " ".join(["python3", *sys.argv]),
            "calls_a_graph": f"{CALLS} (more where more weight copies are needed, up to {MAX_CALLS})",
            "warm_replays": WARM, "repeats": REPEATS,
            "scales": "scaled_mm_block: scale_a float32 [m, k/128] stride (1, m) (1 x 128), scale_b float32 "
                      "[k/128, n/128] (128 x 128); scaled_mm: tensorwise; triton_block: a_s as scale_a, "
                      "b_s [n/128, k/128] row-major",
            "driver_maxsm_maxmem_power": smi("driver_version,clocks.max.sm,clocks.max.mem,power.limit"),
            "clocks_sm_mem_at_start": smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")}
    errors: dict[str, str] = {}
    layouts: dict[bool, str] = {}
    rows, qrows = [], []
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ds = deepseek_shapes()
    for i, shape in enumerate(ds + llama_shapes()):
        if time.time() - start > args.deadline_s:
            errors["deadline"] = f"stopped before {shape[:3]}"
            break
        rows += gemm_rows(shape, f8, errors, layouts)
        torch.cuda.empty_cache()
        if i == len(ds) - 1:
            meta["clocks_sm_mem_after_deepseek"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
            qrows = quant_rows(sorted({k for *_, k in ds}), f8, errors)
            write(out / "h200-fp8-act-quant.csv", meta, QUANT_COLUMNS, qrows)
            write(out / "h200-dense-fp8-block-gemm.csv", meta, COLUMNS, rows)
    meta["clocks_sm_mem_at_end"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    meta["weight_scale_layout_kb_mult4_else"] = f"{layouts.get(True)} / {layouts.get(False)}"
    meta["wall_s"] = f"{time.time() - start:.1f}"
    for key, why in errors.items():
        meta[f"error {key}"] = why
    write(out / "h200-fp8-act-quant.csv", meta, QUANT_COLUMNS, qrows)
    write(out / "h200-dense-fp8-block-gemm.csv", meta, COLUMNS, rows)
    for key, value in meta.items():
        print(f"# {key}: {value}")
    for r in qrows:
        if r["m"] in (1, 64, 1024, 8192):
            print(f"act_quant m={r['m']:>5} k={r['k']:>5} {float(r['seconds']) * 1e6:8.2f} us {r['tb_per_s']} TB/s")
    table(rows)


if __name__ == "__main__":
    main()

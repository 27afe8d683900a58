"""The GEMM family (`rooflab bench --distributed`'s gemm section, one GPU): torch's cuBLAS on the projection and MLP
shapes of Llama-3-8B, GEMV-shaped (m = 1 .. 256 rows, decode) to large (m = 4096, prefill), bf16 and fp16.

    y [m, n] = x [m, k] W^T  with  (n, k) = qkv (6144, 4096), o (4096, 4096), gate_up (28672, 4096),
                                            down (4096, 14336), lm_head (128256, 4096)

Each shape is timed as CUDA-graph replays of `calls` launches that rotate over enough weight copies to
stream past the L2 (a decode step reads every weight from HBM), as an engine's captured step runs them.
Beside them, the small kernels a torch decode layer launches (RMSNorm, residual add, SiLU x up, the
q copy and the KV append) are timed the same way and written as notes: the step model prices them.

The shapes are the model's (ops.MODEL, models/llama-3-8b.yaml). The fitted model of the family is
rooflab.fit.gemm_fit's.
"""

from __future__ import annotations

import math

from ...fit.records import Measurement
from ...specs import ModelSpec
from ...vocab import Kernel
from .context import Ctx, free_memory, time_best
from .ops import MODEL


def model_shapes(model: ModelSpec) -> dict[str, tuple[int, int]]:
    """(n, k) of each projection and MLP GEMM of a dense decoder layer, and of the logits."""
    h, d = model.hidden_size, model.head_dim
    return {"qkv": ((model.num_qo_heads + 2 * model.num_kv_heads) * d, h), "o": (h, model.num_qo_heads * d),
            "gate_up": (2 * model.ffn_size, h), "down": (h, model.ffn_size), "lm_head": (model.vocab_size, h)}


SHAPES = model_shapes(MODEL)
TINY_SHAPES = {"qkv": (96, 64), "down": (64, 128)}
M_BF16 = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)
M_FP16 = (1, 8, 64, 256, 4096)
M_TINY = (1, 4, 16)
#: Weight copies rotate so one replay streams at least this many bytes (past the 60 MiB L2).
MIN_STREAM_BYTES = 512 << 20
SMALL_BATCHES = (1, 8, 64)


def section_gemm(ctx: Ctx) -> None:
    import torch

    plan = [("bf16", M_BF16), ("fp16", M_FP16)] if ctx.cuda else [("fp32", M_TINY)]
    shapes = SHAPES if ctx.cuda else TINY_SHAPES
    for dtype_name, ms in plan:
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
        for label, (n, k) in shapes.items():
            _shape(ctx, dtype, dtype_name, label, n, k, ms)
            free_memory(ctx)
    _small_ops(ctx)


def _shape(ctx: Ctx, dtype, dtype_name: str, label: str, n: int, k: int, ms: tuple[int, ...]) -> None:
    import torch

    dev = ctx.device
    copies = max(1, min(8, math.ceil(MIN_STREAM_BYTES / (n * k * 2)))) if ctx.cuda else 1
    weights = [torch.randn((n, k), device=dev, dtype=dtype) / math.sqrt(k) for _ in range(copies)]
    for m in ms:
        if not ctx.alone_in_time(2.0):
            ctx.note("skipped", f"gemm {dtype_name} {label} m {m}: deadline")
            continue
        x = torch.randn((m, k), device=dev, dtype=dtype)
        y = torch.empty((m, n), device=dev, dtype=dtype)

        def fn(i: int, x=x, y=y) -> None:
            torch.mm(x, weights[i % copies].t(), out=y)

        estimate = max(2 * m * n * k / 700e12, (n * k + m * k + m * n) * 2 / 4e12) + 3e-6
        calls = max(copies, min(40, int(0.01 / estimate))) if ctx.cuda else 2
        t = time_best(ctx, fn, calls, 5, together=False)
        ctx.emit(Measurement(kernel=Kernel.gemm, impl="torch_cublas" if ctx.cuda else "torch_cpu", dtype=dtype_name,
                             time_s=t.median_s, time_p10_s=t.p10_s, time_p90_s=t.p90_s, repeats=t.repeats,
                             m=m, n=n, k=k, batch=m, timing=t.timing, world_size=1))
        ctx.log(f"gemm {dtype_name} {label:7s} m {m:5d} n {n:6d} k {k:5d}: {t.median_s * 1e6:9.1f} us "
                f"({(n * k * 2) / t.median_s / 1e12:.2f} TB/s of weight, {2 * m * n * k / t.median_s / 1e12:.0f} TFLOP/s)")


def _small_ops(ctx: Ctx) -> None:
    """The per-call time of each small kernel of a torch decode layer, captured 50 to a graph."""
    import torch
    import torch.nn.functional as F

    m = MODEL
    hidden, ffn, heads, kv_heads, d = ((m.hidden_size, m.ffn_size, m.num_qo_heads, m.num_kv_heads, m.head_dim)
                                       if ctx.cuda else (64, 128, 4, 2, 16))
    dtype = torch.float16 if ctx.cuda else torch.float32
    dev = ctx.device
    for b in SMALL_BATCHES:
        x = torch.randn((b, hidden), device=dev, dtype=dtype)
        w = torch.ones(hidden, device=dev, dtype=dtype)
        gu = torch.randn((b, 2 * ffn), device=dev, dtype=dtype)
        qkv = torch.randn((b, (heads + 2 * kv_heads) * d), device=dev, dtype=dtype)
        q = torch.empty((b, heads, d), device=dev, dtype=dtype)
        cache = torch.zeros((b * 4, kv_heads, 16, d), device=dev, dtype=dtype)
        pages = torch.arange(b, device=dev) * 4 + 3
        ops = {
            "rms_norm": lambda i: F.rms_norm(x, (hidden,), w, 1e-5),
            "residual_add": lambda i: x + x,
            "silu_mul": lambda i: F.silu(gu[:, :ffn]) * gu[:, ffn:],
            "q_copy": lambda i: q.copy_(qkv[:, :heads * d].view(b, heads, d)),
            "kv_append": lambda i: cache.__setitem__((pages, slice(None), 5),
                                                     qkv[:, heads * d:(heads + kv_heads) * d].view(b, kv_heads, d)),
        }
        for name, fn in ops.items():
            t = time_best(ctx, fn, 50 if ctx.cuda else 2, 5, together=False)
            ctx.note("small_op", {"op": name, "batch": b, "seconds": t.median_s, "timing": t.timing})
            ctx.log(f"small op {name:12s} batch {b:3d}: {t.median_s * 1e6:7.2f} us")
        free_memory(ctx)

"""A whole decode step of Llama-3-8B on one GPU, as an engine runs it: one CUDA graph per (batch, context).

The layer is written in torch with rooflab's paged decode for attention (CuPy on torch's stream), random
fp16 weights (the timing does not depend on their values), and per layer, in launch order:

    rms_norm -> qkv GEMM -> q copy -> K append -> V append -> paged decode (split-KV + merge where rooflab
    recommends splits) -> o GEMM -> residual add -> rms_norm -> gate_up GEMM -> silu, mul -> down GEMM
    -> residual add

then the final rms_norm and the lm_head GEMM (logits of every sequence). RoPE is left out (an engine fuses
it into the q/k path; rooflab.step counts the same kernels as this layer). Where 32 layers' KV caches do not
fit beside the weights (batch 64 x 32k: 256 GiB) every layer reads one shared cache: the bytes each layer
streams from HBM are the same, only the memory held is not (the measurement notes which cases share).
"""

from __future__ import annotations

import math

from ..vocab import Kernel
from .dist_attention import PAGE, ops_for, recommended_splits
from .dist_worker import Ctx, free_memory, time_best
from .records import Measurement

FULL = dict(layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, vocab=128256)
TINY = dict(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=256)
CONFIGS = tuple((b, c) for b in (1, 8, 64) for c in (1024, 8192, 32768))
TINY_CONFIGS = ((1, 32), (2, 64))
#: KV caches larger than this in total share one buffer across layers (weights and workspace need the rest).
MAX_KV_BYTES = 90 << 30


def section_step(ctx: Ctx) -> None:
    import torch

    dims = FULL if ctx.cuda else TINY
    dtype = torch.float16 if ctx.cuda else torch.float32
    weights = _weights(ctx, dims, dtype)
    for batch, context in (CONFIGS if ctx.cuda else TINY_CONFIGS):
        if not ctx.alone_in_time(5.0):
            ctx.note("skipped", f"step {batch}x{context}: deadline")
            continue
        _case(ctx, dims, dtype, weights, batch, context)
        free_memory(ctx)


def _weights(ctx: Ctx, dims: dict, dtype) -> dict:
    import torch

    dev, h, d = ctx.device, dims["hidden"], dims["head_dim"]
    qkv = (dims["heads"] + 2 * dims["kv_heads"]) * d

    def w(rows: int, cols: int):
        return torch.randn((rows, cols), device=dev, dtype=dtype) / math.sqrt(cols)

    layers = [dict(qkv=w(qkv, h), o=w(h, dims["heads"] * d), gate_up=w(2 * dims["ffn"], h), down=w(h, dims["ffn"]),
                   norm1=torch.ones(h, device=dev, dtype=dtype), norm2=torch.ones(h, device=dev, dtype=dtype))
              for _ in range(dims["layers"])]
    return dict(layers=layers, norm=torch.ones(h, device=dev, dtype=dtype), lm_head=w(dims["vocab"], h))


def _case(ctx: Ctx, dims: dict, dtype, weights: dict, batch: int, context: int) -> None:
    import torch
    import torch.nn.functional as F

    dev, ops = ctx.device, ops_for(ctx)
    h, heads, kv_heads, d, ffn = dims["hidden"], dims["heads"], dims["kv_heads"], dims["head_dim"], dims["ffn"]
    pages = math.ceil(context / PAGE)
    layer_kv = 2 * batch * pages * PAGE * kv_heads * d * (2 if ctx.cuda else 4)
    shared = layer_kv * dims["layers"] > MAX_KV_BYTES
    caches = [(torch.randn((batch * pages, kv_heads, PAGE, d), device=dev, dtype=dtype),
               torch.randn((batch * pages, kv_heads, PAGE, d), device=dev, dtype=dtype))
              for _ in range(1 if shared else dims["layers"])]
    table = torch.arange(batch * pages, device=dev, dtype=torch.int32).view(batch, pages)
    lens = torch.full((batch,), context, device=dev, dtype=torch.int32)
    last_page = table[:, (context - 1) // PAGE].long()
    slot = (context - 1) % PAGE
    splits = recommended_splits(ctx, batch, context, kv_heads, heads) if ctx.cuda else 1
    f32 = dict(device=dev, dtype=torch.float32)
    scratch = (torch.empty((splits, batch, heads, d), **f32), torch.empty((splits, batch, heads), **f32))
    x0 = torch.randn((batch, h), device=dev, dtype=dtype)
    qkv = torch.empty((batch, (heads + 2 * kv_heads) * d), device=dev, dtype=dtype)
    q = torch.empty((batch, heads, d), device=dev, dtype=dtype)
    o = torch.empty((batch, heads, d), device=dev, dtype=dtype)
    attn, mlp = torch.empty((batch, h), device=dev, dtype=dtype), torch.empty((batch, h), device=dev, dtype=dtype)
    gu = torch.empty((batch, 2 * ffn), device=dev, dtype=dtype)
    logits = torch.empty((batch, dims["vocab"]), device=dev, dtype=dtype)
    hq, hk = heads * d, kv_heads * d

    def step(i: int) -> None:
        x = x0
        for n, w in enumerate(weights["layers"]):
            k_cache, v_cache = caches[0 if shared else n]
            torch.mm(F.rms_norm(x, (h,), w["norm1"], 1e-5), w["qkv"].t(), out=qkv)
            q.copy_(qkv[:, :hq].view(batch, heads, d))
            k_cache[last_page, :, slot] = qkv[:, hq:hq + hk].view(batch, kv_heads, d)
            v_cache[last_page, :, slot] = qkv[:, hq + hk:].view(batch, kv_heads, d)
            ops.decode(q, k_cache, v_cache, table, lens, splits, o, scratch)
            torch.mm(o.view(batch, hq), w["o"].t(), out=attn)
            x = x + attn
            torch.mm(F.rms_norm(x, (h,), w["norm2"], 1e-5), w["gate_up"].t(), out=gu)
            torch.mm(F.silu(gu[:, :ffn]) * gu[:, ffn:], w["down"].t(), out=mlp)
            x = x + mlp
        torch.mm(F.rms_norm(x, (h,), weights["norm"], 1e-5), weights["lm_head"].t(), out=logits)

    t = time_best(ctx, step, 1, 8 if ctx.cuda else 2, together=False)
    step(0)
    ctx.sync()
    finite = bool(torch.isfinite(logits).all())
    ctx.note("step_case", {"batch": batch, "context": context, "splits": splits, "kv_shared_across_layers": shared,
                           "logits_finite": finite})
    ctx.log(f"step llama-3-8b batch {batch} context {context}: {t.median_s * 1e3:.3f} ms ({splits} splits"
            f"{', KV shared across layers' if shared else ''}, logits finite: {finite})")
    ctx.emit(Measurement(kernel=Kernel.decode_step, impl="torch_graph" if ctx.cuda else "torch_cpu",
                         dtype="fp16" if ctx.cuda else "fp32", time_s=t.median_s, time_p10_s=t.p10_s,
                         time_p90_s=t.p90_s, repeats=t.repeats, batch=batch, num_qo_heads=heads,
                         num_kv_heads=kv_heads, head_dim=d, context_lens=f"{context}x{batch}", page_size=PAGE,
                         splits=splits, world_size=1, timing=t.timing))

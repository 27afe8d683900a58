"""A whole decode step on one GPU, as an engine runs it: one CUDA graph per (batch, context), or eagerly.

The layer is written in torch with rooflab's paged decode for attention (CuPy on torch's stream), random
weights (the timing does not depend on their values; random routing spreads a MoE layer's tokens over its
experts as the step model's uniform routing assumes), and per layer, in launch order:

    rms_norm -> qkv GEMM -> q copy (Qwen3: q and k RMSNorm per head) -> K append -> V append -> paged decode
    (split-KV + merge where rooflab recommends splits) -> o GEMM -> residual add -> rms_norm -> MLP -> residual add

    MLP, dense:  gate_up GEMM -> silu, mul -> down GEMM
    MLP, MoE:    router GEMM -> softmax, top-k, renormalise, sort the token-expert pairs by expert, count them,
                 gather the rows -> grouped gate_up GEMM (torch._grouped_mm: each expert's weight read once for
                 its rows) -> silu, mul -> grouped down GEMM -> weight by the router and add into the tokens

then the final rms_norm and the lm_head GEMM (logits of every sequence). RoPE is left out (an engine fuses
it into the q/k path; rooflab.step counts the same kernels as this layer). Where the layers' KV caches do not
fit beside the weights (batch 64 x 32k for Llama-3-8B: 256 GiB) every layer reads one shared cache: the bytes each
layer streams from HBM are the same, only the memory held is not (the measurement notes which cases share).

Timings: the whole step captured in one CUDA graph and replayed (impl torch_graph); the whole step issued eagerly
(impl torch_eager: CUDA events around the step, host launches included); and, eagerly, CUDA events at every
boundary between the step's components (COMPONENTS), each component's time summed over the layers (noted as
`components`: the time from one boundary event to the next, so the host's issue time between kernels is charged
to the component whose kernels it issues, and the components add up to the instrumented step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

from ...fit.records import Measurement
from ...load import load_model
from ...specs import ModelSpec
from ...vocab import Kernel
from .context import Ctx, Times, free_memory, time_best, time_eager
from .ops import PAGE, ops_for, recommended_splits


@dataclass(frozen=True)
class StepModel:
    """The shape of the layer stack the step runs (a dense or MoE decoder; the facts of the model's config.json)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int                      # dense MLP width, or one expert's width
    vocab: int
    experts: int = 0
    top_k: int = 0
    qk_norm: bool = False         # Qwen3: RMSNorm over each q and k head before attention

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    def tiny(self) -> "StepModel":
        """The same structure at CPU size (two layers, small widths)."""
        return replace(self, layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=32 if self.is_moe else 128,
                       vocab=256, experts=8 if self.is_moe else 0, top_k=2 if self.is_moe else 0)

    @classmethod
    def of(cls, spec: ModelSpec, qk_norm: bool = False) -> "StepModel":
        """The layer stack of a bundled model's spec (models/<name>.yaml); `qk_norm`: a fact of the architecture
        the spec does not carry."""
        moe = spec.num_experts > 1
        return cls(spec.name, spec.num_layers, spec.hidden_size, spec.num_qo_heads, spec.num_kv_heads, spec.head_dim,
                   spec.ffn_size, spec.vocab_size, experts=spec.num_experts if moe else 0,
                   top_k=spec.num_experts_per_token if moe else 0, qk_norm=qk_norm)


#: Llama-3-8B (models/llama-3-8b.yaml).
LLAMA_3_8B = StepModel.of(load_model("llama-3-8b"))
#: Qwen3-30B-A3B (models/qwen3-30b-a3b.yaml): 48 layers, every one a MoE of 128 experts of width 768 (8 a token,
#: renormalised, no shared expert), and q/k RMSNorm (Qwen3's architecture).
QWEN3_30B_A3B = StepModel.of(load_model("qwen3-30b-a3b"), qk_norm=True)
MODELS = {m.name: m for m in (LLAMA_3_8B, QWEN3_30B_A3B)}
CONFIGS = tuple((b, c) for b in (1, 8, 64) for c in (1024, 8192, 32768))
#: Issue 31 item 4: both models, graph and eager, at batch 1 / 8 / 64 and context 1k / 8k.
MODEL_CONFIGS = tuple((b, c) for b in (1, 8, 64) for c in (1024, 8192))
TINY_CONFIGS = ((1, 32), (2, 64))
#: KV caches larger than this in total share one buffer across layers (weights and workspace need the rest).
MAX_KV_BYTES = 90 << 30
#: The components the eager timing splits a step into, as rooflab.step's rows name them: the attention
#: projections, attention (decode and merge), the MLP's GEMMs (a MoE layer's router and grouped GEMMs), a MoE
#: layer's routing (softmax, top-k, sort, count, gather, weighted scatter-add: no row of the step model), the
#: norms and elementwise kernels (the final norm too), and the logits GEMM.
COMPONENTS = ("projections", "attention", "mlp", "moe_routing", "elementwise", "logits")


def section_step(ctx: Ctx) -> None:
    """The distributed run's step section: Llama-3-8B in fp16, CUDA graphs, CONFIGS."""
    model = LLAMA_3_8B if ctx.cuda else LLAMA_3_8B.tiny()
    run_model(ctx, model, CONFIGS if ctx.cuda else TINY_CONFIGS, "fp16", eager=False)


def section_models(ctx: Ctx, models=(LLAMA_3_8B, QWEN3_30B_A3B), configs=MODEL_CONFIGS, dtype: str = "bf16") -> None:
    """Issue 31's steps: each model, graph and eager (with the per-component split), at `configs`."""
    for model in models:
        run_model(ctx, model if ctx.cuda else model.tiny(), configs if ctx.cuda else TINY_CONFIGS, dtype, eager=True)


def run_model(ctx: Ctx, model: StepModel, configs, dtype_name: str, eager: bool) -> None:
    import torch

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype_name] if ctx.cuda else torch.float32
    weights = _weights(ctx, model, dtype)
    for batch, context in configs:
        if not ctx.alone_in_time(5.0):
            ctx.note("skipped", f"step {model.name} {batch}x{context}: deadline")
            continue
        try:
            _case(ctx, model, dtype, weights, batch, context, eager)
        except Exception as exc:                     # one case's failure (memory, capture) leaves the others
            ctx.log(f"step {model.name} {batch}x{context} failed: {type(exc).__name__}: {str(exc)[:300]}")
            ctx.note("failed", f"step {model.name} {batch}x{context}: {type(exc).__name__}: {str(exc)[:300]}")
        free_memory(ctx)
    weights.clear()
    free_memory(ctx)


def _weights(ctx: Ctx, model: StepModel, dtype) -> dict:
    import torch

    dev, h, d = ctx.device, model.hidden, model.head_dim
    qkv = (model.heads + 2 * model.kv_heads) * d

    def w(*shape: int):
        return torch.randn(shape, device=dev, dtype=dtype) / math.sqrt(shape[-1])

    def ones(n: int):
        return torch.ones(n, device=dev, dtype=dtype)

    layers = []
    for _ in range(model.layers):
        layer = dict(qkv=w(qkv, h), o=w(h, model.heads * d), norm1=ones(h), norm2=ones(h))
        if model.is_moe:        # experts stored [E, out, in], as checkpoints ship them; the GEMMs read them transposed
            layer.update(router=w(model.experts, h), gate_up=w(model.experts, 2 * model.ffn, h),
                         down=w(model.experts, h, model.ffn))
        else:
            layer.update(gate_up=w(2 * model.ffn, h), down=w(h, model.ffn))
        if model.qk_norm:
            layer.update(q_norm=ones(d), k_norm=ones(d))
        layers.append(layer)
    return dict(layers=layers, norm=ones(h), lm_head=w(model.vocab, h))


def grouped_mm(rows, weight_t, offsets):
    """rows [M, K] sorted by expert, weight_t [E, K, N] (a transposed view), offsets int32 [E] (cumulative row
    counts) -> [M, N]: torch._grouped_mm on a GPU (one launch, each expert's weight read once), a loop on CPU."""
    import torch

    if rows.is_cuda:
        return torch._grouped_mm(rows, weight_t, offs=offsets)
    out, start = rows.new_empty((rows.shape[0], weight_t.shape[-1])), 0
    for e, end in enumerate(offsets.tolist()):
        out[start:end] = rows[start:end] @ weight_t[e]
        start = end
    return out


def _moe(model: StepModel, x, w: dict, mark: Callable[[str], None], out, bufs: dict):
    """One MoE layer's MLP on the normalised rows x [B, hidden] into out [B, hidden] (the module docstring)."""
    import torch
    import torch.nn.functional as F

    k, f = model.top_k, model.ffn
    mark("mlp")
    torch.mm(x, w["router"].t(), out=bufs["router"])
    mark("moe_routing")
    probs = torch.softmax(bufs["router"].float(), -1)
    top_p, top_e = torch.topk(probs, k, -1)
    top_p = top_p / top_p.sum(-1, keepdim=True)                         # Qwen3: norm_topk_prob
    flat = top_e.view(-1)
    order = torch.argsort(flat, stable=True)
    counts = bufs["counts"]
    counts.zero_()
    counts.scatter_add_(0, flat, bufs["ones"])
    offsets = torch.cumsum(counts, 0, dtype=torch.int32)
    token = torch.div(order, k, rounding_mode="floor")
    rows, gate = x[token], top_p.view(-1)[order].to(x.dtype)
    mark("mlp")
    h1 = grouped_mm(rows, w["gate_up"].transpose(-2, -1), offsets)
    mark("elementwise")
    act = F.silu(h1[:, :f]) * h1[:, f:]
    mark("mlp")
    h2 = grouped_mm(act, w["down"].transpose(-2, -1), offsets)
    mark("moe_routing")
    out.zero_()
    out.index_add_(0, token, h2 * gate[:, None])


def _moe_check(model: StepModel, x, w: dict) -> float:
    """Relative error of _moe against a per-token loop over its experts in fp32 (a few rows)."""
    import torch
    import torch.nn.functional as F

    b = x.shape[0]
    bufs = dict(router=x.new_empty((b, model.experts)), counts=torch.zeros(model.experts, dtype=torch.int64,
                                                                             device=x.device),
                ones=torch.ones(b * model.top_k, dtype=torch.int64, device=x.device))
    got = torch.empty_like(x)
    _moe(model, x, w, lambda name: None, got, bufs)
    probs = torch.softmax(x.float() @ w["router"].float().t(), -1)
    top_p, top_e = torch.topk(probs, model.top_k, -1)
    top_p = top_p / top_p.sum(-1, keepdim=True)
    ref = torch.zeros_like(x, dtype=torch.float32)
    for t in range(b):
        for p, e in zip(top_p[t].tolist(), top_e[t].tolist()):
            h1 = x[t].float() @ w["gate_up"][e].float().t()
            ref[t] += p * ((F.silu(h1[:model.ffn]) * h1[model.ffn:]) @ w["down"][e].float().t())
    return float(torch.linalg.vector_norm(got.float() - ref) / torch.linalg.vector_norm(ref))


def _case(ctx: Ctx, model: StepModel, dtype, weights: dict, batch: int, context: int, eager: bool) -> None:
    import torch
    import torch.nn.functional as F

    dev, ops = ctx.device, ops_for(ctx)
    h, heads, kv_heads, d, ffn = model.hidden, model.heads, model.kv_heads, model.head_dim, model.ffn
    pages = math.ceil(context / PAGE)
    layer_kv = 2 * batch * pages * PAGE * kv_heads * d * torch.finfo(dtype).bits // 8
    shared = layer_kv * model.layers > MAX_KV_BYTES
    caches = [(torch.randn((batch * pages, kv_heads, PAGE, d), device=dev, dtype=dtype),
               torch.randn((batch * pages, kv_heads, PAGE, d), device=dev, dtype=dtype))
              for _ in range(1 if shared else model.layers)]
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
    gu = None if model.is_moe else torch.empty((batch, 2 * ffn), device=dev, dtype=dtype)
    moe_bufs = dict(router=torch.empty((batch, model.experts), device=dev, dtype=dtype),
                    counts=torch.zeros(model.experts, dtype=torch.int64, device=dev),
                    ones=torch.ones(batch * model.top_k, dtype=torch.int64, device=dev)) if model.is_moe else {}
    logits = torch.empty((batch, model.vocab), device=dev, dtype=dtype)
    hq, hk = heads * d, kv_heads * d

    def step(i: int, mark: Callable[[str], None] = lambda name: None) -> None:
        x = x0
        for n, w in enumerate(weights["layers"]):
            k_cache, v_cache = caches[0 if shared else n]
            mark("elementwise")
            xn = F.rms_norm(x, (h,), w["norm1"], 1e-5)
            mark("projections")
            torch.mm(xn, w["qkv"].t(), out=qkv)
            mark("elementwise")
            k_new = qkv[:, hq:hq + hk].view(batch, kv_heads, d)
            if model.qk_norm:
                q.copy_(F.rms_norm(qkv[:, :hq].view(batch, heads, d), (d,), w["q_norm"], 1e-6))
                k_new = F.rms_norm(k_new, (d,), w["k_norm"], 1e-6)
            else:
                q.copy_(qkv[:, :hq].view(batch, heads, d))
            k_cache[last_page, :, slot] = k_new
            v_cache[last_page, :, slot] = qkv[:, hq + hk:].view(batch, kv_heads, d)
            mark("attention")
            ops.decode(q, k_cache, v_cache, table, lens, splits, o, scratch)
            mark("projections")
            torch.mm(o.view(batch, hq), w["o"].t(), out=attn)
            mark("elementwise")
            x = x + attn
            xn = F.rms_norm(x, (h,), w["norm2"], 1e-5)
            if model.is_moe:
                _moe(model, xn, w, mark, mlp, moe_bufs)
            else:
                mark("mlp")
                torch.mm(xn, w["gate_up"].t(), out=gu)
                mark("elementwise")
                act = F.silu(gu[:, :ffn]) * gu[:, ffn:]
                mark("mlp")
                torch.mm(act, w["down"].t(), out=mlp)
            mark("elementwise")
            x = x + mlp
        xn = F.rms_norm(x, (h,), weights["norm"], 1e-5)
        mark("logits")
        torch.mm(xn, weights["lm_head"].t(), out=logits)
        mark("end")

    check = _moe_check(model, x0[:4], weights["layers"][0]) if model.is_moe and batch == 8 else None
    graph = time_best(ctx, step, 1, 8 if ctx.cuda else 2, together=False)
    emit = dict(ctx=ctx, model=model, dtype=dtype, batch=batch, context=context, splits=splits)
    _emit(t=graph, **emit)
    record = {"model": model.name, "batch": batch, "context": context, "splits": splits,
              "kv_shared_across_layers": shared, graph.timing + "_s": graph.median_s}
    if check is not None:
        record["moe_rel_err_vs_loop"] = check
    if eager:
        t = time_eager(ctx, step, 5 if ctx.cuda else 2, together=False)
        _emit(t=t, **emit)
        record["eager_s"] = t.median_s
        record["components"] = _components(ctx, step, 3 if ctx.cuda else 1)
    step(0)
    ctx.sync()
    record["logits_finite"] = bool(torch.isfinite(logits).all())
    ctx.note("step_case", record)
    ctx.log(f"step {model.name} batch {batch} context {context}: graph {graph.median_s * 1e3:.3f} ms"
            + (f", eager {record['eager_s'] * 1e3:.3f} ms" if eager else "")
            + f" ({splits} splits{', KV shared across layers' if shared else ''}, logits finite: "
              f"{record['logits_finite']}" + (f", MoE vs loop {check:.2e}" if check is not None else "") + ")")


def _components(ctx: Ctx, step: Callable, runs: int) -> dict:
    """Eager step with an event at every component boundary: seconds per component (median over `runs`), and the
    instrumented step's total."""
    import statistics

    import torch

    per_run = []
    for i in range(runs):
        marks: list = []

        def mark(name: str) -> None:
            if ctx.cuda:
                event = torch.cuda.Event(enable_timing=True)
                event.record()
            else:
                import time

                event = time.perf_counter()
            marks.append((name, event))

        step(i, mark)
        ctx.sync()
        sums = dict.fromkeys(COMPONENTS, 0.0)
        for (name, a), (_, b) in zip(marks, marks[1:]):
            sums[name] += a.elapsed_time(b) * 1e-3 if ctx.cuda else b - a
        sums["total"] = sum(sums.values())
        per_run.append(sums)
    return {key: statistics.median(r[key] for r in per_run) for key in per_run[0]}


def _emit(ctx: Ctx, model: StepModel, dtype, batch: int, context: int, splits: int, t: Times) -> None:
    name = {"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32"}[str(dtype)]
    impl = ("torch_graph" if t.timing == "graph" else "torch_eager") if ctx.cuda else "torch_cpu"
    ctx.emit(Measurement(kernel=Kernel.decode_step, impl=impl, dtype=name, time_s=t.median_s, time_p10_s=t.p10_s,
                         time_p90_s=t.p90_s, repeats=t.repeats, batch=batch, num_qo_heads=model.heads,
                         num_kv_heads=model.kv_heads, head_dim=model.head_dim, context_lens=f"{context}x{batch}",
                         page_size=PAGE, splits=splits, world_size=1, timing=t.timing))


__all__ = ["COMPONENTS", "LLAMA_3_8B", "MODELS", "MODEL_CONFIGS", "QWEN3_30B_A3B", "StepModel", "grouped_mm",
           "run_model", "section_models", "section_step"]

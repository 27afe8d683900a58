"""The attention ops the distributed sections run, and the shape they run them at.

TorchOps is reference attention in torch (fp32 arithmetic), the CPU path; GpuOps runs rooflab's CuPy kernels on
torch's current stream (captured with the NCCL collectives in CUDA graphs). Both write into preallocated outputs.
The shape is Llama-3-8B's attention (models/llama-3-8b.yaml: 32 query / 8 KV heads, d 128), fp16 on a GPU; the
split counts are rooflab's recommendation (cost/paged.py) at the GPU spec's decode units per SM.
"""

from __future__ import annotations

import math
from typing import Any

from ...cost.batch import DecodeBatch
from ...cost.paged import recommend_splits
from ...fit.records import Measurement
from ...load import load_model
from ...specs import AttentionHeads, ModelSpec
from ...vocab import Kernel
from .context import Ctx, Times, as_cupy_cached, on_torch_stream

#: The model whose shapes the distributed sections time (attention, GEMMs, the decode step).
MODEL: ModelSpec = load_model("llama-3-8b")
HEADS, KV_HEADS, HEAD_DIM = MODEL.num_qo_heads, MODEL.num_kv_heads, MODEL.head_dim
PAGE = 16
#: KV copies rotate so that a config's reads stay past the L2 (each call reads another copy).
MIN_STREAM_BYTES = 512 << 20


def recommended_splits(ctx: Ctx, batch: int, context_len: int, kv_heads: int = KV_HEADS, heads: int = HEADS) -> int:
    """rooflab's split count for this share of the KV (cost/paged.py), on this device's SM count (the spec's on
    CPU) and the spec's decode units per SM."""
    sms = ctx.gpu.num_sms
    if ctx.cuda:
        import torch

        sms = torch.cuda.get_device_properties(ctx.device).multi_processor_count
    return recommend_splits(AttentionHeads(heads, kv_heads, HEAD_DIM), DecodeBatch.uniform(context_len, batch), sms,
                            PAGE, units_per_sm=ctx.gpu.units_per_sm)


class TorchOps:
    """Reference attention in torch (fp32 arithmetic), writing into the given outputs: the CPU path."""

    def paged_partial(self, q, k, v, table, lens, splits, out_o, out_lse):
        import torch

        b, h, d = q.shape
        kv_heads, page = k.shape[1], k.shape[2]
        pages = table.shape[1]
        per = math.ceil(pages / splits)
        for s in range(splits):
            ids = table[:, s * per:(s + 1) * per].long()                      # [B, p]
            keys = k[ids].permute(0, 2, 1, 3, 4).reshape(b, kv_heads, -1, d).float()
            vals = v[ids].permute(0, 2, 1, 3, 4).reshape(b, kv_heads, -1, d).float()
            pos = torch.arange(keys.shape[2], device=keys.device) + s * per * page
            keys, vals = keys.repeat_interleave(h // kv_heads, 1), vals.repeat_interleave(h // kv_heads, 1)
            scores = torch.einsum("bhd,bhtd->bht", q.float(), keys) / math.sqrt(d)
            scores = scores.masked_fill(pos[None, None, :] >= lens[:, None, None], float("-inf"))
            lse = torch.logsumexp(scores, -1)
            out_o[s].copy_(torch.einsum("bht,bhtd->bhd", torch.exp(scores - lse[..., None]).nan_to_num(0.0), vals))
            out_lse[s].copy_(lse)

    def merge_partials(self, o_part, lse_part, out, out_lse=None):
        import torch

        lse = torch.logsumexp(lse_part, 0)
        w = torch.exp(lse_part - lse).nan_to_num(0.0)
        out.copy_((w[..., None] * o_part.float()).sum(0))
        if out_lse is not None:
            out_lse.copy_(lse)

    def decode(self, q, k, v, table, lens, splits, out, scratch):
        o_part, lse_part = scratch
        self.paged_partial(q, k, v, table, lens, splits, o_part, lse_part)
        self.merge_partials(o_part, lse_part, out)

    def flash(self, q, k, v, out, out_lse):
        import torch

        group = q.shape[1] // k.shape[1]
        kk, vv = k.float().repeat_interleave(group, 1), v.float().repeat_interleave(group, 1)
        scores = torch.einsum("bhqd,bhkd->bhqk", q.float(), kk) / math.sqrt(q.shape[-1])
        lse = torch.logsumexp(scores, -1)
        out.copy_(torch.einsum("bhqk,bhkd->bhqd", torch.exp(scores - lse[..., None]), vv))
        out_lse.copy_(lse)

    def merge_states(self, o_a, lse_a, o_b, lse_b, out, out_lse):
        import torch

        lse = torch.logaddexp(lse_a, lse_b)
        out.copy_(torch.exp(lse_a - lse)[..., None] * o_a.float() + torch.exp(lse_b - lse)[..., None] * o_b.float())
        out_lse.copy_(lse)


class GpuOps(TorchOps):
    """rooflab's CuPy kernels on torch's current stream; tensors must be preallocated (views are cached)."""

    def __init__(self, ctx: Ctx):
        self.ctx = ctx

    def paged_partial(self, q, k, v, table, lens, splits, out_o, out_lse):
        from ...kernels import paged_decode_partial

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            paged_decode_partial(c(q), c(k), c(v), c(table), c(lens), splits, out=c(out_o), out_lse=c(out_lse))

    def merge_partials(self, o_part, lse_part, out, out_lse=None):
        from ...kernels import merge_partials

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            merge_partials(c(o_part), c(lse_part), c(out).dtype, return_lse=out_lse is not None, out=c(out),
                           out_lse=None if out_lse is None else c(out_lse))

    def decode(self, q, k, v, table, lens, splits, out, scratch):
        if splits > 1:
            return super().decode(q, k, v, table, lens, splits, out, scratch)
        from ...kernels import paged_decode

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            paged_decode(c(q), c(k), c(v), c(table), c(lens), 1, out=c(out))

    def flash(self, q, k, v, out, out_lse):
        from ...kernels import flash_attention

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            flash_attention(c(q), c(k), c(v), causal=False, out=c(out), out_lse=c(out_lse))

    def merge_states(self, o_a, lse_a, o_b, lse_b, out, out_lse):
        from ...kernels import merge_states

        c = as_cupy_cached
        with on_torch_stream(self.ctx):
            merge_states(c(o_a), c(lse_a), c(o_b), c(lse_b), out=c(out), out_lse=c(out_lse))


def ops_for(ctx: Ctx) -> TorchOps:
    """rooflab's kernels on a GPU, the torch reference on CPU."""
    return GpuOps(ctx) if ctx.cuda else TorchOps()


def torch_dtype(ctx: Ctx):
    """fp16 on a GPU, fp32 on the CPU path."""
    import torch

    return torch.float16 if ctx.cuda else torch.float32


def rel_err(a, b) -> float:
    """||a - b|| / ||b|| in fp32."""
    import torch

    a, b = a.float(), b.float()
    return float(torch.linalg.vector_norm(a - b) / max(float(torch.linalg.vector_norm(b)), 1e-30))


def graph_calls(seconds_each: float, budget_s: float = 0.02, most: int = 10) -> int:
    """Calls a graph captures: enough to fill about `budget_s` per replay (most `most`, at least 1)."""
    return max(1, min(most, int(budget_s / max(seconds_each, 1e-7))))


def emit(ctx: Ctx, kernel: Kernel, t: Times, world: int, **fields: Any) -> None:
    """One attention row of the model's heads (rank 0 writes them)."""
    ctx.emit(Measurement(kernel=kernel, impl="rooflab" if ctx.cuda else "torch_reference",
                         dtype="fp16" if ctx.cuda else "fp32", time_s=t.median_s, time_p10_s=t.p10_s,
                         time_p90_s=t.p90_s, repeats=t.repeats, world_size=world, timing=t.timing,
                         num_qo_heads=HEADS, num_kv_heads=KV_HEADS, head_dim=HEAD_DIM, **fields))

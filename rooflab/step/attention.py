"""The step's attention, per layer type (rooflab.cost.layers): decode and prefill.

    decode    paged decode (several query tokens when verifying drafts), split-KV where it pays, KV read in the
              cache's dtype; DCP: the GPU's share of the KV by position, then the merge of the gathered states, and
              the (o, lse) all-gather
    prefill   flash attention over a prefill or a prefill chunk (causal; PCP: ring attention)
"""

from __future__ import annotations

from ..context_parallel import ring_time
from ..cost.batch import DecodeBatch
from ..cost.dcp import merge_pieces, shard_tokens
from ..cost.layers import layer_decode, layer_heads, layer_prefill, layer_splits, layer_walk
from ..cost.ring import ring_prefill
from ..predict import OWN, decode_kernel, prefill_kernel
from ..units import FP32_BYTES
from ..vocab import Kernel
from .pricing import StepContext, comm_row, priced_row
from .rows import StepRow


def decode_attention(ctx: StepContext, decodes: int, q_len: int, context_len: int) -> list[StepRow]:
    """Every layer type's decode attention on one GPU, KV in the cache's dtype. With DCP inside the TP group a GPU
    computes the query heads of DCP TP ranks (gathered) over its 1 / DCP of the tokens, then merges; KVP the same
    over extra groups. The DCP all-gathers of the (o, lse) states follow."""
    model, dep, pricer, gpu = ctx.model, ctx.dep, ctx.pricer, ctx.gpu
    dtype, kv, page_size = ctx.dtype, ctx.kv_dtype, dep.page_size
    inner, split_ways = dep.decode_context_parallel, dep.position_split
    rows = []
    for name, layer, count in layer_walk(model):
        split = split_ways > 1 and layer.splits_by_position
        tp = ctx.attn_tp // inner if split else ctx.attn_tp
        tokens = shard_tokens(context_len, split_ways, page_size) if split else context_len
        lens = DecodeBatch.uniform(tokens, decodes)
        n, u = gpu.num_sms, gpu.units_per_sm
        splits = layer_splits(model, name, lens, n, page_size, dtype, kv, u, tensor_parallel=tp, q_len=q_len)

        def price(num_sms, units_per_sm, name=name, lens=lens, splits=splits, tp=tp):
            return layer_decode(model, name, lens, page_size, dtype, kv, splits, q_len, num_sms, units_per_sm,
                                tensor_parallel=tp)

        cost = price(n, u)
        kernels = list(cost.kernels)
        kernel = decode_kernel(layer, splits, q_len)
        p = pricer.predicted(kernel, price, impl=OWN) if layer.is_attention else None
        t = None if p is None else pricer.launch(p.t_predicted_s)
        if not layer.is_attention:
            pricer.miss(f"{name} (linear attention)", "no fitted model of a linear layer's state update")
        if split:                                                 # the gathered states' unpack and merge
            heads = layer_heads(model, layer, tp)
            unpack, merge = merge_pieces(decodes * q_len * heads.num_qo_heads, layer.value_width(heads), split_ways,
                                         dtype)
            kernels += [unpack.kernel, merge.kernel]
            for piece in (unpack, merge):
                m = pricer.fitted(Kernel.merge, lambda n_, u_, piece=piece: piece, OWN)
                t = None if t is None or m is None else t + m
        what = (f"attention [{name}], {splits} split(s)" + (f", {q_len} query tokens" if q_len > 1 else "")
                + (f", KV {kv.value}" if kv is not dtype else "")
                + (f", 1/{split_ways} of the KV + merge" if split else ""))
        rows.append(priced_row(pricer, cost.variant.value, what, kernels, count, None if t is None else count * t,
                               "rooflab" if t is not None else None, layer_type=name, num_layers=count,
                               calls=count * len(kernels), part="decode",
                               source=f"fitted {kernel.value} model (rooflab's kernels), {splits} split(s)",
                               predicted_from=None if t is None else p.provenance))
        if split and gpu.interconnect is not None:
            heads = layer_heads(model, layer, tp)
            state = decodes * q_len * heads.num_qo_heads * (layer.value_width(heads) + 1) * FP32_BYTES
            label = "DCP" if inner > 1 else "KVP"
            rows.append(comm_row(gpu, Kernel.all_gather, f"{label} [{name}]: all-gather of the (o, lse) states over "
                                 f"{split_ways} GPUs", state, split_ways, count, pricer.missing, ctx.timing, "decode"))
    return rows


def prefill_attention(ctx: StepContext, prompts: int, length: int) -> list[StepRow]:
    """Every layer type's prefill attention (causal flash; PCP: ring attention over PCP GPUs)."""
    model, pricer, gpu, dtype, cp = ctx.model, ctx.pricer, ctx.gpu, ctx.dtype, ctx.cp
    rows, tp = [], ctx.attn_tp
    for name, layer, count in layer_walk(model):
        label = f"attention [{name}], prefill of {prompts:,} x {length:,}"
        where = dict(layer_type=name, num_layers=count, part="prefill")
        if cp > 1 and layer.is_attention:
            rows.append(_ring_row(ctx, layer, count, prompts, length, label, where))
            continue
        cost = layer_prefill(model, name, length, prompts, dtype, True, gpu=gpu, tensor_parallel=tp)
        kernel = prefill_kernel(layer)
        price = (lambda n, u, name=name: layer_prefill(model, name, length, prompts, dtype, True, gpu=gpu,
                                                       tensor_parallel=tp, num_sms=n, units_per_sm=u))
        p = pricer.predicted(kernel, price) if layer.is_attention else None
        t = None if p is None else pricer.launch(p.t_predicted_s)
        if not layer.is_attention:
            pricer.miss(f"{name} (linear attention)", "no fitted model of a linear layer's scan")
        rows.append(priced_row(pricer, cost.variant.value, label, list(cost.kernels), count,
                               None if t is None else count * t, None if p is None else p.impl, calls=count,
                               source=f"fitted {kernel.value} model ({None if p is None else p.impl})",
                               predicted_from=None if p is None else p.provenance, **where))
    return rows


def _ring_row(ctx: StepContext, layer, count: int, prompts: int, length: int, label: str, where: dict) -> StepRow:
    """Ring attention over PCP GPUs for `count` layers of one type: the KV passes overlap the compute, so the
    row is compute-bound at the ring's floor (context_parallel.ring_time)."""
    pricer, gpu, cp = ctx.pricer, ctx.gpu, ctx.cp
    ring = ring_prefill(layer_heads(ctx.model, layer, ctx.attn_tp), length, cp, prompts, ctx.dtype, causal=True,
                        gpu=gpu)
    t = ring_time(gpu, ring, ctx.dtype)
    if t.t_predicted_s is None:
        pricer.miss("flash / send_recv / merge (ring)", f"ring prefill needs {gpu.name}'s own flash, send_recv "
                                                             f"and merge fits (not transferred)")
    return StepRow(variant="ring_prefill", label=f"{label} ring over {cp} GPUs (KV passes overlapped)",
                   flops=count * ring.flops, hbm_bytes=0.0, intensity_flop_per_byte=None,
                   t_compute_s=count * ring.flops / pricer.roofs.matmul_flop_per_s, t_memory_s=count * t.t_floor_s,
                   t_floor_s=count * t.t_floor_s, bound="compute", ridge_ratio=None,
                   t_predicted_s=None if t.t_predicted_s is None else count * t.t_predicted_s,
                   calls=count * (2 * cp - 1), comm_bytes=count * (cp - 1) * ring.kv_bytes_per_step,
                   source="fitted flash model and send_recv fit (context_parallel.ring_time)", **where)


__all__ = ["decode_attention", "prefill_attention"]

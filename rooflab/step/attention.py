"""The step's attention, per layer type (rooflab.cost.layers): decode and prefill.

    decode    paged decode (several query tokens when verifying drafts), split-KV where it pays, KV read in the
              cache's dtype; DCP: the GPU's share of the KV by position, then the merge of the gathered states, and
              the (o, lse) all-gather
    prefill   flash attention over a prefill or a prefill chunk (causal; PCP: ring attention)

How the decode kernel reads a GQA group's KV is a model of the engine's kernel (DecodeAttention): `shared` (one
read of a KV head for its whole query group: rooflab's paged decode, FlashInfer, FlashAttention, TensorRT-LLM's
XQA) or `per_query_head` (TensorRT-LLM's masked multi-head attention kernel: one CTA per query head reads its KV
head, so the KV is read once per query head); engine_decode_attention picks one from an engine and its version.
"""

from __future__ import annotations

import dataclasses

from ..context_parallel import ring_time
from ..cost.batch import DecodeBatch
from ..cost.dcp import merge_pieces, shard_tokens
from ..cost.common import Visibility
from ..cost.layers import layer_decode, layer_heads, layer_prefill, layer_splits, layer_walk
from ..cost.paged import paged_decode
from ..cost.ring import ring_prefill
from ..errors import InputError, shown
from ..predict import OWN, decode_kernel, prefill_kernel
from ..specs.layers import MLA_SPARSE_FP8_BYTES
from ..units import FP32_BYTES
from ..vocab import Engine, Kernel, _Named
from .moe_kernel import release
from .pricing import StepContext, comm_row, priced_row
from .rows import StepRow


class DecodeAttention(_Named):
    """How a decode step's attention kernel reads a GQA group's KV cache (a model of the engine's kernel)."""

    shared = "shared"                    # a KV head read once for its whole query group
    per_query_head = "per_query_head"    # a KV head read once for each query head of its group (masked MHA)


#: The time of a GQA group's KV read once per query head, with the CTAs of a group in flight together, over the
#: time of the same reads from distinct memory: the median of measurements/attention/h200-gqa-per-query-head.csv
#: (aliased_s / distinct_s, 0.89-0.94 over 6 shapes; benchmarks/gqa_per_query_head.py on one H200, rooflab's
#: paged decode kernel). The L2 saves that little of the group's repeated reads; the per_query_head model takes
#: it as measured there (an assumption for other GPUs and for the engine's own kernel).
PER_QUERY_HEAD_L2_SHARE = 0.908

#: XQA (TensorRT-LLM's GQA decode kernel) arrived in 0.8 ("will be included in the v0.8 releases",
#: docs/source/blogs/XQA-kernel.md); through 0.9 it ran only precompiled kernels, found by
#: (KV dtype, head dim, beam, num_q_heads_over_kv, ...) in DecoderXQARunner's supportConfig, and the single-query-token
#: kernels of xqa_kernel_cubin.h's sXqaKernelMetaInfo all have num_q_heads_over_kv 8 and head dim 128 or 256
#: (github.com/NVIDIA/TensorRT-LLM, cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/; the v0.9.0
#: performance page: "XQA enabled for Llama2-70b"). Elsewhere the masked MHA kernel runs.
_XQA_FIRST = (0, 8)
_XQA_PRECOMPILED_LAST = (0, 9)
_XQA_GROUP, _XQA_HEAD_DIMS = 8, (128, 256)


def engine_decode_attention(engine: str, version: str, model, tensor_parallel: int = 1) -> DecodeAttention:
    """The decode attention `engine` at `version` runs for `model` at `tensor_parallel` (a model, from the engine's
    source where one was read; `shared` where none was).

    TensorRT-LLM before 0.8: masked MHA for every layer (no XQA). 0.8 and 0.9: XQA for groups of 8 query heads a KV
    head at head dim 128 / 256, masked MHA otherwise (see _XQA_FIRST); XQA's occupancy heuristic (KV heads x batch x
    4 >= SMs, DecoderXQARunner's mayHavePerfGain) is not modelled: it holds at every decoding batch of the published
    rows. Later TensorRT-LLM, vLLM, SGLang and anything else: shared (their kernels read a KV head once for its
    group; TensorRT-LLM's later XQA compiles kernels for other groups: not read here, assumed)."""
    if Engine.of(engine, "engine") is not Engine.trtllm:
        return DecodeAttention.shared
    at = release(version)
    if at is None:
        raise InputError(f"TensorRT-LLM's decode attention depends on its release: engine version {shown(version)} "
                         f"names none (0.9.0)")
    at = at[:2]
    if at > _XQA_PRECOMPILED_LAST:
        return DecodeAttention.shared
    for _, layer, _ in layer_walk(model):
        if not layer.is_attention or layer.is_latent:
            continue
        heads = layer_heads(model, layer, tensor_parallel)
        xqa = (at >= _XQA_FIRST and heads.group_size == _XQA_GROUP and heads.head_dim in _XQA_HEAD_DIMS)
        if heads.group_size > 1 and not xqa:
            return DecodeAttention.per_query_head
    return DecodeAttention.shared


def decode_attention_of(value) -> DecodeAttention:
    """A DecodeAttention from itself or its name, else an InputError naming the choices."""
    return DecodeAttention.of(value, "decode attention")


def _per_query_head(ctx: StepContext, layer, lens, q_len: int):
    """The per_query_head model's price(num_sms, units_per_sm), or None where it does not apply (shared model, MHA,
    MLA, linear layers, several query tokens: the masked MHA kernel scores one): rooflab's paged decode with one KV
    head a query head (the group's KV read once per query head), 1 split (masked MHA's multi-block mode is opt-in:
    docs/source/advanced/gpt-attention.md)."""
    if ctx.decode_attention != DecodeAttention.per_query_head or not layer.is_attention or layer.is_latent \
            or q_len != 1:
        return None
    heads = layer_heads(ctx.model, layer, ctx.attn_tp)
    if heads.group_size == 1:
        return None
    mha = dataclasses.replace(heads, num_kv_heads=heads.num_qo_heads)
    visibility, page_size = Visibility.of(layer), ctx.dep.page_size

    def price(num_sms, units_per_sm):
        return paged_decode(mha, lens, page_size, ctx.dtype, ctx.kv_dtype, 1, num_sms, units_per_sm, 1, visibility,
                            layer.sinks)
    return price


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
        sparse = dep.mla_sparse_fp8 and layer.is_latent      # fp8_ds_mla: the 656-byte token capacity counts
        fixed = ctx.mla_decode_splits if layer.is_latent else None    # the engine's own count (step.mla_decode)
        splits = fixed or layer_splits(model, name, lens, n, page_size, dtype, kv, u, tensor_parallel=tp,
                                       q_len=q_len, mla_sparse_fp8=sparse)

        def price(num_sms, units_per_sm, name=name, lens=lens, splits=splits, tp=tp, sparse=sparse):
            return layer_decode(model, name, lens, page_size, dtype, kv, splits, q_len, num_sms, units_per_sm,
                                tensor_parallel=tp, mla_sparse_fp8=sparse)

        cost = price(n, u)
        kernels = list(cost.kernels)
        kernel = decode_kernel(layer, splits, q_len)
        per_head = None if split else _per_query_head(ctx, layer, lens, q_len)
        if per_head is not None:                                   # the floor stays the shared read's
            kernel = decode_kernel(layer, 1, q_len)
            p = pricer.predicted(kernel, per_head, impl=OWN)
            t = None if p is None else pricer.launch(PER_QUERY_HEAD_L2_SHARE * p.t_predicted_s)
        else:
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
        what = (f"attention [{name}], {1 if per_head else splits} split(s)"
                + (f", {q_len} query tokens" if q_len > 1 else "")
                + (f", KV fp8_ds_mla ({MLA_SPARSE_FP8_BYTES} bytes a token)" if sparse else f", KV {kv.value}" if kv is not dtype else "")
                + (f", 1/{split_ways} of the KV + merge" if split else "")
                + (", KV read per query head (masked MHA)" if per_head else ""))
        how = (f"KV read per query head (TensorRT-LLM's masked MHA, a model): fitted {kernel.value} model "
               f"(rooflab's kernels) at one KV head a query head, 1 split, x {PER_QUERY_HEAD_L2_SHARE} (the L2's "
               f"share measured on h200-sxm, measurements/attention/)"
               if per_head else f"fitted {kernel.value} model (rooflab's kernels), {splits} split(s)" + (
                   " (the engine's fixed count: rooflab.step.mla_decode)" if fixed else ""))
        rows.append(priced_row(pricer, cost.variant.value, what, kernels, count, None if t is None else count * t,
                               "rooflab" if t is not None else None, layer_type=name, num_layers=count,
                               calls=count * len(kernels), part="decode",
                               source=how,
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


__all__ = ["PER_QUERY_HEAD_L2_SHARE", "DecodeAttention", "decode_attention", "decode_attention_of",
           "engine_decode_attention", "prefill_attention"]

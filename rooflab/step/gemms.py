"""The step's GEMMs: the attention projections, the dense MLP and the MoE layers, and the logits.

    attention projections   per layer type: the QKV and O GEMMs over the GPU's heads (MLA and linear layers: one
                            GEMM of their projection weights), m = the rank's tokens (decodes x query tokens +
                            the prefill chunk); heads split by TP / attention-DP
    MLP / MoE               dense layers: gate/up and down GEMMs (with data-parallel attention, over the TP group's
                            gathered tokens); MoE layers: the router, the experts this GPU holds (E / EP) at the
                            token-expert pairs they receive, imbalance f x M k / EP (M the expert group's tokens),
                            weights read once for each touched expert, priced as the engine's expert kernel
                            (StepContext.moe_kernel, rooflab.step.moe_kernel: a tuned kernel at the dense cuBLAS
                            fit, or torch's grouped GEMM at the grouped-GEMM fit, rooflab.fit.moe_fit); shared
                            experts as a dense MLP
    logits                  the lm_head GEMM for each sequence's scored tokens (and the chunk's last)
"""

from __future__ import annotations

import dataclasses
import math

from ..cost.gemm import gemm
from ..cost.layers import layer_heads, layer_walk
from ..cost.model import experts_touched
from ..specs.weights import attention_parameters, indexer_parameters
from ..vocab import Kernel
from .moe_kernel import MoeKernel
from .pricing import FUSED_IMPL, StepContext, comm_row, gemm_row, priced_row
from .mla_layout import MlaLayout
from .routing import Routing, routing_launches
from .rows import StepRow
from .small_ops import act_quant_time, measured_launch_time, moe_align_time


#: What each expert-kernel model is, in a row's source (rooflab.step.moe_kernel).
_KERNEL_WORDS = {MoeKernel.tuned: "a tuned kernel, priced as cuBLAS on the same FLOPs and bytes (assumed)",
                 MoeKernel.fused_block_fp8: "Triton fused_moe over block-fp8 experts at the shipped config, priced "
                                            "as our kernel of it measured on the H200 (c0 + Q / B + tiles tau), "
                                            "never below cuBLAS's price",
                 MoeKernel.torch_grouped: "torch's grouped GEMM, as measured",
                 MoeKernel.default_config: "fused_moe on its default config, priced as torch's grouped GEMM "
                                           "(assumed: not measured)"}


def _mla_projections(ctx: StepContext, layer, tokens: int, absorbed: int) -> list[tuple]:
    """One MLA layer's projection GEMMs as the engine launches them (ctx.mla_layout, rooflab.step.mla_layout), each
    (cost, arithmetic, block, its input's [m, k], which a block-fp8 GEMM quantises: small_ops.act_quant_time);
    `absorbed` of the `tokens` rows are decodes:

        separate           q_a [r_q, H] and kv_a [d_c + d_R, H] whole on every rank (ReplicatedLinear); q_b
                           [h (d_nope + d_R), r_q] (or q [., H] without a q rank) and o [H, h d_v] over the rank's
                           h heads; the decode rows through kv_b's two absorbed matmuls in the activations' dtype
                           (q_nope x W_UK [h d_c, d_nope], the latent output x W_UV [h d_v, d_c]) at
                           ctx.absorbed_bytes a weight, the prefill rows through the kv_b GEMM [h (d_nope + d_v), d_c]
        fused_qkv_a        the same, q_a and kv_a one GEMM [r_q + d_c + d_R, H] (one input quantised)
        absorbed_into_q_o  decode rows: W_Q_UK [h d_c, r_q] and W_UV_O [H, h d_c] in the weights' format (fp8
                           requantised; another format in the activations' dtype) and W_QR [h d_R, r_q] in the
                           activations'; prefill rows: q_b, kv_b and o as GEMMs

    and the lightning indexer's projections, where the layer has one, as one GEMM."""
    model, tp, dtype = ctx.model, ctx.attn_tp, ctx.arithmetic("attention")
    hidden, bits, block = model.hidden_size, ctx.bits("attention"), ctx.block_scaled("attention")
    heads = layer_heads(model, layer, tp).num_qo_heads
    nope, rope, latent, v = layer.qk_nope_head_dim, layer.qk_rope_head_dim, layer.kv_lora_rank, model.heads.value_dim
    rank = layer.q_lora_rank
    q_in, q_name = (rank, "q_b") if rank else (hidden, "q")
    act = ctx.dtype
    prefill = tokens - absorbed
    if rank and ctx.mla_layout is MlaLayout.fused_qkv_a:
        shapes = [(tokens, rank + latent + rope, hidden, "qkv_a")]
    else:
        shapes = [(tokens, rank, hidden, "q_a")] if rank else []
        shapes.append((tokens, latent + rope, hidden, "kv_a"))
    if ctx.mla_layout is MlaLayout.absorbed_into_q_o:
        if prefill:
            shapes += [(prefill, heads * (nope + rope), q_in, q_name), (prefill, heads * (nope + v), latent, "kv_b"),
                       (prefill, hidden, heads * v, "o")]
    else:
        shapes += [(tokens, heads * (nope + rope), q_in, q_name), (tokens, hidden, heads * v, "o")]
        if prefill:
            shapes.append((prefill, heads * (nope + v), latent, "kv_b"))
    index = indexer_parameters(layer, hidden)
    if index:
        shapes.append((tokens, math.ceil(index / hidden), hidden, "indexer"))
    out = [(gemm(m, n, k, dtype, name, bits), dtype, block, (m, k)) for m, n, k, name in shapes]
    if absorbed and ctx.mla_layout is MlaLayout.absorbed_into_q_o:
        a, b, w = (dtype, block, bits) if dtype.is_fp8 else (act, False, act.bytes * 8)
        out += [(gemm(absorbed, heads * latent, q_in, a, "w_q_uk", w), a, b, (absorbed, q_in)),
                (gemm(absorbed, hidden, heads * latent, a, "w_uv_o", w), a, b, (absorbed, heads * latent)),
                (gemm(absorbed, heads * rope, q_in, act, "w_qr", act.bytes * 8), act, False, (absorbed, q_in))]
    elif absorbed:
        w = 8 * (act.bytes if ctx.absorbed_bytes is None else ctx.absorbed_bytes)
        out += [(gemm(absorbed, heads * latent, nope, act, "w_uk", w), act, False, (absorbed, nope)),
                (gemm(absorbed, heads * v, latent, act, "w_uv", w), act, False, (absorbed, latent))]
    return out


def projections(ctx: StepContext, tokens: int, absorbed: int = 0) -> list[StepRow]:
    """The attention projections of every layer: QKV and O GEMMs, MLA's own (_mla_projections; `absorbed` of the
    `tokens` rows are decodes, through the absorbed up-projection), one GEMM of the projection weights for linear
    layers; one row for the model; heads split over the attention TP (TP / attention DP)."""
    model, tp, dtype = ctx.model, ctx.attn_tp, ctx.arithmetic("attention")
    hidden, bits, block = model.hidden_size, ctx.bits("attention"), ctx.block_scaled("attention")
    kernels, predicted, calls, weight, quants, impls = [], 0.0, 0, 0.0, 0, {}
    for name, layer, count in layer_walk(model):
        if layer.is_latent:
            priced = _mla_projections(ctx, layer, tokens, min(absorbed, tokens))
            costs = [c for c, _, _, _ in priced]
            times = [ctx.pricer.gemms([c], count, a, b) for c, a, b, _ in priced]
            inputs = [shape for _, _, b, shape in priced if b]
            impls.update(dict.fromkeys(ctx.pricer.dense_gemm_impl(a, b, c) for c, a, b, _ in priced
                                       if (a, b) == (dtype, block)))
        else:
            if layer.has_qkv_projections:
                h = layer_heads(model, layer, tp)
                qkv = h.num_qo_heads * h.head_dim + h.num_kv_heads * (h.head_dim + h.value_dim)
                costs = [gemm(tokens, qkv, hidden, dtype, "qkv", bits),
                         gemm(tokens, hidden, h.num_qo_heads * h.value_dim, dtype, "o", bits)]
                inputs = [(tokens, hidden), (tokens, h.num_qo_heads * h.value_dim)]
            else:
                params = attention_parameters(layer, model.heads, hidden, model.attention_bias) / tp
                costs = [gemm(tokens, math.ceil(params / hidden), hidden, dtype, "projections", bits)]
                inputs = [(tokens, hidden)]
            times = [ctx.pricer.gemms(costs, count, dtype, block)]
            impls.update(dict.fromkeys(ctx.pricer.dense_gemm_impl(dtype, block, c) for c in costs))
            inputs = inputs if block else []
        times.append(act_quant_time(ctx, inputs, count))
        t = None if any(x is None for x in times) else sum(times)
        predicted = None if t is None or predicted is None else predicted + t
        kernels += [c.kernel for c in costs for _ in range(count)]
        quants += len(inputs) * count
        calls += (len(costs) + len(inputs)) * count
        weight += count * sum(float(c.weight_bytes) for c in costs)
    impl = " + ".join(impls) or ctx.pricer.dense_gemm_impl(dtype, block)    # the fits of the dtype's GEMMs
    return [priced_row(ctx.pricer, "gemm", "attention projections (QKV, O)", kernels, 1.0, predicted, impl,
                       dtype, num_layers=model.num_layers, calls=calls, weight_bytes=weight,
                       source=f"GEMM fit ({impl}) at the measured {dtype.value} rate{_quant_words(ctx, quants)}",
                       component="attention", gemm_dtype=dtype.value, gemm_rows=tokens)]


def _quant_words(ctx: StepContext, launches: int) -> str:
    """The row's words for its block-fp8 activation quantisation (small_ops.act_quant_time), '' for none."""
    if not launches:
        return ""
    return (f"; {launches} per-token-group activation quantisations (one a block-fp8 GEMM input) at the act_quant "
            f"time measured on {ctx.pricer.launches.measured_on}")


def _block_fp8_gemm_row(ctx: StepContext, label: str, costs: list, inputs: list, count: int, component: str,
                        rows: int, **fields) -> StepRow:
    """gemm_row for `count` layers of `costs`, with a block-fp8 component's activation quantisation of each GEMM's
    input [m, k] in `inputs` (small_ops.act_quant_time) in its prediction and calls. The floor is the GEMMs' alone:
    their fp8 inputs are counted at a byte an element, and an engine that quantises inside the kernel before (the
    norm, SiLU) moves no more."""
    row = gemm_row(ctx, label, costs, count, component, rows, **fields)
    if not ctx.block_scaled(component):
        return row
    t = act_quant_time(ctx, inputs, count)
    n = len(inputs) * count
    predicted = None if t is None or row.t_predicted_s is None else row.t_predicted_s + t
    return dataclasses.replace(row, t_predicted_s=predicted, calls=row.calls + n,
                               source=row.source + _quant_words(ctx, n)) if predicted is not None else \
        dataclasses.replace(row, t_predicted_s=None, predicted_impl=None, source="no prediction on this GPU")


def mlp(ctx: StepContext, tokens: int) -> list[StepRow]:
    """Dense MLP layers and MoE layers (router, this GPU's experts at the pairs they receive, shared experts)."""
    model, dep = ctx.model, ctx.dep
    hidden, rows, tp = model.hidden_size, [], dep.tensor_parallel
    dense_tokens = tokens * dep.attention_data_parallel          # SGLang gathers the TP group's tokens
    if model.num_dense_layers:
        width = (model.dense_ffn_size or model.ffn_size) // tp
        bits, a = ctx.bits("dense_mlp"), ctx.arithmetic("dense_mlp")
        costs = [gemm(dense_tokens, 2 * width, hidden, a, "gate_up", bits),
                 gemm(dense_tokens, hidden, width, a, "down", bits)]
        rows.append(_block_fp8_gemm_row(ctx, "MLP (gate/up, down)", costs, [(dense_tokens, hidden),
                                        (dense_tokens, width)], model.num_dense_layers, "dense_mlp", dense_tokens,
                                        num_layers=model.num_dense_layers))
    if model.num_moe_layers:
        rows.append(_experts(ctx, tokens))
        if model.num_shared_experts and not ctx.routing.fuses_shared_expert:    # else in _experts (step.routing)
            shared = model.num_shared_experts * (model.shared_expert_ffn_size or model.ffn_size) // tp
            sb, sa = ctx.bits("shared_experts"), ctx.arithmetic("shared_experts")
            scosts = [gemm(dense_tokens, 2 * shared, hidden, sa, "shared_gate_up", sb),
                      gemm(dense_tokens, hidden, shared, sa, "shared_down", sb)]
            rows.append(_block_fp8_gemm_row(ctx, "shared experts (gate/up, down)", scosts,
                                            [(dense_tokens, hidden), (dense_tokens, shared)], model.num_moe_layers,
                                            "shared_experts", dense_tokens, num_layers=model.num_moe_layers))
    return rows


def _experts(ctx: StepContext, tokens: int) -> StepRow:
    """The MoE layers' router and the experts this GPU holds, at the token-expert pairs they receive; where the
    routing fuses the shared experts (Routing.fuses_shared_expert, at EP 1), they are s more experts every token of
    the group picks: s x group more pairs, s more touched, E + s experts."""
    model, dep, dtype = ctx.model, ctx.dep, ctx.dtype
    hidden, count = model.hidden_size, model.num_moe_layers
    e, k = model.num_experts, model.num_experts_per_token
    ep, etp = dep.expert_parallel, dep.expert_tensor_parallel
    shared = model.num_shared_experts if ctx.routing.fuses_shared_expert else 0
    group = tokens * dep.data_ranks                              # tokens the expert group routes
    pairs = math.ceil(ctx.imbalance * group * k / ep) + shared * group   # token-expert pairs this GPU's experts get
    touched = experts_touched(model, group) / ep + shared
    width = model.ffn_size // etp
    bits, a = ctx.bits("experts"), ctx.arithmetic("experts")
    costs = [gemm(tokens, e, hidden, dtype, "router"),
             gemm(pairs, 2 * width, hidden, a, "experts_gate_up", bits, touched),
             gemm(pairs, hidden, width, a, "experts_down", bits, touched)]
    t = ctx.pricer.gemms(costs[:1], count, dtype)
    priced = [ctx.pricer.expert_gemm_time(c, a, ctx.moe_kernel, tokens, pairs, touched, n)
              for c, n in zip(costs[1:], (2 * width, hidden))]
    t2 = None if any(g is None for g, _ in priced) else count * sum(g for g, _ in priced)
    t3, routed = _routing_time(ctx, tokens, count)
    t4, fp8_words, fp8_calls = _block_fp8_expert_launches(ctx, tokens, pairs, width, count)
    impl, dense = priced[0][1], ctx.pricer.dense_gemm_impl(a)
    router = ctx.pricer.dense_gemm_impl(dtype)
    where = f" over EP {ep}" if ep > 1 else ""
    imb = f", imbalance {ctx.imbalance:g}" if ctx.imbalance != 1 else ""
    how = f"experts ({_KERNEL_WORDS[ctx.moe_kernel]}): " + (
        f"fused-kernel fit ({impl}, measurements/moe/h200-fused-moe-block-fp8.csv)" if impl == FUSED_IMPL else
        f"grouped-GEMM fit ({impl}, {pairs / max(touched, 1e-9):.1f} pairs a touched expert)"
        if impl != dense else f"GEMM fit ({dense}) on the experts' work in one launch"
        if ctx.moe_kernel in (MoeKernel.tuned, MoeKernel.fused_block_fp8) else
        f"GEMM fit ({dense}), no grouped fit here")
    return priced_row(ctx.pricer, "gemm", f"MoE ({touched:.1f} of {e // ep + shared} experts touched{where}, {pairs:,} "
                                          f"token-expert pairs{imb})", [c.kernel for c in costs], count,
                      None if None in (t, t2, t3, t4) else t + t2 + t3 + t4, impl, a, num_layers=count,
                      calls=len(costs) * count + fp8_calls,
                      weight_bytes=count * sum(float(c.weight_bytes) for c in costs),
                      source=f"router: GEMM fit ({router}); {routed}{how}, at the measured {a.value} rate; "
                             f"pairs f x M k / EP{f' + s M ({shared} shared fused)' if shared else ''}{fp8_words}", component="experts", gemm_dtype=a.value,
                      gemm_rows=tokens)


#: The expert kernels that are Triton fused_moe, which sorts the token-expert pairs by expert first
#: (moe_align_block_size) and is priced with that align over block-fp8 experts (small_ops.moe_align_time).
_FUSED_MOE_KERNELS = (MoeKernel.fused_block_fp8, MoeKernel.tuned, MoeKernel.default_config)


def _block_fp8_expert_launches(ctx: StepContext, tokens: int, pairs: int, width: int, count: int) -> tuple:
    """(seconds, the row's words, launches) of the MoE layers' small block-fp8 launches: the activation
    quantisation of the gate/up input [tokens, H] and of the down input [pairs, w] (small_ops.act_quant_time, once a
    GEMM for all the experts), and, for a fused_moe kernel, the align (small_ops.moe_align_time); none for experts
    that are not block-fp8; None seconds where the GPU has no launch times."""
    if not ctx.block_scaled("experts"):
        return 0.0, "", 0
    hidden = ctx.model.hidden_size
    quant = act_quant_time(ctx, [(tokens, hidden), (pairs, width)], count)
    align = moe_align_time(ctx, tokens, count) if ctx.moe_kernel in _FUSED_MOE_KERNELS else 0.0
    if quant is None or align is None:
        return None, "", 0
    words = _quant_words(ctx, 2 * count)
    if ctx.moe_kernel in _FUSED_MOE_KERNELS:
        words += f"; {count} MoE aligns (moe_align_block_size, {align / count * 1e6:.1f} us each)"
    return quant + align, words, 2 * count + (count if ctx.moe_kernel in _FUSED_MOE_KERNELS else 0)


def _routing_time(ctx: StepContext, tokens: int, count: int) -> tuple:
    """(seconds of the MoE layers' expert selection at `tokens` rows, the row's words for it): the routing
    ctx.routing names (rooflab.step.routing) at its launches' measured times (routing_launches; small_ops.
    measured_launch_time, graph or eager; the fused kernels' at the small ops they are priced as);
    0 where unpriced, None (recorded missing) where the GPU has no launch times to price it."""
    if ctx.routing is Routing.unpriced:
        return 0.0, ""
    one, launches = 0.0, routing_launches(ctx.routing, tokens, ctx.model)
    for op, n, width in launches:
        t = measured_launch_time(ctx, op, tokens, width, "MoE routing (small kernels)")
        if t is None:
            return None, ""
        one += n * t
    measured = ctx.routing in (Routing.grouped_topk, Routing.grouped_topk_compiled)
    how = "" if measured else " as " + " + ".join(f"{n} x {op}" for op, n, _ in launches)
    return count * one, (f"routing: {ctx.routing.value}{how} measured on {ctx.pricer.launches.measured_on} ({count} x "
                         f"{one * 1e6:.1f} us); ")


def lm_head_ways(ctx: StepContext) -> int:
    """GPUs the lm_head's vocabulary is split over: the attention TP, or under data-parallel attention what
    capacity.weight_split gives the lm_head at the step's SGLang release (TP from v0.4.5, whole before); a GPU's
    logits rows are its own times this over the attention TP."""
    return ctx.weight_splits.get("lm_head", ctx.attn_tp)


def logits(ctx: StepContext, logit_rows: int) -> list[StepRow]:
    """The lm_head GEMM and the all-gather of the logits: the vocabulary split the ways the weights are
    (capacity.weight_split: TP, also under data-parallel attention, where SGLang gathers the DP ranks' hidden states
    first, so a GPU computes every rank's rows over its vocabulary slice: logits_processor.py
    do_tensor_parallel_all_gather_dp_attn, v0.5.10; whole before v0.4.5, each rank its own rows)."""
    model = ctx.model
    atp = lm_head_ways(ctx)
    logit_rows = logit_rows * atp // ctx.attn_tp
    cost = gemm(logit_rows, math.ceil(model.vocab_size / atp), model.hidden_size, ctx.dtype, "lm_head",
                ctx.bits("lm_head"))
    impl = ctx.pricer.dense_gemm_impl(ctx.dtype)
    rows = [priced_row(ctx.pricer, "gemm", f"logits (lm_head, {logit_rows:,} rows)", [cost.kernel], 1.0,
                       ctx.pricer.gemms([cost], 1, ctx.dtype), impl, calls=1,
                       weight_bytes=float(cost.weight_bytes), part="sequences",
                       source=f"GEMM fit ({impl}) at the measured {ctx.dtype.value} rate", component="lm_head",
                       gemm_dtype=ctx.dtype.value, gemm_rows=logit_rows)]
    if atp > 1 and ctx.gpu.interconnect is not None:
        rows.append(comm_row(ctx.gpu, Kernel.all_gather, f"logits: all-gather of {logit_rows:,} x "
                             f"{model.vocab_size:,} over {atp} GPUs",
                             logit_rows * math.ceil(model.vocab_size / atp) * 2, atp, 1, ctx.pricer.missing,
                             ctx.timing, "sequences"))
    return rows


__all__ = ["lm_head_ways", "logits", "mlp", "projections"]

"""The step's collectives that scale with the rank's tokens, and the pipeline's send between stages.

    attention TP: an all-reduce a layer; dense MLP: an all-reduce (TP) or all-gather + reduce-scatter (data-parallel
    attention); MoE: an all-reduce (tokens replicated), or dispatch and combine all-to-alls over EP (tokens spread
    over data ranks); PP: a send of the activations a stage. The logits' all-gather is with the logits (gemms.py),
    the DCP (o, lse) all-gather with the decode attention (attention.py).
"""

from __future__ import annotations

import math

from ..vocab import Kernel
from .pricing import StepContext, comm_row
from .rows import StepRow


def communication(ctx: StepContext, tokens: int) -> list[StepRow]:
    """The collectives that scale with the rank's tokens (the module docstring)."""
    model, dep, gpu = ctx.model, ctx.dep, ctx.gpu
    if gpu.interconnect is None:
        return []
    rows, hidden, timing, missing = [], model.hidden_size, ctx.timing, ctx.pricer.missing
    b = ctx.dtype.bytes if ctx.dtype.bytes >= 2 else 2
    tp, atp, adp = dep.tensor_parallel, ctx.attn_tp, dep.attention_data_parallel
    act = tokens * hidden * b
    if atp > 1:
        rows.append(comm_row(gpu, Kernel.all_reduce, f"attention TP: an all-reduce a layer of {tokens:,} x {hidden} "
                             f"over {atp} GPUs", act, atp, model.num_layers, missing, timing))
    dense = model.num_dense_layers
    if dense and tp > 1:
        if adp == 1:
            rows.append(comm_row(gpu, Kernel.all_reduce, f"MLP TP: an all-reduce a dense layer over {tp} GPUs", act,
                                 tp, dense, missing, timing))
        else:
            for kernel in (Kernel.all_gather, Kernel.reduce_scatter):
                rows.append(comm_row(gpu, kernel, f"dense MLP over the TP group: {kernel.value} of {tokens:,} x "
                                     f"{hidden} a rank over {tp} GPUs", act, tp, dense, missing, timing))
    moe = model.num_moe_layers
    group = tp * dep.prefill_context_parallel * dep.data_parallel
    if moe and group > 1:
        k = model.num_experts_per_token
        if dep.data_ranks == 1:
            rows.append(comm_row(gpu, Kernel.all_reduce, f"MoE TP/EP: an all-reduce a MoE layer over {tp} GPUs", act,
                                 tp, moe, missing, timing))
        elif dep.expert_parallel > 1:
            per_gpu = math.ceil(tokens / atp) * k * hidden * b        # each of the GPU's tokens to its k experts
            for what in ("dispatch", "combine"):
                rows.append(comm_row(gpu, Kernel.all_to_all, f"MoE {what}: all-to-all of {math.ceil(tokens / atp):,}"
                                     f" tokens x {k} experts x {hidden} over EP {dep.expert_parallel}", per_gpu,
                                     dep.expert_parallel, moe, missing, timing))
        else:
            for kernel in (Kernel.all_gather, Kernel.reduce_scatter):
                rows.append(comm_row(gpu, kernel, f"MoE over the expert group: {kernel.value} over {group} GPUs",
                                     act, group, moe, missing, timing))
    return rows


def pipeline_send(ctx: StepContext, tokens: int) -> StepRow:
    """The send of a stage's activations (`tokens` x hidden, 2 bytes each) to the next stage."""
    hidden = ctx.model.hidden_size
    return comm_row(ctx.gpu, Kernel.send_recv, f"pipeline: send of {tokens:,} x {hidden} to the next stage",
                    tokens * hidden * 2, 2, 1, ctx.pricer.missing, ctx.timing)


__all__ = ["communication", "pipeline_send"]

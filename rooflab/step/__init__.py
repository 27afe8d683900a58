"""A whole model's step on a deployment, as the engines run it: decode (time per output token), a mixed step (a
prefill chunk with the decodes) or a prefill (time to first token).

One GPU of the deployment does, per step, for B sequences of context (or prompt) L spread over the deployment's
data ranks (vLLM's DP replicas, SGLang's data-parallel attention ranks: ceil(B / ranks) each):

    attention projections   per layer type: the QKV and O GEMMs over the GPU's heads (MLA and linear layers: one
                            GEMM of their projection weights), m = the rank's tokens (decodes x query tokens +
                            the prefill chunk); heads split by TP / attention-DP
    attention               per layer type (rooflab.cost.layers): paged decode (several query tokens when
                            verifying drafts), split-KV where it pays, KV read in the cache's dtype; DCP: the GPU's
                            share of the KV by position, then the merge of the gathered states; a prefill or a
                            prefill chunk: flash attention (PCP: ring attention); a GQA group's KV read once for
                            the group, or once per query head as TensorRT-LLM's masked MHA kernel reads it
                            (step_report(engine=...) or (decode_attention=...), engine_decode_attention: a model, the floor the
                            shared read's)
    MLP / MoE               dense layers: gate/up and down GEMMs (with data-parallel attention, over the TP group's
                            gathered tokens); MoE layers: the router, the experts this GPU holds (E / EP) at the
                            token-expert pairs they receive, imbalance f x M k / EP (M the expert group's tokens),
                            weights read once for each touched expert, priced as the engine's expert kernel
                            (step_report(engine=...) or (moe_kernel=...), engine_moe_kernel: a tuned fused kernel at the dense
                            cuBLAS fit on the experts' work, or torch's grouped GEMM at the measured grouped-GEMM
                            fit, rooflab/fit/moe_fit.py, the default); shared experts as a dense MLP
    norms and elementwise   fused (the engines, with or without CUDA graphs): fused add-RMSNorm x 2, SiLU-and-mul,
                            one KV-cache write a layer; unfused (rooflab's torch reference layer): 2 RMSNorms, 2 residual adds,
                            SiLU x up, the q copy and 2 KV appends; the floor counts the fused bytes either way
    communication           attention TP: an all-reduce a layer; dense MLP: an all-reduce (TP) or all-gather +
                            reduce-scatter (data-parallel attention); MoE: an all-reduce (tokens replicated), or
                            dispatch and combine all-to-alls over EP (tokens spread over data ranks); logits'
                            all-gather; DCP: the (o, lse) all-gather; PP: a send of the activations a stage
    logits                  the lm_head GEMM for each sequence's scored tokens (and the chunk's last)
    draft                   speculative decoding: k draft steps (an MTP / EAGLE head: one decoder layer and the
                            lm_head; a draft model: its own decode step), tokens per step (1 - a^(k+1)) / (1 - a)

Pipeline parallelism: the rows are one stage's (ceil(layers / PP) layers, the logits on the last) at one micro-batch
of ceil(B / M); a decode step in steady state takes max(M, PP) stage times (M < PP leaves stages idle: the bubble
1 - M / PP), a prefill (one flush) M + PP - 1. GPUs in all: TP x PCP x PP x DP x KVP.

Floors are physical: each row's launches at the datasheet roofs (fp8 GEMMs at the fp8 tensor rate), communication at
the link's datasheet bandwidth; the step's t_floor_s is the largest of its summed compute, memory and communication
times (everything overlapped). Predictions are models: the GPU's fitted GEMM family against the measured rate of the
GEMM's arithmetic (fp8: the measured fp8 GEMM rate where calibrated, else the bf16 fit's measured fraction of the
datasheet, said in a note), attention kernels, merge and collectives (graph or eager timings), summed launch by
launch; eager launches never faster than their measured host issue time. The small kernels and the host issue time
are the GPU YAML's measured.launch section (another bundled NVIDIA GPU's, transferred and said so, where it has none).
Where a piece has no fit, t_predicted_s is None and a note names it.

The package, one job a module (the data flows down the list):

    rows.py           StepRow (rooflab.rows.Row plus the step's columns), floor_row from summed floors, the sums
    pricing.py        gemm_ceilings, the Pricer (floors and fitted predictions), launch_times, StepContext
    small_ops.py      the norms and elementwise kernels at the GPU's measured launch times (measured.launch)
    moe_kernel.py     MoeKernel (the expert-kernel models) and engine_moe_kernel with its facts (engines' wheels)
    routing.py        Routing (how a MoE layer picks its experts, priced at measured launch times) and its facts
    mla_decode.py     the KV splits an engine's MLA decode kernel runs at a release (its facts)
    mla_layout.py     MlaLayout (the GEMMs of MLA's projections at an engine's release) and its facts
    dense_block_fp8.py  the kernel an engine's release ran dense block-fp8 GEMMs with (a fact for the note)
    gemms.py          attention projections, dense MLP and MoE, logits
    attention.py      decode and prefill attention per layer type (DCP merge, PCP ring)
    communication.py  the collectives that scale with the tokens; the pipeline's send
    work.py           StepWork (what a data rank computes), step_graphed (graph or eager) and the layers' rows
    draft.py          speculative decoding's draft steps
    engine_kernels.py engine_kernels: the decode attention and expert kernel an engine runs at its release (one
                      resolver for report, explain, serve and the published checks; step_report(engine=...))
    memory.py         weights, KV cache and usable memory per GPU, and the fit check
    report.py         StepReport, step_rows and step_report
"""

from __future__ import annotations

from .attention import (PER_QUERY_HEAD_L2_SHARE, DecodeAttention, decode_attention, decode_attention_of,
                        engine_decode_attention, prefill_attention)
from .communication import communication, pipeline_send
from .draft import draft_rows
from .engine_kernels import OWN_KERNELS, EngineKernels, engine_kernels
from .gemms import logits, mlp, projections
from .memory import capacity_models, kv_bytes, step_memory
from .moe_kernel import DEFAULT_MOE_KERNEL, MoeKernel, engine_moe_kernel, moe_kernel_fact, moe_kernel_of
from .pricing import Launches, Pricer, StepContext, gemm_ceilings, launch_times, step_context
from .mla_layout import MLA_LAYOUT_FACTS, MlaLayout, mla_layout_fact
from .routing import ROUTING_FACTS, Routing, routing_fact
from .report import StepReport, step_report, step_rows
from .sampler import SAMPLER_FACTS, Sampler, sampler_fact
from .rows import StepRow, overlapped_floor_s
from .small_ops import (FUSED_SMALL_OPS, LAYER_SMALL_OPS, SMALL_OPS_GPU, reference_launch, small_op_time,
                        small_ops_from, small_ops_row)
from .work import STEPS, StepWork, layer_rows

#: The old private names rooflab.step_table imports (kept while it does).
_decode_attention, _prefill_attention, _draft, _layer_rows, _logits = (decode_attention, prefill_attention,
                                                                       draft_rows, layer_rows, logits)
_kv_bytes = kv_bytes

#: The old module-level tables, now the H200's measured.launch (hardware/h200-sxm.yaml): read on first use.
_OLD_TABLES = {"SMALL_OPS": lambda t: dict(t.graph_s), "EAGER_SMALL_OPS": lambda t: dict(t.eager_s),
               "EAGER_HOST_S": lambda t: t.eager_host_s, "SMALL_OP_BATCHES": lambda t: t.batches}


def __getattr__(name: str):
    """SMALL_OPS, EAGER_SMALL_OPS, EAGER_HOST_S and SMALL_OP_BATCHES: deprecated, kept one release; the times live
    in the GPU YAML's measured.launch section now (rooflab.specs.LaunchTimes; these are the H200's)."""
    if name in _OLD_TABLES:
        return _OLD_TABLES[name](reference_launch())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_MOE_KERNEL", "DecodeAttention", "EAGER_HOST_S", "EAGER_SMALL_OPS", "EngineKernels", "FUSED_SMALL_OPS",
           "LAYER_SMALL_OPS", "Launches", "MLA_LAYOUT_FACTS", "MlaLayout", "MoeKernel", "OWN_KERNELS", "PER_QUERY_HEAD_L2_SHARE", "Pricer", "ROUTING_FACTS",
           "Routing", "SAMPLER_FACTS", "SMALL_OPS", "Sampler",
           "SMALL_OPS_GPU", "SMALL_OP_BATCHES", "STEPS", "StepContext", "StepReport", "StepRow", "StepWork",
           "capacity_models", "communication", "decode_attention", "decode_attention_of", "draft_rows",
           "engine_decode_attention", "engine_kernels", "engine_moe_kernel", "gemm_ceilings", "kv_bytes", "launch_times", "layer_rows",
           "logits", "mla_layout_fact", "mlp", "moe_kernel_fact", "moe_kernel_of", "overlapped_floor_s", "pipeline_send",
           "prefill_attention", "projections", "reference_launch", "routing_fact", "sampler_fact", "small_op_time", "small_ops_from", "small_ops_row",
           "step_context", "step_memory", "step_report", "step_rows"]

"""The step's small kernels: norms, residual adds, SiLU x up, the q copy and the KV write, priced at measured launch
times.

Their times are the GPU's measured.launch section (specs/launch.py: the torch reference layer's kernels timed alone
in a CUDA graph, and issued eagerly, at batch 1, 8 and 64), interpolated in log(batch); past the last batch the extra
bytes stream at the GPU's copy bandwidth. A GPU without the section takes another bundled NVIDIA GPU's, said to be
a transfer (pricing.launch_times); other vendors get no prediction. The floor counts the bytes the fused kernels
move (what a fused engine must move), whichever the deployment runs.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..cost.common import KernelCost, real_number, whole_number
from ..cost.layers import layer_heads, layer_walk
from ..dtypes import FP8_BLOCK
from ..errors import InputError, shown
from ..limits import MAX_BATCH, MAX_TOKENS
from ..load import load_gpu
from ..specs import GpuSpec, LaunchTimes
from ..specs.launch import SMALL_OP_NAMES
from ..vocab import Pipe
from .pricing import StepContext, launch_times, priced_row
from .rows import StepRow

#: The GPU whose measured launch times the bundled specs hold (hardware/h200-sxm.yaml, measured.launch): what
#: small_op_time prices at when given no LaunchTimes, and what the old SMALL_OPS tables read.
SMALL_OPS_GPU = "h200-sxm"
#: The small kernels of rooflab's torch reference layer (unfused): (op, calls).
LAYER_SMALL_OPS = (("rms_norm", 2), ("residual_add", 2), ("silu_mul", 1), ("q_copy", 1), ("kv_append", 2))
#: A fused engine's: fused add-RMSNorm (priced at the RMSNorm's measured time) twice, SiLU-and-mul, and one write of
#: the new K and V into the cache (vLLM's reshape_and_cache, at the KV append's time); the q copy is gone (rotary
#: embedding in place) and the residual adds are inside the norms.
FUSED_SMALL_OPS = (("rms_norm", 2), ("silu_mul", 1), ("kv_append", 1))
#: The activations' quantisation group of a block-fp8 GEMM: 1 x FP8_BLOCK (the weights' blocks' k).
QUANT_GROUP = FP8_BLOCK
#: The row width act_quant is measured at (measurements/launch/h200-block-fp8-launch.csv: [tokens, 7168] bf16,
#: DeepSeek-V3's hidden).
ACT_QUANT_WIDTH = 7168


def reference_launch() -> LaunchTimes:
    """The launch times measured on SMALL_OPS_GPU (its YAML's measured.launch)."""
    return load_gpu(SMALL_OPS_GPU).measured.launch


def _interp(launch: LaunchTimes, table, tokens: int) -> float:
    return float(np.interp(np.log(max(tokens, 1)), np.log(launch.batches), table))


def small_op_time(op: str, tokens: int, hidden: int, ffn: int, bw: float, eager: bool = False,
                  launch: Optional[LaunchTimes] = None) -> float:
    """One small kernel's time at `tokens` rows: the measured table of `launch` (a GPU's measured.launch; None: the
    times measured on SMALL_OPS_GPU) in a graph, or issued eagerly, interpolated in log(batch); past its last
    batch, that time plus the extra bytes at bandwidth `bw` (_ROW_BYTES: a row's bytes read and written)."""
    if not isinstance(op, str) or op not in SMALL_OP_NAMES:
        raise InputError(f"op must be one of {', '.join(SMALL_OP_NAMES)}, got {shown(op)}")
    tokens = whole_number(tokens, "tokens", maximum=MAX_BATCH * MAX_TOKENS)
    hidden = whole_number(hidden, "hidden")
    ffn = whole_number(ffn, "ffn")
    bw = real_number(bw, "bw (bytes per second)", 0, 1e18, lo_open=True)
    if launch is None:
        launch = reference_launch()
    elif not isinstance(launch, LaunchTimes):
        raise InputError(f"launch must be a rooflab.specs.LaunchTimes (a GPU's measured.launch), got {shown(launch)}")
    graph, last = launch.graph_s[op], launch.batches[-1]
    if tokens <= last:
        t = _interp(launch, graph, tokens)
        return max(t, _interp(launch, launch.eager_s[op], tokens)) if eager else t
    t = graph[-1] + (tokens - last) * _row_bytes(op, hidden, ffn) / bw
    return max(t, launch.eager_s[op][-1]) if eager else t


def _row_bytes(op: str, hidden: int, ffn: int) -> float:
    """Bytes a row of `op` reads and writes (past the measured batches): 3 bf16 hidden elements (RMSNorm, adds,
    copies), 5 ffn ones for SiLU x up; act_quant a bf16 row of `hidden` in, e4m3 out and a float32 scale a group of
    QUANT_GROUP; moe_align `hidden` pairs a token (its top-k ids in, as int64, and their int32 sorted slots out)."""
    if op == "act_quant":
        return hidden * (2 + 1) + hidden // QUANT_GROUP * 4
    if op == "moe_align":
        return hidden * (8 + 4)
    return {"silu_mul": 5 * ffn}.get(op, 3 * hidden) * 2


def measured_launch_time(ctx: StepContext, op: str, rows: int, row_width: int, what: str) -> Optional[float]:
    """One launch of measured `op` at `rows` rows of `row_width` (small_op_time, graph or eager as the step
    runs: StepContext.graphs); None, recorded missing as `what`, where the GPU has no launch times."""
    launches, gpu = ctx.pricer.launches, ctx.gpu
    if launches.times is None or op not in launches.times.graph_s:
        ctx.pricer.miss(what, launches.why if launches.times is None else
                        f"{launches.measured_on}'s measured.launch has no {op} times")
        return None
    bw = gpu.measured.copy_bytes_per_s if gpu.measured else gpu.hbm_bandwidth_bytes_per_s
    return small_op_time(op, rows, row_width, 1, bw, not ctx.graphs, launches.times)


def act_quant_time(ctx: StepContext, inputs, count: float) -> Optional[float]:
    """Seconds of `count` layers' activation quantisation before their block-fp8 GEMMs, one launch for each GEMM
    input [m, k] in `inputs`: per token group of QUANT_GROUP to e4m3 with a float32 scale a group, as vLLM 0.7.3 and
    SGLang 0.4.3.post2 quantise the input inside every block-fp8 linear layer and fused MoE GEMM, each on its own
    (vllm/model_executor/layers/quantization/utils/fp8_utils.py:61,70 apply_w8a8_block_fp8_linear and
    fused_moe/fused_moe.py:653; sglang/srt/layers/quantization/fp8_utils.py:72,79 and
    layers/moe/fused_moe_triton/fused_moe.py:496, its sgl_kernel CUDA quant; so q_a and kv_a quantise the same
    hidden twice).

        t = count * sum over inputs of t_act_quant(ceil(m k / ACT_QUANT_WIDTH))

    t_act_quant is the measured launch (hardware/<gpu>.yaml measured.launch, measurements/launch/
    h200-block-fp8-launch.csv) at rows of ACT_QUANT_WIDTH; the kernel runs one program a group (vLLM 0.7.3
    fp8_utils.py:277,292,307: grid (x.numel() // group_size,)), so [m, k] is the launch of ceil(m k / ACT_QUANT_WIDTH)
    measured rows. 0 without inputs; None, recorded missing, where the GPU has no launch times."""
    total = 0.0
    for m, k in inputs:
        if m <= 0:
            continue
        t = measured_launch_time(ctx, "act_quant", math.ceil(m * k / ACT_QUANT_WIDTH), ACT_QUANT_WIDTH,
                         "block-fp8 activation quantisation (small kernels)")
        if t is None:
            return None
        total += t
    return count * total


def moe_align_time(ctx: StepContext, tokens: int, count: float) -> Optional[float]:
    """Seconds of `count` MoE layers' align before a fused MoE kernel (moe_align_block_size: the `tokens` x top-k
    token-expert pairs sorted by expert, each expert's run padded to the kernel's BLOCK_M), one launch a layer, at its
    measured time (measurements/launch/h200-block-fp8-launch.csv: our one-kernel Triton align over 256 experts at
    BLOCK_M 64, for the one-kernel CUDA align vLLM 0.7.3 and SGLang 0.4.3.post2 run for 256 experts: vllm fused_moe.py
    :586-621 ops.sgl_moe_align_block_size, sglang fused_moe.py:421-451 sgl_kernel moe_align_block_size, after a
    fill of the sorted ids our kernel does inside); None, recorded missing, where the GPU has no launch times."""
    k = ctx.model.num_experts_per_token
    t = measured_launch_time(ctx, "moe_align", tokens, k, "MoE align (small kernels)")
    return None if t is None else count * t


def small_ops_from(gpu: GpuSpec) -> Optional[str]:
    """The provenance of the small kernels' times on `gpu`: measured on it, transferred from the bundled GPU whose
    times it takes, or None where none transfer (pricing.launch_times)."""
    return launch_times(gpu).provenance


def small_ops_row(ctx: StepContext, tokens: int) -> StepRow:
    """The small kernels of every layer: fused (FUSED_SMALL_OPS) or unfused (LAYER_SMALL_OPS), and the final
    RMSNorm; the floor counts the bytes the fused kernels move (what a fused engine must move)."""
    model, pricer, eager = ctx.model, ctx.pricer, not ctx.graphs
    hidden, b = model.hidden_size, pricer.dtype.bytes
    heads = layer_heads(model, layer_walk(model)[0][1], ctx.attn_tp)
    ffn = (model.dense_ffn_size or model.ffn_size) // ctx.dep.tensor_parallel
    bw = pricer.gpu.measured.copy_bytes_per_s if pricer.gpu.measured else pricer.gpu.hbm_bandwidth_bytes_per_s
    kv_elems = 2 * heads.num_kv_heads * heads.head_dim
    fused_moved = {"rms_norm": 4 * hidden, "silu_mul": 3 * ffn, "kv_append": 2 * kv_elems}  # elements a row
    layers = model.num_layers
    kernels = []
    for op, per_layer in FUSED_SMALL_OPS + (("rms_norm", 1 / layers),):
        n = per_layer * layers
        kernels.append(KernelCost(op, np.float64(n * tokens * fused_moved[op] / 2),
                                  np.float64(n * tokens * fused_moved[op] * b), Pipe.vector))
    ops = FUSED_SMALL_OPS if ctx.dep.fused else LAYER_SMALL_OPS
    launches = pricer.launches
    predicted, calls = (0.0 if launches.times is not None else None), 0
    for op, per_layer in ops + (("rms_norm", 1 / layers),):
        n = per_layer * layers
        if predicted is not None:
            predicted += n * small_op_time(op, tokens, hidden, ffn, bw, eager, launches.times)
        calls += round(n)
    if launches.times is None:
        pricer.miss("norms and elementwise (small kernels)", launches.why)
    what = ("fused add-RMSNorm, SiLU-and-mul, KV write" if ctx.dep.fused else
            "RMSNorm, adds, SiLU x up, q copy, KV append, unfused")
    source = (f"measured small kernels {'issued eagerly' if eager else 'in a CUDA graph'} on {launches.measured_on} "
              f"(its measured.launch)" if launches.times is not None else "no measured launch times")
    return priced_row(pricer, "elementwise", f"norms and elementwise ({what})", kernels, 1.0, predicted,
                      ("torch_eager" if eager else "torch_graph") if predicted is not None else None,
                      num_layers=layers, calls=calls, source=source, predicted_from=launches.provenance)


def small_ops_note(ctx: StepContext) -> Optional[str]:
    """The step's note on where its small kernels' times come from (None where there are none: the missing note)."""
    launches, gpu = ctx.pricer.launches, ctx.gpu
    if launches.times is None:
        return None
    what = "graph and eager launch times; eager launches at least its eager_host_s" if not ctx.graphs \
        else "launch times in a CUDA graph"
    note = f"small kernels priced at the {what} measured on {launches.measured_on} (hardware/{launches.measured_on}" \
           f".yaml, measured.launch)"
    if launches.measured_on != gpu.name:
        note += (f", transferred to {gpu.name} as measured: the same launch and host issue times assumed (not "
                 f"measured on {gpu.name}; past batch {launches.times.batches[-1]} the extra bytes stream at its "
                 f"bandwidth)")
    return note


__all__ = ["ACT_QUANT_WIDTH", "FUSED_SMALL_OPS", "LAYER_SMALL_OPS", "QUANT_GROUP", "SMALL_OPS_GPU", "act_quant_time",
           "measured_launch_time",
           "moe_align_time", "reference_launch", "small_op_time",
           "small_ops_from", "small_ops_note", "small_ops_row"]

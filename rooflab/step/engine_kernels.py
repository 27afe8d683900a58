"""The kernels an engine runs in the step at its release: one resolver for `report --phase step --engine E
--engine-version V`, `explain --phase step`, `rooflab serve`, the serving checks and the published-step benchmark,
so that each prices the same deployment with the same kernels.

    decode attention   engine_decode_attention (attention.py): TensorRT-LLM before 0.10 runs its masked MHA
                       kernel (a GQA group's KV read once per query head) where XQA's precompiled kernels do not
                       apply; every other engine and release reads a KV head once for its group (`shared`)
    experts            moe_kernel_fact (moe_kernel.py): a tuned fused kernel where the release shipped a tuned
                       config for the shape (over block-fp8 experts in vLLM 0.7.x / SGLang 0.4.x, the fused block-fp8
                       kernel those releases ran, as measured: fused_block_fp8), fused_moe's default config where it
                       did not, torch's grouped GEMM as measured otherwise
    routing            routing_fact (routing.py): DeepSeek's grouped top-k as vLLM 0.7.x and SGLang 0.4.x run it
                       (under torch.compile), at its measured launch time; SGLang 0.5.x's fused top-k kernel on 9.x,
                       with the shared expert fused into the MoE kernel at EP 1 (fused_topk_shared: no shared-experts
                       row), at measured small ops' launch times; unpriced where not read
    MLA projections    mla_layout_fact (mla_layout.py): the GEMMs a release launches for MLA's projections, and the
                       width it keeps the absorbed W_UK / W_UV in
    MLA decode splits  mla_decode_fact (mla_decode.py): vLLM 0.7.x's TRITON_MLA runs 4 KV splits, SGLang 0.4.x's
                       triton backend 8; rooflab's own split search where not read, and for SGLang 0.5.x (fa3 by
                       default on Hopper, which picks its own)
    sampler            sampler_fact (sampler.py): what picks the tokens after the graph for the engines' benchmark
                       sampling (vLLM V0 0.7.x / V1 0.11.x exponential sampling, eager; SGLang greedy argmax), at its
                       time measured on the H200; TensorRT-LLM's not read (unpriced)
    dense block fp8    dense_block_fp8_fact (dense_block_fp8.py): the kernel vLLM 0.7.x / SGLang 0.4.x ran the dense
                       block-fp8 GEMMs with on a 9.x GPU (CUTLASS blockwise), SGLang 0.5.x's (DeepGEMM), stated in
                       the note; SGLang 0.5.x's priced by DeepGEMM's measured fit where it takes the shape
                       (dense_block_fp8_kernel), the others by the cuBLASLt blockwise fit

No engine: rooflab's own step (shared decode attention, DEFAULT_MOE_KERNEL). An engine without a version: the
release rooflab.vocab.ENGINE_RELEASES names (the one the serving model's scheduler defaults follow).

Under data-parallel attention (SGLang's --enable-dp-attention) the weights follow SGLang's layout at the release
(capacity.weight_split.dp_attention_splits), read from --engine-version as `capacity --engine sglang` reads it
(engines.vocab.parse_engine_version, engines.memory.layout_release: a label is the release it stands for,
engines.vocab.label_release); no engine: the newest read; another engine: refused
(weight_split.check_dp_attention_engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..deployment import Deployment
from ..capacity.weight_split import check_dp_attention_engine
from ..errors import InputError, shown
from ..specs import GpuSpec, ModelSpec
from ..vocab import ENGINE_RELEASES, Engine, check_engine_release
from .attention import DecodeAttention, engine_decode_attention
from .moe_kernel import DEFAULT_MOE_KERNEL, MoeKernel, moe_kernel_fact
from .pricing import step_context
from .dense_block_fp8 import DenseBlockFp8Kernel, dense_block_fp8_fact, dense_block_fp8_kernel
from .mla_decode import mla_decode_fact
from .mla_layout import MlaLayout, absorbed_weight_bytes, mla_layout_fact
from .routing import Routing, routing_fact
from .sampler import Sampler, sampler_fact

#: What a decode-attention model is, in the step's note.
_ATTENTION_WORDS = {DecodeAttention.shared: "a KV head read once for its query group",
                    DecodeAttention.per_query_head: "masked MHA, a KV head read once per query head"}


@dataclass(frozen=True)
class EngineKernels:
    """The step's kernel models for `engine` at `version` (engine None: rooflab's own step)."""

    engine: Optional[Engine]
    version: str
    decode_attention: DecodeAttention
    moe_kernel: MoeKernel
    moe_reason: str                      # why this expert kernel ('' for a dense model)
    layout_release: Optional[tuple] = None   # SGLang's release for DP attention's weights (None: the newest read)
    routing: Routing = Routing.unpriced      # how the experts are picked (step.routing)
    routing_reason: str = ""                 # why ('' for a dense model)
    mla_decode_splits: Optional[int] = None  # the MLA decode's KV splits (step.mla_decode; None: rooflab's search)
    mla_reason: str = ""                     # why ('' for a model without MLA, or rooflab's own step)
    dense_reason: str = ""                   # the engine's dense block-fp8 GEMM kernel (step.dense_block_fp8; a note)
    mla_layout: MlaLayout = MlaLayout.separate   # the MLA projections' GEMMs (step.mla_layout)
    mla_layout_reason: str = ""              # why ('' for a model without MLA, or rooflab's own step)
    absorbed_bytes: Optional[float] = None   # bytes a W_UK / W_UV parameter (step.mla_layout; None: activations')
    sampler: Sampler = Sampler.graphed_greedy    # the token pick after the graph (step.sampler)
    sampler_reason: str = ""                 # why ('' for rooflab's own step)
    dense_block: DenseBlockFp8Kernel = DenseBlockFp8Kernel.scaled_mm_block   # what prices dense block-fp8 GEMMs

    @property
    def note(self) -> str:
        """One line for the step's notes; '' for rooflab's own step."""
        if self.engine is None:
            return ""
        experts = f"; experts {self.moe_kernel.value} ({self.moe_reason})" if self.moe_reason else ""
        routing = f"; routing {self.routing_reason}" if self.routing_reason else ""
        mla = f"; MLA decode {self.mla_reason}" if self.mla_reason else ""
        dense = f"; dense block-fp8 GEMMs {self.dense_reason}" if self.dense_reason else ""
        layout = f"; {self.mla_layout_reason}" if self.mla_layout_reason else ""
        sampling = f"; sampling {self.sampler_reason}" if self.sampler_reason else ""
        return (f"kernels: {self.engine.value} {self.version}'s (rooflab.step.engine_kernels): decode attention "
                f"{self.decode_attention.value} ({_ATTENTION_WORDS[self.decode_attention]}){experts}{routing}{mla}"
                f"{dense}{layout}{sampling}")

    def context(self, model: ModelSpec, gpu: GpuSpec, deployment: Deployment, expert_imbalance: float = 1.0,
                graphs: Optional[bool] = None):
        """The step's StepContext with these kernels (step_context; `graphs` whether the step's model runs as a
        CUDA graph, rooflab.step.work.step_graphed): the one place report and explain build it."""
        return step_context(model, gpu, deployment, expert_imbalance, self.decode_attention, self.moe_kernel,
                            self.layout_release, self.routing, self.mla_decode_splits, self.mla_layout,
                            self.absorbed_bytes, sampler=self.sampler, dense_block=self.dense_block, graphs=graphs)


#: rooflab's own step: the kernels step_report prices when no engine is named.
OWN_KERNELS = EngineKernels(None, "", DecodeAttention.shared, DEFAULT_MOE_KERNEL, "rooflab's step default")


def engine_kernels(model: ModelSpec, gpu: GpuSpec, deployment: Deployment, engine=None,
                   version: Optional[str] = None) -> EngineKernels:
    """The decode attention and expert kernel `engine` (vllm, sglang, tensorrt-llm or None) at `version` (a release
    such as 0.9.0; None: ENGINE_RELEASES's) runs for `model` on `gpu` in `deployment` (the module docstring)."""
    if not isinstance(model, ModelSpec) or not isinstance(gpu, GpuSpec):
        raise InputError(f"engine_kernels takes a ModelSpec and a GpuSpec, got {shown(model)}, {shown(gpu)}")
    if not isinstance(deployment, Deployment):
        raise InputError(f"deployment must be a rooflab.Deployment, got {shown(deployment)}")
    if engine is None:
        if version is not None:
            raise InputError(f"an engine version ({shown(version)}) needs an engine (--engine vllm, sglang or "
                             f"tensorrt-llm)")
        return OWN_KERNELS
    name = Engine.of(engine, "--engine")
    release = ENGINE_RELEASES[name] if version is None else check_engine_release(version, engine=name)
    check_dp_attention_engine(name, deployment.attention_data_parallel)
    layout = _layout_release(name, release, deployment)
    ctx = step_context(model, gpu, deployment, dp_attention_release=layout)
    attention = engine_decode_attention(name.value, release, model, ctx.attn_tp)
    kernel, why = moe_kernel_fact(name.value, release, model, gpu.name, deployment.tensor_parallel,
                                  deployment.expert_parallel, ctx.arithmetic("experts"))
    routing, routing_why = routing_fact(name.value, release, model, gpu, deployment.expert_parallel)
    splits, splits_why = mla_decode_fact(name.value, release, model, gpu)
    sampler, sampler_why = sampler_fact(name.value, release)
    block = any(ctx.block_scaled(c) for c in ("attention", "dense_mlp", "shared_experts"))
    mla = any(layer.is_latent for _, layer, _ in model.layer_walk())
    mla_layout, mla_layout_why = mla_layout_fact(name.value, release) if mla else (MlaLayout.separate, "")
    absorbed = absorbed_weight_bytes(name.value, release, model, ctx.attn_tp, deployment.weight_format,
                                     ctx.dtype.bytes) if mla else None
    return EngineKernels(name, release, attention, kernel, why if model.is_moe else "", layout, routing,
                         routing_why if model.is_moe else "", splits, splits_why,
                         dense_block_fp8_fact(name.value, release, gpu, block), mla_layout, mla_layout_why,
                         absorbed, sampler=sampler, sampler_reason=sampler_why,
                         dense_block=dense_block_fp8_kernel(name.value, release, gpu, block))


def _layout_release(engine: Engine, version: str, deployment: Deployment) -> Optional[tuple]:
    """The SGLang release whose data-parallel attention layout the step's weights follow, as `capacity --engine
    sglang --engine-version` takes it (the module docstring); None without DP attention."""
    if engine is not Engine.sglang or deployment.attention_data_parallel == 1:
        return None
    from ..engines.memory import layout_release
    from ..engines.vocab import parse_engine_version

    named = parse_engine_version(engine, version)
    return layout_release(named.accounting, named.release)


__all__ = ["OWN_KERNELS", "EngineKernels", "engine_kernels"]

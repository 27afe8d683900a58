"""How an engine picks a MoE layer's experts between the router GEMM and the expert GEMMs, as a closed set of priced
models (Routing), and the facts, read from the engines' shipped source, that pick one for an engine at a release.

    unpriced               no routing kernel is priced: the step's default, and every engine and release whose
                           routing was not read (a fused top-k kernel is a launch or two; it is left out, not guessed)
    grouped_topk           DeepSeek's biased grouped top-k (config.json n_group > 1) as eager PyTorch ops, one
                           kernel an op (sigmoid, the bias, each group's two best, the best groups, a mask, the top
                           k, the gathered weights, the renormalisation): ~16 small kernels a MoE layer
    grouped_topk_compiled  the same function under torch.compile(dynamic=True): fewer, fused kernels
    fused_topk             one fused routing kernel (FlashInfer's fused_topk_deepseek: sigmoid, bias, group scores,
                           top groups, top k and the renormalised weights in one launch), then the padded tokens'
                           ids masked (sgl_kernel mask_topk_ids, one launch) as SGLang 0.5.x does under expert
                           parallelism
    fused_topk_shared      the same kernel, the shared expert then appended as one more expert every token picks
                           (expert E, weight the routed weights' sum / the routed scaling factor: two pads, a sum, a
                           divide and a copy, five elementwise launches), and run inside the fused MoE kernel:
                           SGLang 0.5.x's shared-expert fusion, so the step prices the shared expert's GEMMs with
                           the experts' (step.gemms) and no shared-experts row

grouped_topk and grouped_topk_compiled are priced at their times measured on the H200 (benchmarks/
moe_routing_launch.py, measurements/launch/h200-moe-routing.csv: our own torch function of the same ops, 200 calls
in a CUDA graph, and issued eagerly), kept in the GPU YAML's measured.launch beside the layer's small kernels and
priced as they are (small_ops.small_op_time: interpolated in log(tokens), eager never below the eager table). The
fused kernels are not measured here: each of their launches is priced at the measured launch of the nearest
one-kernel small op (routing_launches): the fused top-k, a row reduction over a token's expert scores, at the
RMSNorm's (one block a row reduced and written), each elementwise launch (the mask, the pads, the sum and divide,
the copy, the logits' cast) at the residual add's. A transfer, said in the row's source. The floor is unchanged: a
fused engine does the routing in a launch whose bytes (tokens x experts) are negligible beside the experts' weights.

Facts (ROUTING_FACTS), each read at one release and assumed kept within its minor line (0.7.x, 0.4.x, 0.5.x), not
beyond:

    vLLM 0.7.3          vllm/model_executor/layers/fused_moe/fused_moe.py:922 grouped_topk, with
                        e_score_correction_bias, under @torch.compile(dynamic=True, backend=current_platform.
                        simple_compile_backend), inductor on CUDA; models/deepseek_v2.py:137 use_grouped_topk=True
    SGLang 0.4.3.post2  sglang/srt/layers/moe/topk.py:114 biased_grouped_topk under @torch.compile(dynamic=True)
    SGLang 0.5.12       biased_grouped_topk_gpu (srt/layers/moe/topk.py:1001-1093, not compiled) runs FlashInfer's
                        fused_topk_deepseek (flashinfer 0.6.11.post1, the release the wheel pins: fused_moe/
                        fused_routing_dsv3.py:142-240, one NoAuxTc kernel, compute capability 8.9, 9.0, 10.x, 12.x)
                        where the experts are a power of 2, the routed top k at most 8, and a group at most 32
                        experts with at most 128 in the top groups (topk.py:1021-1033; DeepSeek-V3: 256, 8, 32, 4 x
                        32); the fused shared expert's columns appended after it (topk.py:1064-1073). The shared
                        expert is fused (deepseek_v2.py:2408-2459 determine_num_fused_shared_experts) for 256
                        routed and 1 shared expert on CUDA at capability 8.0 and above with expert parallelism 1
                        (MoE EP > 1 turns it off on NVIDIA), not under DeepEP, not for W4AFP8 weights; on 10.x the
                        auto MoE runner for DeepSeek-V3 is flashinfer_trtllm (server_args.py:1940-1960), which
                        turns the fusion off (server_args.py:3135-3141) and routes inside its MoE kernel, so the
                        routing is not priced apart there. The padded tokens' ids are masked only under expert
                        parallelism (forward_batch_info.py:1088-1089 enable_num_token_non_padded: MoE EP > 1;
                        topk.py:978-989 mask_topk_ids). The router's logits come in float32 from sgl_kernel's
                        dsv3_router_gemm at up to 16 tokens on 9.x (deepseek_v2.py:397-417) and in bf16 from
                        F.linear above, cast to float32 before the kernel (topk.py:1055, one launch)
                        On HIP (an AMD GPU, GpuSpec.vendor) none of that runs: the FlashInfer and moe_fused_gate
                        branches need _is_cuda (topk.py:1022-1024, 1076-1078); with SGLANG_USE_AITER unset (its
                        default false, utils/common.py:348) biased_grouped_topk_impl runs, the biased grouped top-k
                        under @torch.compile(dynamic=True) (topk.py:901-975, reached at :1164-1175), aiter's
                        biased_grouped_topk under SGLANG_USE_AITER (topk.py:1095-1114); and the shared expert is
                        fused at any EP from gfx942 (deepseek_v2.py:2430-2446). rooflab has no form of a compiled
                        routing with the shared expert fused inside the MoE kernel: unpriced, the miss said (the
                        shared expert's GEMMs then priced as their own row)

No release read runs the eager ops: grouped_topk stays in the set as the model of an uncompiled routing (measured
beside the compiled one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..vocab import _Named, engine_name, fact_of_line
from .dense_block_fp8 import is_nvidia


class Routing(_Named):
    """How the step prices a MoE layer's expert selection (a model of the engine's routing kernels)."""

    unpriced = "unpriced"                            # not priced (not read, or a model without grouped routing)
    grouped_topk = "grouped_topk"                    # DeepSeek's grouped top-k as eager torch ops (no release read)
    grouped_topk_compiled = "grouped_topk_compiled"  # the same under torch.compile (vLLM 0.7.x, SGLang 0.4.x)
    fused_topk = "fused_topk"                        # one fused top-k kernel and the EP mask (SGLang 0.5.x, EP > 1)
    fused_topk_shared = "fused_topk_shared"          # the same, the shared expert fused as one more (SGLang 0.5.x)

    @property
    def fuses_shared_expert(self) -> bool:
        """Whether the shared expert runs inside the fused MoE kernel as one more expert every token picks."""
        return self is Routing.fused_topk_shared


@dataclass(frozen=True)
class RoutingFact:
    """An engine line's routing for grouped (n_group > 1) MoE models, read at `version` from its wheel."""

    engine: str
    version: str
    routing: Routing
    source: str


_SG0512 = "sglang 0.5.12 wheel on PyPI (sglang-0.5.12-cp311-cp311-manylinux_2_34_x86_64.whl)"

ROUTING_FACTS = (
    RoutingFact("vllm", "0.7.3", Routing.grouped_topk_compiled,
                "vllm 0.7.3 wheel on PyPI: vllm/model_executor/layers/fused_moe/fused_moe.py:922 grouped_topk "
                "(sigmoid scores, e_score_correction_bias) under @torch.compile(dynamic=True, backend="
                "current_platform.simple_compile_backend), models/deepseek_v2.py:137 use_grouped_topk=True"),
    RoutingFact("sglang", "0.4.3.post2", Routing.grouped_topk_compiled,
                "sglang 0.4.3.post2 wheel on PyPI: sglang/srt/layers/moe/topk.py:114 biased_grouped_topk under "
                "@torch.compile(dynamic=True)"),
    RoutingFact("sglang", "0.5.12", Routing.fused_topk_shared,
                f"{_SG0512}: srt/layers/moe/topk.py:1001-1073 biased_grouped_topk_gpu, FlashInfer's "
                f"fused_topk_deepseek (flashinfer 0.6.11.post1 fused_moe/fused_routing_dsv3.py:142-240, one NoAuxTc "
                f"kernel), the fused shared expert's columns appended; models/deepseek_v2.py:2408-2459 the shared "
                f"expert fused at EP 1"),
)

#: The compute capability major the fused routing of SGLang 0.5.x was read for (9.x: sgl_kernel's dsv3_router_gemm
#: and FlashInfer's fused_topk_deepseek; 10.x routes inside flashinfer_trtllm's MoE kernel: the module docstring).
FUSED_TOPK_MAJOR = "9"
#: Tokens up to which SGLang 0.5.x's router GEMM writes float32 logits on 9.x (deepseek_v2.py:397-417
#: dsv3_router_gemm); above, F.linear's bf16 logits are cast to float32 (topk.py:1055), one launch more.
ROUTER_FP32_TOKENS = 16
#: Launches of the fused shared expert's appended columns (topk.py:1064-1073: F.pad of the ids and of the weights,
#: the routed weights' sum, its division by the scaling factor, the copy into the shared column).
SHARED_COLUMN_LAUNCHES = 5
#: The measured one-kernel small ops (measured.launch) a fused routing's launches are priced at: the fused top-k,
#: a row reduction, at the RMSNorm's; each elementwise launch at the residual add's (the module docstring).
REDUCTION_OP, ELEMENTWISE_OP = "rms_norm", "residual_add"


def routing_launches(routing, tokens: int, model) -> tuple[tuple[str, int, int], ...]:
    """((measured op, launches, a row's width), ...) a MoE layer's routing of `model` at `tokens` rows is priced at
    (small_ops.measured_launch_time of each op; the width sizes the bytes past the measured batches): none
    unpriced; the measured routing itself for grouped_topk and grouped_topk_compiled (at the hidden width, as
    measured); for the fused kernels, the top-k at REDUCTION_OP over E scores a row, and at ELEMENTWISE_OP the EP
    mask of the k ids (fused_topk) or the shared expert's SHARED_COLUMN_LAUNCHES over k + s columns
    (fused_topk_shared), and above ROUTER_FP32_TOKENS tokens the logits' cast of E a row."""
    routing = Routing.of(routing, "routing")
    if routing is Routing.unpriced:
        return ()
    if routing in (Routing.grouped_topk, Routing.grouped_topk_compiled):
        return ((routing.value, 1, model.hidden_size),)
    e, k = model.num_experts, model.num_experts_per_token
    after = ((ELEMENTWISE_OP, SHARED_COLUMN_LAUNCHES, k + model.num_shared_experts) if routing.fuses_shared_expert
             else (ELEMENTWISE_OP, 1, k))
    cast = ((ELEMENTWISE_OP, 1, e),) if tokens > ROUTER_FP32_TOKENS else ()
    return ((REDUCTION_OP, 1, e), after) + cast


def routing_fact(engine, version, model, gpu=None, expert_parallel: int = 1) -> tuple[Routing, str]:
    """(the routing `engine` at `version` runs for `model` on `gpu` (a GpuSpec; None: its capability unknown) at
    `expert_parallel`, why). No engine, a dense model, routing that is not grouped, or a release whose line was not
    read: unpriced; a fused-routing release on a GPU or a shape its fact does not cover: unpriced, said why
    (_fused_topk)."""
    if not getattr(model, "is_moe", False):
        return Routing.unpriced, "a dense model"
    if getattr(model, "expert_groups", 1) <= 1:
        return Routing.unpriced, "not grouped (n_group 1): a top-k routing kernel, not priced"
    name = engine_name(engine)
    fact = fact_of_line(ROUTING_FACTS, name, version)
    if fact is not None:
        if fact.routing in (Routing.fused_topk, Routing.fused_topk_shared):
            return _fused_topk(fact, name, model, gpu, expert_parallel)
        return fact.routing, f"{fact.routing.value}, read at {name} {fact.version} ({fact.source})"
    if not name:
        return Routing.unpriced, "rooflab's own step: the routing kernels are not priced"
    return Routing.unpriced, f"{name} {version}'s routing not read: not priced"


def _fused_topk(fact: RoutingFact, name: str, model, gpu, expert_parallel: int) -> tuple[Routing, str]:
    """SGLang 0.5.x's fused routing for `model` on `gpu` at `expert_parallel` (the module docstring): fused_topk_shared
    for 256 routed and 1 shared expert at EP 1, fused_topk otherwise; unpriced on an AMD GPU (HIP runs another
    routing, the module docstring), off 9.x, or where FlashInfer's kernel does not take the shape (another kernel,
    not read)."""
    read = f"read at {name} {fact.version} ({fact.source})"
    cc = str(getattr(gpu, "compute_capability", None) or "")
    if gpu is not None and not is_nvidia(gpu):
        return Routing.unpriced, (
            f"not priced on {getattr(gpu, 'vendor', None) or 'a non-NVIDIA GPU'} ({cc or 'capability unknown'}): "
            f"the fused top-k branches need CUDA; on HIP {name} {fact.version} runs biased_grouped_topk_impl "
            f"under torch.compile (aiter's biased_grouped_topk under SGLANG_USE_AITER) with the shared expert fused "
            f"into the MoE at any EP from gfx942 ({_SG0512}: srt/layers/moe/topk.py:901-975,1022-1024,1095-1114,"
            f"1164-1175, models/deepseek_v2.py:2430-2446), a form rooflab does not have: the routing not priced and "
            f"the shared expert priced as its own row")
    if cc.split(".")[0] == "10":
        return Routing.unpriced, (f"inside flashinfer_trtllm's MoE kernel (the auto MoE runner on {cc}), not priced "
                                  f"apart, {read}")
    if cc.split(".")[0] != FUSED_TOPK_MAJOR:
        return Routing.unpriced, f"not read on compute capability {cc or 'unknown'}: not priced ({read})"
    e, k = model.num_experts, model.num_experts_per_token
    per_group = e // model.expert_groups
    if e & (e - 1) or k > 8 or per_group > 32 or per_group * model.topk_groups > 128:
        return Routing.unpriced, (f"{e} experts, top {k}, {per_group} a group: not FlashInfer's fused kernel "
                                  f"(another, not read): not priced ({read})")
    same_width = (model.shared_expert_ffn_size or model.ffn_size) == model.ffn_size   # one more expert's shape
    fused = e == 256 and model.num_shared_experts == 1 and same_width and expert_parallel == 1
    routing = Routing.fused_topk_shared if fused else Routing.fused_topk
    why = "the shared expert fused as expert 257" if fused else (
        "the shared expert apart (fused only for 256 routed and 1 shared expert at EP 1)")
    return routing, (f"{routing.value} ({why}), {read}; each launch priced at a measured small op's "
                     f"({REDUCTION_OP} for the top-k, {ELEMENTWISE_OP} for each elementwise launch): not measured")


__all__ = ["ELEMENTWISE_OP", "FUSED_TOPK_MAJOR", "REDUCTION_OP", "ROUTER_FP32_TOKENS", "ROUTING_FACTS",
           "SHARED_COLUMN_LAUNCHES", "Routing", "RoutingFact", "routing_fact", "routing_launches"]

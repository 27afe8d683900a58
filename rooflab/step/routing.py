"""How an engine picks a MoE layer's experts between the router GEMM and the expert GEMMs, as a closed set of priced
models (Routing), and the facts, read from the engines' shipped source, that pick one for an engine at a release.

    unpriced               no routing kernel is priced: the step's default, and every engine and release whose
                           routing was not read (a fused top-k kernel is a launch or two; it is left out, not guessed)
    grouped_topk           DeepSeek's biased grouped top-k (config.json n_group > 1) as eager PyTorch ops, one
                           kernel an op (sigmoid, the bias, each group's two best, the best groups, a mask, the top
                           k, the gathered weights, the renormalisation): ~16 small kernels a MoE layer
    grouped_topk_compiled  the same function under torch.compile(dynamic=True): fewer, fused kernels

Each is priced at its time measured on the H200 (benchmarks/moe_routing_launch.py, measurements/launch/
h200-moe-routing.csv: our own torch function of the same ops, 200 calls in a CUDA graph, and issued eagerly), kept
in the GPU YAML's measured.launch beside the layer's small kernels and priced as they are (small_ops.small_op_time:
interpolated in log(tokens), eager never below the eager table). The floor is unchanged: a fused engine does the
routing in a launch whose bytes (tokens x experts) are negligible beside the experts' weights.

Facts (ROUTING_FACTS): vLLM 0.7.3 (its wheel: vllm/model_executor/layers/fused_moe/fused_moe.py:922 grouped_topk,
with e_score_correction_bias, under @torch.compile(dynamic=True, backend=current_platform.simple_compile_backend),
inductor on CUDA; models/deepseek_v2.py:137 passes use_grouped_topk=True) and SGLang 0.4.3.post2
(sglang/srt/layers/moe/topk.py:114 biased_grouped_topk under @torch.compile(dynamic=True)); each read at one release
and assumed kept within its minor line (0.7.x, 0.4.x), not beyond. No release read runs the eager ops: grouped_topk
stays in the set as the model of an uncompiled routing (measured beside the compiled one).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..vocab import _Named, engine_release


class Routing(_Named):
    """How the step prices a MoE layer's expert selection (a model of the engine's routing kernels)."""

    unpriced = "unpriced"                            # not priced (not read, or a model without grouped routing)
    grouped_topk = "grouped_topk"                    # DeepSeek's grouped top-k as eager torch ops (no release read)
    grouped_topk_compiled = "grouped_topk_compiled"  # the same under torch.compile (vLLM 0.7.x, SGLang 0.4.x)


@dataclass(frozen=True)
class RoutingFact:
    """An engine line's routing for grouped (n_group > 1) MoE models, read at `version` from its wheel."""

    engine: str
    version: str
    routing: Routing
    source: str


ROUTING_FACTS = (
    RoutingFact("vllm", "0.7.3", Routing.grouped_topk_compiled,
                "vllm 0.7.3 wheel on PyPI: vllm/model_executor/layers/fused_moe/fused_moe.py:922 grouped_topk "
                "(sigmoid scores, e_score_correction_bias) under @torch.compile(dynamic=True, backend="
                "current_platform.simple_compile_backend), models/deepseek_v2.py:137 use_grouped_topk=True"),
    RoutingFact("sglang", "0.4.3.post2", Routing.grouped_topk_compiled,
                "sglang 0.4.3.post2 wheel on PyPI: sglang/srt/layers/moe/topk.py:114 biased_grouped_topk under "
                "@torch.compile(dynamic=True)"),
)


def routing_fact(engine, version, model) -> tuple[Routing, str]:
    """(the routing `engine` at `version` runs for `model`, why). No engine, a dense model, routing that is not
    grouped, or a release whose line was not read: unpriced."""
    if not getattr(model, "is_moe", False):
        return Routing.unpriced, "a dense model"
    if getattr(model, "expert_groups", 1) <= 1:
        return Routing.unpriced, "not grouped (n_group 1): a top-k routing kernel, not priced"
    name = str(getattr(engine, "value", engine) or "").lower()
    at = engine_release(version) if version else None
    for fact in ROUTING_FACTS:
        if fact.engine == name and at is not None and at[:2] == engine_release(fact.version)[:2]:
            return fact.routing, f"{fact.routing.value}, read at {name} {fact.version} ({fact.source})"
    if not name:
        return Routing.unpriced, "rooflab's own step: the routing kernels are not priced"
    return Routing.unpriced, f"{name} {version}'s routing not read: not priced"


__all__ = ["ROUTING_FACTS", "Routing", "RoutingFact", "routing_fact"]

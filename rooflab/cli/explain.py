"""`rooflab explain`: the working behind the report, figure by figure."""


import enum
import inspect
from typing import Annotated, Optional

import typer

from ..cost.paged import MAX_Q_LEN
from ..limits import MAX_GPUS, MAX_TOKENS
from ..units import DType
from ..vocab import EXPLAINED, CeilingSource, Variant
from . import deployment_options as dopt
from . import params
from .error_path import friendly
from .lengths import decode_lengths
from .options import BatchOpt, CausalOpt, CeilingsOpt, ContextOpt, GpuOpt, ImplOpt, ModelOpt, SplitsOpt, only_for
from .report import ShapeOpt, report, shape_of

#: --phase step takes `report --phase step`'s options, declared once there: (annotation, default) by name.
_R = {n: p for n, p in inspect.signature(report).parameters.items()}
_STEP_ONLY = ("step", "cp", "pp", "micro_batches", "dp", "dp_attention", "ep", "enable_ep", "expert_imbalance",
              "weight_dtype", "quantization", "gemm_dtype", "speculative_config", "speculative_algorithm",
              "speculative_tokens", "speculative_steps", "speculative_topk", "draft_model", "acceptance", "eager",
              "fused", "utilization", "prefill_chunk",
              "engine", "engine_version", "json_out")

#: The variants explain derives: the vocabulary's list and the linear layers' state update (rooflab.explain's
#: EXPLAINED, spelled here so the CLI does not import the cost model to list its choices).
ExplainVariant = enum.Enum("ExplainVariant", {v.name: v.value for v in
                                              EXPLAINED + tuple(x for x in (Variant.recurrent,) if x not in EXPLAINED)},
                           type=str)


class ExplainPhase(str, enum.Enum):
    step = "step"


class ExplainFormat(str, enum.Enum):
    text = "text"
    markdown = "markdown"


@friendly
def explain(
    ctx: typer.Context,
    variant: Annotated[ExplainVariant, typer.Option("--variant", "-v", help="Which variant's figures to derive (merge: --seq-len tokens x batch; recurrent: a linear-attention layer's decode step and prefill).")] = ExplainVariant.naive,
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = ["h100-sxm"],
    layer_type: Annotated[Optional[str], typer.Option("--layer-type", metavar="NAME", help="Which of the model's layer types to derive (see its YAML's layer_types; default: its main softmax type, or for recurrent its linear type).")] = None,
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", parser=params.count(1, MAX_TOKENS), metavar="N",
                                         help="Prefill: tokens in the sequence; merge: tokens merged.")] = 8192,
    batch: BatchOpt = 1,
    dtype: dopt.DTypeAutoOpt = DType.fp16,
    causal: CausalOpt = True,
    context_len: ContextOpt = None,
    page_size: dopt.PageSizeOpt = None,
    block_size: dopt.BlockSizeOpt = None,
    kv_dtype: dopt.KvDTypeOpt = None,
    kv_cache_dtype: dopt.KvCacheDTypeOpt = None,
    splits: SplitsOpt = None,
    q_len: Annotated[int, typer.Option("--q-len", parser=params.count(1, MAX_Q_LEN), metavar="N",
                                       help="Decode: new tokens per sequence, causal among themselves (speculative "
                                            "verification, multi-token prediction).")] = 1,
    mla_sparse_fp8: Annotated[bool, typer.Option("--mla-sparse-fp8/--no-mla-sparse-fp8", help="Decode of an mla layer: price the cache in "
                                                 "DeepSeek-V3.2's sparse fp8 layout (656 bytes per token).")] = False,
    ceilings: CeilingsOpt = CeilingSource.floor,
    impl: ImplOpt = None,
    shape: ShapeOpt = None,
    tensor_parallel: dopt.TensorParallelOpt = None,
    tensor_parallel_size: dopt.TensorParallelSizeOpt = None,
    dcp: dopt.DecodeContextParallelOpt = 1,
    kv_parallel: dopt.KvParallelOpt = 1,
    fmt: Annotated[ExplainFormat, typer.Option("--format", "-f", help="Output format.")] = ExplainFormat.text,
    phase: Annotated[Optional[ExplainPhase], typer.Option(
        "--phase", help="step: the whole model's step, row by row, as `report --phase step` prices it (its options; "
                        "default: the --variant's kernel).")] = None,
    step: _R["step"].annotation = _R["step"].default,
    cp: _R["cp"].annotation = _R["cp"].default,
    pp: _R["pp"].annotation = _R["pp"].default,
    micro_batches: _R["micro_batches"].annotation = _R["micro_batches"].default,
    dp: _R["dp"].annotation = _R["dp"].default,
    dp_attention: _R["dp_attention"].annotation = _R["dp_attention"].default,
    ep: _R["ep"].annotation = _R["ep"].default,
    enable_ep: _R["enable_ep"].annotation = _R["enable_ep"].default,
    expert_imbalance: _R["expert_imbalance"].annotation = _R["expert_imbalance"].default,
    weight_dtype: _R["weight_dtype"].annotation = _R["weight_dtype"].default,     # read by words_of(ctx)
    quantization: _R["quantization"].annotation = _R["quantization"].default,
    gemm_dtype: _R["gemm_dtype"].annotation = _R["gemm_dtype"].default,
    speculative_config: _R["speculative_config"].annotation = _R["speculative_config"].default,
    speculative_algorithm: _R["speculative_algorithm"].annotation = _R["speculative_algorithm"].default,
    speculative_tokens: _R["speculative_tokens"].annotation = _R["speculative_tokens"].default,
    speculative_steps: _R["speculative_steps"].annotation = _R["speculative_steps"].default,   # read by
    speculative_topk: _R["speculative_topk"].annotation = _R["speculative_topk"].default,     # _step_only_with
    draft_model: _R["draft_model"].annotation = _R["draft_model"].default,
    acceptance: _R["acceptance"].annotation = _R["acceptance"].default,
    eager: _R["eager"].annotation = _R["eager"].default,
    fused: _R["fused"].annotation = _R["fused"].default,
    utilization: _R["utilization"].annotation = _R["utilization"].default,
    prefill_chunk: _R["prefill_chunk"].annotation = _R["prefill_chunk"].default,
    engine: _R["engine"].annotation = _R["engine"].default,
    engine_version: _R["engine_version"].annotation = _R["engine_version"].default,
    json_out: Annotated[bool, typer.Option("--json", help="--phase step: the derivation as strict JSON.")] = False,
) -> None:
    """Show the working: each figure of the report as formula, numbers substituted, and result with units."""
    from ..explain import explain as derive
    from ..explain import render_explanation
    from ..load import load_gpu, load_model

    if phase is ExplainPhase.step:
        return _explain_step(ctx, model, gpu[0], batch, context_len, dtype, dcp, kv_parallel, fmt, json_out, (
            step, cp, pp, micro_batches, dp, dp_attention, ep, enable_ep, expert_imbalance, quantization, gemm_dtype,
            speculative_config, speculative_algorithm, speculative_tokens, draft_model, acceptance, eager, fused,
            utilization, prefill_chunk, engine, engine_version))
    only_for(ctx, "step", *_STEP_ONLY)
    bare = shape_of(ctx, shape)                  # --shape B,H,H_kv,T,d[,d_v]: one attention layer, no model
    if bare is not None:
        from ..cost.batch import DecodeBatch

        seq_len, batch = bare.seq_len, bare.batch
    lens = DecodeBatch.uniform(bare.seq_len, bare.batch) if bare else decode_lengths(context_len, batch)
    d, _, kv = dopt.words_of(ctx).resolve(decode_context_parallel=dcp, kv_parallel=kv_parallel)
    m, g = (bare.layer if bare else load_model(model)), load_gpu(gpu[0])
    dtype = dtype or m.loaded_dtype(g.compute_capability_version)      # --dtype auto: as vLLM loads it
    e = derive(Variant(variant.value), m, g, seq_len, batch, dtype, causal, lens, d.page_size, d.kv_cache_dtype,
               splits, ceilings, layer_type=layer_type, q_len=q_len,
               mla_sparse_fp8=mla_sparse_fp8 or bool(kv and kv.mla_sparse_fp8), impl=impl, deployment=d)
    typer.echo(render_explanation(e, markdown=fmt is ExplainFormat.markdown), nl=False)


def _explain_step(ctx, model, gpu, batch, context_len, dtype, dcp, kv_parallel, fmt, json_out, opts) -> None:
    """--phase step: rooflab.explain.step.explain_step for the deployment `report --phase step` builds."""
    from ..explain import render_explanation
    from ..explain.step import explain_step
    from ..load import load_gpu, load_model
    from ..output import json_text
    from .lengths import parse_lengths
    from .error_path import fail
    from .report import _step_deployment, _step_only_with

    only_for(ctx, "prefill or decode (the --variant's kernel)", "variant", "layer_type", "seq_len", "causal",
             "splits", "q_len", "mla_sparse_fp8", "ceilings", "impl", "shape")
    (step, cp, pp, micro_batches, dp, dp_attention, ep, enable_ep, imbalance, quantization, gemm_dtype, spec_config,
     spec_algorithm, spec_tokens, draft_model, acceptance, eager, fused, utilization, prefill_chunk, engine,
     engine_version) = opts
    from ..vocab import Engine, release_of

    eng = Engine.of(engine, "--engine") if engine else None
    # the engine's --kv-cache-dtype names at its release (engines/vocab.py VLLM_KV_CACHE_DTYPES)
    words, _, _ = dopt.words_of(ctx).resolve(
        engine=eng, release=release_of(engine_version, "--engine-version", eng) if eng and engine_version else None)
    lens = parse_lengths(context_len) or [8192]
    if len(lens) > 1:
        fail("--phase step takes one --context-len (every sequence of the batch at that length)")
    given = ctx.get_parameter_source("dtype").name == "COMMANDLINE"     # else the checkpoint's own dtype
    m = load_model(model)
    quantization = dopt.words_of(ctx).resolve(checkpoint=m)[0].weight_format
    spec_tokens = _step_only_with(ctx, step, spec_config, spec_algorithm, spec_tokens)
    deployment = _step_deployment(words.tensor_parallel, dcp, kv_parallel, cp, pp, dp, dp_attention, ep, enable_ep,
                                  words.page_size, dtype if given else None, words.kv_cache_dtype, quantization,
                                  gemm_dtype, utilization, eager, fused, spec_config, spec_algorithm, spec_tokens,
                                  draft_model, acceptance)
    e = explain_step(m, load_gpu(gpu), batch, lens[0], step.value, deployment=deployment,
                     prefill_tokens=prefill_chunk or 0, expert_imbalance=imbalance, micro_batches=micro_batches,
                     engine=engine, engine_version=engine_version)
    text = json_text(e.to_dict()) if json_out else render_explanation(e.explanation,
                                                                     markdown=fmt is ExplainFormat.markdown)
    typer.echo(text, nl=False)

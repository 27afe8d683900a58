"""`rooflab report`: per-layer FLOPs, bytes, floors and predicted times of the attention variants; --phase step: the
whole model's step on a deployment."""


from typing import Annotated, Optional

import typer

from ..output import Format
from ..units import DType
from ..vocab import CeilingSource, Engine, Phase, StepKind, engine_release, release_of
from ..cost.paged import MAX_Q_LEN
from ..limits import MAX_GPUS, MAX_TOKENS
from . import deployment_options as dopt
from . import params
from .error_path import fail, friendly
from .lengths import decode_lengths, parse_lengths
from .options import (BatchOpt, CausalOpt, CeilingsOpt, ContextOpt, FormatOpt, GpuOpt, ImplOpt, ModelOpt, SeqLenOpt,
                      SplitsOpt, only_for)


#: --shape: a bare attention shape (rooflab.shape) instead of a model.
ShapeOpt = Annotated[Optional[str], typer.Option(
    "--shape", metavar="B,H,H_kv,T,d[,d_v]", help="A bare attention shape instead of --model: batch, query heads, KV "
    "heads, tokens (decode: the context), head dim, and optionally the value head dim (default d); one "
    "full-attention layer, no weights. E.g. 1,32,8,8192,128.")]


def shape_of(ctx: typer.Context, text: Optional[str], *also: str):
    """The --shape given (rooflab.shape.AttentionShape), or None; with --model, --seq-len, --batch, --context-len
    (or the options named in `also`) it is an error naming both."""
    if text is None:
        return None
    from ..shape import parse_shape

    shape = parse_shape(text)
    clash = [p.opts[0] for p in ctx.command.params
             if p.name in ("model", "seq_len", "batch", "context_len", *also)
             and ctx.get_parameter_source(p.name).name == "COMMANDLINE"]
    if clash:
        fail(f"--shape gives the heads, B and T in place of --model, --seq-len, --batch and --context-len; drop "
             f"{', '.join(clash)} (or --shape)")
    return shape


def only_for_shape(ctx: typer.Context, *names: str) -> None:
    """Options that need a --shape, refused without one."""
    given = [p.opts[0] for p in ctx.command.params
             if p.name in names and ctx.get_parameter_source(p.name).name == "COMMANDLINE"]
    if given:
        fail(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to a --shape only (the FLOP convention "
             f"counts one attention launch)")


@friendly
def report(
    ctx: typer.Context,
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = ["h100-sxm"],
    phase: Annotated[Phase, typer.Option("--phase", help="prefill: naive vs flash; decode: paged vs split-KV; step: the "
                                         "whole model's step on a deployment (--tp, --dcp, --pcp).")] = Phase.prefill,
    seq_len: SeqLenOpt = 8192,
    batch: BatchOpt = 1,
    dtype: dopt.DTypeAutoOpt = DType.fp16,
    causal: CausalOpt = True,
    context_len: ContextOpt = None,
    page_size: dopt.PageSizeOpt = None,
    block_size: dopt.BlockSizeOpt = None,
    kv_dtype: dopt.KvDTypeOpt = None,
    splits: SplitsOpt = None,
    q_len: Annotated[int, typer.Option("--q-len", parser=params.count(1, MAX_Q_LEN), metavar="N",
                                       help="Decode: new tokens per sequence, causal among themselves "
                                            "(speculative verification, multi-token prediction).")] = 1,
    prefill_chunk: Annotated[Optional[int], typer.Option("--prefill-chunk", parser=params.count(1, MAX_TOKENS), metavar="N",
                                                         help="Decode: a prefill chunk of N tokens in the same step "
                                                              "(chunked prefill), priced with the decode batch as one launch.")] = None,
    ceilings: CeilingsOpt = CeilingSource.floor,
    impl: ImplOpt = None,
    shape: ShapeOpt = None,
    published_tflops: Annotated[Optional[float], typer.Option("--published-tflops", parser=params.number(0, 1e5, lo_open=True),
                                                              metavar="X", help="With --shape: a published rate for "
                                                              "the shape (TFLOP/s), printed as time under --convention "
                                                              "and set against the floor and the prediction.")] = None,
    convention: Annotated[str, typer.Option("--convention", metavar="fa|fa_no_half", help="With --published-tflops: "
                                            "the source's FLOP count. fa (FlashAttention's papers, tritonbench): "
                                            "4 B H T^2 d, halved when causal; fa_no_half (FlashMLA): never "
                                            "halved.")] = "fa",
    must_fit: Annotated[bool, typer.Option("--must-fit", help="Decode: exit 2 when the weights and the batch's KV "
                                           "cache do not fit in the GPU's memory (default: a warning).")] = False,
    step: Annotated[StepKind, typer.Option("--step", help="Step: decode (time per output token) or prefill (time "
                                           "to first token of --batch prompts of --context-len).")] = StepKind.decode,
    tp: Annotated[int, typer.Option("--tp", "-tp", "--tensor-parallel-size", "--tp-size", parser=params.count(1, MAX_GPUS),
                                    metavar="N", help="Step: tensor-parallel GPUs (heads and weights split N ways).")] = 1,
    dcp: dopt.DecodeContextParallelOpt = 1,
    kv_parallel: dopt.KvParallelOpt = 1,
    cp: Annotated[int, typer.Option("--pcp", "-pcp", "--prefill-context-parallel-size", "--cp",
                                    parser=params.count(1, MAX_GPUS), metavar="N",
                                    help="Step (prefill): prefill context parallelism: GPUs a prompt is split over "
                                         "(ring attention); widens the world to TP x N GPUs.")] = 1,
    pp: Annotated[int, typer.Option("--pp", "-pp", "--pipeline-parallel-size", "--pp-size",
                                    parser=params.count(1, MAX_GPUS), metavar="N",
                                    help="Step: pipeline stages (the layers split N ways; a send between stages).")] = 1,
    micro_batches: Annotated[Optional[int], typer.Option("--micro-batches", parser=params.count(1, MAX_TOKENS),
                                                         metavar="M", help="Step with --pp: micro-batches in flight "
                                                                           "(default: --pp).")] = None,
    dp: Annotated[Optional[int], typer.Option("--dp", "-dp", "--data-parallel-size", "--dp-size",
                                              parser=params.count(1, MAX_GPUS), metavar="N",
                                              help="Step: data-parallel ranks; vLLM's replicas (more GPUs; default "
                                                   "1), or with --enable-dp-attention SGLang's attention DP inside "
                                                   "--tp (default: --tp). --batch counts every rank's "
                                                   "sequences.")] = None,
    dp_attention: Annotated[bool, typer.Option("--enable-dp-attention", help="Step: --dp is data-parallel "
                                               "attention inside the TP group (SGLang).")] = False,
    ep: Annotated[int, typer.Option("--ep", "--ep-size", "--expert-parallel", parser=params.count(1, MAX_GPUS),
                                    metavar="N", help="Step (MoE): GPUs the routed experts are split over.")] = 1,
    enable_ep: Annotated[bool, typer.Option("--enable-expert-parallel", help="Step (MoE): vLLM's switch: EP = TP x "
                                            "DP.")] = False,
    expert_imbalance: Annotated[float, typer.Option("--expert-imbalance", parser=params.number(1, 1e3), metavar="F",
                                                    help="Step (MoE): the busiest GPU's experts receive F x the "
                                                         "balanced token-expert pairs.")] = 1.0,
    weight_dtype: dopt.WeightDTypeOpt = None,       # Step: capacity's two options, one resolution
    quantization: dopt.QuantizationOpt = None,      # (DeploymentWords.resolve(checkpoint=...))
    gemm_dtype: Annotated[Optional[DType], typer.Option("--gemm-dtype", parser=params.dtype(), metavar="DTYPE",
                                                        help="Step: the GEMMs' arithmetic (default: fp8 for fp8 "
                                                             "weights, else --dtype).")] = None,
    kv_cache_dtype: dopt.KvCacheDTypeOpt = None,
    speculative_config: Annotated[Optional[str], typer.Option("--speculative-config", metavar="JSON",
                                                              help="Step (decode): vLLM's '{\"method\": \"eagle\", "
                                                                   "\"num_speculative_tokens\": 3}' (method mtp, "
                                                                   "eagle, eagle3, ngram, or \"model\" for a draft "
                                                                   "model).")] = None,
    speculative_algorithm: Annotated[Optional[str], typer.Option("--speculative-algorithm", metavar="NAME",
                                                                 help="Step (decode): SGLang's EAGLE, EAGLE3, NEXTN, "
                                                                      "STANDALONE, NGRAM.")] = None,
    speculative_tokens: Annotated[Optional[int], typer.Option("--speculative-num-draft-tokens",
                                                              parser=params.count(2, 65), metavar="N",
                                                              help="Step (decode): SGLang's verified tokens, k + 1.")] = None,
    speculative_steps: Annotated[Optional[int], typer.Option("--speculative-num-steps", parser=params.count(1, 64),
                                                             metavar="N", help="Step (decode): SGLang's draft depth; "
                                                             "with --speculative-eagle-topk 1 it verifies N + 1 "
                                                             "tokens (SGLang resets the draft tokens so).")] = None,
    speculative_topk: Annotated[Optional[int], typer.Option("--speculative-eagle-topk", parser=params.count(1, 64),
                                                            metavar="K", help="Step (decode): SGLang's branching; 1 "
                                                            "(a chain) is modelled, a tree refused.")] = None,
    draft_model: Annotated[Optional[str], typer.Option("--speculative-draft-model-path", metavar="MODEL",
                                                       help="Step (decode): the draft model (a bundled name).")] = None,
    acceptance: Annotated[float, typer.Option("--acceptance-rate", parser=params.number(0, 1), metavar="A",
                                              help="Step (decode, speculative): per-position acceptance rate a; "
                                                   "tokens a step (1 - a^(k+1)) / (1 - a).")] = 0.7,
    eager: Annotated[bool, typer.Option("--enforce-eager", "--disable-cuda-graph", help="Step: no CUDA graphs "
                                        "(launches at their eager issue times; elementwise work stays fused, as the engines' eager kernels are).")] = False,
    fused: Annotated[Optional[bool], typer.Option("--fused-elementwise/--unfused-elementwise", help="Step: "
                                                  "elementwise work fused (default, with or without CUDA "
                                                  "graphs; unfused is rooflab's torch layer).")] = None,
    utilization: Annotated[float, typer.Option("--gpu-memory-utilization", "--mem-fraction-static",
                                               parser=params.number(0, 1, lo_open=True), metavar="X",
                                               help="Step: share of device memory for weights and KV cache.")] = 0.9,
    engine: dopt.StepEngineOpt = None,
    engine_version: dopt.EngineVersionOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Per-layer FLOPs, HBM bytes, intensity, time floors and predicted times of attention variants, per layer type;
    --phase step: the whole model's step on a deployment, per component."""
    from ..load import load_gpu, load_model
    from ..render import render_report
    from ..report import decode_report, prefill_report

    # rooflab's and the engines' names of one setting agree; under --engine, that engine's and its release's
    # refusals (SGLang's --kv-cache-dtype names, a vLLM release's) as capacity applies them
    eng = Engine.of(engine, "--engine") if engine else None
    words, _, _ = dopt.words_of(ctx).resolve(engine=eng, release=release_of(engine_version, "--engine-version", eng)
                                             if eng and engine_version else None)
    page_size, kv_dtype = words.page_size, words.kv_cache_dtype
    bare = shape_of(ctx, shape)
    if bare is None:
        only_for_shape(ctx, "published_tflops", "convention")
    elif published_tflops is None and ctx.get_parameter_source("convention").name == "COMMANDLINE":
        fail("--convention says how --published-tflops counts FLOPs; give the rate too")
    elif phase is Phase.step:
        fail("--shape prices one attention layer (--phase prefill or decode); --phase step needs a --model")

    step_only = ("step", "tp", "dcp", "kv_parallel", "cp", "pp", "micro_batches", "dp", "dp_attention", "ep",
                 "enable_ep", "expert_imbalance", "weight_dtype", "quantization", "gemm_dtype", "speculative_config",
                 "speculative_algorithm", "speculative_tokens", "speculative_steps", "speculative_topk",
                 "draft_model", "acceptance", "eager", "fused",
                 "utilization", "engine", "engine_version")
    if phase is not Phase.step:
        only_for(ctx, "step", *step_only)
    if phase is Phase.step:
        only_for(ctx, "prefill or decode", "seq_len", "causal", "splits", "q_len", "ceilings", "impl", "must_fit")
        from ..render_step import render_step
        from ..step import step_report

        lens = parse_lengths(context_len) or [8192]
        if len(lens) > 1:
            fail("--phase step takes one --context-len (every sequence of the batch at that length)")
        given = ctx.get_parameter_source("dtype").name == "COMMANDLINE"     # else the checkpoint's own dtype
        m = load_model(model)
        quantization = dopt.words_of(ctx).resolve(checkpoint=m)[0].weight_format
        speculative_tokens = _step_only_with(ctx, step, speculative_config, speculative_algorithm,
                                             speculative_tokens)
        deployment = _step_deployment(tp, dcp, kv_parallel, cp, pp, dp, dp_attention, ep, enable_ep, page_size,
                                      dtype if given else None, kv_dtype, quantization, gemm_dtype,
                                      utilization, eager, fused, speculative_config, speculative_algorithm,
                                      speculative_tokens, draft_model, acceptance)
        deployment = deployment.replace(mla_sparse_fp8=words.mla_sparse_fp8)      # --kv-cache-dtype fp8_ds_mla
        r = step_report(m, load_gpu(gpu[0]), batch, lens[0], step.value, deployment=deployment,
                        prefill_tokens=prefill_chunk or 0, expert_imbalance=expert_imbalance,
                        micro_batches=micro_batches, engine=engine, engine_version=engine_version)
        typer.echo(render_step(r, fmt), nl=False)
        return
    if phase is Phase.prefill:
        only_for(ctx, "decode", "context_len", "page_size", "block_size", "kv_dtype", "kv_cache_dtype", "splits", "q_len", "prefill_chunk", "must_fit")
        m, g = (bare.layer if bare else load_model(model)), load_gpu(gpu[0])
        dtype = dtype or m.loaded_dtype(g.compute_capability_version)      # --dtype auto: as vLLM loads it
        if bare:
            seq_len, batch = bare.seq_len, bare.batch
        r = prefill_report(m, g, seq_len, batch, dtype, causal, ceilings, impl)
    else:
        only_for(ctx, "prefill", "seq_len", "causal")
        from ..cost.batch import DecodeBatch

        lens = DecodeBatch.uniform(bare.seq_len, bare.batch) if bare else decode_lengths(context_len, batch)
        m, g = (bare.layer if bare else load_model(model)), load_gpu(gpu[0])
        dtype = dtype or m.loaded_dtype(g.compute_capability_version)      # --dtype auto: as vLLM loads it
        r = decode_report(m, g, lens, page_size, dtype, kv_dtype, splits, ceilings,
                          q_len=q_len, prefill_chunk=prefill_chunk, impl=impl)
        if must_fit and not r.fits:
            from ..units import fmt_bytes

            m = r.memory
            fail(f"--must-fit: {r.batch:,} sequences do not fit on {r.gpu}: weights {fmt_bytes(m.weights_bytes)} + "
                 f"KV cache {fmt_bytes(m.kv_bytes)} > {fmt_bytes(m.hbm_bytes)}")
    if published_tflops is not None:
        from ..report import with_published_rate

        r = with_published_rate(r, bare, published_tflops, convention)
    typer.echo(render_report(r, fmt), nl=False)



def sglang_draft_tokens(ctx, spec_tokens):
    """The tokens a sequence verifies from SGLang's three draft options: --speculative-num-steps N with
    --speculative-eagle-topk 1 (or unset) verifies N + 1 whatever --speculative-num-draft-tokens says (sglang
    0.5.12 srt/server_args.py:3828-3835 resets it so); without N, --speculative-num-draft-tokens as given; a tree
    (topk > 1: the verified tokens and the acceptance of a tree) is not modelled."""
    steps, topk = ctx.params.get("speculative_steps"), ctx.params.get("speculative_topk")
    if steps is not None and str(ctx.params.get("speculative_algorithm") or "").strip().upper() == "NGRAM":
        fail("--speculative-num-steps is EAGLE's depth; SGLang's NGRAM drafts a tree of --speculative-num-draft-tokens "
             "(12 by default; srt/server_args.py:3846-3866), which rooflab does not model as a tree: give "
             "--speculative-num-draft-tokens N for a chain of N")
    if topk is not None and topk > 1:
        fail(f"--speculative-eagle-topk {topk}: tree drafts are not modelled (the chain's acceptance formula "
             "does not hold); give 1")
    if steps is None:
        if topk is not None:
            fail("--speculative-eagle-topk goes with --speculative-num-steps (SGLang)")
        return spec_tokens
    return steps + 1


def _step_only_with(ctx, step, spec_config, spec_algorithm, spec_tokens):
    """Step options that mean nothing without another: refused, naming both (as --pp-layer-partition without --pp
    and --max-loras without --enable-lora are); the tokens a sequence verifies from SGLang's options
    (sglang_draft_tokens)."""
    spec_tokens = sglang_draft_tokens(ctx, spec_tokens)
    speculative = acceptance_needs_drafts(ctx, spec_config, spec_algorithm, spec_tokens)
    if speculative and step is StepKind.prefill:
        fail("speculative decoding (--speculative-config / --speculative-algorithm) drafts decode steps; "
             "--step prefill prices a prefill")
    _speculative_spelling(ctx.params.get("engine"), spec_config, spec_algorithm or spec_tokens,
                          ctx.params.get("engine_version"))                     # spec_tokens: N + 1 with steps
    dopt.check_ep_spelling(ctx.params.get("engine"), ctx.params.get("ep") or 1, bool(ctx.params.get("enable_ep")))
    return spec_tokens


def acceptance_needs_drafts(ctx, spec_config, spec_algorithm, spec_tokens) -> bool:
    """Whether drafts are given (the engines' speculative options); --acceptance-rate typed without them is refused."""
    speculative = bool(spec_config or spec_algorithm or spec_tokens)
    if ctx.get_parameter_source("acceptance").name == "COMMANDLINE" and not speculative:
        fail("--acceptance-rate is the drafts' acceptance: give --speculative-config or --speculative-algorithm")
    return speculative


#: vLLM's first release with --speculative-config (vllm 0.8.2 engine/arg_utils.py:783; 0.8.1 and 0.7.3 have only
#: --speculative-model and --num-speculative-tokens, 0.7.3 arg_utils.py:754, :772).
VLLM_SPECULATIVE_CONFIG_FROM = (0, 8, 2)


#: vLLM V1 releases read that refuse a separate draft model (first, last minor line).
VLLM_NO_DRAFT_MODEL = ((0, 10), (0, 11))


def _draft_model_method(spec_config) -> bool:
    """Whether a --speculative-config names a separate draft model (method draft_model, or a model and no method)."""
    from ..deployment import SpecMethod, Speculative
    from ..errors import InputError

    try:
        return Speculative.of_config(spec_config).method is SpecMethod.draft_model
    except InputError:
        return False                                  # refused with its own message where the config is read


def _speculative_spelling(engine, vllm_given, sglang_given, version=None) -> None:
    """Under --engine, that engine's speculative options only (as SGLang's --enable-dp-attention is refused under
    --engine vllm): vLLM takes --speculative-config (from VLLM_SPECULATIVE_CONFIG_FROM at --engine-version `version`),
    SGLang --speculative-algorithm / --speculative-num-draft-tokens / --speculative-num-steps."""
    which = Engine.of(engine, "--engine") if engine else None
    at = engine_release(version) if version else None
    if (which is Engine.vllm and vllm_given and at is not None and VLLM_NO_DRAFT_MODEL[0] <= tuple(at)[:2]
            <= VLLM_NO_DRAFT_MODEL[1] and _draft_model_method(vllm_given)):
        fail(f"vllm {version} refuses a separate draft model (draft_model: 'Speculative decoding with draft model is not "
             "supported yet': 0.10.0 config.py:2853, 0.11.0 config/speculative.py:347-353): give an eagle / mtp "
             "method, or another --engine-version")
    if which is Engine.vllm and vllm_given and at is not None and tuple(at) < VLLM_SPECULATIVE_CONFIG_FROM:
        fail(f"--speculative-config is vLLM's from 0.8.2; vllm {version} spells drafts --speculative-model and "
             "--num-speculative-tokens, which rooflab does not read: give --engine-version 0.8.2 or later")
    if which is Engine.vllm and sglang_given:
        fail("--speculative-algorithm / --speculative-num-draft-tokens / --speculative-num-steps are SGLang's; "
             "vLLM's is --speculative-config '{\"method\": \"eagle\", \"num_speculative_tokens\": K}': give that, or "
             "--engine sglang")
    if which is Engine.sglang and vllm_given:
        fail("--speculative-config is vLLM's; SGLang's are --speculative-algorithm NAME --speculative-num-draft-tokens "
             "N: give those, or --engine vllm")


def speculative_of(spec_config, spec_algorithm, spec_tokens, draft_model, acceptance):
    """The Speculative the engines' options spell (vLLM's --speculative-config, SGLang's --speculative-algorithm
    with --speculative-num-draft-tokens, either with --speculative-draft-model-path), or None: the step's and serve's
    one reading of them."""
    from ..deployment import Speculative

    if spec_config and (spec_algorithm or spec_tokens):
        fail("give --speculative-config (vLLM) or --speculative-algorithm / --speculative-num-draft-tokens (SGLang)")
    if spec_config:
        speculative = Speculative.of_config(spec_config, acceptance)
        if draft_model and speculative.draft_model is None:
            speculative = Speculative(speculative.method, speculative.num_speculative_tokens, acceptance, draft_model)
        return speculative
    if spec_algorithm or spec_tokens:
        if not (spec_algorithm and spec_tokens):
            fail("--speculative-algorithm and --speculative-num-steps (or --speculative-num-draft-tokens) go "
                 "together (SGLang)")
        return Speculative(spec_algorithm, spec_tokens - 1, acceptance, draft_model)
    if draft_model:
        fail("--speculative-draft-model-path needs --speculative-config or --speculative-algorithm")
    return None


def _step_deployment(tp, dcp, kv_parallel, cp, pp, dp, dp_attention, ep, enable_ep, page_size, dtype, kv_dtype,
                     quantization, gemm_dtype, utilization, eager, fused, spec_config, spec_algorithm, spec_tokens,
                     draft_model, acceptance):
    """The step's Deployment from the engines' options (vLLM's and SGLang's spellings; rooflab.deployment)."""
    from ..deployment import Deployment

    speculative = speculative_of(spec_config, spec_algorithm, spec_tokens, draft_model, acceptance)
    if enable_ep and ep > 1:
        fail("--enable-expert-parallel sets EP = TP x DP (vLLM); --ep N sets it (SGLang): give one")
    replicas, attention, _ = dopt.parallel_degrees(tp, dp, dp_attention, False, ep)   # capacity's one mapping
    expert = tp * cp * replicas if enable_ep else ep
    return Deployment(tensor_parallel=tp, decode_context_parallel=dcp, kv_parallel=kv_parallel,
                      prefill_context_parallel=cp, pipeline_parallel=pp,
                      data_parallel=replicas, attention_data_parallel=attention,
                      expert_parallel=expert, page_size=page_size, dtype=dtype, kv_cache_dtype=kv_dtype,
                      weight_format=quantization, gemm_dtype=gemm_dtype, gpu_memory_utilization=utilization,
                      cuda_graphs=not eager, fused_elementwise=fused, speculative=speculative)

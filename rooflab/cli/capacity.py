"""`rooflab capacity`: how many sequences fit (rooflab's bound), or an engine's own accounting and start-up log."""


from typing import Annotated, Optional

import typer

from ..output import Format
from ..vocab import WindowAllocation
from ..limits import MAX_GIB, MAX_GPUS, MAX_TOKENS
from . import deployment_options as dopt
from . import params
from .error_path import fail, friendly
from .options import DpAttentionOpt, ExpertParallelOpt, FormatOpt, GpuOpt, ModelOpt, WindowAllocationOpt
from ..engines.profile import V1_FLASHINFER_SAMPLER_RELEASES
from ..engines.vocab import RELEASE_RANGE, Accounting, Engine, generations_text, labels_text, release_text, span_text

#: The first vLLM release whose default engine is V1, and --engine-version's help: the releases built from
#: engines.vocab.RELEASE_RANGE (labels_text, generations_text, span_text), not written here.
_V1_FROM = release_text(RELEASE_RANGE[Accounting.vllm_v0_8][0])
_ENGINE_VERSION_HELP = (
    f"The engine's release, as it prints it (vLLM 0.10.1, v0.8.4, 0.6.3.post1: V1 from {_V1_FROM}; SGLang "
    f"0.4.6.post2): the accounting it used and its release's terms; or an accounting's label: vLLM "
    f"{labels_text(Engine.vllm)}, V0 also under VLLM_USE_V1=0 (--vllm-use-v1 0); SGLang "
    f"{labels_text(Engine.sglang)}.")


@friendly
def capacity(
    ctx: typer.Context,
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = ["h100-sxm"],
    context_len: Annotated[int, typer.Option("--context-len", "-L", parser=params.count(1, MAX_TOKENS), metavar="N",
                                             help="Tokens per sequence (prompt plus output): 8192, 32k, 128K.")] = 8192,
    page_size: dopt.PageSizeOpt = None,
    weight_dtype: dopt.WeightDTypeOpt = None,
    kv_dtype: dopt.KvDTypeOpt = None,
    utilization: dopt.UtilizationOpt = None,
    reserve_gib: Annotated[float, typer.Option("--activation-reserve-gib", parser=params.number(0, MAX_GIB), metavar="X",
                                               help="Memory kept for activations and workspace, GiB.")] = 0.0,
    max_model_len: dopt.MaxModelLenOpt = None,
    tensor_parallel: dopt.TensorParallelOpt = None,
    shared_prefix: Annotated[int, typer.Option("--shared-prefix", parser=params.count(0, MAX_TOKENS), metavar="N",
                                               help="Tokens every request shares (a system prompt), stored once in whole pages.")] = 0,
    expert_parallel: ExpertParallelOpt = 1,
    dp_attention: DpAttentionOpt = False,
    data_parallel: dopt.DataParallelOpt = None,
    enable_dp_attention: dopt.EnableDpAttentionOpt = False,
    enable_expert_parallel: dopt.EnableExpertParallelOpt = False,
    window_allocation: WindowAllocationOpt = WindowAllocation.hybrid,
    engine: Annotated[Optional[str], typer.Option("--engine", metavar="vllm|sglang", help="Follow an engine's own "
                                                  "memory accounting (default: rooflab's bound).")] = None,
    engine_version: Annotated[Optional[str], typer.Option("--engine-version", metavar="V",
                                                          help=_ENGINE_VERSION_HELP)] = None,
    engine_log: Annotated[Optional[str], typer.Option("--engine-log", metavar="FILE", help="Explain a vLLM or SGLang "
                                                      "start-up log: its KV figure term by term (with --model).")] = None,
    what_if: Annotated[Optional[list[str]], typer.Option("--what-if", metavar="KEY=VALUE", help="With --engine-log: "
                                                         "kv-cache-dtype=fp8, tp=2, block-size=32, max-model-len=32k or "
                                                         "gpu-memory-utilization=0.95 (repeat for several).")] = None,
    kv_cache_dtype: dopt.KvCacheDTypeOpt = None,
    block_size: dopt.BlockSizeOpt = None,
    tensor_parallel_size: dopt.TensorParallelSizeOpt = None,
    mem_fraction_static: dopt.MemFractionStaticOpt = None,
    quantization: dopt.QuantizationOpt = None,
    dtype: dopt.DTypeAutoOpt = None,
    max_num_seqs: Annotated[Optional[int], typer.Option("--max-num-seqs", "--max-running-requests",
                                                        parser=params.count(1, MAX_TOKENS), metavar="N",
                                                        help="Engine: vLLM's --max-num-seqs (sequences in its profile "
                                                             "run), SGLang's --max-running-requests.")] = None,
    max_num_batched_tokens: Annotated[Optional[int], typer.Option("--max-num-batched-tokens", metavar="N",
                                                                  parser=params.count(1, MAX_TOKENS),
                                                                  help="Engine: tokens in vLLM's profile run.")] = None,
    cuda_visible: Annotated[Optional[str], typer.Option("--cuda-visible-memory", metavar="SIZE", help="Engine: the "
                                                        "CUDA-visible total (79.22GiB, 85GB); default: the GPU "
                                                        "YAML's cuda_visible_bytes.")] = None,
    non_torch_gib: Annotated[Optional[float], typer.Option("--non-torch-gib", parser=params.number(0, MAX_GIB), metavar="X",
                                                           help="Engine: non-torch memory (SGLang: memory in use "
                                                                "before start), GiB; default by version and TP.")] = None,
    activation_gib: Annotated[Optional[float], typer.Option("--activation-gib", parser=params.number(0, MAX_GIB),
                                                            metavar="X", help="Engine: vLLM's profiled activation "
                                                                              "peak, GiB; default: modelled.")] = None,
    memory_in_use: Annotated[Optional[str], typer.Option("--memory-in-use", metavar="SIZE", help="Engine: GPU memory "
                                                         "other processes hold when the engine starts (4GiB); vLLM V1 "
                                                         "refuses to start if it leaves less than utilisation x total "
                                                         "free, SGLang's fraction applies to what is free.")] = None,
    mamba_ssm_dtype: dopt.MambaSsmDTypeOpt = None,
    mamba_cache_mode: Annotated[Optional[str], typer.Option("--mamba-cache-mode", metavar="none|align", help="Engine, "
                                                            "vLLM, linear-attention models: none (prefix caching off, "
                                                            "the default: one state block a request) or align (on: "
                                                            "two).")] = None,
    max_mamba_cache_size: Annotated[Optional[int], typer.Option("--max-mamba-cache-size", metavar="N",
                                                                parser=params.count(1, MAX_TOKENS), help="Engine, "
                                                                "SGLang, linear-attention models: request states in "
                                                                "its state pool (default: by the ratio below).")] = None,
    mamba_full_memory_ratio: Annotated[Optional[float], typer.Option("--mamba-full-memory-ratio", metavar="X",
                                                                     parser=params.number(0, 100, lo_open=True),
                                                                     help="Engine, SGLang: state pool over KV pool "
                                                                          "memory, in (0, 100] (default 0.9).")] = None,
    enable_lora: Annotated[bool, typer.Option("--enable-lora", help="Engine: preallocate LoRA adapters' buffers "
                                                                    "(every linear layer; dense softmax-attention "
                                                                    "models).")] = False,
    max_loras: Annotated[Optional[int], typer.Option("--max-loras", "--max-loras-per-batch", metavar="N",
                                                     parser=params.count(1, 1024), help="Engine, --enable-lora: "
                                                     "adapter slots (vLLM's --max-loras, default 1; SGLang's "
                                                     "--max-loras-per-batch, default 8).")] = None,
    max_lora_rank: Annotated[Optional[int], typer.Option("--max-lora-rank", metavar="R", parser=params.count(1, 4096),
                                                         help="Engine, --enable-lora: the largest adapter rank (vLLM "
                                                              "default 16; SGLang needs it).")] = None,
    vllm_use_v1: Annotated[Optional[int], typer.Option("--vllm-use-v1", parser=params.count(0, 1), metavar="0|1",
                                                       help="Engine, vLLM: VLLM_USE_V1 with a numeric "
                                                            "--engine-version: 0 for V0 where the release ships it, "
                                                            f"1 for V1 ({generations_text()}); default: the "
                                                            f"release's default (V1 from {_V1_FROM}).")] = None,
    no_flashinfer: Annotated[bool, typer.Option("--no-flashinfer", help="Engine, vLLM V1 "
                                                f"{span_text(V1_FLASHINFER_SAMPLER_RELEASES)}: FlashInfer "
                                                "is not installed (`pip install vllm` without its extra), so the "
                                                "profile's sampler sorts the vocabulary; default: installed, as the "
                                                "official Docker image ships it (its top-k / top-p sampler).")] = False,
    enforce_eager: Annotated[bool, typer.Option("--enforce-eager", "--disable-cuda-graph", help="Engine: no CUDA "
                                                "graphs (vLLM's --enforce-eager, SGLang's --disable-cuda-graph): vLLM "
                                                "V1 from v0.20.0 subtracts no graph estimate; elsewhere the cache is "
                                                "as without it.")] = False,
    max_total_tokens: Annotated[Optional[int], typer.Option("--max-total-tokens", metavar="N",
                                                            parser=params.count(1, MAX_TOKENS), help="Engine, SGLang: "
                                                            "cap the token pool at N tokens (floored to the page).")] = None,
    num_gpu_blocks_override: Annotated[Optional[int], typer.Option("--num-gpu-blocks-override", metavar="N",
                                                                   parser=params.count(1, MAX_TOKENS), help="Engine, "
                                                                   "vLLM: keep N KV blocks whatever the memory "
                                                                   "allows.")] = None,
    kv_cache_memory: Annotated[Optional[str], typer.Option("--kv-cache-memory-bytes", "--kv-cache-memory",
                                                           metavar="BYTES", help="Engine, vLLM V1 from v0.11.0: the "
                                                           "KV cache memory per GPU as vLLM reads it (8G = 8 GiB, 8g = "
                                                           "8e9 bytes); --gpu-memory-utilization then sizes nothing."
                                                           )] = None,
    limit_mm_per_prompt: Annotated[Optional[str], typer.Option("--limit-mm-per-prompt", metavar="JSON",
                                                               help="Engine, vLLM V1: the images a prompt may hold, "
                                                               "as vLLM reads it ('{\"image\": 0}' runs a "
                                                               "vision-language model text-only, with no multimodal "
                                                               "profile run); default: 999.")] = None,
    skip_mm_profiling: Annotated[bool, typer.Option("--skip-mm-profiling", help="Engine, vLLM V1: the profile run "
                                                    "leaves the multimodal encoder and its cache out.")] = False,
    pipeline_parallel: Annotated[int, typer.Option("--pp", "-pp", "--pipeline-parallel-size", "--pp-size",
                                                   parser=params.count(1, MAX_GPUS), metavar="N",
                                                   help="Pipeline stages: the layers split N ways (the embedding "
                                                        "on the first, the LM head on the last), each stage its "
                                                        "own KV cache; the stage with the least room binds.")] = 1,
    pp_layer_partition: Annotated[Optional[str], typer.Option("--pp-layer-partition", metavar="N,N,...",
                                                              help="With --pp: layers per stage, as "
                                                                   "VLLM_PP_LAYER_PARTITION / SGLANG_PP_LAYER_"
                                                                   "PARTITION give them (default: the engine's "
                                                                   "split).")] = None,
    dcp: dopt.DecodeContextParallelOpt = 1,
    kv_parallel: dopt.KvParallelOpt = 1,
    fmt: FormatOpt = Format.table,
) -> None:
    """How many sequences fit: KV budget, paged against contiguous reservation, longest context; per layer type.

    Without --engine this is rooflab's bound; --engine vllm|sglang follows the engine's own accounting, and
    --engine-log explains a start-up log's KV figure term by term.
    """
    from ..capacity import plan_capacity
    from ..capacity.stages import parse_partition
    from ..engines.request import EngineOptions, check_modes, engine_frame_for, wants_engine
    from ..engines.vocab import parse_engine
    from ..load import load_gpu, load_model
    from ..output import render
    from ..render import render_capacity
    from ..units import GiB

    given = {p.name for p in ctx.command.params if ctx.get_parameter_source(p.name).name == "COMMANDLINE"}
    check_modes(given)
    loaded = load_model(model)
    tp = tensor_parallel or tensor_parallel_size or 1
    dp, attention_dp, ep = dopt.parallel_degrees(tp, data_parallel, dp_attention or enable_dp_attention,
                                                 enable_expert_parallel, expert_parallel)
    dopt.check_ep_spelling(engine, expert_parallel, enable_expert_parallel)
    deployment, set_fields, kv = dopt.words_of(ctx).resolve(
        engine=parse_engine(engine) if engine else None, checkpoint=loaded,
        expert_parallel=ep, attention_data_parallel=attention_dp, data_parallel=dp, decode_context_parallel=dcp,
        kv_parallel=kv_parallel, window_allocation=window_allocation, pipeline_parallel=pipeline_parallel)
    if wants_engine(given):
        if dcp > 1 or kv_parallel > 1:
            fail("--dcp and --kv-parallel apply to rooflab's own bound, not to --engine / --engine-log accounting")
        options = EngineOptions(model=model, gpu=gpu[0], deployment=deployment, given=set_fields, kv_cache=kv,
                                engine=engine, engine_version=engine_version, engine_log=engine_log,
                                what_if=tuple(what_if or ()), max_model_len=max_model_len, max_num_seqs=max_num_seqs,
                                max_num_batched_tokens=max_num_batched_tokens, cuda_visible=cuda_visible,
                                non_torch_gib=non_torch_gib, activation_gib=activation_gib,
                                mem_fraction_static=mem_fraction_static, memory_in_use=memory_in_use,
                                mamba_ssm_dtype=mamba_ssm_dtype, mamba_cache_mode=mamba_cache_mode,
                                max_mamba_cache_size=max_mamba_cache_size,
                                mamba_full_memory_ratio=mamba_full_memory_ratio, enable_lora=enable_lora,
                                max_loras=max_loras, max_lora_rank=max_lora_rank,
                                pp_layer_partition=pp_layer_partition, no_flashinfer=no_flashinfer,
                                enforce_eager=enforce_eager, max_total_tokens=max_total_tokens,
                                num_gpu_blocks_override=num_gpu_blocks_override, kv_cache_memory=kv_cache_memory,
                                limit_mm_per_prompt=limit_mm_per_prompt, skip_mm_profiling=skip_mm_profiling,
                                vllm_use_v1=None if vllm_use_v1 is None else bool(vllm_use_v1))
        typer.echo(render(engine_frame_for(options, given), fmt), nl=False)
        return
    sparse_mla = bool(kv and kv.mla_sparse_fp8)
    plan = plan_capacity(loaded, load_gpu(gpu[0]), context_len, activation_reserve_bytes=int(reserve_gib * GiB),
                         max_model_len=max_model_len, shared_prefix_len=shared_prefix, mla_sparse_fp8=sparse_mla,
                         deployment=deployment, pp_layer_partition=parse_partition(pp_layer_partition))
    for line in plan.stage_notes:
        typer.echo(f"note: {line}", err=True)
    if dcp > 1:
        typer.echo(f"note: --dcp is decode context parallelism inside the TP group, as in vLLM and SGLang "
                   f"({deployment.describe()}); rooflab 0.1's --dcp, a KV split over extra GPUs, is --kv-parallel",
                   err=True)
    typer.echo(render_capacity(plan, fmt), nl=False)

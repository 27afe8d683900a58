"""`rooflab explain`: the working behind the report, figure by figure."""


import enum
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
from .options import BatchOpt, CausalOpt, CeilingsOpt, ContextOpt, GpuOpt, ImplOpt, ModelOpt, SplitsOpt
from .report import ShapeOpt, shape_of

#: The variants explain derives: the vocabulary's list and the linear layers' state update (rooflab.explain's
#: EXPLAINED, spelled here so the CLI does not import the cost model to list its choices).
ExplainVariant = enum.Enum("ExplainVariant", {v.name: v.value for v in
                                              EXPLAINED + tuple(x for x in (Variant.recurrent,) if x not in EXPLAINED)},
                           type=str)


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
    dcp: Annotated[int, typer.Option("--dcp", "-dcp", "--decode-context-parallel-size", "--dcp-size",
                                     parser=params.count(1, MAX_GPUS), metavar="N",
                                     help="Decode: decode context parallelism inside the TP group, as vLLM and SGLang "
                                          "mean it (N divides --tp, N <= TP / KV heads): one GPU's share.")] = 1,
    kv_parallel: Annotated[int, typer.Option("--kv-parallel", "--kvp", parser=params.count(1, MAX_GPUS), metavar="N",
                                             help="Decode: KV parallelism (Helix): the KV split by position over N "
                                                  "groups of --tp GPUs; one GPU's share.")] = 1,
    fmt: Annotated[ExplainFormat, typer.Option("--format", "-f", help="Output format.")] = ExplainFormat.text,
) -> None:
    """Show the working: each figure of the report as formula, numbers substituted, and result with units."""
    from ..explain import explain as derive
    from ..explain import render_explanation
    from ..load import load_gpu, load_model

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

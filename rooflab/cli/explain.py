"""`rooflab explain`: the working behind the report, figure by figure."""

from __future__ import annotations

import enum
from typing import Annotated, Optional

import typer

from ..units import DType
from ..vocab import CeilingSource, ExplainedVariant
from ..limits import MAX_TOKENS
from . import (BatchOpt, CausalOpt, CeilingsOpt, ContextOpt, DTypeOpt, GpuOpt, KvDTypeOpt, ModelOpt, PageOpt,
               SplitsOpt, app, decode_lengths, friendly, params)


class ExplainFormat(str, enum.Enum):
    text = "text"
    markdown = "markdown"


@app.command()
@friendly
def explain(
    variant: Annotated[ExplainedVariant, typer.Option("--variant", "-v", help="Which variant's figures to derive (merge: --seq-len tokens x batch).")] = ExplainedVariant.naive,
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = "h100-sxm",
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", parser=params.count(1, MAX_TOKENS), metavar="N",
                                         help="Prefill: tokens in the sequence; merge: tokens merged.")] = 8192,
    batch: BatchOpt = 1,
    dtype: DTypeOpt = DType.fp16,
    causal: CausalOpt = False,
    context_len: ContextOpt = None,
    page_size: PageOpt = 16,
    kv_dtype: KvDTypeOpt = None,
    splits: SplitsOpt = None,
    ceilings: CeilingsOpt = CeilingSource.datasheet,
    fmt: Annotated[ExplainFormat, typer.Option("--format", "-f", help="Output format.")] = ExplainFormat.text,
) -> None:
    """Show the working: each figure of the report as formula, numbers substituted, and result with units."""
    from ..vocab import Variant
    from ..explain import explain as derive
    from ..explain import render_explanation
    from ..load import load_gpu, load_model

    lens = decode_lengths(context_len, batch)
    e = derive(Variant(variant.value), load_model(model), load_gpu(gpu), seq_len, batch, dtype, causal, lens,
               page_size, kv_dtype, splits, ceilings)
    typer.echo(render_explanation(e, markdown=fmt is ExplainFormat.markdown), nl=False)

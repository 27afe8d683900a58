"""The options several commands share, declared once (typer `Annotated` types with their help), and `only_for`:
an option given for a phase it does not apply to is an error naming it.

The deployment's settings in rooflab's and the engines' spellings live in deployment_options.py; the value
parsers in params.py.
"""

from typing import Annotated, Optional

import typer

from ..errors import RooflabError
from ..limits import MAX_BATCH, MAX_GPUS, MAX_PAGE_SIZE, MAX_SPLITS, MAX_TOKENS
from ..output import Format
from ..units import DType
from ..vocab import CeilingSource, WindowAllocation
from . import params

ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Bundled model name (see `rooflab list models`), a path "
                                       "to a model YAML, or a Hugging Face config.json: its path, a folder holding "
                                       "one, or an org/name id in the local Hugging Face cache.")]


def _one_gpu(values: list[str]) -> list[str]:
    """Commands that price one GPU say so when given several (the `rooflab plot` charts compare several).

    The option is a list so that a repeated -g is seen, not silently replaced; commands read `gpu[0]`."""
    names = [part.strip() for value in values for part in value.split(",")]
    if len(names) != 1:
        raise typer.BadParameter(f"this command takes one GPU (given {len(names)}: {', '.join(names)}); "
                                 "the `rooflab plot` charts compare several")
    return names


GpuOpt = Annotated[list[str], typer.Option("--gpu", "-g", metavar="GPU", callback=_one_gpu,
                                           help="Bundled GPU name (see `rooflab list gpus`), an alias (h200, "
                                                "'NVIDIA H100 80GB HBM3') or a path to a GPU YAML; one GPU.")]
DTypeOpt = Annotated[DType, typer.Option("--dtype", parser=params.dtype(), metavar="DTYPE", help="Element type of Q, "
                                         "K, V, O and of the matrix arithmetic: fp16 (float16, half), bf16 (bfloat16), "
                                         "fp32 (float32), tf32, fp8_e4m3 (fp8), fp8_e5m2.")]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
ContextOpt = Annotated[Optional[list[str]], typer.Option(
    "--context-len", "-L", help="Decode: context length per sequence (8192, 32k = 32,000, 32K = 32,768); repeat the "
                                "option or give a comma list for a ragged batch (default 8192).")]
PageOpt = Annotated[int, typer.Option("--page-size", parser=params.count(1, MAX_PAGE_SIZE), metavar="N",
                                      help="Tokens per KV-cache page (block).")]
KvDTypeOpt = Annotated[Optional[DType], typer.Option("--kv-dtype", parser=params.dtype(auto=True), metavar="DTYPE",
                                                     help="Element type of the KV cache: auto, fp8 (= fp8_e4m3), "
                                                          "fp8_e5m2, bf16, fp16, fp32 and the engines' spellings "
                                                          "(default auto: --dtype; capacity: the checkpoint's dtype "
                                                          "as the engines load it).")]
TensorParallelOpt = Annotated[int, typer.Option("--tensor-parallel", "--tp", parser=params.count(1, MAX_GPUS), metavar="N",
                                                help="GPUs the model is split over by head; memory figures are per GPU.")]
BatchOpt = Annotated[int, typer.Option("--batch", "-b", parser=params.count(1, MAX_BATCH), metavar="N",
                                       help="Sequences in the batch (decode: copies of a single --context-len).")]
SeqLenOpt = Annotated[int, typer.Option("--seq-len", "-T", parser=params.count(1, MAX_TOKENS), metavar="N",
                                        help="Prefill: tokens in the sequence (8192, 32k, 128K).")]
SplitsOpt = Annotated[Optional[int], typer.Option("--splits", parser=params.count(1, MAX_SPLITS), metavar="N",
                                                  help="Decode: split-KV count (default: the one rooflab recommends).")]
CausalOpt = Annotated[bool, typer.Option("--causal/--no-causal", help="Prefill: causal mask (the default, as decoders and engines run prefill; --no-causal gives the chapter's non-causal figures).")]
ImplOpt = Annotated[Optional[str], typer.Option("--impl", help="Predict with this implementation's fitted model "
                                                     "(rooflab, rooflab_hopper, torch_cudnn, ...; default: the "
                                                     "fastest fitted one that held on its held-out rows).")]
CeilingsOpt = Annotated[CeilingSource, typer.Option("--ceilings", help="floor (default): the GPU's own, physical where a published run beat its datasheet, else datasheet; datasheet: the rated figures; physical: the maximum SM clock x the per-clock rate, fastest accumulate mode; calibrated: the GPU YAML's measured: section.")]
ExpertParallelOpt = Annotated[int, typer.Option("--expert-parallel", "--ep", "--ep-size", parser=params.count(1, MAX_GPUS), metavar="N",
                                                help="GPUs the routed experts are split over (MoE).")]
DpAttentionOpt = Annotated[bool, typer.Option("--dp-attention/--no-dp-attention",
                                              help="Data-parallel attention (SGLang's, as --enable-dp-attention): "
                                                   "--dp N ranks inside --tp T (default N = T), each its own whole "
                                                   "sequences; attention and the embedding split over T / N GPUs "
                                                   "(whole at N = T), the lm_head over T: v0.5.10's layout, "
                                                   "--engine sglang --engine-version V's at V.")]
WindowAllocationOpt = Annotated[WindowAllocation, typer.Option(
    "--window-allocation", help="hybrid: windowed layers keep only their window's pages (vLLM's hybrid allocator); "
                                "full: a full-length page table for every layer.")]
UtilizationOpt = Annotated[float, typer.Option("--gpu-memory-utilization", parser=params.number(0, 1, lo_open=True),
                                               metavar="X", help="Share of device memory rooflab may plan with, in (0, 1].")]
MaxModelLenOpt = Annotated[Optional[int], typer.Option("--max-model-len", parser=params.count(1, MAX_TOKENS), metavar="N",
                                                       help="Contiguous reservation per request (default: the model's max context).")]


def only_for(ctx: typer.Context, phase: str, *names: str) -> None:
    """Refuse options given on the command line that apply to another `phase` only (named as typed)."""

    given = []
    for param in ctx.command.params:
        if param.name in names and ctx.get_parameter_source(param.name).name == "COMMANDLINE":
            given.append(param.opts[0])
    if given:
        raise RooflabError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to --phase {phase} only")

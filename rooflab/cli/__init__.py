"""The `rooflab` command: parse -> call -> render. No arithmetic here.

Bad input (a RooflabError) prints one or two lines on stderr and exits 2, with no traceback.

This module holds the app, the short-error machinery and the options the commands share; the
commands live by group in analysis.py, measure.py, explain.py and charts.py, imported at the end
so that they register. Heavy modules are imported inside the command functions, to keep
`rooflab report` fast.
"""


import functools
import importlib
import os
import sys
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from typer.core import TyperGroup

# The click that typer itself runs on: the click package (typer < 0.20, as pinned) or the copy recent typer vendors
# as typer._click. Asking typer which one (where its BadParameter lives) keeps the errors caught below the ones the
# options raise even where both are installed (a typer >= 0.20 beside a real click once gave tracebacks).
_CLICK = typer.BadParameter.__module__.rsplit(".", 1)[0]
get_current_context = importlib.import_module(f"{_CLICK}.globals").get_current_context
ClickException = importlib.import_module(f"{_CLICK}.exceptions").ClickException
UsageError = importlib.import_module(f"{_CLICK}.exceptions").UsageError

from ..errors import RooflabError
from ..output import Format
from ..units import DType, WeightFormat
from ..limits import MAX_BATCH, MAX_GPUS, MAX_PAGE_SIZE, MAX_RAGGED, MAX_SPLITS, MAX_TOKENS
from ..vocab import CeilingSource, WindowAllocation
from . import params

EXIT_BAD_INPUT = 2

def _one_line(message: str) -> str:
    """click's messages on one line ("Choose from:\n\tgpu,\n\tmodel" -> "Choose from: gpu, model"), at most 300
    characters (a value typed at length is not echoed back whole)."""
    text = " ".join(message.split())
    return text if len(text) <= 300 else text[:297] + "..."


class _ShortErrors(TyperGroup):
    """Usage errors as two lines on stderr (the message, then where to get help), exit 2."""

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "rooflab"
            typer.echo(f"error: {_one_line(exc.format_message())}", err=True)
            typer.echo(f"see '{where} --help'", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except ClickException as exc:
            typer.echo(f"error: {_one_line(exc.format_message())}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    name="rooflab",
    cls=_ShortErrors,
    help="Roofline and memory calculator for LLM attention: naive, flash, paged and merge.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

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
DTypeOpt = Annotated[DType, typer.Option("--dtype", help="Element type of Q, K, V, O and of the matrix arithmetic.")]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


def fail(message: str) -> None:
    """Print a one- or two-line error on stderr and exit 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


#: Exit status of an unexpected exception: a bug in rooflab, not bad input (EX_SOFTWARE).
EXIT_BUG = 70


def friendly(fn: Callable) -> Callable:
    """The one error path: RooflabError (bad input) -> its message on stderr, exit 2; any other exception is a
    bug in rooflab -> two lines saying so and how to report it, exit 70 (ROOFLAB_TRACEBACK=1 shows the traceback)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            _refuse_empty(kwargs)
            return fn(*args, **kwargs)
        except RooflabError as exc:
            fail(str(exc))
        except (typer.Exit, typer.Abort, KeyboardInterrupt, ClickException):
            raise
        except MemoryError:
            typer.echo("error: out of memory; the workload is too large for this machine", err=True)
            raise typer.Exit(EXIT_BAD_INPUT)
        except Exception as exc:
            if os.environ.get("ROOFLAB_TRACEBACK"):
                raise
            first = (str(exc).splitlines() or [""])[0][:200]
            typer.echo(f"error: internal error in rooflab ({type(exc).__name__}: {first})", err=True)
            typer.echo("this is a bug: please report it with the command line; ROOFLAB_TRACEBACK=1 shows where",
                       err=True)
            raise typer.Exit(EXIT_BUG)

    return wrapper


def _refuse_empty(kwargs: dict) -> None:
    """An option given as an empty string (typer reads '' as the path '.') is an error naming the option, not a
    default: `-o ''`, `--kv-cache-dtype ''`, `validate ''`. A file option given '.' is a folder, refused the same."""
    ctx = get_current_context(silent=True)
    if ctx is None:
        return
    for param in ctx.command.params:
        if param.name not in kwargs or ctx.get_parameter_source(param.name).name != "COMMANDLINE":
            continue
        value = kwargs[param.name]
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if (isinstance(item, str) and not item.strip()) or (isinstance(item, Path) and str(item) == "."):
                name = param.opts[0] if param.opts and param.opts[0].startswith("-") else param.human_readable_name
                shown = "'.' (a folder)" if isinstance(item, Path) else "an empty value"
                raise RooflabError(f"{name}: {shown}; give a file name" if isinstance(item, Path)
                                   else f"{name}: {shown}")


def only_for(ctx: typer.Context, phase: str, *names: str) -> None:
    """Refuse options given on the command line that apply to another `phase` only (named as typed)."""

    given = []
    for param in ctx.command.params:
        if param.name in names and ctx.get_parameter_source(param.name).name == "COMMANDLINE":
            given.append(param.opts[0])
    if given:
        raise RooflabError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to --phase {phase} only")


def parse_lengths(values: list[str] | None, option: str = "--context-len", hi: int = MAX_TOKENS) -> list[int]:
    """Lengths given as repeated options and/or comma lists: '1024,4096', '1k,4k' or '1024 --context-len 4096'."""
    out = []
    for value in values or []:
        try:
            out += params.counts(value, option, 1, hi)
        except typer.BadParameter as exc:
            raise RooflabError(exc.message) from None
    return out


def decode_lengths(context_len: Optional[list[str]], batch: int):
    """The decode batch: one --context-len for --batch sequences (a DecodeBatch, priced in closed form whatever
    the batch), or a ragged list (then --batch must be 1 or agree with it); 8192 when none is given."""
    from ..cost.paged import DecodeBatch

    lens = parse_lengths(context_len) or [8192]
    if len(lens) == 1:
        return DecodeBatch.uniform(lens[0], batch)
    if len(lens) > MAX_RAGGED:
        raise RooflabError(f"--context-len: {len(lens):,} lengths given one by one; the limit is {MAX_RAGGED:,}")
    if batch not in (1, len(lens)):
        raise RooflabError(f"--batch {batch} disagrees with {len(lens)} --context-len values")
    return lens


ContextOpt = Annotated[Optional[list[str]], typer.Option(
    "--context-len", "-L", help="Decode: context length per sequence (8192, 32k = 32,000, 32K = 32,768); repeat the "
                                "option or give a comma list for a ragged batch (default 8192).")]
PageOpt = Annotated[int, typer.Option("--page-size", parser=params.count(1, MAX_PAGE_SIZE), metavar="N",
                                      help="Tokens per KV-cache page (block).")]
KvDTypeOpt = Annotated[Optional[DType], typer.Option("--kv-dtype", help="Element type of the KV cache (default: --dtype; "
                                                     "capacity: the checkpoint's dtype, as engines' auto).")]
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
WeightDTypeOpt = Annotated[Optional[WeightFormat], typer.Option(
    "--weight-dtype", help="Format of the linear layers' weights (default: as the checkpoint ships them; embeddings "
                           "and norms stay in the checkpoint's dtype).")]
ExpertParallelOpt = Annotated[int, typer.Option("--expert-parallel", "--ep", parser=params.count(1, MAX_GPUS), metavar="N",
                                                help="GPUs the routed experts are split over (MoE).")]
DpAttentionOpt = Annotated[bool, typer.Option("--dp-attention/--no-dp-attention",
                                              help="Data-parallel attention: each GPU holds whole sequences and all "
                                                   "attention heads (with --tp: that many GPUs).")]
WindowAllocationOpt = Annotated[WindowAllocation, typer.Option(
    "--window-allocation", help="hybrid: windowed layers keep only their window's pages (vLLM's hybrid allocator); "
                                "full: a full-length page table for every layer.")]
UtilizationOpt = Annotated[float, typer.Option("--gpu-memory-utilization", parser=params.number(0, 1, lo_open=True),
                                               metavar="X", help="Share of device memory rooflab may plan with, in (0, 1].")]
MaxModelLenOpt = Annotated[Optional[int], typer.Option("--max-model-len", parser=params.count(1, MAX_TOKENS), metavar="N",
                                                       help="Contiguous reservation per request (default: the model's max context).")]


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"rooflab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print rooflab's version and exit.")] = False) -> None:
    """Roofline and memory calculator for LLM attention: naive, flash, paged and merge."""


def main() -> None:
    """Console-script entry point."""
    app()


# The commands register themselves on `app` when imported; the order here is the order of `rooflab --help`.
from . import analysis, measure, fit, explain, charts, schema  # noqa: E402,F401  (after everything they import from here)

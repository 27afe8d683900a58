"""The `rooflab` command: parse -> call -> render. No arithmetic here.

Bad input (a RooflabError) prints one or two lines on stderr and exits 2, with no traceback.
"""

from __future__ import annotations

import enum
import functools
import sys
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from typer.core import TyperGroup

try:  # recent typer vendors click
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer on real click
    from click.exceptions import ClickException, UsageError

from .errors import RooflabError
from .render import Format
from .units import DType

EXIT_BAD_INPUT = 2

class _ShortErrors(TyperGroup):
    """Usage errors as two lines on stderr (the message, then where to get help), exit 2."""

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "rooflab"
            typer.echo(f"error: {exc.format_message()}", err=True)
            typer.echo(f"see '{where} --help'", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except ClickException as exc:
            typer.echo(f"error: {exc.format_message()}", err=True)
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
list_app = typer.Typer(help="List the bundled GPU and model specs.", add_completion=False, no_args_is_help=True,
                       rich_markup_mode=None)
app.add_typer(list_app, name="list")

ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Bundled model name (see `rooflab list models`) or a path to a model YAML.")]
GpuOpt = Annotated[str, typer.Option("--gpu", "-g", help="Bundled GPU name (see `rooflab list gpus`) or a path to a GPU YAML.")]
DTypeOpt = Annotated[DType, typer.Option("--dtype", help="Element type of Q, K, V, O and of the matrix arithmetic.")]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


def fail(message: str) -> None:
    """Print a one- or two-line error on stderr and exit 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def friendly(fn: Callable) -> Callable:
    """Turn RooflabError (bad input) into a short message on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RooflabError as exc:
            fail(str(exc))

    return wrapper


class Phase(str, enum.Enum):
    prefill = "prefill"
    decode = "decode"


class Ceiling(str, enum.Enum):
    datasheet = "datasheet"
    calibrated = "calibrated"


@app.command()
@friendly
def report(
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = "h100-sxm",
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", help="Tokens in the sequence (prefill).")] = 8192,
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences in the batch.")] = 1,
    dtype: DTypeOpt = DType.fp16,
    causal: Annotated[bool, typer.Option("--causal/--no-causal", help="Causal mask (prefill).")] = False,
    ceilings: Annotated[Ceiling, typer.Option("--ceilings", help="Datasheet ceilings, or the GPU YAML's measured: section.")] = Ceiling.datasheet,
    fmt: FormatOpt = Format.table,
) -> None:
    """Per-layer FLOPs, HBM bytes, intensity and time floors of attention variants, side by side."""
    from .load import load_gpu, load_model
    from .render import render_report
    from .report import prefill_report
    from .roofline import CeilingSource

    r = prefill_report(load_model(model), load_gpu(gpu), seq_len, batch, dtype, causal,
                       CeilingSource(ceilings.value))
    typer.echo(render_report(r, fmt), nl=False)


@list_app.command("gpus")
@friendly
def list_gpus(fmt: FormatOpt = Format.table) -> None:
    """The bundled GPUs with their headline ceilings."""
    from .catalog import gpu_table

    typer.echo(gpu_table(fmt), nl=False)


@list_app.command("models")
@friendly
def list_models(fmt: FormatOpt = Format.table) -> None:
    """The bundled models with their attention shapes."""
    from .catalog import model_table

    typer.echo(model_table(fmt), nl=False)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

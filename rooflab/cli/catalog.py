"""`rooflab list gpus` and `rooflab list models`: the bundled specs."""


import typer

from ..output import Format
from .error_path import friendly
from .options import FormatOpt


@friendly
def list_gpus(fmt: FormatOpt = Format.table) -> None:
    """The bundled GPUs with their headline ceilings."""
    from ..catalog import gpu_table

    typer.echo(gpu_table(fmt), nl=False)


@friendly
def list_models(fmt: FormatOpt = Format.table) -> None:
    """The bundled models with their attention shapes."""
    from ..catalog import model_table

    typer.echo(model_table(fmt), nl=False)

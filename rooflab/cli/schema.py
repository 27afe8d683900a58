"""`rooflab schema`: the JSON Schema of the GPU or model YAML format, for editors."""


import enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .error_path import friendly


class SchemaFormat(str, enum.Enum):
    """The YAML formats with a schema (rooflab.schema.FORMATS)."""

    gpu = "gpu"
    model = "model"


@friendly
def schema(
    which: Annotated[SchemaFormat, typer.Argument(help="gpu (hardware/*.yaml) or model (models/*.yaml).")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write it to this file instead of "
                                                                          "printing it.")] = None,
) -> None:
    """JSON Schema of the GPU or model YAML format: required fields, ranges, units and meanings.

    Point an editor at it with a first line `# yaml-language-server: $schema=gpu.schema.json`.
    """
    from ..output import write_atomic
    from ..schema import schema_text

    text = schema_text(which.value)
    if output is None:
        typer.echo(text, nl=False)
    else:
        typer.echo(f"wrote {write_atomic(output, text)}")

"""`rooflab fit`: fit each kernel implementation's time model on measurement campaigns and store it in a GPU YAML."""


from pathlib import Path
from typing import Annotated, Optional

import typer

from ..output import Format
from .error_path import friendly
from .options import FormatOpt


@friendly
def fit(
    files: Annotated[list[Path], typer.Argument(help="Measurement CSVs from `rooflab bench` (one or more campaigns on one GPU).")],
    gpu: Annotated[Optional[str], typer.Option("--gpu", "-g", help="GPU spec to fit against and to write (default: the one the files name).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="GPU YAML to write with the fitted: list (default: ./<gpu>.yaml).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Fit c0 + t_model / eta per kernel and implementation (with its parallelism and exp terms); write `fitted:`.

    Each model is fitted on alternate rows of the campaigns together and its held-out error measured on the
    others; the GPU YAML keeps the constants with the rows, campaigns and errors they rest on. Fits of
    kernels these files do not measure (a GEMM, collectives) stay as they were.
    """
    from ..fit.fitting_io import fit_campaigns, write_fitted
    from ..load import spec_path
    from ..render_validation import render_validation

    validation, models, spec = fit_campaigns(files, gpu)
    source = spec_path("hardware", "GPU", spec)
    target = output or Path.cwd() / source.name
    written = write_fitted(source, target, models, inputs=[*files, source])   # never over the GPU YAML read
    typer.echo(render_validation(validation, fmt), nl=False)
    kept = len(written.fitted) - len(models)
    typer.echo(f"wrote {len(models)} fitted models to {target}" + (f"; kept {kept} fitted from other files "
                                                                   f"({', '.join(f'{m.kernel.value}/{m.impl}' for m in written.fitted[len(models):])})"
                                                                   if kept else ""), err=True)

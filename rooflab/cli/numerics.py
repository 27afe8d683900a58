"""`rooflab numerics`: where exp overflows and underflows in a dtype, and naive softmax's headroom."""


from typing import Annotated

import typer

from ..output import Format
from ..units import DType
from ..limits import MAX_LOGIT_STD, MAX_TOKENS
from . import params
from .error_path import friendly
from .options import FormatOpt


@friendly
def numerics(
    dtype: Annotated[DType, typer.Option("--dtype", parser=params.dtype(), metavar="DTYPE", help="Storage type whose exp range is examined (tf32 is refused: use fp32).")] = DType.fp16,
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", parser=params.count(2, MAX_TOKENS), metavar="N",
                                         help="Logits in one softmax row (keys), at least 2.")] = 8192,
    logit_std: Annotated[float, typer.Option("--logit-std", parser=params.number(0, MAX_LOGIT_STD, lo_open=True), metavar="X",
                                             help="Standard deviation of the logits (1 for scaled q.k of unit vectors).")] = 1.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Where exp overflows and underflows in a dtype, and the headroom naive softmax has at a row length."""
    from ..numerics import softmax_headroom
    from ..render_numerics import render_headroom

    typer.echo(render_headroom(softmax_headroom(dtype, seq_len, logit_std), fmt), nl=False)

"""Token counts given as lists: repeated options and/or comma lists ('1024,4096', '1k,4k'), and the decode
batch they make."""

from typing import Optional

import typer

from ..errors import RooflabError
from ..limits import MAX_RAGGED, MAX_TOKENS
from . import params


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

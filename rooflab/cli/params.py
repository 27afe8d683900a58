"""Option parsers: every value the CLI takes is read and range-checked here, at parse time.

A bad value is a usage error naming the option and the value ("Invalid value for '--batch' /
'-b': 0 is below 1"), printed in two lines with exit 2 by the app. Counts take vLLM's suffixes
(units.parse_count: 32k = 32,000, 32K = 32,768), sizes the usual units (units.parse_bytes).
"""


import math
from typing import Callable

import typer

from ..errors import InputError
from ..units import DType, parse_count


def count(lo: int, hi: int, what: str = "") -> Callable[[str], int]:
    """A parser for a whole-number option in [lo, hi]: '8192', '8_192', '32k', '128K'."""

    def parse(text: str) -> int:
        if isinstance(text, int) and not isinstance(text, bool):  # a default, already a number
            value = text
        else:
            try:
                value = parse_count(text)
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from None
        if value < lo:
            raise typer.BadParameter(f"{value:,} is below {lo:,}")
        if value > hi:
            raise typer.BadParameter(f"{value:,} is above {hi:,}{f' ({what})' if what else ''}")
        return value

    parse.__name__ = "N"
    return parse


def number(lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> Callable[[str], float]:
    """A parser for a finite real option in [lo, hi] ((lo, hi] when `lo_open`); NaN and infinities refused."""

    def parse(text: str) -> float:
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            value = float(text)
        else:
            try:
                value = float(str(text).strip())
            except ValueError:
                raise typer.BadParameter(f"'{text}' is not a number") from None
        if not math.isfinite(value):
            raise typer.BadParameter(f"{text} is not a finite number")
        if lo is not None and (value <= lo if lo_open else value < lo):
            raise typer.BadParameter(f"{value:g} must be {'>' if lo_open else '>='} {lo:g}")
        if hi is not None and value > hi:
            raise typer.BadParameter(f"{value:g} must be <= {hi:g}")
        return value

    parse.__name__ = "X"
    return parse


def counts(text: str, option: str, lo: int, hi: int) -> list[int]:
    """A comma list of counts ('1024,4096' or '1k, 4k'); an empty list or empty entry is an error naming `option`."""
    parts = [p.strip() for p in str(text).split(",")]
    if not any(parts):
        raise typer.BadParameter(f"{option}: '{text}' is empty; give one or more whole numbers")
    out = []
    parse = count(lo, hi)
    for part in parts:
        if not part:
            raise typer.BadParameter(f"{option}: '{text}' has an empty entry")
        try:
            out.append(parse(part))
        except typer.BadParameter as exc:
            raise typer.BadParameter(f"{option}: {exc.message}") from None
    return out


def dtype(auto: bool = False) -> Callable[[str], "DType | None"]:
    """A parser for a dtype option in the one vocabulary (DType.of: fp16, float16, half, bf16, bfloat16, fp32,
    float32, fp8 = fp8_e4m3, fp8_e5m2, ...); with `auto`, 'auto' gives None (the checkpoint's dtype)."""

    def parse(text: str) -> "DType | None":
        try:
            return DType.or_auto(text, "the dtype") if auto else DType.of(text, "the dtype")
        except InputError as exc:
            raise typer.BadParameter(str(exc)) from None

    parse.__name__ = "DTYPE"
    return parse


__all__ = ["count", "counts", "dtype", "number"]

"""A published CSV's cells: one reader a kind of column, each refusing what it cannot read with what it must be."""

from __future__ import annotations

import math
import re
from typing import Callable

from ..errors import InputError
from ..limits import MAX_TOKENS
from ..load import available
from ..vocab import check_engine_release

#: The default of a column that may not be empty.
REQUIRED = object()


class _Bad(ValueError):
    """A cell that cannot be read; the message says what it must be."""


def _whole(lo: int, hi: int) -> Callable[[str], int]:
    def read(text: str) -> int:
        if not re.fullmatch(r"[0-9]+", text) or not lo <= int(text) <= hi:
            raise _Bad(f"must be a whole number in [{lo:,}, {hi:,}]")
        return int(text)
    return read


def _positive_number(hi: float, inf: bool = False) -> Callable[[str], float]:
    def read(text: str) -> float:
        if inf and text == "inf":
            return math.inf
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 < value <= hi) or not re.fullmatch(r"[0-9.eE+-]+", text):
            raise _Bad(f"must be a number in (0, {hi:g}]" + (" or inf" if inf else ""))
        return value
    return read


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1"):
        return True
    if text.lower() in ("false", "0"):
        return False
    raise _Bad("must be true or false")


def _one_of(choices) -> Callable[[str], object]:
    names = [getattr(c, "value", c) for c in choices]

    def read(text: str) -> object:
        if text not in names:
            raise _Bad(f"must be one of {', '.join(names)}")
        return choices[names.index(text)] if not isinstance(choices, type) else choices(text)
    return read


def _text(text: str) -> str:
    return text


def _model(text: str) -> str:
    if text in available("models") or re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", text):
        return text
    raise _Bad("must be a bundled model (`rooflab list models`) or a Hugging Face id (org/name)")


def _gpu(text: str) -> str:
    if text not in available("hardware"):
        raise _Bad("is not a bundled GPU (`rooflab list gpus`; add its YAML to hardware/ first)")
    return text


def _release(text: str) -> str:
    """An engine release as --engine-version takes it (0.9.0, 0.7.4.dev181+gf35f8e22, 0.4.3.post2, 1.0)."""
    try:
        return check_engine_release(text)
    except InputError:
        raise _Bad("must be an engine release (0.9.0, 0.7.4.dev181, 0.4.3.post2) or empty") from None


_TOKENS = _whole(1, MAX_TOKENS)

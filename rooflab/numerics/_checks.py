"""Input checks shared by the numerics oracles, and the one error they raise."""

from __future__ import annotations

import numpy as np

from ..errors import InputError, shown


class NumericsError(InputError, ValueError):
    """Bad input to a numerics oracle: a ValueError for library callers, an InputError for the CLI."""


def check_block(block: object, name: str = "block") -> int:
    """Return `block` as an int if it is an integer >= 1; bools, floats and strings are refused."""
    if isinstance(block, (bool, np.bool_)) or not isinstance(block, (int, np.integer)):
        raise NumericsError(f"{name} must be an integer >= 1, got {_one_line(block)} ({type(block).__name__})")
    if block < 1:
        raise NumericsError(f"{name} must be an integer >= 1, got {block}")
    return int(block)


def _one_line(value: object) -> str:
    """shown(value) on one line (a NumPy array's repr spans several)."""
    return " ".join(shown(value).split())


def check_index(value: object, name: str) -> int:
    """Return `value` as an int if it is an integer (not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise NumericsError(f"{name} must be an integer, got {_one_line(value)} ({type(value).__name__})")
    return int(value)


def as_fp64(x: object, name: str) -> np.ndarray:
    """Convert to a float64 array; complex numbers, strings and ragged lists are refused."""
    from ..cost.common import real_array

    if np.iscomplexobj(x):
        raise NumericsError(f"{name} must be real, got complex values")
    if isinstance(x, np.ma.MaskedArray) and np.ma.is_masked(x):
        raise NumericsError(f"{name} has masked (missing) values")
    if isinstance(x, (str, bytes, bytearray, memoryview)):
        raise NumericsError(f"{name} must be an array of real numbers, got text or bytes")
    try:
        return real_array(np.ma.getdata(x) if isinstance(x, np.ma.MaskedArray) else x, name)
    except InputError as exc:
        raise NumericsError(f"{name} must be an array of real numbers: {exc}") from None


def check_no_nan_or_pos_inf(x: np.ndarray, name: str) -> None:
    """Logits may be -inf (masked) but never NaN or +inf."""
    if np.isnan(x).any():
        raise NumericsError(f"{name} contain NaN")
    if np.isposinf(x).any():
        raise NumericsError(f"{name} contain +inf (only -inf, a masked position, is allowed)")


def check_finite(x: np.ndarray, name: str) -> None:
    if not np.isfinite(x).all():
        raise NumericsError(f"{name} must be finite")

"""The x axis of a sweep: rooflab's default length grid, or the user's own lengths (checked).

No matplotlib here; the sweeps in series.py take their grids from these functions.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from ..cost.common import whole_number
from ..errors import InputError
from ..limits import MAX_BATCH, MAX_RAGGED, MAX_TOKENS


def length_grid(lo: int, hi: int, per_octave: int = 16) -> np.ndarray:
    """Whole token counts from `lo` to `hi`, evenly spaced on a log axis (powers of two included)."""
    if lo < 1 or hi <= lo:
        raise InputError(f"length range must satisfy 1 <= low < high, got {lo} and {hi}")
    octaves = math.log2(hi / lo)
    grid = np.unique(np.round(lo * 2.0 ** np.linspace(0, octaves, int(math.ceil(octaves * per_octave)) + 1)))
    return grid.astype(np.float64)


def pow2_at_least(n: float) -> int:
    """The smallest power of two >= n (and >= 2)."""
    return 2 ** int(math.ceil(math.log2(max(n, 2))))


def whole_numbers(values: Sequence[int], name: str, maximum: int) -> list[int]:
    """`values` as whole numbers in [1, maximum], sorted and without repeats; InputError naming `name` otherwise.

    A string, a mapping or an empty sequence is refused (a string would be read one character at a time).
    """
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__") or hasattr(values, "keys"):
        raise InputError(f"{name} must be a sequence of whole numbers, got {values!r}")
    values = list(values)
    if not values:
        raise InputError(f"{name} is empty; give one or more whole numbers")
    if len(values) > MAX_RAGGED:
        raise InputError(f"{name} has {len(values):,} entries; at most {MAX_RAGGED:,}")
    return sorted({whole_number(v, f"{name} entry", maximum=maximum) for v in values})


def user_lengths(lengths: Optional[Sequence[int]], name: str, upper: Optional[int] = None,
                 upper_name: str = "") -> Optional[np.ndarray]:
    """The user's token counts as a sorted float64 grid, or None when none were given (the sweep's default).

    Refused with an InputError naming `name`: an entry that is not a whole number in [1, MAX_TOKENS],
    an empty sequence, and lengths given together with the default grid's right end `upper` (`upper_name`).
    """
    if lengths is None:
        return None
    if upper is not None:
        raise InputError(f"give {name} or {upper_name}, not both: {upper_name} is the right end of the default grid")
    return np.array(whole_numbers(lengths, name, MAX_TOKENS), dtype=np.float64)


def batch_sizes(batches: Sequence[int], name: str = "batches") -> tuple[int, ...]:
    """Batch sizes as whole numbers in [1, MAX_BATCH], sorted and without repeats."""
    return tuple(whole_numbers(batches, name, MAX_BATCH))

"""Moved to rooflab/sweeps/grid.py (no matplotlib there); this path re-exports its names for one release."""

from __future__ import annotations

from ..sweeps.grid import (  # noqa: F401
    batch_sizes, length_grid, pow2_at_least, user_lengths, whole_numbers)

"""Moved to rooflab/sweeps/series.py (no matplotlib there); this path re-exports its names for one release."""

from __future__ import annotations

from ..sweeps.series import (  # noqa: F401
    CapacitySweep, DECODE_BATCHES, DecodeSweep, MemoryLine, MemorySweep, TimeSweep, capacity_sweep, capacity_sweeps,
    decode_sweep, decode_sweeps, memory_sweep, time_sweep, time_sweeps)

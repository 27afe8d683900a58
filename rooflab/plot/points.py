"""Moved to rooflab/sweeps/points.py (no matplotlib there); this path re-exports its names for one release."""

from __future__ import annotations

from ..sweeps.points import (  # noqa: F401
    GpuRoofs, MERGE_TOKENS, MeasuredPoint, RooflineData, RooflinePoint, beaten_text, floor_beaters, gpu_roofs,
    roofline_data)

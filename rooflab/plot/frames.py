"""Moved to rooflab/sweeps/frames.py (no matplotlib there); this path re-exports its names for one release."""

from __future__ import annotations

from ..sweeps.frames import (  # noqa: F401
    long_frame)

"""Moved to rooflab/engines/tables.py (it builds text Tables, not pandas frames); this path re-exports its names for
one release."""

from __future__ import annotations

from .tables import engine_frame, engine_table, explanation_frame, explanation_table  # noqa: F401

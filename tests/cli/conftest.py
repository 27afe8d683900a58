"""The CLI's tests see tables at their full width unless a test sets $COLUMNS itself: pytest-xdist's workers run
with COLUMNS=80, which wrapped the report's heading and warnings (rooflab.output.terminal_width reads it)."""

import pytest


@pytest.fixture(autouse=True)
def _full_width_tables(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)

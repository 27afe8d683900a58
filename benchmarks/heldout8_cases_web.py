"""Held-out set 8's web cases (tests/data/engine_logs/heldout8/, the rule in its SOURCES.md): one dict a log, the
fields of benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before any prediction,
replay or parse was run on these logs."""

CASES: tuple[dict, ...] = ()

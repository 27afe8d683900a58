"""Held-out set 8's sglang cases (tests/data/engine_logs/heldout8/, the rule in its SOURCES.md): one dict a log, the
fields of benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before any prediction,
replay or parse was run on these logs.

None qualified by the freeze (heldout8/SOURCES-sglang.md lists every log looked at and the rule each failed): the
GitHub code index's and issue corpus's SGLang start-up logs left after sets 5-7 are code, tests, notes quoting cut
lines, unsupported models or GPUs, or sources an earlier set took.
"""

CASES: tuple[dict, ...] = ()

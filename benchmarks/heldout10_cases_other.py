"""Held-out set 10's "other" cases (tests/data/engine_logs/heldout10/, the rule in its SOURCES.md): SGLang start-up
logs from GitHub and start-up logs of either engine from web pages that are not GitHub; one dict a log, the fields of
benchmarks/engine_logs_heldout.Case, as the log or its post states them; written before any prediction, replay or
parse was run on these logs.

None qualified by the freeze, so no model or GPU was identified and no config.json was stored
(heldout10/SOURCES-other.md lists every source looked at and the rule each failed): what the GitHub file index, the
issue corpus and the pages / docs corpora still hold of SGLang and web start-up logs after sets 1-9 mined them is
code and tests, notes quoting abridged or cut lines, issue excerpts that begin after the start-up or name no GPU,
models or GPUs rooflab has no spec for (DeepSeek-V4, GLM-5, Kimi-K2.5, Grok-1, Qwen3.5 / 3.8 hybrids, Hygon DCU,
Ascend NPU), and sources an earlier set took (rule (d)).
"""

CASES: tuple[dict, ...] = ()

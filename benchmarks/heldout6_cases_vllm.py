"""Held-out set 6's vllm cases (tests/data/engine_logs/heldout6/, the rule in its SOURCES.md): one dict a log, the
fields of benchmarks/engine_logs_heldout.Case (log, engine, gpu_label, model_label, gpu, model, version, options),
each as the log or its post states it; written before any prediction, replay or parse was run on these logs."""

CASES: tuple[dict, ...] = ()

"""Engine start-up logs (rooflab/engines/logs.py, explain.py) and `rooflab capacity --engine / --engine-log`.

The fixtures are lines of public start-up logs (tests/data/engine_logs/SOURCES.md); their settings, as rooflab
options, are in cases.yaml, which benchmarks/engine_capacity.py evaluates for RESULTS.md. The synthetic lines below
follow each format as the engines' source prints it (the format strings are cited in logs.py).
"""

from __future__ import annotations


import pytest

from rooflab.engines import Accounting, Engine
from rooflab.engines.logs import LOOKED_FOR, parse_log, read_log
from rooflab.errors import InputError
from rooflab.units import GiB
from support import ENGINE_LOGS, engine_capacity_bench


DATA = ENGINE_LOGS
bench = engine_capacity_bench()


# --- the fixtures ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, engine, accounting", [
    ("vllm-llama-2-7b-a100-80gb-tp1.log", Engine.vllm, Accounting.vllm_v0_2),
    ("vllm-llama-3-8b-h100-tp1.log", Engine.vllm, Accounting.vllm_v0),
    ("vllm-llama-3.2-11b-vision-h100-tp1.log", Engine.vllm, Accounting.vllm_v0),
    ("vllm-llama-3.1-8b-instruct-rtx3090-tp1.log", Engine.vllm, Accounting.vllm_v0_6_4),
    ("vllm-deepseek-r1-distill-qwen-14b-rtx4090-tp2.log", Engine.vllm, Accounting.vllm_v0),
    ("vllm-llama-3.1-8b-instruct-l40s-tp1.log", Engine.vllm, Accounting.vllm_v1),
    ("vllm-qwen3-235b-a22b-fp8-h100-tp4.log", Engine.vllm, Accounting.vllm_v1),
    ("sglang-llama-3.1-8b-instruct-h100-tp1.log", Engine.sglang, Accounting.sglang_v0_4),
])
def test_fixture_formats(name, engine, accounting):
    log = read_log(DATA / name)
    assert (log.engine, log.accounting) == (engine, accounting)


def test_provenance_line_is_not_read():
    """Line 1 of the 14B fixture quotes the reporter's prose ('... reserved for KV Cache is 8.69GiB'): skipped."""
    log = read_log(DATA / "vllm-deepseek-r1-distill-qwen-14b-rtx4090-tp2.log")
    assert log.get("kv_bytes") is None and log.value("kv_tokens") == 81536
    assert log.get("weights").line_no == 2


def test_vllm_10511_table_read_term_by_term():
    log = read_log(DATA / "vllm-llama-3-8b-h100-tp1.log")
    figures = {k: round(v.value / GiB, 2) for k, v in log.figures.items() if k != "utilization"}
    assert figures == {"total": 79.22, "budget": 71.29, "weights": 14.96, "non_torch": 1.79, "activation": 1.26,
                       "kv_bytes": 53.29}
    assert log.value("utilization") == 0.9 and log.get("weights").line_no == 7


def test_sglang_mla_pool_line():
    log = parse_log("KV Cache is allocated. #tokens: 1000000, KV size: 61.43 GB\n", "mla.log")
    assert log.value("kv_size") == round(61.43 * GiB) and log.value("kv_tokens") == 1000000


def test_unrecognised_log_names_what_it_looked_for():
    with pytest.raises(InputError) as exc:
        parse_log("hello\nworld\n", "x.log")
    message = str(exc.value)
    assert message.startswith("--engine-log x.log: no vLLM or SGLang KV-cache line found; looked for")
    assert all(item in message for item in LOOKED_FOR) and "\n" not in message


def test_mixed_engines_refused():
    with pytest.raises(InputError, match="both vLLM and SGLang"):
        parse_log("# GPU blocks: 10\nKV Cache is allocated. #tokens: 5, K size: 1.00 GB, V size: 1.00 GB\n", "m")


@pytest.mark.parametrize("line, key", [
    ("INFO # GPU blocks: " + "9" * 30 + ", # CPU blocks: 2048", "gpu blocks"),
    ("INFO GPU KV cache size: " + "9" * 40 + " tokens", "kv tokens"),
    ("total_gpu_memory (" + "9" * 400 + "GiB) x gpu_memory_utilization (0.90) = 71.29GiB", "total"),
    ("total_gpu_memory (79.22GiB) x gpu_memory_utilization (1.90) = 71.29GiB", "utilization"),
    ("total_gpu_memory (79.22GiB) x gpu_memory_utilization (0.00) = 71.29GiB", "utilization"),
])
def test_a_corrupt_figure_is_refused_naming_the_log_and_line(line, key):
    """A figure past any GPU, one that overflows a float, or a utilisation outside (0, 1]: named with the log and
    its line (a 400-digit total reached an OverflowError inside rooflab once; 1.9 a message naming neither)."""
    with pytest.raises(InputError) as caught:
        parse_log("INFO start\n" + line + "\nINFO GPU KV cache size: 436,544 tokens\n", "odd.log")
    message = str(caught.value)
    assert "odd.log line 2" in message and key in message


def test_a_named_pipe_without_a_writer_reads_as_empty_not_forever(tmp_path):
    """`--engine-log FIFO` with nothing writing to it blocked forever; it reads as an empty (unrecognised) log."""
    import os

    fifo = tmp_path / "engine.log"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="engine.log"):
        read_log(fifo)

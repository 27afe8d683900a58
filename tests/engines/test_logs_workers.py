"""Tests of the log reader's per-worker KV lines (rooflab/engines/logs.py): vLLM V1's EngineCore prints 'GPU KV cache
size' and 'Maximum concurrency' once a worker, without a worker's prefix; after one 'Initializing a V1 LLM engine'
line they are that start-up's ranks, and the start-up takes the smallest, as unify_kv_cache_configs does.
"""

from __future__ import annotations

from pathlib import Path

from rooflab.engines.logs import parse_startups, read_startups

HELDOUT5 = Path(__file__).resolve().parents[1] / "data" / "engine_logs" / "heldout5"


def test_qwen3_235b_ep_is_one_startup_of_eight_workers():
    """Set 5's Qwen3-235B-A22B TP 8 EP log (in-sample since session 11): one V1 start-up (its line 5), eight
    'GPU KV cache size' lines (30-44: 1,594,928, six of 1,590,736, 1,611,664), read as one start-up of 8 ranks
    with the smallest, 1,590,736 tokens, and its concurrency 48.55x (was three start-ups)."""
    (log,) = read_startups(HELDOUT5 / "vllm-v1-qwen3-235b-a22b-fp8-h100x8-tp8-ep-fp8kv-maxlen32768.log")
    assert (log.value("kv_tokens"), log.value("concurrency"), log.ranks) == (1_590_736, 48.55, 8)
    assert log.get("kv_tokens").line_no == 32


def test_deepseek_r1_ray_is_one_startup_of_sixteen_workers():
    """Set 5's DeepSeek-R1 TP 16 Ray log: one V1 start-up (line 5), sixteen per-worker lines alternating 305,216 and
    304,704 tokens: one start-up of 16 ranks at 304,704 (was fifteen)."""
    (log,) = read_startups(HELDOUT5 / "vllm-v1-0.8.4-deepseek-r1-h800x16-tp16-ep-ray-maxlen32768.log")
    assert (log.value("kv_tokens"), log.value("concurrency"), log.ranks) == (304_704, 9.30, 16)


INIT = ("INFO 08-16 02:03:08 [core.py:71] Initializing a V1 LLM engine (v0.10.0) with config: model='m', "
        "tensor_parallel_size=2")
SIZE = "INFO 08-16 02:14:37 [kv_cache_utils.py:833] GPU KV cache size: {:,} tokens"
CONC = "INFO 08-16 02:14:37 [kv_cache_utils.py:837] Maximum concurrency for 4,096 tokens per request: {:.2f}x"


def _lines(*tokens: int) -> list[str]:
    return [line for n in tokens for line in (SIZE.format(n), CONC.format(n / 4096))]


def test_each_v1_engine_line_opens_its_own_startup():
    text = "\n".join([INIT, *_lines(1000, 992), INIT, *_lines(2000, 2016)])
    first, second = parse_startups(text)
    assert (first.value("kv_tokens"), first.ranks) == (992, 2)
    assert (second.value("kv_tokens"), second.ranks) == (2000, 2)


def test_without_a_v1_engine_line_a_changed_repeat_still_splits():
    """A log cut before the engine's line gives no sign the prints are one start-up's workers: the repeat rule
    (another value from the same process) stands."""
    assert [log.value("kv_tokens") for log in parse_startups("\n".join(_lines(1000, 992)))] == [1000, 992]

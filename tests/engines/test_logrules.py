"""Tests of rooflab/engines/logrules.py: where a configuration record a terminal wrapped ends.

Nesting (brackets and quotes as Python's repr prints them), starts_record (the log prefixes vLLM and SGLang print),
config_lines (how many lines one record takes); the rules that read a line are tested through the reader in
test_logs.py. Lines are written from vLLM v0.10.1.1's format strings (vllm/entrypoints/utils.py:326
"non-default args: %s", a dict's repr; vllm/v1/engine/core.py:74 "Initializing a V1 LLM engine (v%s) with config:
%s"), with settings made up for the test.
"""

from __future__ import annotations

import pytest

from rooflab.engines.logrules import MAX_CONFIG_LINES, Nesting, config_lines, starts_record

ARGS = ("(APIServer pid=121) INFO 09-03 04:36:09 [utils.py:326] non-default args: {'model': 'Org/Model-7B', "
        "'max_model_len': 16384, 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.5}")
NEXT = "(EngineCore_0 pid=1257) INFO 09-03 04:41:48 [gpu_model_runner.py:2007] Model loading took 7.1217 GiB"


def _wrap(line: str, width: int) -> list[str]:
    """The line as a terminal of `width` columns shows it: cut every `width` characters, nothing added."""
    return [line[i:i + width] for i in range(0, len(line), width)]


@pytest.mark.parametrize("text, depth, quote", [
    ("{'a': 1}", 0, ""), ("{'a': [1, (2", 3, ""), ("{'a': 'b", 1, "'"), ("{'it\\'s", 1, "'"),
    ("{\"it's\": 1", 1, ""), ("{'a': '}'", 1, ""), (") with config: x=1)", 0, ""),
])
def test_nesting_counts_brackets_outside_quotes(text, depth, quote):
    state = Nesting().after(text)
    assert (state.depth, state.quote) == (depth, quote)


def test_nesting_carries_across_pieces_as_across_the_whole():
    for cut in range(1, len(ARGS)):
        assert Nesting().after(ARGS[:cut]).after(ARGS[cut:]) == Nesting().after(ARGS)


def test_a_backslash_ending_a_piece_escapes_the_next_pieces_first_character():
    state = Nesting().after("{'a\\")
    assert state.escaped and state.after("'").open and not state.after("'").after("'}").open


@pytest.mark.parametrize("line", [
    NEXT, "INFO 08-28 10:00:00 [core.py:74] Initializing", "DEBUG 08-28 10:00:00 x", "WARNING 12-01 00:00:00 x",
    "\x1b[1;36m(APIServer pid=1009)\x1b[0;0m INFO 09-10 23:26:12 x", "(VllmWorker TP0 pid=1430) INFO 09-03 x",
    "(VllmWorker rank=0 pid=77) INFO 05-01 x", "        (EngineCore_DP0 pid=12345) INFO 05-01 x",
    "qwen3-1  | INFO 05-04 10:00:00 x", "[2025-10-16 12:00:00 TP0] Load weight begin.", "[12:00:00 TP1] x",
    "2025-10-16 12:00:00,123 INFO x",
])
def test_a_log_prefix_starts_a_record(line):
    assert starts_record(line)


@pytest.mark.parametrize("line", ["2-7B-Instruct', 'max_model_len': 16384}", "n': 0.5}", " 'port': 8081,",
                                  "INFO is a word", "(a, b) = 1", "16384, 'tensor_parallel_size': 2}"])
def test_a_continuation_does_not_start_a_record(line):
    assert not starts_record(line)


@pytest.mark.parametrize("width", [60, 90, 140])
def test_a_wrapped_dict_takes_its_continuations_and_not_the_next_record(width):
    lines = _wrap(ARGS, width) + [NEXT]
    assert config_lines(lines, 0) == len(lines) - 1 and config_lines(lines, len(lines) - 1) == 1


def test_a_record_cut_before_it_closes_is_left_as_printed():
    cut = ARGS[:120]
    assert config_lines([cut, "stray text, not a prefix", NEXT], 0) == 1   # the next record comes before it closes
    assert config_lines([cut, ""], 0) == 1 and config_lines([cut], 0) == 1
    assert config_lines([cut, cut[60:]], 0) == 1        # a line holding a marker starts its own record


def test_a_record_past_the_most_lines_is_left_as_printed():
    head = "INFO 08-28 10:00:00 [utils.py:326] non-default args: {'a': '"
    closed = [head] + ["x"] * (MAX_CONFIG_LINES - 2) + ["'}"]
    assert config_lines(closed, 0) == MAX_CONFIG_LINES
    assert config_lines([head] + ["x"] * (MAX_CONFIG_LINES - 1) + ["'}"], 0) == 1


def test_a_balanced_line_and_a_line_without_a_marker_take_one_line():
    assert config_lines([ARGS, "'b': 2}"], 0) == 1
    assert config_lines(["{'model': 'x", "y'}"], 0) == 1


@pytest.mark.parametrize("cut", range(1, len("non-default args:")))
def test_a_wrap_through_the_marker_itself_still_starts_the_record(cut):
    at = ARGS.index("non-default args:") + cut
    assert config_lines([ARGS[:at], ARGS[at:at + 60], ARGS[at + 60:], NEXT], 0) == 3


def test_a_continuation_never_holds_the_start_of_another_record():
    head = "INFO 08-28 10:00:00 [utils.py:326] non-default args: {'a': 1, "
    assert config_lines([head, "'b': 2, non-default args: {'c': 3}", "'d': 4}"], 0) == 1
    assert config_lines([head, "'b': 2, non-defa", "ult args: {'c': 3}", "}"], 0) == 1


# --- vLLM V1's sampler lines and --logprobs-mode ---------------------------------------------------------------------

from rooflab.engines.logrules import SAMPLER_LINES, SAMPLER_RAN, sampler_of, settings_of  # noqa: E402


@pytest.mark.parametrize("line, ran", [
    # set 8's v0.11.2 Unsloth log (VLLM_USE_FLASHINFER_SAMPLER=1 set by unsloth_zoo)
    ("INFO 11-25 15:08:03 [topk_topp_sampler.py:36] Using FlashInfer for top-p & top-k sampling.", "flashinfer"),
    # set 8's v0.10.2 Unsloth log on a T4 (vllm v0.10.2 topk_topp_sampler.py:69)
    ("WARNING 09-28 09:44:43 [topk_topp_sampler.py:69] FlashInfer is not available. Falling back to the PyTorch-"
     "native implementation of top-p & top-k sampling. For the best performance, please install FlashInfer.",
     "not_installed"),
    # v0.10.1.1 / v0.10.2 topk_topp_sampler.py __init__, VLLM_USE_FLASHINFER_SAMPLER=0
    ("WARNING [topk_topp_sampler.py:62] FlashInfer is available, but it is not enabled. Falling back to the PyTorch-"
     "native implementation of top-p & top-k sampling. For the best performance, please set "
     "VLLM_USE_FLASHINFER_SAMPLER=1.", "not_enabled"),
    ("INFO [gpu_worker.py:359] Available KV cache memory: 17.20 GiB", None),
])
def test_each_sampler_line_says_what_ran(line, ran):
    assert sampler_of(line) == ran
    assert set(SAMPLER_RAN) == set(SAMPLER_LINES.values())


def test_logprobs_mode_from_non_default_args():
    """Set 8's NeMo RL log (vLLM v0.11.2) prints 'logprobs_mode': 'processed_logprobs' among its non-default args."""
    line = ("INFO 02-28 03:53:46 [utils.py:253] non-default args: {'seed': 7, 'max_model_len': 32768, "
            "'enable_prefix_caching': True, 'logprobs_mode': 'processed_logprobs', 'disable_log_stats': True}")
    assert settings_of(line)["logprobs_mode"] == "processed_logprobs"
    assert "logprobs_mode" not in settings_of("INFO non-default args: {'max_logprobs': 0}")


@pytest.mark.parametrize("line, stated", [
    ("INFO 09-28 09:44:40 [utils.py:253] non-default args: {'model': 'google/gemma-3-27b-it', "
     "'limit_mm_per_prompt': {'image': 0}, 'skip_mm_profiling': True}",
     {"limit_mm_per_prompt": "{'image': 0}", "skip_mm_profiling": "True"}),
    ("INFO non-default args: {'limit_mm_per_prompt': {'image': {'count': 2, 'width': 512}}, 'seed': 0}",
     {"limit_mm_per_prompt": "{'image': {'count': 2, 'width': 512}}"}),
    ("args: Namespace(limit_mm_per_prompt=None, skip_mm_profiling=False)", {"skip_mm_profiling": "False"})])
def test_the_multimodal_options_a_configuration_line_states(line, stated):
    """vLLM's non-default args (v0.11.2 vllm/entrypoints/utils.py:253, a dict's repr) print --limit-mm-per-prompt
    '{"image": 0}' as {'image': 0} and --skip-mm-profiling as True (hostile session 16: neither was read)."""
    found = settings_of(line)
    assert {k: found[k] for k in ("limit_mm_per_prompt", "skip_mm_profiling") if k in found} == stated


@pytest.mark.parametrize("line, cut", [
    ("WARNING [topk_topp_sampler.py:69] FlashInfer is not available. Falling back to the", True),
    ("INFO [topk_topp_sampler.py:36] Using FlashInfer for top-p", True),
    ("WARNING [topk_topp_sampler.py:69] FlashInfer is not available. Falling back to the PyTorch-native "
     "implementation of top-p & top-k sampling.", False),
    ("INFO [gpu_worker.py:359] Available KV cache memory: 17.20 GiB", False)])
def test_a_sampler_lines_opening_without_its_phrase_is_incomplete(line, cut):
    """A sampler line a terminal cut (its opening, SAMPLER_OPENINGS, without the whole phrase) is incomplete, so
    logs.py joins it with the line that continues it, as it joins a rule's line."""
    from rooflab.engines.logrules import ANCHORS, SAMPLER_OPENINGS, incomplete

    assert incomplete(line) is cut
    assert set(SAMPLER_OPENINGS) <= set(ANCHORS)
    assert all(phrase.startswith(opening) for phrase, opening in zip(SAMPLER_LINES, SAMPLER_OPENINGS))

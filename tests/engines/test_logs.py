"""Tests of rooflab/engines/logs.py: reading vLLM's and SGLang's start-up logs.

Each fixture format (public logs, tests/data/engine_logs/SOURCES.md; synthetic lines follow the format strings
cited in logs.py), term-by-term tables, several start-ups in one paste, wrapped lines, settings a config line
states; and what is refused or read as printed: an unrecognised or mixed log, a corrupt figure (named with its
line), a named pipe, negative available memory, ranks that disagree, and a line of 20,000 repeats read
without hanging; configuration lines a terminal wrapped; held-out sets 2 and 3's hashes, cases and parsing, and
set 3's wrapped `non-default args` read whole.
"""

from __future__ import annotations

import re

import pytest

from rooflab.engines import Accounting, Engine
from rooflab.engines.logs import LOOKED_FOR, V1_CONCURRENCY_CALLS, parse_log, read_log, releases_printing_at
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


# --- session 7: negative memory, V1 start-up errors, wrapped lines, several start-ups, settings, linear time -----

from rooflab.engines.logs import parse_startups  # noqa: E402
from fuzz_support import bounded  # noqa: E402

HELDOUT = DATA / "heldout"


def test_negative_available_memory_is_read_as_printed():
    """vllm#23278: 'Available KV cache memory: -2.14 GiB' was not recognised; it is read, sign included."""
    log = read_log(HELDOUT / "vllm-v1-gpt-oss-120b-h100-negative.log")
    assert log.value("kv_bytes") == round(-2.14 * GiB) and log.accounting is Accounting.vllm_v1


def test_ranks_keep_the_smallest_figure():
    """vllm-omni#262: rank 1 -3.86 GiB, rank 0 9.90 GiB; the first-seen rule kept 9.90 (rank 0's, printed second)."""
    log = read_log(HELDOUT / "vllm-omni-qwen3-omni-tp2-negative.log")
    assert log.value("kv_bytes") == round(-3.86 * GiB) and log.ranks == 2


def test_v1_startup_error_line():
    log = read_log(HELDOUT / "vllm-v1-deepseek-v4-flash-gh200-tp2-ep.log")
    assert (log.value("estimated_max_len"), log.value("max_model_len")) == (13528, 30000)
    assert log.value("kv_bytes") == round(5.44 * GiB) and log.value("kv_needed") == round(6.66 * GiB)


def test_several_startups_each_on_its_own():
    """recipes#12 pastes two runs; vllm#25350 a run and a failed one; vllm#13596 the same run twice."""
    two = parse_startups((HELDOUT / "vllm-v1-qwen3-coder-480b-fp8-h20-dp8-ep.log").read_text(), "r")
    assert [s.value("estimated_max_len") for s in two] == [205728, 235296]
    runs = parse_startups((HELDOUT / "vllm-v1-fp8-kv-two-startups.log").read_text(), "r")
    assert [(s.value("kv_tokens"), s.value("max_model_len")) for s in runs] == [(230528, 100000), (None, 221000)]
    with pytest.raises(InputError, match="2 start-ups"):
        read_log(HELDOUT / "vllm-v1-pr13596-before-after.log")
    assert read_log(str(HELDOUT / "vllm-v1-pr13596-before-after.log") + "@2").value("kv_tokens") == 2042016


def test_repeated_identical_line_is_one_startup():
    log = read_log(HELDOUT / "vllm-v1-kimi-linear-48b-awq-rtx3090x2.log")
    assert log.value("kv_tokens") == 75840 and log.value("max_model_len") == 120000


@pytest.mark.parametrize("cut", [20, 41, 60])
def test_a_line_a_terminal_wrapped_is_joined(cut):
    line = "[2026-07-15 13:14:54] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1669816, K size: 76.44 GB, V size: 76.44 GB"
    at = line.index("KV Cache") + cut
    log = parse_log(line[:at] + "\n" + line[at:] + "\n", "w.log")
    assert log.value("kv_tokens") == 1669816 and log.value("k_size") == round(76.44 * GiB)


#: vLLM v0.10.2's sampler line when FlashInfer is not installed (vllm/v1/sample/ops/topk_topp_sampler.py:69).
_SAMPLER = ("WARNING 09-28 09:44:43 [topk_topp_sampler.py:69] FlashInfer is not available. Falling back to the "
            "PyTorch-native implementation of top-p & top-k sampling. For the best performance, please install "
            "FlashInfer.")


@pytest.mark.parametrize("cut", ["FlashInfer is n", "FlashInfer is not available. Fall", "Falling back to the",
                                 "Falling back to the ", "PyTorch-native implementation of top-p"])
def test_a_sampler_line_a_terminal_wrapped_is_read(cut):
    """The sampler line cut as a terminal cuts it, every character kept or (cut at a space) the space dropped, as
    the hostile round's 'to the' / 'PyTorch-native' (session 16: not read, so the profile was modelled with
    FlashInfer): joined back as a rule's line is (logrules.incomplete), the sampler is the line's, numbered by its
    first line."""
    at = _SAMPLER.index(cut) + len(cut)
    log = parse_log(_KV + _SAMPLER[:at] + "\n" + _SAMPLER[at:].lstrip() + "\n", "w.log")
    assert log.setting("sampler").value == "not_installed" and log.setting("sampler").line_no == 3


def test_a_line_opening_like_a_sampler_line_is_not_joined():
    """Another warning that opens with 'FlashInfer is not' keeps its line, and the next line its own."""
    log = parse_log("WARNING FlashInfer is not supported on this GPU\n" + _KV, "w.log")
    assert log.setting("sampler") is None and log.get("kv_tokens").line_no == 2


# vLLM v0.10.1.1's format strings (vllm/entrypoints/utils.py:326 "non-default args: %s", a dict's repr;
# vllm/v1/engine/core.py:74 "Initializing a V1 LLM engine (v%s) with config: %s", VllmConfig.__str__), settings
# made up for the test, cut as a terminal of `width` columns cuts them (logrules.config_lines).
_ARGS = ("(APIServer pid=121) INFO 09-03 04:36:09 [utils.py:326] non-default args: {'model': 'Org/Model-7B', "
         "'max_model_len': 16384, 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.5}")
_CONFIG = ("(EngineCore_0 pid=1257) INFO 09-03 04:36:20 [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) with "
           "config: model='Org/Model-7B', speculative_config=None, tokenizer='Org/Model-7B', "
           "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config={}, tokenizer_revision=None, "
           "trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=16384, download_dir='/models/cache', "
           "load_format=auto, tensor_parallel_size=4, pipeline_parallel_size=1, disable_custom_all_reduce=False, "
           "quantization=None, enforce_eager=False, kv_cache_dtype=fp8_e5m2")
_KV = ("(EngineCore_0 pid=1257) INFO 09-03 04:42:46 [kv_cache_utils.py:849] GPU KV cache size: 412,944 tokens\n"
       "(EngineCore_0 pid=1257) INFO 09-03 04:42:46 [kv_cache_utils.py:853] Maximum concurrency for 16,384 tokens "
       "per request: 25.20x\n")


def _wrapped(line, width):
    return "\n".join(line[i:i + width] for i in range(0, len(line), width)) + "\n"


@pytest.mark.parametrize("width", [40, 80, 120, 140])
def test_a_non_default_args_dict_a_terminal_wrapped_states_its_settings(width):
    log = parse_log(_wrapped(_ARGS, width) + _KV, "w.log")
    assert (log.value("tensor_parallel"), log.value("utilization"), log.value("max_model_len")) == (2, 0.5, 16384)
    marker_line = _ARGS.index("non-default args:") // width + 1      # the record starts where its marker does
    assert log.get("tensor_parallel").line_no == marker_line
    assert log.get("kv_tokens").line_no == len(_ARGS) // width + 2


def test_a_config_line_wrapped_inside_its_quotes_states_its_settings():
    first = _CONFIG.index("'Org/Model") + 4
    cuts = [0, first, _CONFIG.index("'Org/Model", first) + 4, _CONFIG.index("'/models") + 4, len(_CONFIG)]
    pieces = [_CONFIG[a:b] for a, b in zip(cuts, cuts[1:])]      # four lines, each wrap inside a quoted value
    log = parse_log("\n".join(pieces) + "\n" + _KV, "w.log")
    assert log.value("tensor_parallel") == 4 and log.setting("kv_cache_dtype").value == "fp8_e5m2"


def test_a_dict_the_source_cut_is_not_merged_with_the_next_record():
    cut = _ARGS[:_ARGS.index("'tensor_parallel_size'")]
    log = parse_log(cut + "\n" + "some text a post added\n" + _KV, "w.log")
    assert log.value("tensor_parallel") is None and log.value("max_model_len") == 16384   # the concurrency line's
    assert log.get("kv_tokens").line_no == 3


def test_settings_a_config_line_states():
    log = read_log(HELDOUT / "vllm-v1-qwen3.6-27b-int4-rtx3090x2-p2p-on.log")
    assert log.setting("kv_cache_dtype").value == "fp8_e5m2" and log.setting("dtype").value == "float16"
    assert (log.value("tensor_parallel"), log.value("max_model_len")) == (2, 262144)


def test_explanation_says_which_settings_came_from_the_log():
    from rooflab.engines import EngineSettings
    from rooflab.engines.explain import explain_log
    from rooflab.load import load_gpu, load_model

    text = ("INFO non-default args: {'model': 'x', 'kv_cache_dtype': 'fp8', 'max_model_len': 8192}\n"
            "INFO Available KV cache memory: 50.00 GiB\nINFO GPU KV cache size: 819,200 tokens\n")
    x = explain_log(parse_log(text, "c.log"), load_model("llama-3-8b"), load_gpu("h100-sxm"),
                    EngineSettings(accounting=Accounting.vllm_v1))
    assert x.reproduced.kv_cache_dtype == "fp8"
    assert any(s.startswith("KV-cache dtype fp8: from the log (line 1") for s in x.settings_taken)
    assert any(s.startswith("block size") and "options" in s for s in x.settings_taken)


@pytest.mark.parametrize("field", ["KV Cache is allocated. ", "Memory profiling results: total_gpu_memory=1GiB ",
                                   "LLM engine (v1) with config: ", "Load weight end. ", "max_total_num_tokens=1 ",
                                   "a" * 7 + " ", "Maximum concurrency for ", "Mamba Cache is allocated. ",
                                   ") on startup. Desired GPU memory utilization is (0.9, 1 GiB). Actual usage is 1 "
                                   "GiB for weight, 1 GiB for peak activation, "])
def test_a_line_of_20000_repeats_reads_without_hanging(field):
    """issue 24: a line of 20,000 repeats of one field made a `.*?` pattern quadratic (killed at 30 s). A watchdog,
    not a time bound: benchmarks/log_reader_linear.py shows the time linear in the input."""
    with bounded(60):
        logs = parse_startups(field * 20000 + "\nGPU KV cache size: 5 tokens\n", "adv.log")
    assert logs[-1].value("kv_tokens") == 5


# --- issue 28 item 6: vLLM V1's memory report, and start-ups of several processes ---------------------------------
# Lines written from vLLM's format strings (vllm/v1/worker/gpu_worker.py, Worker.compile_or_warm_up_model; V0
# vllm/worker/worker.py:225-241) with figures of a Llama-3.1-8B start-up on an 80 GB H100 (weights 14.9889 GiB as
# vllm#17122 prints them, total 79.22 GiB as the vllm#10511 fixture): no held-out line is copied here.

from rooflab.engines.logrules import rank_of  # noqa: E402

_REPORT_PREFIX = ("(EngineCore_0 pid=4120) DEBUG 03-02 10:41:07 [gpu_worker.py:450] Free memory on device (78.7/79.22 "
                  "GiB) on startup. Desired GPU memory utilization is (0.9, 71.3 GiB). Actual usage is ")
_REPORT_SUGGESTS = ("Replace gpu_memory_utilization config with `--kv-cache-memory=58317726966` (54.31 GiB) to fit "
                    "into requested memory, or `--kv-cache-memory=66265563948` (61.71 GiB) to fully utilize gpu memory.")
#: vLLM 846197f (vllm#25204, 2025-09-23) to at least abf61aa (2026-03): weights, activation and non-torch apart.
REPORT_TERMS = (_REPORT_PREFIX + "14.99 GiB for weight, 1.19 GiB for peak activation, 0.15 GiB for non-torch memory, "
                "and 0.51 GiB for CUDAGraph memory. " + _REPORT_SUGGESTS + " Current kv cache memory in use is 54.97 GiB.")
#: Later builds, at INFO: weights and non-torch memory as one figure.
REPORT_CONSUMED = (_REPORT_PREFIX + "15.14 GiB for consumed memory (weights + non-torch), 1.19 GiB for peak "
                   "activation, and 0.51 GiB for CUDAGraph memory. " + _REPORT_SUGGESTS +
                   " Current kv cache memory in use is 54.97 GiB.")
#: The first form (vllm 94e6b2d, vllm#21489, 2025-09-11): the KV memory in bytes.
REPORT_BYTES = (_REPORT_PREFIX + "14.99 GiB for weight, 1.19 GiB for "
                "peak activation, 0.15 GiB for non-torch memory, and 0.51 GiB for CUDAGraph memory. Replace "
                "gpu_memory_utilization config with `--kv-cache-memory=58317726966` to fit into requested memory, or "
                "`--kv-cache-memory=66265563948` to fully utilize gpu memory. Current kv cache memory in use is "
                "59023588065 bytes.")


def _gib(log, key):
    return round(log.value(key) / GiB, 2)


def test_v1_memory_report_reads_every_figure_it_states():
    log = parse_log(REPORT_TERMS + "\n", "r.log")
    assert log.accounting is Accounting.vllm_v1 and log.value("utilization") == 0.9
    assert {k: _gib(log, k) for k in ("free_at_start", "total", "budget", "weights", "activation", "non_torch",
                                      "cuda_graph", "kv_bytes")} == {
        "free_at_start": 78.7, "total": 79.22, "budget": 71.3, "weights": 14.99, "activation": 1.19,
        "non_torch": 0.15, "cuda_graph": 0.51, "kv_bytes": 54.97}


def test_v1_memory_report_alone_replays_to_its_own_kv_figure():
    """Every term of the budget is on the line, so the replay rebuilds the KV memory from them: each figure read
    into its own key (a term read into another's would miss by gigabytes)."""
    from rooflab.engines import EngineSettings
    from rooflab.engines.explain import explain_log
    from rooflab.load import load_gpu, load_model

    x = explain_log(parse_log(REPORT_TERMS + "\n", "r.log"), load_model("llama-3.1-8b"), load_gpu("h100-sxm"),
                    EngineSettings(accounting=Accounting.vllm_v1))
    check = next(c for c in x.checks if c.figure == "kv_cache_bytes")
    assert abs(check.reproduced - check.logged) < 0.01 * GiB


def test_v1_memory_report_of_later_builds_reads_the_consumed_memory_as_printed():
    log = parse_log(REPORT_CONSUMED + "\n", "r.log")
    assert (_gib(log, "weights_non_torch"), _gib(log, "activation"), _gib(log, "kv_bytes")) == (15.14, 1.19, 54.97)
    assert log.get("weights") is None and log.get("non_torch") is None    # one figure of two terms: not split


def test_v1_memory_report_of_the_first_form_reads_bytes():
    assert parse_log(REPORT_BYTES + "\n", "r.log").value("kv_bytes") == 59023588065


def test_v1_memory_report_after_the_kv_lines_of_its_start_up_is_the_same_start_up():
    """The report comes once the KV cache is allocated and restates the weights (14.99 GiB, 'Model loading took'
    printed 14.9889): neither the earlier stage of its figures nor the rounding begins another start-up."""
    text = ("(EngineCore_0 pid=4120) INFO [gpu_model_runner.py:2007] Model loading took 14.9889 GiB and 4.1 seconds\n"
            "(EngineCore_0 pid=4120) INFO [gpu_worker.py:276] Available KV cache memory: 54.97 GiB\n"
            "(EngineCore_0 pid=4120) INFO [kv_cache_utils.py:849] GPU KV cache size: 450,304 tokens\n"
            + REPORT_TERMS + "\n")
    (log,) = parse_startups(text, "r.log")
    assert log.value("weights") == round(14.9889 * GiB) and log.value("kv_tokens") == 450304


def test_the_same_process_restating_another_value_is_another_start_up():
    text = ("INFO Available KV cache memory: 54.97 GiB\nINFO GPU KV cache size: 450,304 tokens\n"
            "INFO Available KV cache memory: 50.01 GiB\nINFO GPU KV cache size: 409,680 tokens\n")
    assert [s.value("kv_tokens") for s in parse_startups(text, "r.log")] == [450304, 409680]


@pytest.mark.parametrize("line, rank", [
    ("(Worker_PP1_TP3 pid=4365) INFO 08-31 15:25:55 [gpu_worker.py:805] Free memory", "Worker_PP1_TP3"),
    ("(Worker_TP0 pid=26347) INFO 11-06 10:51:48 [gpu_worker.py:349] Available KV", "Worker_TP0"),
    ("qwen3-1  | (VllmWorker rank=2 pid=107) INFO 04-29 01:07:41 [gpu_model_runner.py:1347]", "pid=107"),
    ("(VllmWorkerProcess pid=1786) INFO 02-11 07:40:45 model_runner.py:1115]", "pid=1786"),
    ("(RayWorkerWrapper pid=2211, ip=10.0.0.2) INFO worker.py:267] model weights take", "pid=2211"),
    ("(RayWorkerWrapper pid=2211) INFO worker.py:267] model weights take", "pid=2211"),
    ("[2025-01-01 10:00:00 TP1] KV Cache is allocated.", "TP1"),
    ("(EngineCore_0 pid=4120) INFO [kv_cache_utils.py:849] GPU KV cache size", None),
    ("(EngineCore_DP0 pid=26283) INFO [kv_cache_utils.py:1229] GPU KV cache size", None),
    ("INFO 03-19 10:53:21 [executor_base.py:111] # cuda blocks: 2", None),
])
def test_rank_of_names_each_worker_and_none_for_the_main_process(line, rank):
    assert rank_of(line) == rank


def _v0_terms(prefix, weights, non_torch, activation, kv):
    return (f"{prefix}INFO 05-02 09:12:40 [worker.py:267] model weights take {weights}GiB; non_torch_memory takes "
            f"{non_torch}GiB; PyTorch activation peak memory takes {activation}GiB; the rest of the memory reserved "
            f"for KV Cache is {kv}GiB.\n")


def _v0_tp2(worker_kv, driver_kv):
    """A TP-2 V0 start-up as vLLM 0.8 prints it (vllm/worker/worker.py:267): the worker's lines, then the
    driver's, which then prints the blocks of the smaller; the worker's budget line is not in the excerpt."""
    budget = ("INFO 05-02 09:12:40 [worker.py:267] the current vLLM instance can use total_gpu_memory (79.22GiB) x "
              "gpu_memory_utilization (0.90) = 71.30GiB\n")
    blocks = round(min(worker_kv, driver_kv) * 1024)     # 1 MiB blocks
    return (_v0_terms("(VllmWorkerProcess pid=3101) ", 7.5, 0.62, 1.19, worker_kv) + budget
            + _v0_terms("", 7.5, 0.85, 1.26, driver_kv) + f"INFO 05-02 09:12:40 [executor_base.py:111] # cuda "
            f"blocks: {blocks}, # CPU blocks: 2048\n")


def test_ranks_of_one_v0_start_up_are_one_start_up_with_the_smallest_ranks_terms():
    """vLLM sizes by the rank with the least KV memory: its terms, not one rank's terms with another's KV figure
    (the worker's 1.19 GiB activation beside the driver's KV bytes rebuilt a KV figure no rank had)."""
    (log,) = parse_startups(_v0_tp2(61.91, 61.61), "tp2.log")
    assert log.ranks == 2 and _gib(log, "total") == 79.22
    assert (_gib(log, "kv_bytes"), _gib(log, "non_torch"), _gib(log, "activation")) == (61.61, 0.85, 1.26)
    (log,) = parse_startups(_v0_tp2(61.41, 61.61), "tp2.log")     # the worker's KV the smaller: its terms
    assert (_gib(log, "kv_bytes"), _gib(log, "non_torch"), _gib(log, "activation")) == (61.41, 0.62, 1.19)
    assert _gib(log, "total") == 79.22 and log.get("activation").line_no == 1   # the total only the driver printed


def test_pipeline_stages_with_their_own_terms_are_one_start_up():
    """PP 2: each stage holds other layers, so its report states other weights; '(Worker_PPn_TPm pid=N)' names it."""
    stage = lambda name, pid, consumed, kv: (REPORT_CONSUMED.replace("(EngineCore_0 pid=4120)", f"({name} pid={pid})")
                                             .replace("15.14 GiB for consumed", f"{consumed} GiB for consumed")
                                             .replace("in use is 54.97", f"in use is {kv}") + "\n")
    (log,) = parse_startups(stage("Worker_PP0_TP0", 811, 17.2, 52.9) + stage("Worker_PP1_TP0", 812, 15.14, 54.97),
                            "pp.log")
    assert log.ranks == 2 and (_gib(log, "kv_bytes"), _gib(log, "weights_non_torch")) == (52.9, 17.2)


# --- held-out set 2 (heldout2/, frozen in commit 3d6414a before any prediction) -------------------------------------
# Its files match their SHA-256 manifest and source notes, benchmarks/engine_logs_heldout.py's CASES2 names exactly
# those logs, and every log parses into start-ups that state a KV figure, except the one the reader does not know
# yet (named). The prediction errors are measured by `python benchmarks/engine_logs_heldout.py --set 2`, not
# asserted here: the set measures the engine models and must not become a target they are fitted to.

import hashlib  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from rooflab.engines.logs import read_startups  # noqa: E402

HELDOUT2 = DATA / "heldout2"
HELDOUT2_LOGS = sorted(p.name for p in HELDOUT2.glob("*.log"))
#: Logs the reader cannot read yet, with why (a reader change is not this set's to make).


def _heldout_bench():
    name = "engine_logs_heldout"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).resolve().parents[2] / "benchmarks" / "engine_logs_heldout.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module        # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_heldout2_manifest_lists_every_log_and_each_hash_matches():
    manifest = {}
    for line in (HELDOUT2 / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        manifest[name.lstrip("*")] = digest
    assert sorted(manifest) == HELDOUT2_LOGS and len(HELDOUT2_LOGS) == 21
    for name, digest in manifest.items():
        assert hashlib.sha256((HELDOUT2 / name).read_bytes()).hexdigest() == digest, name


def test_heldout2_each_log_names_its_source_and_the_sources_table_lists_it():
    table = (HELDOUT2 / "SOURCES.md").read_text()
    for name in HELDOUT2_LOGS:
        first = (HELDOUT2 / name).read_text().splitlines()[0]
        assert first.startswith("# source: https://github.com/"), name
        assert f"`{name}`" in table, name


def test_heldout2_cases_name_exactly_the_logs_of_the_set():
    heldout = _heldout_bench()
    assert sorted(c.log for c in heldout.CASES2) == HELDOUT2_LOGS
    assert heldout.SETS["2"][0] == HELDOUT2


@pytest.mark.parametrize("name", sorted(HELDOUT2_LOGS))
def test_heldout2_every_log_parses_into_startups_that_state_a_kv_figure(name):
    startups = list(read_startups(HELDOUT2 / name))
    assert startups
    for log in startups:
        assert any(log.value(k) is not None for k in ("kv_tokens", "gpu_blocks", "kv_bytes", "estimated_max_len"))



# --- held-out set 3 (heldout3/, frozen in commit d374749 before any prediction) -------------------------------------
# The same checks as set 2's: the files match their manifest and source notes, CASES3 names exactly those logs, and
# every log parses into start-ups that state a KV figure. The errors are measured by
# `python benchmarks/engine_logs_heldout.py --set 3`, not asserted here.

HELDOUT3 = DATA / "heldout3"
HELDOUT3_LOGS = sorted(p.name for p in HELDOUT3.glob("*.log"))


def test_heldout3_manifest_lists_every_log_and_each_hash_matches():
    manifest = {}
    for line in (HELDOUT3 / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        manifest[name.lstrip("*")] = digest
    assert sorted(manifest) == HELDOUT3_LOGS and len(HELDOUT3_LOGS) == 18
    for name, digest in manifest.items():
        assert hashlib.sha256((HELDOUT3 / name).read_bytes()).hexdigest() == digest, name


def test_heldout3_each_log_names_its_source_and_the_sources_table_lists_it():
    table = (HELDOUT3 / "SOURCES.md").read_text()
    for name in HELDOUT3_LOGS:
        first = (HELDOUT3 / name).read_text().splitlines()[0]
        assert first.startswith("# source: https://github.com/"), name
        assert f"`{name}`" in table, name


def test_heldout3_cases_name_exactly_the_logs_of_the_set():
    heldout = _heldout_bench()
    assert sorted(c.log for c in heldout.CASES3) == HELDOUT3_LOGS
    assert heldout.SETS["3"][0] == HELDOUT3


@pytest.mark.parametrize("name", HELDOUT3_LOGS)
def test_heldout3_every_log_parses_into_startups_that_state_a_kv_figure(name):
    startups = list(read_startups(HELDOUT3 / name))
    assert startups
    for log in startups:
        assert any(log.value(k) is not None for k in ("kv_tokens", "gpu_blocks", "kv_bytes", "estimated_max_len"))


#: The dennislee22/vLLM-benchmarking logs of set 3 print a `non-default args` dict a terminal wrapped at 140 columns
#: in four of five Qwen2-7B files (heldout3/SOURCES.md "Findings of the reader"): read from the log alone, each
#: states the TP size, utilisation and max model len its post states (CASES3; TP 1 where neither states one).
_DENNISLEE22 = [c for c in _heldout_bench().CASES3 if "dennislee22" in (HELDOUT3 / c.log).read_text().splitlines()[0]]


@pytest.mark.parametrize("case", _DENNISLEE22, ids=lambda c: c.log)
def test_heldout3_wrapped_args_state_the_posts_settings_from_the_log_alone(case):
    (log,) = read_startups(HELDOUT3 / case.log)
    read = {key: log.value(key) for key in ("tensor_parallel", "utilization", "max_model_len")}
    stated = {"tensor_parallel": case.options.get("tensor_parallel", 1), "utilization": case.options["utilization"],
              "max_model_len": case.options["max_model_len"]}
    assert {**read, "tensor_parallel": read["tensor_parallel"] or 1} == stated and len(_DENNISLEE22) == 6


# --- held-out set 4 (heldout4/, frozen before any prediction; heldout4/SOURCES.md names the commit) -----------------
# The same checks as set 3's: the files match their manifest and source notes, CASES4 names exactly those logs, its
# one stored config.json is the published file (its SHA-256), and every log parses into start-ups that state a KV
# figure. The errors are measured by `python benchmarks/engine_logs_heldout.py --set 4`, not asserted here.

HELDOUT4 = DATA / "heldout4"
HELDOUT4_LOGS = sorted(p.name for p in HELDOUT4.glob("*.log"))
#: heldout4/models/qwen3-coder-30b-a3b-instruct/SOURCE.md: the mirror's bytes at the commit it names.
CODER_CONFIG_SHA256 = "cf67dc4f8f8891573b6207d33f00d3204dcdb7114222f96b2dd7e93da7c7e998"


def test_heldout4_manifest_lists_every_log_and_each_hash_matches():
    manifest = {}
    for line in (HELDOUT4 / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        manifest[name.lstrip("*")] = digest
    assert sorted(manifest) == HELDOUT4_LOGS and len(HELDOUT4_LOGS) == 8
    for name, digest in manifest.items():
        assert hashlib.sha256((HELDOUT4 / name).read_bytes()).hexdigest() == digest, name


def test_heldout4_each_log_names_its_source_and_the_sources_table_lists_it():
    table = (HELDOUT4 / "SOURCES.md").read_text()
    for name in HELDOUT4_LOGS:
        first = (HELDOUT4 / name).read_text().splitlines()[0]
        assert first.startswith("# source: https://github.com/"), name
        assert f"`{name}`" in table, name


def test_heldout4_cases_name_exactly_the_logs_of_the_set_and_the_stored_config_is_the_published_one():
    heldout = _heldout_bench()
    assert sorted(c.log for c in heldout.CASES4) == HELDOUT4_LOGS
    assert heldout.SETS["4"][0] == HELDOUT4
    config = Path(heldout.CODER_CONFIG)
    assert config.parent.parent == HELDOUT4 / "models"
    assert hashlib.sha256(config.read_bytes()).hexdigest() == CODER_CONFIG_SHA256


@pytest.mark.parametrize("name", HELDOUT4_LOGS)
def test_heldout4_every_log_parses_into_startups_that_state_a_kv_figure(name):
    startups = list(read_startups(HELDOUT4 / name))
    assert startups
    for log in startups:
        assert any(log.value(k) is not None for k in ("kv_tokens", "gpu_blocks", "kv_bytes", "estimated_max_len"))


# --- held-out set 5 (heldout5/, frozen in commit 28407ab before any prediction, replay or parse) --------------------
# The same checks as set 4's: the files match their manifest and source notes, CASES5 names exactly those logs, and
# every log parses into start-ups that state a KV figure. The errors are measured by
# `python benchmarks/engine_logs_heldout.py --set 5`, not asserted here.

HELDOUT5 = DATA / "heldout5"
HELDOUT5_LOGS = sorted(p.name for p in HELDOUT5.glob("*.log"))


def test_heldout5_manifest_lists_every_log_and_each_hash_matches():
    manifest = {}
    for line in (HELDOUT5 / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        manifest[name.lstrip("*")] = digest
    assert sorted(manifest) == HELDOUT5_LOGS and len(HELDOUT5_LOGS) == 17
    for name, digest in manifest.items():
        assert hashlib.sha256((HELDOUT5 / name).read_bytes()).hexdigest() == digest, name


def test_heldout5_each_log_names_its_source_and_the_sources_table_lists_it():
    table = (HELDOUT5 / "SOURCES.md").read_text()
    for name in HELDOUT5_LOGS:
        first = (HELDOUT5 / name).read_text().splitlines()[0]
        assert first.startswith("# source: https://github.com/"), name
        assert f"`{name}`" in table, name


def test_heldout5_cases_name_exactly_the_logs_of_the_set():
    heldout = _heldout_bench()
    assert sorted(c.log for c in heldout.CASES5) == HELDOUT5_LOGS
    assert heldout.SETS["5"][0] == HELDOUT5


@pytest.mark.parametrize("name", HELDOUT5_LOGS)
def test_heldout5_every_log_parses_into_startups_that_state_a_kv_figure(name):
    startups = list(read_startups(HELDOUT5 / name))
    assert startups
    for log in startups:
        assert any(log.value(k) is not None for k in ("kv_tokens", "gpu_blocks", "kv_bytes", "estimated_max_len"))

# --- vLLM V1's per-worker KV lines after one 'Initializing a V1 LLM engine' line: one start-up's ranks ----------------

from rooflab.engines.logs import parse_startups, read_startups  # noqa: E402



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


# --- vLLM V1's concurrency line alone (an excerpt that keeps only it) --------------------------------------------

_CONCURRENCY = "INFO 09-08 17:34:28 [kv_cache_utils.py:1017] Maximum concurrency for 32,768 tokens per request: 5.22x\n"


def test_concurrency_line_alone_is_refused_without_a_version():
    """V1 prints blocks / blocks a request holds, V0 tokens / max_model_len: the line alone says neither."""
    with pytest.raises(InputError, match=r"only KV-cache figure is vLLM's concurrency line .*no engine version was "
                                         r"given.*--engine-version v1"):
        parse_log(_CONCURRENCY)


@pytest.mark.parametrize("accounting", [Accounting.vllm_v0, Accounting.sglang_v0_4])
def test_concurrency_line_alone_is_refused_for_another_accounting(accounting):
    with pytest.raises(InputError, match=f"the engine version is {accounting}"):
        parse_log(_CONCURRENCY, accounting=accounting)


@pytest.mark.parametrize("accounting", [Accounting.vllm_v1, Accounting.vllm_v0_8])
def test_concurrency_line_alone_under_v1(accounting):
    """32,768 x 5.22 = 171,048.96 tokens; "%.2fx" (vllm v0.10.0 v1/core/kv_cache_utils.py:837-838) puts X within
    0.005, the figure within 0.005 x 32,768 = 164 tokens (0.10% of it)."""
    log = parse_log(_CONCURRENCY, accounting=accounting)
    assert log.accounting is accounting
    assert log.value("concurrency_tokens") == pytest.approx(32768 * 5.22)
    assert log.value("max_model_len") == 32768 and log.value("concurrency") == 5.22
    located = ("the line's location [kv_cache_utils.py:1017] is where vLLM v0.10.1.1 prints it, of the 15 releases "
               "whose kv_cache_utils.py was read")
    if accounting is Accounting.vllm_v0_8:
        located += "; v0.10.1.1 is not vllm-v0.8's release range but vllm-v1's"
    assert log.notes == ("KV figure from the concurrency line alone: 32,768 x 5.22 = 171,049 tokens of 32,768-token "
                         "requests, within 164 tokens (0.10%: V1 prints X to two decimals)", located)


# Each release's logger call, read from its wheel's vllm/v1/core/kv_cache_utils.py (the lines as the wheels hold
# them): v0.8.5 :637, v0.9.1 :719 and :874, v0.10.1.1 :853 and :1017, v0.11.2 :1234 (the call; its format string at
# :1235, and set 8's v0.11.2 NeMo RL log prints :1234), v0.29.0 :2032 (one line for tokens and concurrency).
@pytest.mark.parametrize("location, release", [(637, (0, 8, 5)), (719, (0, 9, 1)), (874, (0, 9, 1)),
                                               (853, (0, 10, 1, 1)), (1017, (0, 10, 1, 1)), (1234, (0, 11, 2)),
                                               (2032, (0, 29, 0))])
def test_the_concurrency_lines_location_names_the_release_that_prints_it(location, release):
    assert releases_printing_at(f"INFO 07-30 11:56:04 [kv_cache_utils.py:{location}] Maximum concurrency") == (release,)


@pytest.mark.parametrize("prefix", ["", "INFO [kv_cache_utils.py:1016] ", "INFO [gpu_worker.py:1017] "])
def test_a_location_no_release_read_prints_it_at_names_none(prefix):
    text = prefix + "Maximum concurrency for 32,768 tokens per request: 5.22x"
    assert releases_printing_at(text) == ()
    assert parse_log(text + "\n", accounting=Accounting.vllm_v1).notes[1:] == ()


@pytest.mark.parametrize("folder", ["heldout6", "heldout7", "heldout8", "heldout9"])
def test_each_logs_printed_release_is_the_one_its_concurrency_lines_location_names(folder):
    """The table against the logs of sets 6-9 that print their release: where that release is one read, the
    location of the log's concurrency line names it and no other."""
    checked = 0
    for path in sorted((DATA / folder).glob("*.log")):
        text = path.read_text(errors="replace")
        printed = re.search(r"V1 LLM engine \(v(\d+(?:\.\d+)+)\)", text)
        release = printed and tuple(int(n) for n in printed.group(1).split("."))
        if release not in V1_CONCURRENCY_CALLS:
            continue
        line = next(x for x in text.splitlines() if "Maximum concurrency for" in x)
        assert releases_printing_at(line) == (release,), path.name
        checked += 1
    assert checked


def test_ray_serves_deepseek_r1_line_is_v0_8_5s_whose_accounting_is_v0_8():
    """Set 8's Ray excerpt (docs.ray.io 'Deploy a large-sized LLM'): its case says V1 without a release; the line's
    location is v0.8.5's (vllm v0.8.5 vllm/v1/core/kv_cache_utils.py:637, _get_kv_cache_config_uniform_type), a
    release of vllm-v0.8 (V1 v0.8.0 - v0.9.0.1), not vllm-v1."""
    text = "INFO 07-30 11:56:04 [kv_cache_utils.py:637] Maximum concurrency for 32,768 tokens per request: 29.06x\n"
    assert parse_log(text, accounting=Accounting.vllm_v1).notes[1] == (
        "the line's location [kv_cache_utils.py:637] is where vLLM v0.8.5 prints it, of the 15 releases whose "
        "kv_cache_utils.py was read; v0.8.5 is not vllm-v1's release range but vllm-v0.8's")
    assert parse_log(text, accounting=Accounting.vllm_v0_8).notes[1:] == (
        "the line's location [kv_cache_utils.py:637] is where vLLM v0.8.5 prints it, of the 15 releases whose "
        "kv_cache_utils.py was read",)


def test_concurrency_line_beside_a_kv_figure_is_not_reread():
    """With 'GPU KV cache size' printed, the version changes nothing: the tokens line is the figure."""
    text = "INFO [kv_cache_utils.py:1013] GPU KV cache size: 171,056 tokens\n" + _CONCURRENCY
    assert parse_log(text, accounting=Accounting.vllm_v1).get("concurrency_tokens") is None
    assert parse_log(text).value("kv_tokens") == 171056

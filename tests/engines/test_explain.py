"""Tests of rooflab/engines/explain.py: engine capacity against the public start-up logs.

Where a log prints every term the KV tokens are rebuilt within 1%, estimates within 5% but for the known
misses, the table says what it met, an anchored log carries the unattributed rest, and each log format
(vLLM v0 and v1, SGLang v0.5) rebuilds its blocks or tokens. The logs and their settings are in
tests/data/engine_logs (SOURCES.md, cases.yaml; benchmarks/engine_capacity.py evaluates them for RESULTS.md).
"""

from __future__ import annotations


import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import Accounting, Engine, EngineSettings
from rooflab.engines.explain import explain_log
from rooflab.engines.logs import parse_log, read_log
from rooflab.errors import InputError
from rooflab.units import GiB
from support import ENGINE_LOGS, engine_capacity_bench


DATA = ENGINE_LOGS
bench = engine_capacity_bench()
CASES = bench.load_cases()
ROWS = {r.case: r for r in (bench.evaluate(c) for c in CASES)}

#: Cases whose estimate misses the 5% target, and why (cases.yaml says more; RESULTS.md has the table).
KNOWN_MISSES = {
    "vllm-llama-2-70b-a100-80gb-tp4.log",                # PR #2031 at TP 4: 12.9 GiB a GPU not modelled
    "vllm-llama-3.1-8b-instruct-l40s-tp1.log",           # a V1 v0.8.x log; 4.3 GiB a GPU unattributed
    "vllm-qwen3-235b-a22b-fp8-h100-tp4.log",             # LMCache connector's buffers, 3.15 GiB a GPU
    "sglang-deepseek-r1-distill-qwen-7b-rtx3090-tp1.log",  # 0.82 GiB in use before start on a desktop card
}


@pytest.mark.parametrize("case", [c for c in CASES if c.get("log")], ids=lambda c: c["log"])
def test_logs_reproduce_within_one_percent(case):
    """Where a log prints every term, the KV tokens rebuilt from them are within 1% of the logged ones."""
    row = ROWS[case["log"]]
    if row.from_log_error is not None:
        assert abs(row.from_log_error) <= bench.LOG_TARGET, row


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.get("log") or c["source"])
def test_estimates_within_five_percent_except_the_known_misses(case):
    row = ROWS[case.get("log") or f"v0.19.0: {case['source']}"]
    missed = abs(row.estimate_error) > bench.ESTIMATE_TARGET
    assert missed == (row.case in KNOWN_MISSES), row


def test_the_table_says_what_it_met():
    table = bench.markdown(list(ROWS.values()))
    assert f"estimate within 5%: {len(ROWS) - len(KNOWN_MISSES)} of {len(ROWS)} cases" in table
    assert "from the log within 1%: 7 of 7 logs that print every term" in table


def test_anchored_log_carries_the_unattributed_rest():
    """vllm#21348 prints only the KV bytes and tokens: the rest is modelled, the remainder unattributed."""
    case = next(c for c in CASES if c.get("log") == "vllm-qwen3-235b-a22b-fp8-h100-tp4.log")
    x = explain_log(read_log(DATA / case["log"]), load_model(DATA / case["model"]), load_gpu("h100-sxm"),
                    bench.settings(case))
    assert x.anchored and x.reproduced.term("unattributed").bytes > 2 * GiB
    assert x.reproduced.kv_cache_bytes == round(8.11 * GiB)
    assert x.check("kv_cache_tokens").rel_error == pytest.approx(0.0114, abs=0.001)


# --- formats (synthetic lines in each engine's format) --------------------------------------------------------

V065 = """INFO 01-01 00:00:00 worker.py:241] Memory profiling takes 1.00 seconds
INFO 01-01 00:00:00 worker.py:241] the current vLLM instance can use total_gpu_memory (79.22GiB) x gpu_memory_utilization (0.90) = 71.30GiB
INFO 01-01 00:00:00 worker.py:241] model weights take 14.96GiB; non_torch_memory takes 0.20GiB; PyTorch activation peak memory takes 1.29GiB; the rest of the memory reserved for KV Cache is 54.85GiB.
INFO 01-01 00:00:01 gpu_executor.py:113] # GPU blocks: 28083, # CPU blocks: 2048
INFO 01-01 00:00:01 gpu_executor.py:117] Maximum concurrency for 8192 tokens per request: 54.85x
"""
V1_DEBUG = """(EngineCore pid=1) DEBUG [gpu_worker.py:284] worker init memory snapshot: torch_peak=0.0GiB, free_memory=78.68GiB, total_memory=79.19GiB, cuda_memory=0.51GiB
(EngineCore pid=1) INFO [gpu_model_runner.py:4820] Model loading took 14.96 GiB memory and 10.0 seconds
(EngineCore pid=1) DEBUG [gpu_worker.py:424] Initial free memory: 78.68 GiB; Requested memory: 0.900000 (util), 71.27 GiB
(EngineCore pid=1) DEBUG [gpu_worker.py:435] Memory profiling takes 10.00 seconds. Total non KV cache memory: 17.11GiB; torch peak memory increase: 1.90GiB; non-torch forward increase memory: 0.25GiB; weights memory: 14.96GiB.
(EngineCore pid=1) INFO [gpu_worker.py:436] Available KV cache memory: 54.16 GiB
(EngineCore pid=1) INFO [kv_cache_utils.py:1319] GPU KV cache size: 443,680 tokens, Maximum concurrency for 8,192 tokens per request: 54.16x
"""
SGLANG_V05 = """[TP0] Load weight begin. avail mem=78.60 GB
[TP0] Load weight end. elapsed=5.00 s, type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.60 GB, mem usage=15.00 GB.
[TP0] KV Cache is allocated. #tokens: 400000, K size: 24.41 GB, V size: 24.41 GB
"""


def test_v0_one_line_format_rebuilds_its_blocks():
    log = parse_log(V065, "v065.log")
    assert log.accounting is Accounting.vllm_v0
    x = explain_log(log, load_model("llama-3-8b"), load_gpu("h100-sxm"), EngineSettings(Accounting.vllm_v0))
    assert not x.anchored
    assert abs(x.check("num_blocks").reproduced - 28083) <= 5
    assert x.check("max_concurrency").rel_error == pytest.approx(0, abs=0.002)


def test_v1_debug_lines_rebuild_the_tokens():
    log = parse_log(V1_DEBUG, "v1.log")
    assert log.accounting is Accounting.vllm_v1
    assert log.value("max_model_len") == 8192 and log.value("kv_tokens") == 443680
    x = explain_log(log, load_model("llama-3-8b"), load_gpu("h100-sxm"), EngineSettings(Accounting.vllm_v1))
    assert not x.anchored and x.reproduced.term("cuda_visible_total").bytes == round(79.19 * GiB)
    assert abs(x.check("kv_cache_tokens").rel_error) < 0.001
    assert x.reproduced.term("activation_peak").source.startswith("torch peak memory increase: line 4:")


def test_sglang_v05_format():
    log = parse_log(SGLANG_V05, "s.log")
    assert log.accounting is Accounting.sglang_v0_5
    x = explain_log(log, load_model("llama-3-8b"), load_gpu("h100-sxm"),
                    EngineSettings(Accounting.sglang_v0_5, utilization=0.88))
    assert x.reproduced.term("weights").bytes == round(15.00 * GiB)
    assert x.check("kv_cache_tokens").logged == 400000


def test_a_replay_loads_the_model_as_the_prediction_does():
    """A float32 checkpoint is served in bf16 on an H100 (ModelSpec.as_loaded, vLLM's and SGLang's --dtype auto):
    the replay rebuilds the same figures as for the bf16 spec, as engine_capacity predicts them (one path). It
    replayed at fp32 KV bytes a token, half the tokens (set 7's Qwen2.5-0.5B config, a float32 re-save: -49.9%,
    found in its evaluation)."""
    import dataclasses

    from rooflab.units import DType

    log = parse_log(SGLANG_V05, "s.log")
    settings = EngineSettings(Accounting.sglang_v0_5, utilization=0.88)
    bf16 = load_model("llama-3-8b")
    fp32 = dataclasses.replace(bf16, weight_dtype=DType.fp32)
    gpu = load_gpu("h100-sxm")
    a, b = explain_log(log, bf16, gpu, settings), explain_log(log, fp32, gpu, settings)
    assert b.reproduced.kv_cache_tokens == a.reproduced.kv_cache_tokens
    assert b.reproduced.term("kv_cache").bytes == a.reproduced.term("kv_cache").bytes


#: SGLang v0.5 with a linear-attention model: the state pool's line (python/sglang/srt/mem_cache/memory_pool.py,
#: MambaPool: "Mamba Cache is allocated. max_mamba_cache_size: N, conv_state size: X GB, ssm_state size: Y GB"),
#: then the KV pool and the scheduler's line. SYNTHETIC: no public log of this model prints them; the lines are
#: written in the engine's format to test the parser and the replay, and max_running_requests is left out of the
#: scheduler line so that no figure of rooflab's own rule is read back (the test computes it by hand instead).
SGLANG_HYBRID = """[TP0] Mamba Cache is allocated. max_mamba_cache_size: 2290, conv_state size: 0.99 GB, ssm_state size: 40.25 GB
[TP0] KV Cache is allocated. #tokens: 4000000, K size: 22.89 GB, V size: 22.89 GB
[TP0] max_total_num_tokens=4000000, chunked_prefill_size=8192, max_prefill_tokens=16384, context_len=32768
"""


def test_sglang_hybrid_replay_keeps_the_logged_state_pool():
    """Anchored on the logged tokens, with the logged 2,290 state slots of Qwen3-Next at TP 4 (36 layers x
    (2,048 x 3 x 2 + 8 x 128 x 128 x 4) bytes each): the tokens rebuild exactly."""
    log = parse_log(SGLANG_HYBRID, "hybrid.log")
    assert log.value("state_slots") == 2290
    x = explain_log(log, load_model("qwen3-next-80b-a3b"), load_gpu("h200-sxm"),
                    EngineSettings(Accounting.sglang_v0_5, tensor_parallel=4), given=frozenset({"tensor_parallel"}))
    assert x.anchored and x.reproduced.state_slots == 2290
    assert x.reproduced.term("mamba_state").bytes == 2290 * 36 * (2048 * 3 * 2 + 8 * 128 * 128 * 4)
    assert x.check("kv_cache_tokens").rel_error == 0
    # max_running_requests by hand, SGLang's rule (sgl-project/sglang python/sglang/srt/model_executor/
    # model_runner_kv_cache_mixin.py, _resolve_max_num_reqs, with --max-running-requests unset and the radix cache
    # on): estimated = max(min(int(tokens / context_len x 512), 4096), 2048); max_num_reqs = min(estimated,
    # tokens // 2); linear-attention layers cap it at max_mamba_cache_size // MAMBA_CACHE_SIZE_MAX_RUNNING_
    # REQUESTS_RATIO (3, same file); the scheduler prints the req_to_token pool's max_num_reqs + 1 rows (the two
    # public v0.4 logs print 2049 = 2048 + 1, test_sglang_logs_max_running_requests_rebuilds_exactly).
    tokens, context_len, slots = 4_000_000, 32_768, 2290
    estimated = max(min(int(tokens / context_len * 512), 4096), 2048)       # int(62,500.0) -> 4096
    max_num_reqs = min(min(estimated, tokens // 2), slots // 3)             # min(4096, 2,000,000, 763) = 763
    assert max_num_reqs + 1 == 764
    assert x.reproduced.max_running_requests == max_num_reqs + 1


def test_what_if_memory_in_use_costs_f_of_it_on_sglang():
    """sglang#4760's Llama-3.1-8B log (f = 0.88): 10 GiB held by other processes cost 0.88 x 10 GiB of the pool,
    72,089 tokens of 128 KiB (sglang.py: pool = f x free - weights)."""
    from rooflab.engines.request import parse_what_if

    case = "sglang-llama-3.1-8b-instruct-80gb-tp1.log"
    x = explain_log(read_log(DATA / case), load_model(DATA / "models" / "llama-3.1-8b-instruct.yaml"),
                    load_gpu("h100-sxm"), EngineSettings(Accounting.sglang_v0_4),
                    parse_what_if(["memory-in-use=10GiB"], Engine.sglang))
    assert x.reproduced.kv_cache_tokens - x.what_if.kv_cache_tokens == int(0.88 * 10 * GiB) // (128 * 1024)


@pytest.mark.parametrize("case", [c for c in CASES if c.get("log") in (
    "sglang-llama-3.1-8b-instruct-80gb-tp1.log", "sglang-deepseek-r1-distill-qwen-7b-rtx3090-tp1.log")],
    ids=lambda c: c["log"])
def test_sglang_logs_max_running_requests_rebuilds_exactly(case):
    """The two v0.4 logs that print max_running_requests=2049 at context_len 131072: the req_to_token pool's
    2,048 rows + 1 (sglang.py), rebuilt from the tokens, not read."""
    x = explain_log(read_log(DATA / case["log"]), load_model(DATA / case["model"]),
                    load_gpu(case["gpu"] if "/" not in case["gpu"] else DATA / case["gpu"]), bench.settings(case))
    assert x.check("max_running_requests").logged == 2049
    assert x.check("max_running_requests").rel_error == 0


@pytest.mark.parametrize("position, word", [(0, "log"), (1, "model"), (2, "gpu"), (3, "settings"), (4, "changes")])
def test_explain_log_refuses_arguments_of_the_wrong_kind(position, word):
    """Issue 24 round 2 D9's class: explain_log(None, ...) ended in AttributeError."""
    case = "sglang-llama-3.1-8b-instruct-80gb-tp1.log"
    args = [read_log(DATA / case), load_model(DATA / "models" / "llama-3.1-8b-instruct.yaml"), load_gpu("h100-sxm"),
            EngineSettings(Accounting.sglang_v0_4), None]
    args[position] = ["x"] if position == 4 else None
    with pytest.raises(InputError, match=f"^{word} must be"):
        explain_log(*args)

# --- the release a start-up log states (logrules 'release'): the replay's terms and accounting ------------------------

from pathlib import Path  # noqa: E402
from rooflab.engines import parse_accounting  # noqa: E402
from rooflab.engines.logrules import settings_of  # noqa: E402
from rooflab.engines.logs import read_log, read_startups  # noqa: E402
from rooflab.engines.settings import EngineSettings  # noqa: E402

LOGS = Path(__file__).resolve().parents[1] / "data" / "engine_logs"
QWEN3_30B_H200 = LOGS / "heldout5" / "vllm-v1-qwen3-30b-a3b-2507-h200-util050-maxlen16000.log"


@pytest.mark.parametrize("line, release", [
    ("INFO 02-03 09:11:58 [core.py:96] Initializing a V1 LLM engine (v0.15.0) with config: model='m'", "0.15.0"),
    ("INFO 05-01 [llm_engine.py:161] Initializing an LLM engine (v0.4.1) with config: model='m'", "0.4.1"),
    ("Initializing a V1 LLM engine (v0.8.0rc3.dev5+g5eeabc2a.d20250318) with config: model='m'",
     "0.8.0rc3.dev5+g5eeabc2a.d20250318"),
    ("INFO vLLM API server version 0.10.1.1", None)])
def test_the_engine_line_states_the_release(line, release):
    assert settings_of(line).get("release") == release


def test_the_logged_release_reaches_the_modelled_activation():
    """Set 5's Qwen3-30B-A3B H200 log (in-sample) states v0.15.0: its unprinted activation peak is then
    tests/engines/test_profile.py's hand figure for v0.15.0, 6,516,113,408 B (the full sort, the MoE workspaces)."""
    x = explain_log(read_log(QWEN3_30B_H200), load_model("qwen3-30b-a3b"), load_gpu("h200"),
                    EngineSettings(parse_accounting("vllm", None)))
    assert x.reproduced.term("activation_peak").bytes == 6_516_113_408
    assert x.reproduced.releases == "vLLM V1 v0.9.1 - v0.29.x at v0.15.0"
    assert x.settings_taken[0].startswith("release v0.15.0: from the log (line 6:")


def test_a_contradicting_engine_version_is_refused():
    with pytest.raises(InputError, match=r"--engine-version 0.19.0 contradicts the log's v0.15.0 \(line 6:"):
        explain_log(read_log(QWEN3_30B_H200), load_model("qwen3-30b-a3b"), load_gpu("h200"),
                    EngineSettings(parse_accounting("vllm", "0.19.0"), release=(0, 19, 0)),
                    given=frozenset({"accounting"}))


def test_a_release_past_v0_20_is_taken_from_the_log():
    """Set 4's Qwen3-8B T4 TP 2 log states v0.22.0, inside vllm-v1's range since it reached v0.29."""
    log = read_log(LOGS / "heldout4" / "vllm-v1-qwen3-8b-t4x2-tp2-maxlen8192.log")
    x = explain_log(log, load_model("qwen3-8b"), load_gpu("t4"), EngineSettings(parse_accounting("vllm", None)))
    assert x.reproduced.releases == "vLLM V1 v0.9.1 - v0.29.x at v0.22.0"
    assert "release v0.22.0: from the log" in x.settings_taken[0]
    assert "outside" not in x.settings_taken[0]


@pytest.mark.parametrize("log, accounting", [
    # the release picks the accounting among the generation the formats show (vocab.RELEASE_RANGE)
    ("heldout2/vllm-v0-llama-3-8b-rtx3090-three-startups.log", "vllm-v0.2"),     # V0 v0.4.1: before PR #9352
    ("heldout5/vllm-v0-0.6.3.post1-qwen2.5-7b-rtx4090-wsl-eager-util095.log", "vllm-v0.2"),
    ("heldout5/vllm-v0-0.8.1-qwen2.5-7b-a10g-maxlen6600.log", "vllm-v0"),         # V0 under v0.8.1
    ("heldout5/vllm-v1-0.8.4-deepseek-r1-h800x16-tp16-ep-ray-maxlen32768.log", "vllm-v0.8"),   # V1 v0.8.4
    ("heldout5/vllm-v1-qwen3-30b-a3b-2507-h200-util050-maxlen16000.log", "vllm-v1"),
    ("heldout4/vllm-v1-qwen3-8b-t4x2-tp2-maxlen8192.log", "vllm-v1")])             # v0.22.0: past, the formats'
def test_the_logged_release_picks_the_accounting(log, accounting):
    assert {str(s.accounting) for s in read_startups(LOGS / log)} == {accounting}


def test_a_callers_release_picks_the_accounting_where_the_log_states_none():
    """Set 2's Qwen3-30B-A3B 4x A10 log (V1 v0.8.5 by its post; no engine line): its formats read as vllm-v1; with
    EngineSettings.release 0.8.5 the replay follows vllm-v0.8, the accounting that release used."""
    log = read_log(LOGS / "heldout2" / "vllm-v1-qwen3-30b-a3b-a10x4-tp4.log")
    assert log.setting("release") is None and str(log.accounting) == "vllm-v1"
    model, gpu = load_model("qwen3-30b-a3b"), load_gpu("a10")
    settings = EngineSettings(parse_accounting("vllm", "v0.8"), tensor_parallel=4, max_model_len=8192, release="0.8.5")
    assert explain_log(log, model, gpu, settings).reproduced.accounting == "vllm-v0.8"
    plain = EngineSettings(parse_accounting("vllm", "v0.8"), tensor_parallel=4, max_model_len=8192)
    assert explain_log(log, model, gpu, plain).reproduced.accounting == "vllm-v1"


# --- a version the log contradicts (hostile session12 D38) ---------------------------------------------------------

#: A V1 v0.11.2 log: its line 6 reads 'Initializing a V1 LLM engine (v0.11.2)'.
V0_11_2 = LOGS / "heldout4" / "vllm-v1-llama-3-8b-instruct-h200-maxlen1024.log"


@pytest.mark.parametrize("accounting, release, needle", [
    # a release outside the log's accounting was planned at that release (0.10.1, inside it, was refused)
    ("v0.8", (0, 8, 4), r"^--engine-version 0.8.4 contradicts the log's v0.11.2 \(line 6: .*Initializing a V1 LLM "
                        r"engine \(v0.11.2\)"),
    ("v1", (0, 10, 1), r"^--engine-version 0.10.1 contradicts the log's v0.11.2 \(line 6: "),
    # a label of another accounting than the one the log's release reads as
    ("v0.8", None, r"^--engine-version v0.8 \(vLLM V1 v0.8.0 - v0.9.0.1\) contradicts the log's v0.11.2 \(line 6: .*"
                   r"\), which rooflab reads as vllm-v1; drop the option$"),
    # V0 against a V1 engine line
    ("v0", None, r"^--engine-version v0 \(V0\) contradicts the log's V1 engine \(line 6: .*Initializing a V1 LLM "
                 r"engine \(v0.11.2\)"),
    ("v0", (0, 8, 4), r"^--engine-version 0.8.4 contradicts the log's v0.11.2")])
def test_a_version_other_than_the_logs_is_refused_naming_both(accounting, release, needle):
    """D38: --engine-version 0.8.4 with a V1 v0.11.2 log was planned at v0.8.4 (the log's release was checked only
    where the chosen accounting covered it), and a V0 choice against a V1 engine line was ignored."""
    settings = EngineSettings(parse_accounting("vllm", accounting), release=release)
    with pytest.raises(InputError, match=needle):
        explain_log(read_log(V0_11_2), load_model("llama-3-8b"), load_gpu("h200-sxm"), settings,
                    given=frozenset({"accounting"}))


@pytest.mark.parametrize("accounting, release", [("v1", None), ("v1", (0, 11, 2)), ("v1", "0.11.2.post1")])
def test_the_logs_own_release_or_its_accountings_label_is_taken(accounting, release):
    x = explain_log(read_log(V0_11_2), load_model("llama-3-8b"), load_gpu("h200-sxm"),
                    EngineSettings(parse_accounting("vllm", accounting), release=release),
                    given=frozenset({"accounting"}))
    assert x.reproduced.releases == "vLLM V1 v0.9.1 - v0.29.x at v0.11.2"


def test_a_v0_or_v1_choice_against_the_logs_engine_is_refused():
    """check_generation: --vllm-use-v1 0 against a V1 engine line (request.py calls it), and 1 against V0's
    'Initializing an LLM engine (v0.6.3.post1)'; an SGLang log has no such line."""
    from rooflab.engines.explain import check_generation, log_generation

    with pytest.raises(InputError, match=r"^--vllm-use-v1 0 \(V0\) contradicts the log's V1 engine \(line 6: "):
        check_generation(read_log(V0_11_2), False, "--vllm-use-v1 0")
    check_generation(read_log(V0_11_2), True, "--vllm-use-v1 1")
    v0 = read_log(LOGS / "heldout5" / "vllm-v0-0.6.3.post1-qwen2.5-7b-rtx4090-wsl-eager-util095.log")
    assert log_generation(v0)[0] is False
    with pytest.raises(InputError, match=r"^--vllm-use-v1 1 \(V1\) contradicts the log's V0 engine"):
        check_generation(v0, True, "--vllm-use-v1 1")
    assert log_generation(read_log(LOGS / "heldout5" / "sglang-v0.3.0-qwen2-72b-h100x8-tp8.log")) is None


def test_v1_concurrency_line_alone_anchors_the_replay():
    """Llama-3-8B on an H100, V1, one KV group: X = num_blocks / ceil(2,048 / 16) (vllm v0.10.0
    v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config :743-758), so 10.00x is 1,280 blocks of 16
    tokens, 20,480 tokens."""
    line = "INFO 07-30 11:56:04 [kv_cache_utils.py:637] Maximum concurrency for 2,048 tokens per request: 10.00x\n"
    log = parse_log(line, accounting=Accounting.vllm_v1)
    x = explain_log(log, load_model("llama-3-8b"), load_gpu("h100-sxm"), EngineSettings(Accounting.vllm_v1))
    assert x.anchored
    assert x.reproduced.num_blocks == 1280 and x.reproduced.kv_cache_tokens == 20480
    assert x.check("max_concurrency").logged == 10.0 and x.reproduced.max_concurrency == 10.0


# --- the sampler a vLLM V1 log says ran -------------------------------------------------------------------------------

_V1_T4 = ("INFO 09-28 09:44:43 [core.py:76] Initializing a V1 LLM engine (v0.10.2) with config: model='m', "
          "dtype=torch.float16, max_seq_len=512, tensor_parallel_size=1, kv_cache_dtype=auto\n"
          "{sampler}"
          "INFO 09-28 09:47:45 [gpu_worker.py:298] Available KV cache memory: 6.46 GiB\n"
          "INFO 09-28 09:47:45 [kv_cache_utils.py:864] GPU KV cache size: 52,928 tokens\n")
_NOT_INSTALLED = ("WARNING 09-28 09:44:43 [topk_topp_sampler.py:69] FlashInfer is not available. Falling back to the "
                  "PyTorch-native implementation of top-p & top-k sampling.\n")


def test_a_v1_logs_sampler_line_picks_the_sampler_modelled():
    """Set 8's v0.10.2 T4 log prints 'FlashInfer is not available' (vllm v0.10.2 topk_topp_sampler.py:69): the
    modelled profile sorts, 38 bytes a logit against FlashInfer's 14 where it is installed (EngineSettings'
    default): 192 x 128,256 x 24 bytes more activation peak for Llama-3.1-8B at 192 sequences."""
    model, t4 = load_model("llama-3.1-8b"), load_gpu("t4")
    settings = EngineSettings(Accounting.vllm_v1, max_num_seqs=192, max_num_batched_tokens=2048)
    peaks = {}
    for name, sampler in (("silent", ""), ("not installed", _NOT_INSTALLED)):
        x = explain_log(parse_log(_V1_T4.format(sampler=sampler)), model, t4, settings)
        peaks[name] = x.modelled.term("activation_peak").bytes
    assert peaks["not installed"] - peaks["silent"] == 192 * 128256 * 24
    x = explain_log(parse_log(_V1_T4.format(sampler=_NOT_INSTALLED)), model, t4, settings)
    assert any(t.startswith("sampler the native sort (FlashInfer not installed): from the log (line 2")
               for t in x.settings_taken)


_FLASHINFER = "INFO 09-28 09:44:43 [topk_topp_sampler.py:36] Using FlashInfer for top-p & top-k sampling.\n"


def test_a_sampler_the_options_give_against_the_logs_is_refused():
    """Each way round: FlashInfer said installed against 'FlashInfer is not available', and --no-flashinfer against
    'Using FlashInfer' (vllm v0.10.2 topk_topp_sampler.py; hostile session 16: --no-flashinfer was dropped)."""
    model, t4 = load_model("llama-3.1-8b"), load_gpu("t4")
    with pytest.raises(InputError, match=r"FlashInfer installed \(no --no-flashinfer\) contradicts the log: the "
                                         r"native sort \(FlashInfer not installed\) ran \(line 2"):
        explain_log(parse_log(_V1_T4.format(sampler=_NOT_INSTALLED)), model, t4,
                    EngineSettings(Accounting.vllm_v1, flashinfer_installed=True),
                    given=frozenset({"flashinfer_installed"}))
    with pytest.raises(InputError, match=r"^--no-flashinfer contradicts the log: FlashInfer's top-k / top-p ran "
                                         r"\(line 2: .*Using FlashInfer"):
        explain_log(parse_log(_V1_T4.format(sampler=_FLASHINFER)), model, t4,
                    EngineSettings(Accounting.vllm_v1, flashinfer_installed=False),
                    given=frozenset({"flashinfer_installed"}))


@pytest.mark.parametrize("stated, key", [("'logprobs_mode': 'garbage'", "logprobs_mode"),
                                         ("'kv_cache_dtype': 'garbage'", "kv_cache_dtype"),
                                         ("'limit_mm_per_prompt': {'image': -1}", "limit_mm_per_prompt"),
                                         ("'limit_mm_per_prompt': {'image': 'two'}", "limit_mm_per_prompt"),
                                         ("'limit_mm_per_prompt': {'image': 2', }", "limit_mm_per_prompt")])
def test_a_value_the_log_states_that_rooflab_cannot_read_names_the_log(stated, key):
    """A text setting of the log's arguments that is no name vLLM takes is refused naming the log, its line and
    the setting (as logs.py refuses a figure it cannot read), never as an option nobody typed (hostile session 16:
    'error: --logprobs-mode must be one of ...')."""
    args = f"INFO 09-28 09:44:40 [utils.py:253] non-default args: {{'model': 'm', {stated}}}\n"
    log = parse_log(args + _V1_T4.format(sampler=""), name="engine.log")
    with pytest.raises(InputError, match=rf"^--engine-log engine\.log line 1: {key}") as caught:
        explain_log(log, load_model("llama-3.1-8b"), load_gpu("t4"), EngineSettings(Accounting.vllm_v1))
    assert "garbage" in str(caught.value) or key == "limit_mm_per_prompt"


_GEMMA_V0_11_2 = ("INFO 09-28 09:44:40 [utils.py:253] non-default args: {{'model': 'google/gemma-3-27b-it', "
                  "{stated}}}\n"
                  "INFO 09-28 09:44:43 [core.py:76] Initializing a V1 LLM engine (v0.11.2) with config: "
                  "model='google/gemma-3-27b-it', dtype=torch.bfloat16, max_seq_len=131072, tensor_parallel_size=1, "
                  "kv_cache_dtype=auto\n"
                  "INFO 09-28 09:47:45 [gpu_worker.py:298] Available KV cache memory: 20.00 GiB\n")


@pytest.mark.parametrize("stated, field, value", [("'limit_mm_per_prompt': {'image': 0}", "limit_mm_per_prompt", 0),
                                                  ("'skip_mm_profiling': True", "skip_mm_profiling", True)])
def test_a_logs_multimodal_options_are_the_settings_explained(stated, field, value):
    """vLLM v0.11.2's non-default args (utils.py:253) print --limit-mm-per-prompt '{"image": 0}' as
    'limit_mm_per_prompt': {'image': 0} and --skip-mm-profiling as 'skip_mm_profiling': True: either leaves
    Gemma 3's dummy images out of the profile run (gpu_model_runner.py; profile.py encoder_cache), the same
    activation peak the option gives, and settings_taken names the log's line (hostile session 16: both unread,
    2.69 GiB more activation peak)."""
    import dataclasses

    model, gpu = load_model("gemma-3-27b"), load_gpu("h100-sxm")
    log = parse_log(_GEMMA_V0_11_2.format(stated=stated))
    plain = parse_log(_GEMMA_V0_11_2.format(stated="'seed': 0"))
    settings = EngineSettings(Accounting.vllm_v1)
    read = explain_log(log, model, gpu, settings)
    given = explain_log(plain, model, gpu, dataclasses.replace(settings, **{field: value}))
    unread = explain_log(plain, model, gpu, settings)
    peak = lambda x: x.modelled.term("activation_peak").bytes  # noqa: E731
    assert peak(read) == peak(given) < peak(unread)
    option = "--" + field.replace("_", "-")
    assert any(t.startswith(option) and "from the log (line 1" in t for t in read.settings_taken)
    assert any(t.startswith(option) and "from the options" in t for t in given.settings_taken)
    if field == "limit_mm_per_prompt":   # a modality rooflab does not model is left out (heldout 2, 3: 'audio': 0)
        audio = explain_log(parse_log(_GEMMA_V0_11_2.format(stated="'limit_mm_per_prompt': {'image': 0, 'audio': 0}")),
                            model, gpu, settings)
        assert peak(audio) == peak(read)
    with pytest.raises(InputError, match=rf"{option} .*contradicts the log's"):
        explain_log(log, model, gpu, dataclasses.replace(settings, **{field: not value if field == "skip_mm_profiling"
                                                                        else 5}), given=frozenset({field}))


def test_nemo_rls_logprobs_mode_is_taken_from_its_args():
    """Set 8's NeMo RL Gemma-3 log (v0.11.2): its non-default args' 'processed_logprobs' is the setting explained."""
    from rooflab.engines.vocab import LogprobsMode

    log = read_log(ENGINE_LOGS / "heldout8"
                   / "vllm-v1-0.11.2-gemma-3-27b-it-grpo-b200-util090-maxlen32768-nemo-rl-eval.log")
    x = explain_log(log, load_model("gemma-3-27b"), load_gpu("b200"), EngineSettings(Accounting.vllm_v1))
    assert any(t.startswith("--logprobs-mode processed_logprobs: from the log (line 61") for t in x.settings_taken)
    assert log.setting("logprobs_mode").value == LogprobsMode.processed_logprobs.value

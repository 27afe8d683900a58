"""Engine start-up logs (rooflab/engines/logs.py, explain.py) and `rooflab capacity --engine / --engine-log`.

The fixtures are lines of public start-up logs (tests/data/engine_logs/SOURCES.md); their settings, as rooflab
options, are in cases.yaml, which benchmarks/engine_capacity.py evaluates for RESULTS.md. The synthetic lines below
follow each format as the engines' source prints it (the format strings are cited in logs.py).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab import load_gpu, load_model
from rooflab.cli import app
from rooflab.engines import Accounting, Engine, EngineSettings, parse_accounting
from rooflab.engines.explain import explain_log
from rooflab.engines.logs import LOOKED_FOR, parse_log, read_log
from rooflab.errors import InputError
from rooflab.units import GiB

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "engine_logs"
runner = CliRunner()

_spec = importlib.util.spec_from_file_location("engine_capacity", ROOT / "benchmarks" / "engine_capacity.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["engine_capacity"] = bench          # dataclasses look their module up while the class is built
_spec.loader.exec_module(bench)
CASES = bench.load_cases()
ROWS = {r.case: r for r in (bench.evaluate(c) for c in CASES)}

#: Cases whose estimate misses the 5% target, and why (cases.yaml says more; RESULTS.md has the table).
KNOWN_MISSES = {
    "vllm-llama-2-70b-a100-80gb-tp4.log",                # PR #2031 at TP 4: 12.9 GiB a GPU not modelled
    "vllm-llama-3.1-8b-instruct-l40s-tp1.log",           # a V1 v0.8.x log; the L40S's CUDA total estimated
    "vllm-qwen3-235b-a22b-fp8-h100-tp4.log",             # LMCache connector's buffers, 3.15 GiB a GPU
    "sglang-deepseek-r1-distill-qwen-7b-rtx3090-tp1.log",  # 0.82 GiB in use before start on a desktop card
}


def _invoke(*args: str):
    return runner.invoke(app, ["capacity", *args])


def _short_error(result, needle: str) -> str:
    assert result.exit_code == 2, result.output
    err = result.stderr.strip().splitlines()
    assert 1 <= len(err) <= 2 and err[0].startswith("error:"), result.stderr
    assert needle in result.stderr, result.stderr
    return result.stderr


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


def test_what_if_scales_the_logged_terms():
    log = read_log(DATA / "vllm-llama-3-8b-h100-tp1.log")
    settings = EngineSettings(parse_accounting(Engine.vllm, "v0"))
    from rooflab.engines.request import parse_what_if

    x = explain_log(log, load_model("llama-3-8b"), load_gpu("h100-sxm"), settings,
                    parse_what_if(["kv-cache-dtype=fp8", "block-size=32"]))
    assert x.what_if.block_bytes == x.reproduced.block_bytes            # half the bytes a token, twice the tokens
    assert x.what_if.kv_cache_bytes == x.reproduced.kv_cache_bytes      # nothing measured moves
    assert x.what_if.kv_cache_tokens == pytest.approx(2 * x.reproduced.kv_cache_tokens, abs=32)
    tp2 = explain_log(log, load_model("llama-3-8b"), load_gpu("h100-sxm"), settings, parse_what_if(["tp=2"]))
    assert tp2.what_if.term("weights").bytes == pytest.approx(14.96 / 2 * GiB, rel=0.01)
    # the sampler dominates the activation peak, so halving the MLP leaves it as logged (vllm#10511 at TP 2: 1.26)
    assert tp2.what_if.term("activation_peak").bytes == pytest.approx(1.26 * GiB, rel=0.01)


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


# --- the CLI --------------------------------------------------------------------------------------------------------

def test_default_capacity_says_it_is_a_bound():
    out = _invoke().stdout
    assert "a bound: utilisation x the nvidia-smi total" in out and "--engine vllm|sglang" in out


def test_engine_json_fields():
    r = _invoke("--engine", "vllm", "--engine-version", "v0", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert {"num_blocks", "kv_cache_tokens", "max_concurrency", "terms", "lines"} <= set(doc)
    assert [t["name"] for t in doc["terms"]] == ["cuda_visible_total", "margin", "weights", "activation_peak",
                                                 "non_torch", "kv_cache"]
    assert all({"name", "bytes", "source"} <= set(t) for t in doc["terms"])
    assert doc["lines"][0] == f"# GPU blocks: {doc['num_blocks']}, # CPU blocks: 2048"


def test_engine_table_prints_the_engines_lines():
    out = _invoke("--engine", "vllm", "--max-model-len", "8k").stdout
    assert "GPU KV cache size:" in out and "Maximum concurrency for 8,000 tokens per request:" in out
    assert "engine-faithful estimate" in out
    out = _invoke("--engine", "sglang", "--mem-fraction-static", "0.88").stdout
    assert "KV Cache is allocated. #tokens:" in out


def test_engine_log_cli_json():
    r = _invoke("--engine-log", str(DATA / "vllm-llama-3-8b-h100-tp1.log"), "--model", "llama-3-8b",
                "--what-if", "kv-cache-dtype=fp8", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    terms = {t["name"]: t for t in doc["terms"]}
    assert terms["weights"]["source"].startswith("model weights: line 7:")
    assert round(terms["kv_cache"]["bytes"] / GiB, 2) == pytest.approx(53.29, abs=0.02)
    assert abs(doc["num_blocks"] - 27284) <= 10 and doc["largest_term"] == "weights"
    assert doc["what_if"]["num_blocks"] == pytest.approx(2 * doc["num_blocks"], abs=2)
    assert doc["what_if"]["changes"] == ["kv-cache-dtype=fp8"]


def test_engine_log_cli_table():
    out = _invoke("--engine-log", str(DATA / "vllm-llama-3.2-11b-vision-h100-tp1.log"), "--model",
                  str(DATA / "models" / "llama-3.2-11b-vision.yaml")).stdout
    assert "check num_blocks" in out and "logged 6,001" in out and "largest term" in out


def test_engine_vocabulary_in_the_bound():
    ours = _invoke("--kv-dtype", "fp8_e4m3", "--page-size", "32", "--tp", "2", "-f", "json").stdout
    theirs = _invoke("--kv-cache-dtype", "fp8", "--block-size", "32", "-tp", "2", "-f", "json").stdout
    assert json.loads(ours) == json.loads(theirs)


LOG = str(DATA / "vllm-llama-3-8b-h100-tp1.log")


@pytest.mark.parametrize("args, needle", [
    (["--engine", "tgi"], "--engine 'tgi' is not an engine"),
    (["--engine", "vllm", "--engine-version", "sglang-v0.5"], "is SGLang's, but --engine is vllm"),
    (["--engine", "vllm", "--kv-dtype", "bf16", "--kv-cache-dtype", "fp8"], "--kv-dtype bf16 and --kv-cache-dtype fp8"),
    (["--engine", "vllm", "--tp", "2", "-tp", "4"], "--tp 2 and --tensor-parallel-size 4"),
    (["--engine", "vllm", "--mem-fraction-static", "0.9"], "is SGLang's; vLLM's is --gpu-memory-utilization"),
    (["--engine", "vllm", "--kv-cache-dtype", "fp4"], "'fp4' is not a KV-cache dtype"),
    (["--engine", "vllm", "--shared-prefix", "100"], "--shared-prefix applies to rooflab's bound"),
    (["--engine", "vllm", "--what-if", "tp=2"], "--what-if applies with --engine-log only"),
    (["--engine", "vllm", "--cuda-visible-memory", "lots"], "--cuda-visible-memory: 'lots' is not a size"),
    (["--engine", "vllm", "--max-num-seqs", "512", "--max-num-batched-tokens", "256"], "below --max-num-seqs"),
    (["--max-num-seqs", "128"], "--max-num-seqs applies with --engine or --engine-log only"),
    (["--engine-version", "v1"], "--engine-version applies with --engine or --engine-log only"),
    (["--engine-log", LOG], "--engine-log needs --model"),
    (["--engine-log", LOG, "--model", "llama-3-8b", "--what-if", "heads=4"], "give KEY=VALUE with KEY one of"),
    (["--engine-log", LOG, "--model", "llama-3-8b", "--what-if", "tp=0"], "--what-if 'tp=0': 0 is below 1"),
    (["--engine-log", LOG, "--model", "llama-3-8b", "--what-if", "tp=2", "--what-if", "-tp=4"], "already set"),
    (["--engine-log", LOG, "--model", "llama-3-8b", "--gpu-memory-utilization", "0.95"],
     "--gpu-memory-utilization 0.95 contradicts the log's 0.9"),
    (["--engine-log", LOG, "--model", "llama-3-8b", "--engine", "sglang"], "is a vLLM log, but --engine is sglang"),
    (["--engine-log", str(DATA / "SOURCES.md"), "--model", "llama-3-8b"], "no vLLM or SGLang KV-cache line found"),
    (["--engine-log", str(DATA / "missing.log"), "--model", "llama-3-8b"], "cannot read it"),
])
def test_bad_engine_input(args, needle):
    _short_error(_invoke(*args), needle)


def test_what_if_predicts_another_log():
    """vllm#10517 posted two runs that differ only in max_model_len: the 20,000-token log's what-if at 29,000
    tokens lands on the 29,000-token log's 1,478 blocks."""
    case = next(c for c in CASES if c.get("log") == "vllm-llama-3.1-8b-instruct-rtx3090-tp1.log")
    from rooflab.engines.request import parse_what_if

    x = explain_log(read_log(DATA / case["log"]), load_model(DATA / case["model"]), load_gpu(DATA / case["gpu"]),
                    bench.settings(case), parse_what_if(["max-model-len=29000"]))
    assert x.what_if.num_blocks == pytest.approx(1478, rel=0.01)
    assert x.what_if.lines[1] == f"Maximum concurrency for 29000 tokens per request: {x.what_if.max_concurrency:.2f}x"

"""Tests of rooflab/cli/capacity.py: `rooflab capacity`, rooflab's bound (tensor parallel, prefix sharing, --dcp) and
the engines' accounting (--engine, --engine-log with the public start-up logs of tests/data/engine_logs), and bad
input (stderr, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.units import GiB


runner = CliRunner()


# --- CLI ------------------------------------------------------------------------------

def _short_error(result, needle):
    assert result.exit_code == 2, result.output
    assert 1 <= len(result.stderr.strip().splitlines()) <= 2 and needle in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


def test_capacity_cli_json():
    r = runner.invoke(app, ["capacity", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context-len", "2000",
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    for key in ("weights_bytes", "kv_bytes_per_token", "kv_budget_bytes", "max_sequences_paged",
                "max_sequences_contiguous", "max_context_len"):
        assert key in doc
    assert doc["kv_bytes_per_token"] == 131072
    assert doc["max_sequences_paged"] > doc["max_sequences_contiguous"] == 56


def test_capacity_cli_table_and_zero_answer():
    out = runner.invoke(app, ["capacity", "--activation-reserve-gib", "70"]).stdout
    assert "sequences, paged" in out and "answer: no memory left" in out


@pytest.mark.parametrize("args, needle", [
    (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
    (["--gpu-memory-utilization", "0"], "--gpu-memory-utilization"),
    (["--gpu-memory-utilization", "nan"], "--gpu-memory-utilization"),
    (["--page-size", "0"], "--page-size"),
    (["--context-len", "-1"], "--context-len"),
    (["--activation-reserve-gib", "inf"], "--activation-reserve-gib"),
    (["--model", "llama-3.1-405b"], "do not fit"),
    (["--kv-dtype", "int3"], "--kv-dtype"),
])
def test_capacity_bad_input(args, needle):
    _short_error(runner.invoke(app, ["capacity", *args]), needle)


ROOT = Path(__file__).resolve().parents[2]


DATA = ROOT / "tests" / "data" / "engine_logs"


def _invoke(*args: str):
    return runner.invoke(app, ["capacity", *args])


def _short_engine_error(result, needle: str) -> str:
    assert result.exit_code == 2, result.output
    err = result.stderr.strip().splitlines()
    assert 1 <= len(err) <= 2 and err[0].startswith("error:"), result.stderr
    assert needle in result.stderr, result.stderr
    return result.stderr


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
    (["--engine-log", str(DATA / "missing.log"), "--model", "llama-3-8b"], "cannot read file"),
])
def test_bad_engine_input(args, needle):
    _short_engine_error(_invoke(*args), needle)


# --- CLI -----------------------------------------------------------------------------------

def test_capacity_cli_tensor_parallel_and_prefix():
    r = runner.invoke(app, ["capacity", "-m", "llama-3-70b", "-g", "h100-sxm", "--tp", "4",
                            "--shared-prefix", "1000", "-L", "4096", "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["tensor_parallel"] == 4 and data["kv_heads_per_gpu"] == 2
    assert data["max_sequences_shared_prefix"] > data["max_sequences_paged"]
    table = runner.invoke(app, ["capacity", "-m", "llama-3-70b", "--tp", "8"]).stdout
    assert "8 x h100-sxm" in table and "per GPU" in table


@pytest.mark.parametrize("args, needle", [
    (["--tp", "3"], "does not divide the 32 query heads"),
    (["--shared-prefix", "9000"], "shared prefix"),
    (["-m", "llama-3-70b"], "do not fit"),
])
def test_capacity_cli_bad_sharding(args, needle):
    r = runner.invoke(app, ["capacity", *args])
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and needle in r.stderr and "Traceback" not in r.stderr


def test_capacity_dcp_on_the_command_line(capsys):
    with pytest.raises(SystemExit) as done:
        app(["capacity", "-m", "llama-3-8b", "-g", "h200-sxm", "-L", "1048576", "--max-model-len", "1048576",
             "--kvp", "4"])
    assert done.value.code in (0, None)
    out = capsys.readouterr().out
    assert "on 4 x" in out and "KV parallel 4" in out
    with pytest.raises(SystemExit) as done:
        app(["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "-L", "32000", "--tp", "8", "--dcp", "8"])
    assert done.value.code in (0, None)
    captured = capsys.readouterr()
    assert "deepseek-v3 on 8 x h200-sxm" in captured.out and "decode context parallel 8" in captured.out
    assert "rooflab 0.1's --dcp" in captured.err and "is --kv-parallel" in captured.err
    with pytest.raises(SystemExit) as done:
        app(["capacity", "-m", "llama-3-8b", "-L", "64", "--kvp", "8"])
    assert done.value.code == 2
    assert "larger than the context in pages" in capsys.readouterr().err


# --- linear-attention state caches, other processes' memory, SGLang's concurrency (engines/states.py) -----------

def _engine_json(*args):
    r = runner.invoke(app, ["capacity", "-m", "qwen3-next-80b-a3b", "-g", "h200-sxm", "--max-model-len", "32768",
                            "-f", "json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_engine_hybrid_model_vllm_and_sglang():
    """Qwen3-Next at TP 4: vLLM sets 272-token blocks (16 x ceil(274,432 / 16,384)) over 1 + 3 groups; SGLang keeps a
    state pool and says how many requests it runs (tests/engines/test_states.py has the hand computations)."""
    v = _engine_json("--engine", "vllm", "--tp", "4")
    assert (v["block_size"], v["num_groups"]) == (272, 4)
    assert v["lines"][0].startswith("Setting attention block size to 272 tokens")
    align = _engine_json("--engine", "vllm", "--tp", "4", "--mamba-cache-mode", "align")
    assert align["num_blocks"] == v["num_blocks"] and align["max_concurrency"] < v["max_concurrency"]
    s = _engine_json("--engine", "sglang", "-tp", "4")
    assert s["state_slots"] > 0 and 0 < s["max_running_requests"] <= s["state_slots"] // 3 + 1
    assert "mamba_state" in [t["name"] for t in s["terms"]]
    bf16 = _engine_json("--engine", "sglang", "-tp", "4", "--mamba-ssm-dtype", "bfloat16")
    assert bf16["state_slots"] > s["state_slots"]
    capped = _engine_json("--engine", "sglang", "-tp", "4", "--max-running-requests", "64")
    assert capped["max_running_requests"] == 64


def test_engine_memory_in_use():
    alone = _invoke("--engine", "sglang", "-f", "json")
    shared = _invoke("--engine", "sglang", "-f", "json", "--memory-in-use", "8GiB")
    a, b = json.loads(alone.stdout), json.loads(shared.stdout)
    assert "other_processes" in [t["name"] for t in b["terms"]] and b["kv_cache_bytes"] < a["kv_cache_bytes"]
    _short_error(_invoke("--engine", "vllm", "--memory-in-use", "9GiB"), "refuse to start")
    _short_error(_invoke("--memory-in-use", "9GiB"), "--memory-in-use applies with --engine")
    _short_error(_invoke("--engine", "vllm", "--memory-in-use", "lots"), "--memory-in-use")


def test_engine_memory_in_use_beyond_v0s_margin_is_refused():
    """vLLM V0 allocates 0.9 x 139.80 GiB on an H200 beside other processes' 30 GiB: out of memory, exit 2; the same
    on a log's what-if (the H100 log: 0.9 x 79.22 + 70 GiB > 79.22 GiB)."""
    base = ("-m", "llama-3-8b", "-g", "h200", "--engine", "vllm", "--engine-version", "v0")
    _short_error(_invoke(*base, "--memory-in-use", "30GiB"), "vLLM V0 would run out of memory allocating the KV cache")
    _short_error(_invoke("--engine-log", LOG, "-m", "llama-3-8b", "--what-if", "memory-in-use=70GiB"),
                 "--memory-in-use 70.00 GiB: vLLM V0 would run out of memory")
    assert _invoke(*base, "--memory-in-use", "10GiB").exit_code == 0


@pytest.mark.parametrize("args, needle", [
    (["--engine", "vllm", "--mamba-cache-mode", "all"], "--mamba-cache-mode"),
    (["--engine", "sglang", "-m", "qwen3-next-80b-a3b", "-tp", "4", "--mamba-cache-mode", "none"], "vLLM's"),
    (["--engine", "vllm", "-m", "qwen3-next-80b-a3b", "--tp", "4", "--max-mamba-cache-size", "8"], "SGLang's"),
    (["--engine", "sglang", "--mamba-full-memory-ratio", "0.5"], "linear-attention"),
    (["--engine", "sglang", "-m", "qwen3-next-80b-a3b", "-tp", "4", "--mamba-full-memory-ratio", "0"],
     "--mamba-full-memory-ratio"),
    (["--engine", "sglang", "-m", "qwen3-next-80b-a3b", "-tp", "4", "--mamba-ssm-dtype", "float16"], "SGLang takes"),
    (["--engine", "vllm", "--engine-version", "v0", "-m", "qwen3-next-80b-a3b", "--tp", "4"], "linear-attention")])
def test_engine_state_options_refused(args, needle):
    _short_error(_invoke(*args), needle)


def test_engine_lora_buffers():
    """vLLM's defaults on Llama-3-8B: 80 MiB of buffers (tests/engines/test_lora.py has the hand computation)."""
    alone = json.loads(_invoke("--engine", "vllm", "-f", "json").stdout)
    lora = json.loads(_invoke("--engine", "vllm", "-f", "json", "--enable-lora").stdout)
    assert {t["name"]: t["bytes"] for t in lora["terms"]}["lora_buffers"] == 80 * 2**20
    assert alone["kv_cache_bytes"] - lora["kv_cache_bytes"] == 80 * 2**20
    sg = json.loads(_invoke("--engine", "sglang", "-f", "json", "--enable-lora", "--max-lora-rank", "8",
                            "--max-loras-per-batch", "2").stdout)
    assert {t["name"]: t["bytes"] for t in sg["terms"]}["lora_buffers"] == 2 * 8 // 16 * 80 * 2**20
    _short_error(_invoke("--engine", "vllm", "--max-loras", "2"), "--enable-lora")
    _short_error(_invoke("--engine", "vllm", "-m", "qwen3-30b-a3b", "--enable-lora"), "routed experts")


def test_pipeline_parallel_names_the_binding_stage():
    """--pp / -pp / --pipeline-parallel-size / --pp-size: the engines' answer and the bound name the stage that
    binds (the figures: tests/engines/test_pipeline.py and tests/capacity/test_plan.py)."""
    for flag in ("--pp", "-pp", "--pipeline-parallel-size", "--pp-size"):
        r = _invoke("-m", "llama-3-70b", "-tp", "4", flag, "2", "--engine", "vllm", "-f", "json")
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert doc["pipeline_parallel"] == 2 and doc["binding_stage"].startswith("stage 1 of 2 (layers 40-79")
    out = _invoke("-m", "llama-3-70b", "-tp", "4", "-pp", "2", "--engine", "sglang").stdout
    assert "PP 2 x TP 4" in out and "binds: SGLang keeps the fewest tokens" in out
    r = _invoke("-m", "llama-3-70b", "-tp", "4", "-pp", "2", "--pp-layer-partition", "30,50")
    assert r.exit_code == 0 and "note: pipeline stage 1 of 2 (layers 30-79, LM head) binds" in r.stderr
    assert "8 in all" in r.stdout
    _short_engine_error(_invoke("-m", "llama-3-70b", "--pp-layer-partition", "40,40"), "--pp-layer-partition")
    _short_engine_error(_invoke("-m", "llama-3-70b", "-pp", "2", "--pp-layer-partition", "40,41"), "sums to 81")
    log = str(DATA / "vllm-llama-3-8b-h100-tp1.log")
    _short_engine_error(_invoke("-m", "llama-3-8b", "--engine-log", log, "-pp", "2"), "--pp with --engine-log")

# --- --engine-version: a release or an accounting's label; --no-flashinfer, --vllm-use-v1 -----------------------------



def _json(*args: str) -> dict:
    r = runner.invoke(app, ["capacity", *args, "-f", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _term(doc: dict, name: str) -> int:
    return next(t["bytes"] for t in doc["terms"] if t["name"] == name)


QWEN3_30B_H200 = ("--engine", "vllm", "-m", "qwen3-30b-a3b", "-g", "h200", "--max-model-len", "16000")


def test_a_vllm_release_reaches_the_profile_run():
    """vLLM 0.15.0 on the command line is tests/engines/test_profile.py's hand figure for Qwen3-30B-A3B on an H200
    (its docstring derives it: the full sort before v0.17.0 and the fused-MoE workspaces kept from v0.14.0),
    6,516,113,408 B; the label v1 (no release: the newest) gives v0.17's Triton sampler, 15 bytes a logit."""
    at_0_15 = _json(*QWEN3_30B_H200, "--engine-version", "0.15.0")
    assert at_0_15["accounting"] == "vllm-v1" and at_0_15["releases"].endswith("at v0.15.0")
    assert _term(at_0_15, "activation_peak") == 6_516_113_408
    newest = _json(*QWEN3_30B_H200, "--engine-version", "v1")
    assert _term(newest, "activation_peak") == 1024 * 151_936 * 15 + 8192 * 2048 * 2 + 570_425_344
    assert _json(*QWEN3_30B_H200) == newest


@pytest.mark.parametrize("version, accounting", [
    ("v0.8.4", "vllm-v0.8"), ("0.9.0.1", "vllm-v0.8"), ("0.9.1", "vllm-v1"), ("0.7.3", "vllm-v0"),
    ("0.6.4.post1", "vllm-v0.6.4"), ("0.6.3.post1", "vllm-v0.2"), ("0.10.1.1", "vllm-v1")])
def test_a_vllm_release_picks_its_accounting(version, accounting):
    """V1 from v0.8.0 (vllm/envs.py VLLM_USE_V1 defaults to 1), V0 before; each label's range (vocab.RELEASE_RANGE)."""
    doc = _json("--engine", "vllm", "-m", "llama-3-8b", "--engine-version", version)
    assert doc["accounting"] == accounting
    label = _json("--engine", "vllm", "-m", "llama-3-8b", "--engine-version", accounting.split("-", 1)[1])
    assert doc["accounting"] == label["accounting"]


def test_an_sglang_release_reaches_mem_fraction_static():
    """SGLang 0.4.6.post2 on an H100 at TP 1: v0.4.6's rule for GPUs of at most 81,920 MiB indexes the TP x PP
    table, TP 1 0.88 (sglang v0.4.6.post2 server_args.py:226-246, engines/sglang.py's table); 0.3.0's table gives
    TP 8 0.83 on L4s where the label v0.4 gives 0.81 (tests/engines/test_sglang.py)."""
    doc = _json("--engine", "sglang", "-m", "llama-3-8b", "-g", "h100-sxm", "--engine-version", "0.4.6.post2")
    assert doc["accounting"] == "sglang-v0.4" and doc["utilization"] == 0.88
    mixtral = ("--engine", "sglang", "-m", "mixtral-8x7b", "-g", "l4", "--tp", "8", "--max-model-len", "8192")
    assert _json(*mixtral, "--engine-version", "0.3.0")["utilization"] == 0.83
    assert _json(*mixtral, "--engine-version", "v0.4")["utilization"] == 0.81
    assert _json(*mixtral, "--engine-version", "0.5.3")["accounting"] == "sglang-v0.5"


@pytest.mark.parametrize("args, needle", [
    (["--engine", "vllm", "--engine-version", "0.30.0"], "--engine-version '0.30.0': no vLLM accounting rooflab "
                                                          "models covers v0.30.0"),
    (["--engine", "vllm", "--engine-version", "0.2.4"], "no vLLM accounting rooflab models covers v0.2.4"),
    (["--engine", "sglang", "--engine-version", "0.5.11"], "no SGLang accounting rooflab models covers v0.5.11"),
    (["--engine", "sglang", "--engine-version", "v1"], "--engine-version 'v1' is neither a SGLang release"),
    (["--engine", "vllm", "--engine-version", "latest"], "--engine-version 'latest' is neither a vLLM release "
                                                          "(such as 0.10.1, 0.6.3.post1) nor one of its accountings"),
    (["--engine", "vllm", "--engine-version", "sglang-v0.4"], "is SGLang's, but --engine is vllm")])
def test_bad_engine_versions_name_the_option_and_the_forms(args, needle):
    r = runner.invoke(app, ["capacity", *args])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: --engine-version ") and needle in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_help_lists_both_forms():
    r = runner.invoke(app, ["capacity", "--help"], env={"COLUMNS": "400"})
    text = " ".join(r.stdout.split())
    assert "0.10.1, v0.8.4, 0.6.3.post1" in text and "0.4.6.post2" in text
    assert "vLLM v0.2 (V0 v0.2.5 - v0.6.3), v0.6.4" in text and "SGLang v0.4 (v0.1.17 - v0.5.2), v0.5" in text


def test_help_says_the_ranges_the_table_holds():
    """Reviewer's finding 8: the help wrote the ranges by hand and said vllm-v1 ran to 0.20 after RELEASE_RANGE
    took it to v0.29.x. Every accounting's releases in --engine-version's help, and --no-flashinfer's sampler
    releases, are now built from the tables (engines.vocab.labels_text, span_text)."""
    from rooflab.engines.profile import V1_FLASHINFER_SAMPLER_RELEASES
    from rooflab.engines.vocab import RELEASE_RANGE, Accounting, span_text

    r = runner.invoke(app, ["capacity", "--help"], env={"COLUMNS": "400"})
    text = " ".join(r.stdout.split())
    for span in RELEASE_RANGE.values():
        assert span_text(span) in text
    assert f"(default, V1 {span_text(RELEASE_RANGE[Accounting.vllm_v1])})" in text and "0.20)" not in text
    assert f"vLLM V1 {span_text(V1_FLASHINFER_SAMPLER_RELEASES)}: FlashInfer" in text


def test_help_says_what_a_dp_attention_rank_holds():
    """D45 (hostile round session12): --dp-attention's help said each GPU holds all attention heads and the
    embedding; since cda3c0c --tp 8 --dp 2 splits them 4 ways (TP / DP). DeepSeek-V3 at TP 8: attention DP 2 holds
    fewer weights a GPU than DP 8 (whole attention), more than TP alone."""
    r = runner.invoke(app, ["capacity", "--help"], env={"COLUMNS": "400"})
    text = " ".join(r.stdout.split())
    assert "all attention heads and the embedding" not in text
    assert "attention and the embedding split over T / N GPUs (whole at N = T), the lm_head over T" in text
    base = ["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "--dp-attention", "-f", "json"]
    w = [json.loads(runner.invoke(app, base[:-3] + base[-2:]).stdout)["weights_bytes"]] + [
        json.loads(runner.invoke(app, base + ["--dp", n]).stdout)["weights_bytes"] for n in ("2", "8")]
    assert w[0] < w[1] < w[2]


def test_no_flashinfer_sorts_in_the_releases_that_sample_with_it():
    """vLLM 0.10.1 samples with FlashInfer where it is installed (the Docker image's default): Llama-3-8B on an H100
    at V1's large-GPU defaults holds 14 bytes a logit (tests/engines/test_profile.py derives it), 1,024 x 128,256 x
    14 + the hidden states 8,192 x 4,096 x 2; --no-flashinfer sorts, 38 bytes; at 0.15.0 the switch changes
    nothing (FlashInfer's sampler is opt-in from 0.11.1)."""
    base = ("--engine", "vllm", "-m", "llama-3-8b", "-g", "h100-sxm")
    hidden = 8192 * 4096 * 2
    assert _term(_json(*base, "--engine-version", "0.10.1"), "activation_peak") == 1024 * 128256 * 14 + hidden
    no_fi = _json(*base, "--engine-version", "0.10.1", "--no-flashinfer")
    assert _term(no_fi, "activation_peak") == 1024 * 128256 * 38 + hidden
    assert _json(*base, "--engine-version", "0.15.0", "--no-flashinfer") == _json(*base, "--engine-version", "0.15.0")


@pytest.mark.parametrize("args, needle", [
    (["--engine", "sglang", "--no-flashinfer"], "--no-flashinfer is vLLM's"),
    (["--no-flashinfer"], "--no-flashinfer applies with --engine or --engine-log only")])
def test_no_flashinfer_refused_outside_vllm(args, needle):
    r = runner.invoke(app, ["capacity", *args])
    assert r.exit_code == 2 and needle in r.stderr, r.output


@pytest.mark.parametrize("args, accounting, release", [
    (["--engine-version", "0.8.4", "--vllm-use-v1", "0"], "vllm-v0", "at v0.8.4"),     # V0 under VLLM_USE_V1=0
    (["--engine-version", "0.10.2", "--vllm-use-v1", "0"], "vllm-v0", "at v0.10.2"),   # v0.10.2: V0's last wheel
    (["--engine-version", "0.8.4", "--vllm-use-v1", "1"], "vllm-v0.8", "at v0.8.4"),   # the release's default
    (["--vllm-use-v1", "0"], "vllm-v0", "- v0.10.x")])                                 # no version: V0's label
def test_vllm_use_v1_picks_the_engine_at_a_release(args, accounting, release):
    doc = _json("--engine", "vllm", *args)
    assert doc["accounting"] == accounting and doc["releases"].endswith(release)


@pytest.mark.parametrize("args, needle", [
    (["--engine-version", "0.7.3", "--vllm-use-v1", "1"], "vLLM v0.7.3 has no V1 engine rooflab models"),
    (["--engine-version", "0.11.0", "--vllm-use-v1", "0"], "vLLM v0.11.0 has no V0 engine rooflab models"),
    (["--engine-version", "v0.8", "--vllm-use-v1", "0"], "--vllm-use-v1 0 contradicts --engine-version v0.8"),
    (["--vllm-use-v1", "2"], "2 is above 1")])
def test_vllm_use_v1_refusals(args, needle):
    r = runner.invoke(app, ["capacity", "--engine", "vllm", *args])
    assert r.exit_code == 2 and needle in r.stderr, r.output


def test_vllm_use_v1_is_vllms():
    r = runner.invoke(app, ["capacity", "--engine", "sglang", "--vllm-use-v1", "1"])
    assert r.exit_code == 2 and "--vllm-use-v1 is vLLM's" in r.stderr, r.output


# --- the sizing overrides (issue 28; rooflab/engines/overrides.py): the engines' own spellings, refusals for the
# engine without the option, and the figures they reach (hand-computed in tests/engines/test_overrides.py) ---------

def _overrides_json(*args: str) -> dict:
    r = runner.invoke(app, ["capacity", "-m", "llama-3-8b", "-g", "h100-sxm", "-f", "json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _overrides_refused(needle: str, *args: str) -> None:
    r = runner.invoke(app, ["capacity", "-m", "llama-3-8b", "-g", "h100-sxm", *args])
    assert r.exit_code == 2, r.output
    assert 1 <= len(r.stderr.strip().splitlines()) <= 2 and needle in r.stderr, r.stderr
    assert "Traceback" not in r.output


@pytest.mark.parametrize("flag", ["--enforce-eager", "--disable-cuda-graph"])
def test_engine_both_spellings_of_eager(flag):
    """vLLM v0.20.0 subtracts a 0-byte graph estimate under either spelling; SGLang's pool stays as it was."""
    d = _overrides_json("--engine", "vllm", "--engine-version", "0.20.0", flag)
    assert {t["name"]: t["bytes"] for t in d["terms"]}["cuda_graph_estimate"] == 0
    s = _overrides_json("--engine", "sglang", flag)
    assert s["kv_cache_tokens"] == _overrides_json("--engine", "sglang")["kv_cache_tokens"] and s["notes"]


def test_engine_max_total_tokens():
    d = _overrides_json("--engine", "sglang", "--max-total-tokens", "4096")
    assert d["kv_cache_tokens"] == 4096 and d["kv_cache_bytes"] == 4096 * 131_072


def test_engine_num_gpu_blocks_override():
    d = _overrides_json("--engine", "vllm", "--max-model-len", "8192", "--num-gpu-blocks-override", "1000")
    assert (d["num_blocks"], d["kv_cache_tokens"]) == (1000, 16_000)


@pytest.mark.parametrize("flag, value", [("--kv-cache-memory-bytes", "20G"), ("--kv-cache-memory", "21474836480")])
def test_engine_kv_cache_memory_bytes(flag, value):
    d = _overrides_json("--engine", "vllm", "--max-model-len", "8192", flag, value)
    assert (d["kv_cache_bytes"], d["num_blocks"]) == (20 * GiB, 10_240)


@pytest.mark.parametrize("args, needle", [
    (["--engine", "vllm", "--max-total-tokens", "4096"], "--max-total-tokens is SGLang's; vLLM has no such option"),
    (["--engine", "sglang", "--num-gpu-blocks-override", "10"], "--num-gpu-blocks-override is vLLM's"),
    (["--engine", "sglang", "--kv-cache-memory-bytes", "8G"], "--kv-cache-memory-bytes is vLLM's"),
    (["--engine", "vllm", "--engine-version", "0.10.1", "--kv-cache-memory-bytes", "8G"], "arrived in vLLM v0.11.0"),
    (["--engine", "vllm", "--kv-cache-memory-bytes", "1.5G"], "did you mean 1.5g"),
    (["--max-total-tokens", "4096"], "--max-total-tokens applies with --engine or --engine-log only"),
    (["--enforce-eager"], "--enforce-eager / --disable-cuda-graph applies with --engine"),
    (["--kv-cache-memory", "8G"], "--kv-cache-memory-bytes applies with --engine"),
])
def test_engine_sizing_override_refusals_name_the_option(args, needle):
    _overrides_refused(needle, *args)


@pytest.mark.parametrize("version, name, first", [("0.7.3", "bfloat16", "v0.11.0"), ("0.7.3", "fp8_ds_mla", "v0.11.1"),
                                                  ("v0", "bfloat16", "v0.11.0"), ("0.9.2", "fp8_inc", "v0.10.0")])
def test_engine_kv_cache_dtype_by_vllm_release(version, name, first):
    """--engine vllm --engine-version V refuses a --kv-cache-dtype name release V does not take, naming the
    release and the first that takes it (engines/vocab.py VLLM_KV_CACHE_DTYPES: v0.7.3 arg_utils.py:359-361;
    the label v0 is v0.10.x, whose config/cache.py:25 has no bfloat16)."""
    r = runner.invoke(app, ["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "--engine", "vllm",
                            "--engine-version", version, "--kv-cache-dtype", name])
    _short_error(r, "--kv-cache-dtype")
    assert "vLLM v" in r.stderr and f"vLLM takes it from {first}" in r.stderr


def test_engine_kv_cache_dtype_a_release_takes():
    r = runner.invoke(app, ["capacity", "-m", "llama-3-8b", "-g", "h200-sxm", "--engine", "vllm",
                            "--engine-version", "0.11.0", "--kv-cache-dtype", "bfloat16"])
    assert r.exit_code == 0, r.output

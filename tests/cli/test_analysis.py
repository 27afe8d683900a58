"""Tests of rooflab/cli/analysis.py.

From the suites this file gathers:

The capacity planner, and the CLI for `rooflab report --phase decode` and `rooflab capacity`.

`rooflab report` and `rooflab list`: output, the JSON contract, and bad input (stderr, exit 2).

Engine start-up logs (rooflab/engines/logs.py, explain.py) and `rooflab capacity --engine / --engine-log`.

The fixtures are lines of public start-up logs (tests/data/engine_logs/SOURCES.md); their settings, as rooflab
options, are in cases.yaml, which benchmarks/engine_capacity.py evaluates for RESULTS.md. The synthetic lines below
follow each format as the engines' source prints it (the format strings are cited in logs.py).

Every bundled model: its parameter count against the published one, the round trip through a config.json,
the real config.json files in tests/data/hf_configs loading to the bundled specs, KV golden values, and the CLI.

Published counts and what each includes are in each YAML's comment and parameters_note; the config.json
files and where they were copied from are listed in tests/data/hf_configs/SOURCES.md.

Golden figures of the float64 numerics oracles, their error cases, and `rooflab numerics`.

Chapters cited by short name and section title: "naive" = the chapter "Naive attention and the online softmax",
"flash" = the chapter "FlashAttention and PagedAttention: what does each save?".

Tensor-parallel capacity, prefix sharing in the planner, and the DataFrame views notebooks use.

Honest reports: the decode report says whether the batch fits (weights + KV on one GPU).

The whole-model step (rooflab.step): its rows by hand, invariants, the measured step it predicts, bad input, the
CLI, and the distributed bench's code paths on CPU (gloo, tiny shapes).

Decode context parallelism (cost/dcp.py) and ring / Ulysses prefill (cost/ring.py): formulas by hand, invariants,
bad input, and capacity --dcp.

Tables that fit the terminal: wide tables split into stacked column blocks, each led by the label column.

Only a terminal (or $COLUMNS) triggers wrapping; a pipe, a file and the test runner keep the full width.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.load import available, load_model
from rooflab.numerics import expected_max_normal, expected_max_normal_exact
from rooflab.specs import ModelSpec
from rooflab.units import DType, GiB
from rooflab.vocab import LayerKind


runner = CliRunner()


# --- CLI ------------------------------------------------------------------------------

def _short_error(result, needle):
    assert result.exit_code == 2, result.output
    assert 1 <= len(result.stderr.strip().splitlines()) <= 2 and needle in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


def test_decode_report_rows():
    r = runner.invoke(app, ["report", "--phase", "decode", "--context-len", "32768", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["phase"] == "decode" and doc["context_lens"] == [32768] and doc["batch"] == 1
    paged, split = doc["rows"]
    assert paged["variant"] == "paged" and split["variant"] == "split_kv"
    for row in (paged, split):
        for key in ("flops", "hbm_bytes", "intensity_flop_per_byte", "t_compute_s", "t_memory_s", "t_floor_s",
                    "bound", "kv_bytes"):
            assert key in row
        assert row["intensity_flop_per_byte"] == pytest.approx(4.0, rel=1e-2)
    assert split["splits"] == doc["facts"]["recommended_splits"] == 17
    assert split["t_floor_s"] > paged["t_floor_s"]         # physical floors: splitting only adds traffic
    assert split["parallel_fraction"] == 1.0 and paged["parallel_fraction"] < 0.1   # the model's reason to split
    assert [k["kernel"] for k in split["kernels"]] == ["split_decode", "merge"]


def test_decode_report_ragged_and_options():
    r = runner.invoke(app, ["report", "--phase", "decode", "-L", "100,5000", "-L", "17", "--page-size", "32",
                            "--kv-dtype", "fp8_e4m3", "--splits", "4", "-f", "json"])
    doc = json.loads(r.stdout)
    assert doc["context_lens"] == [100, 5000, 17] and doc["page_size"] == 32 and doc["kv_dtype"] == "fp8_e4m3"
    assert doc["rows"][1]["splits"] == 4
    assert doc["rows"][0]["kv_bytes"] == (100 + 5000 + 17) * 2 * 8 * 128 * 1


def test_decode_report_table():
    out = runner.invoke(app, ["report", "--phase", "decode", "-L", "8192", "-b", "128"]).stdout
    assert "paged" in out and "split_kv" in out and "recommended split count: 1" in out


@pytest.mark.parametrize("args, needle", [
    (["-L", "0"], "--context-len"),
    (["-L", "-5"], "--context-len"),
    (["-L", "abc"], "not a whole number"),
    (["--page-size", "0"], "--page-size"),
    (["--page-size", "-4"], "--page-size"),
    (["--splits", "0"], "splits"),
    (["-L", "10,20", "-b", "3"], "disagrees"),
])
def test_decode_bad_input(args, needle):
    _short_error(runner.invoke(app, ["report", "--phase", "decode", *args]), needle)


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


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_report_no_causal_shows_the_chapter_figures():
    r = invoke("report", "--no-causal")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "Meta Llama 3 8B" in out and "H100 SXM" in out and "T=8192" in out and "fp16" in out
    assert "16.156 GiB" in out          # naive traffic per layer
    assert "4.7x left" in out and "22.1x right" in out
    assert "165.709 ms" in out          # 32 layers, memory-bound
    assert "35.561 ms" in out           # compute floor
    assert "S = 4.000 GiB" in out
    assert "6553.6" in out
    for kernel in ("qk", "softmax", "pv"):
        assert kernel in out


def test_report_is_causal_by_default_and_says_so():
    """Prefill is causal by default, as engines run decoders, and the header names the mask."""
    causal, chapter = invoke("report"), invoke("report", "--no-causal")
    assert causal.exit_code == 0 and chapter.exit_code == 0
    assert causal.stdout.splitlines()[0].endswith("fp16, causal, datasheet ceilings")
    assert chapter.stdout.splitlines()[0].endswith("fp16, non-causal, datasheet ceilings")
    assert "549.823 GFLOP" in causal.stdout and "1.100 TFLOP" in chapter.stdout   # T(T+1)/2 of T^2 pairs
    assert "16.156 GiB" in causal.stdout      # the naive kernels still write all of S and P


def test_report_json_contract():
    r = invoke("report", "--format", "json", "--no-causal")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    for key in ("model", "gpu", "seq_len", "batch", "dtype", "causal", "num_layers", "rows"):
        assert key in doc
    assert (doc["model"], doc["gpu"], doc["seq_len"], doc["batch"], doc["dtype"], doc["causal"]) == \
        ("llama-3-8b", "h100-sxm", 8192, 1, "fp16", False)
    assert doc["num_layers"] == 32
    variants = {row["variant"]: row for row in doc["rows"]}
    assert set(variants) == {"naive", "flash"}
    for row in variants.values():
        for key in ("flops", "hbm_bytes", "intensity_flop_per_byte", "t_compute_s", "t_memory_s",
                    "t_floor_s", "bound"):
            assert isinstance(row[key], (int, float, str)), key
        assert row["bound"] in ("compute", "memory")
    assert variants["naive"]["s_bytes"] / GiB == pytest.approx(4.0)
    assert variants["naive"]["p_bytes"] / GiB == pytest.approx(4.0)
    assert variants["naive"]["t_floor_s"] == pytest.approx(5.178e-3, rel=1e-3)


def test_report_options_change_the_workload():
    doc = json.loads(invoke("report", "-m", "llama-3-70b", "-g", "h200-sxm", "-T", "4096", "-b", "2",
                            "--dtype", "bf16", "--causal", "-f", "json").stdout)
    assert (doc["model"], doc["gpu"], doc["seq_len"], doc["batch"], doc["dtype"], doc["causal"]) == \
        ("llama-3-70b", "h200-sxm", 4096, 2, "bf16", True)
    naive = doc["rows"][0]
    # 2 sequences x 64 heads x 4096^2 x 2 bytes
    assert naive["s_bytes"] == 2 * 64 * 4096 * 4096 * 2


def test_report_markdown_and_csv():
    md = invoke("report", "--format", "markdown").stdout
    assert md.startswith("## ") and "| naive" in md and "|---" in md.replace(" ", "")
    rows = list(csv.DictReader(io.StringIO(invoke("report", "--format", "csv").stdout)))
    assert [r["kernel"] for r in rows] == ["", "qk", "softmax", "pv", ""]
    assert float(rows[0]["hbm_bytes"]) / GiB == pytest.approx(16.156, rel=1e-4)


def test_report_says_when_naive_does_not_fit():
    out = invoke("report", "--seq-len", "32768").stdout
    assert "does NOT fit" in out


def test_list_gpus_and_models():
    gpus = invoke("list", "gpus")
    assert gpus.exit_code == 0 and "h100-sxm" in gpus.stdout and "295 FLOP/B" in gpus.stdout
    models = json.loads(invoke("list", "models", "--format", "json").stdout)
    assert {m["name"] for m in models} >= {"llama-3-8b", "mixtral-8x7b", "gemma-2-9b"}


ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "engine_logs"


_spec = importlib.util.spec_from_file_location("engine_capacity", ROOT / "benchmarks" / "engine_capacity.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["engine_capacity"] = bench          # dataclasses look their module up while the class is built
_spec.loader.exec_module(bench)


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


BUNDLED = available("models")
CONFIGS = Path(__file__).parent.parent / "data" / "hf_configs"


def _tp(m: ModelSpec) -> int:
    """A tensor-parallel size that splits the heads and fits the weights on H200s."""
    return next(tp for tp in (8, 4, 2, 1) if m.num_qo_heads % tp == 0)


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_model_through_the_cli(name):
    m = load_model(name)
    for args in (["report", "-m", name, "-T", "4096"], ["report", "-m", name, "--phase", "decode"],
                 ["capacity", "-m", name, "-g", "h200-sxm", "--tp", str(_tp(m))]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, f"{' '.join(args)}: {result.output}"


def test_list_models_shows_every_bundled_model():
    result = runner.invoke(app, ["list", "models", "--format", "json"])
    assert result.exit_code == 0
    listed = {row["name"]: row for row in json.loads(result.stdout)}
    assert set(listed) == set(BUNDLED)
    assert listed["deepseek-v3"]["kv_bytes_per_token_fp16"] == 70_272


def test_a_config_json_through_the_cli():
    path = CONFIGS / "gpt-oss-20b.json"
    if not path.is_file():
        pytest.skip("gpt-oss-20b.json not collected")
    result = runner.invoke(app, ["report", "-m", str(path)])
    assert result.exit_code == 0, result.output
    assert "20.91 B parameters derived; published 20.90 B as bundled 'gpt-oss-20b'" in result.stdout
    assert load_model(str(path)).kv_bytes_per_token(DType.bf16) == 24 * 8 * 64 * 2 * 2
    assert [t.kind for t in load_model(str(path)).layer_types.values()] == [LayerKind.sliding, LayerKind.full]


# --- 7. CLI and the core's imports ---------------------------------------------------------------

def test_cli_numerics_table():
    r = runner.invoke(app, ["numerics", "--dtype", "fp16", "--seq-len", "8192"])
    assert r.exit_code == 0, r.output
    for needle in ("fp16", "11.0901", "-17.3287", "-9.7041", "3.6882", "65504", "N=8192"):
        assert needle in r.stdout, needle


def test_cli_numerics_json():
    r = runner.invoke(app, ["numerics", "--dtype", "bf16", "--seq-len", "4096", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["dtype"] == "bf16" and doc["seq_len"] == 4096
    assert round(doc["overflow_logit"], 2) == 88.72
    assert doc["expected_max_logit"] == pytest.approx(expected_max_normal_exact(4096))
    assert doc["expected_max_logit_asymptotic"] == pytest.approx(expected_max_normal(4096))


@pytest.mark.parametrize("args, needle", [
    (["--seq-len", "1"], "--seq-len"),
    (["--dtype", "tf32"], "tf32"),
    (["--logit-std", "0"], "--logit-std"),
    (["--logit-std", "1e308"], "--logit-std"),
    (["--dtype", "int8"], "int8"),
])
def test_cli_numerics_bad_input(args, needle):
    r = runner.invoke(app, ["numerics", *args])
    assert r.exit_code == 2, r.output
    err = r.stderr.strip().splitlines()
    assert 1 <= len(err) <= 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr


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


def test_table_warns_and_must_fit_errors():
    args = ["report", "--phase", "decode", "-m", "llama-3-70b", "-g", "h100-sxm", "-b", "64"]
    warned = runner.invoke(app, args)
    assert warned.exit_code == 0
    line = next(x for x in warned.stdout.splitlines() if x.startswith("WARNING"))
    assert "does not fit" in line and "160.312 GiB" in line and "79.647 GiB" in line
    refused = runner.invoke(app, args + ["--must-fit"])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert "--must-fit" in refused.stderr and "64 sequences" in refused.stderr and len(refused.stderr.splitlines()) <= 2
    ok = runner.invoke(app, ["report", "--phase", "decode", "-b", "8", "--must-fit", "-f", "json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["fits"] is True


def test_must_fit_is_a_decode_option():
    r = runner.invoke(app, ["report", "--must-fit"])
    assert r.exit_code == 2 and "--must-fit" in r.stderr and "decode" in r.stderr


# ------------------------------------------------------------------ the CLI

def _run(args, capsys):
    with pytest.raises(SystemExit) as done:
        app(args)
    out = capsys.readouterr()
    return done.value.code or 0, out.out, out.err


def test_report_phase_step(capsys):
    code, out, _ = _run(["report", "--phase", "step", "-m", "llama-3-8b", "-g", "h200-sxm", "-b", "8", "-L", "32K",
                         "--tp", "2", "-f", "json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["tp"] == 2 and d["context_len"] == 32768 and d["t_predicted_s"] > d["t_floor_s"] > 0
    code, out, _ = _run(["report", "--phase", "step", "-g", "h200-sxm", "--kvp", "2", "-L", "128K", "-b", "8"], capsys)
    assert code == 0 and "on 2 x" in out and "KVP 2" in out and "t_predicted" in out
    code, out, _ = _run(["report", "--phase", "step", "-m", "deepseek-v3", "-g", "h200-sxm", "-tp", "8", "-dcp", "8",
                         "-L", "32K", "-b", "8"], capsys)
    assert code == 0 and "on 8 x" in out and "(TP 8, DCP 8)" in out
    code, out, _ = _run(["report", "--phase", "step", "-g", "h200-sxm", "--step", "prefill", "--cp", "2", "-L", "32K"],
                        capsys)
    assert code == 0 and "ring over 2 GPUs" in out


@pytest.mark.parametrize("args, says", [
    (["--phase", "step", "--tp", "3"], "3 does not divide the 32 query heads"),
    (["--phase", "step", "--kvp", "9", "-L", "128"], "larger than the context in pages"),
    (["--phase", "step", "--tp", "8", "--dcp", "3"], "--dcp 3 must divide --tp 8"),
    (["--phase", "step", "-m", "llama-3-70b", "--tp", "8", "--dcp", "8"], "DCP <= TP / H_kv"),
    (["--phase", "step", "-L", "32K", "-b", "64", "-g", "h200-sxm"], "does not fit"),
    (["--phase", "decode", "--tp", "2"], "--tp applies to --phase step only"),
    (["--phase", "step", "--splits", "4"], "--splits applies to --phase prefill or decode only"),
    (["--phase", "step", "-L", "1k,2k"], "one --context-len"),
])
def test_report_step_bad_input_exits_2(args, says, capsys):
    code, _, err = _run(["report", *args], capsys)
    assert code == 2 and says in err


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


def _words(text: str) -> set[str]:
    """The words of a rendered table, its rules of dashes aside."""
    return {w for w in text.split() if set(w) != {"-"}}


@pytest.mark.parametrize("args", [["report"], ["report", "--phase", "decode"], ["capacity"], ["list", "gpus"]])
def test_cli_tables_fit_columns_80(monkeypatch, args):
    monkeypatch.delenv("COLUMNS", raising=False)
    full = runner.invoke(app, args)
    assert full.exit_code == 0, full.output
    monkeypatch.setenv("COLUMNS", "80")
    narrow = runner.invoke(app, args)
    assert narrow.exit_code == 0, narrow.output
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    assert _words(narrow.stdout) == _words(full.stdout)      # the same words, only laid out again
    assert narrow.stdout != full.stdout or max(len(line) for line in full.stdout.splitlines()) <= 80


# --- report --shape: a bare attention shape for kernel engineers (rooflab/shape.py) -------------------------------

def _rows_json(args: list[str]) -> list[dict]:
    r = runner.invoke(app, ["report", *args, "-f", "json"])
    assert r.exit_code == 0, r.output
    return [{k: v for k, v in row.items() if k not in ("num_layers", "model_t_floor_s")}
            for row in json.loads(r.stdout)["rows"]]


@pytest.mark.parametrize("phase", [[], ["--no-causal"], ["--phase", "decode"]])
def test_report_shape_equals_the_model_per_layer(phase):
    # Llama-3-8B (32 query heads, 8 KV heads, d 128) at T 8192: --shape 1,32,8,8192,128 is one of its layers
    model = ["-m", "llama-3-8b"] + (["-L", "8192"] if "decode" in phase else ["-T", "8192"])
    assert _rows_json(["--shape", "1,32,8,8192,128", *phase]) == _rows_json([*model, *phase])


def test_report_shape_text_names_the_shape_and_no_weights():
    r = runner.invoke(app, ["report", "--shape", "2,16,16,4096,192,128", "-g", "h200-sxm"])
    assert r.exit_code == 0, r.output
    assert "attention H 16, H_kv 16, d 192, d_v 128 (one layer, no model)" in r.stdout
    assert "T=4096, batch 2" in r.stdout and "next to 0 B of weights" in r.stdout


@pytest.mark.parametrize("value, says", [
    ("0,32,8,8192,128", "B (sequences in the batch) = 0"), ("-4,32,8,8192,128", "B"), ("nan,32,8,8192,128", "nan"),
    ("1,32,8,184467440737095516160,128", "T"), ("1,32,6,8192,128", "multiple of H_kv"), ("", "--shape"),
    ("1,32,8,8192", "4 fields"), ("1,32,8,8192,128,128,1", "7 fields"), ("1,32,8,,128", "T"),
])
def test_report_shape_refuses_bad_values_naming_shape(value, says):
    r = runner.invoke(app, ["report", "--shape", value])
    assert r.exit_code == 2 and "--shape" in r.output and says in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("extra", [["-m", "llama-3-8b"], ["--model", "qwen3-8b"], ["-T", "4096"], ["-b", "2"],
                                   ["--phase", "decode", "-L", "4096"], ["--phase", "step"]])
def test_report_shape_refuses_what_it_replaces(extra):
    r = runner.invoke(app, ["report", "--shape", "1,32,8,8192,128", *extra])
    assert r.exit_code == 2 and "--shape" in r.output


def test_report_published_rate_against_the_floor():
    # 169.3 TFLOP/s: FlashAttention-2 on an RTX 4090 at T 2048, d 128, fp16, non-causal (the figure, as
    # measurements/published/ records it); here it is only an argument to convert under the fa convention
    r = runner.invoke(app, ["report", "--shape", "1,32,32,2048,128", "--no-causal", "-g", "rtx-4090",
                            "--published-tflops", "169.3", "--convention", "fa"])
    assert r.exit_code == 0, r.output
    assert "published 169.3 TFLOP/s under the fa convention" in r.stdout and "BEATS" not in r.stdout
    fast = runner.invoke(app, ["report", "--shape", "1,32,32,2048,128", "--no-causal", "-g", "rtx-4090",
                               "--published-tflops", "5000", "-f", "json"])
    out = json.loads(fast.stdout)["published"]
    assert out["beats_floor"] is True and out["convention"] == "fa"
    text = runner.invoke(app, ["report", "--shape", "1,32,32,2048,128", "-g", "rtx-4090", "--published-tflops",
                               "5000"]).stdout
    assert "BEATS THE FLOOR" in text


@pytest.mark.parametrize("args, says", [
    (["--published-tflops", "100"], "--shape"), (["--convention", "fa"], "--shape"),
    (["--shape", "1,32,8,2048,128", "--convention", "fa_no_half"], "--published-tflops"),
    (["--shape", "1,32,8,2048,128", "--published-tflops", "0"], "--published-tflops"),
    (["--shape", "1,32,8,2048,128", "--published-tflops", "nan"], "--published-tflops"),
    (["--shape", "1,32,8,2048,128", "--published-tflops", "100", "--convention", "time"], "--convention"),
    (["--shape", "1,32,8,2048,128", "--published-tflops", "100", "--convention", "x"], "--convention"),
])
def test_report_published_rate_refused(args, says):
    r = runner.invoke(app, ["report", *args])
    assert r.exit_code == 2 and says in r.output

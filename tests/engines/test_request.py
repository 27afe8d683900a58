"""Tests of rooflab/engines/request.py: what-if questions on a logged start-up scale the logged terms, and
predict another log of the same run (vllm#10517's two max_model_len runs; tests/data/engine_logs/SOURCES.md).
"""

from __future__ import annotations


import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import Engine, EngineSettings, parse_accounting
from rooflab.engines.explain import explain_log
from rooflab.engines.logs import read_log
from rooflab.units import GiB
from support import ENGINE_LOGS, engine_capacity_bench


DATA = ENGINE_LOGS
bench = engine_capacity_bench()
CASES = bench.load_cases()


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


def test_what_if_predicts_another_log():
    """vllm#10517 posted two runs that differ only in max_model_len: the 20,000-token log's what-if at 29,000
    tokens lands on the 29,000-token log's 1,478 blocks."""
    case = next(c for c in CASES if c.get("log") == "vllm-llama-3.1-8b-instruct-rtx3090-tp1.log")
    from rooflab.engines.request import parse_what_if

    x = explain_log(read_log(DATA / case["log"]), load_model(DATA / case["model"]), load_gpu(DATA / case["gpu"]),
                    bench.settings(case), parse_what_if(["max-model-len=29000"]))
    assert x.what_if.num_blocks == pytest.approx(1478, rel=0.01)
    assert x.what_if.lines[1] == f"Maximum concurrency for 29000 tokens per request: {x.what_if.max_concurrency:.2f}x"


@pytest.mark.parametrize("given", [{"what_if"}, {"what_if", "max_num_seqs"}, {"what_if", "engine"}])
def test_what_if_without_a_log_asks_for_the_log(given):
    """Issue 24 round 2 D20: --what-if alone was told it 'applies with --engine or --engine-log', and --engine
    --what-if was then refused 'with --engine-log only': the first refusal now names what the second requires."""
    from rooflab.engines.request import WHAT_IF_NEEDS_LOG, EngineOptions, check_modes, engine_table_for
    from rooflab.errors import InputError

    with pytest.raises(InputError, match="^--what-if applies with --engine-log only"):
        if "engine" in given:
            engine_table_for(EngineOptions(model="llama-3-8b", gpu="h100-sxm", engine="vllm", what_if=("tp=2",)),
                             given)
        check_modes(given)
    assert "--engine or" not in WHAT_IF_NEEDS_LOG


# --- --engine-version and --vllm-use-v1 from the command line (hostile session12 D35, D36, D38) ----------------------

V0_11_2_LOG = str(DATA / "heldout4" / "vllm-v1-llama-3-8b-instruct-h200-maxlen1024.log")
SGLANG_LOG = str(DATA / "heldout5" / "sglang-v0.4.3.post2-deepseek-r1-h800x16-tp16-mem070.log")


def _capacity(*args):
    from typer.testing import CliRunner

    from rooflab.cli import app

    return CliRunner().invoke(app, ["capacity", *args, "-f", "json"])


def _refused(result, needle):
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) <= 2 and needle in result.stderr, result.stderr
    assert "Traceback" not in result.output and "EngineSettings" not in result.stderr


@pytest.mark.parametrize("engine, version, accounting, releases", [
    ("sglang", "V0.4.6", "sglang-v0.4", "SGLang v0.1.17 - v0.5.2 at v0.4.6"),
    ("vllm", "V0.8.4", "vllm-v0.8", "vLLM V1 v0.8.0 - v0.9.0.1 at v0.8.4")])
def test_a_capital_v_release_plans_that_release_of_that_engine(engine, version, accounting, releases):
    """D35: `--engine sglang --engine-version V0.4.6` planned vLLM (exit 0, engine vllm)."""
    import json

    r = _capacity("-m", "qwen3-30b-a3b", "-g", "h200-sxm", "--engine", engine, "--engine-version", version)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["engine"], doc["accounting"], doc["releases"]) == (engine, accounting, releases)


@pytest.mark.parametrize("args, needle", [
    (["--engine", "vllm", "--engine-version", "V99.0"], "--engine-version 'V99.0': no vLLM accounting"),
    (["--engine", "vllm", "--engine-version", "0.10.99999"], "--engine-version: '0.10.99999' is not an engine release"),
    (["--engine-log", V0_11_2_LOG, "--engine-version", "0.8.4"],
     "--engine-version 0.8.4 contradicts the log's v0.11.2"),
    (["--engine-log", V0_11_2_LOG, "--engine-version", "V0.10.1"], "--engine-version 0.10.1 contradicts the log's"),
    (["--engine-log", V0_11_2_LOG, "--vllm-use-v1", "0"],
     "--vllm-use-v1 0 (V0) contradicts the log's V1 engine (line 6"),
    (["--engine-log", V0_11_2_LOG, "--vllm-use-v1", "0", "--engine-version", "0.8.4"],
     "--vllm-use-v1 0 (V0) contradicts"),
    (["--engine-log", SGLANG_LOG, "--engine-version", "vllm-v1"], "is vLLM's, but --engine-log "),
])
def test_a_version_refused_names_the_option_and_what_it_contradicts(args, needle):
    """D35 (V99.0 accepted, a capital-V release not checked against the log), D36 (refused naming
    EngineSettings.release), D38 (a release outside the log's accounting, and VLLM_USE_V1=0 against a V1 engine
    line, taken); an engine taken from the log is not called --engine."""
    _refused(_capacity("-m", "llama-3-8b", "-g", "h200-sxm", *args), needle)


def test_an_sglang_log_takes_a_capital_v_sglang_release():
    """D35: with an SGLang log (no --engine) 'V0.5.3' read as vLLM's V1 default and was refused as '... but --engine
    is vllm'."""
    import json

    r = _capacity("-m", "deepseek-v3", "-g", "h800", "--engine-log", SGLANG_LOG, "--engine-version", "V0.5.3")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["releases"] == "SGLang v0.5.3 - v0.5.10 at v0.5.3"


def test_a_concurrency_line_alone_needs_a_v1_version(tmp_path):
    """vLLM V1's 'Maximum concurrency' line alone (an excerpt) is read once --engine-version names a V1 release:
    10.00x at 2,048 tokens on Llama-3-8B (one KV group) is 10 x ceil(2,048 / 16) = 1,280 blocks; without a version
    it is refused naming the option."""
    import json

    log = tmp_path / "excerpt.log"
    log.write_text("INFO 07-30 11:56:04 [kv_cache_utils.py:637] Maximum concurrency for 2,048 tokens per request: "
                   "10.00x\n")
    _refused(_capacity("-m", "llama-3-8b", "-g", "h100-sxm", "--engine-log", str(log)), "--engine-version v1")
    r = _capacity("-m", "llama-3-8b", "-g", "h100-sxm", "--engine-log", str(log), "--engine-version", "0.10.2")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["num_blocks"] == 1280 and doc["anchored"] and doc["logged"]["max_concurrency"] == 10.0
    assert any("within 10 tokens" in n for n in doc["notes"])


@pytest.mark.parametrize("text, images", [(None, None), ('{"image": 0}', 0), ('{"image": 5}', 5),
                                          ('{"image": {"count": 2, "width": 512}}', 2), ("{}", None)])
def test_limit_mm_per_prompt_reads_vllms_json(text, images):
    from rooflab.engines.request import parse_mm_limit

    assert parse_mm_limit(text) == images


@pytest.mark.parametrize("text", ["0", '{"video": 1}', '{"image": -1}', '{"image": true}', "[1]"])
def test_limit_mm_per_prompt_refusals_name_the_option(text):
    from rooflab.errors import InputError
    from rooflab.engines.request import parse_mm_limit

    with pytest.raises(InputError, match="--limit-mm-per-prompt"):
        parse_mm_limit(text)


def test_no_images_plans_gemma_3_text_only():
    """--limit-mm-per-prompt '{"image": 0}' and --skip-mm-profiling leave vLLM v0.11.2's 63 x 16,384 x 5,376 x 2 B
    of dummy encoder outputs and their 63 x 3 x 896^2 x 2 B of inputs (profile.py) out of the activation peak;
    SGLang has neither option."""
    import json

    args = ("-m", "gemma-3-27b", "-g", "b200", "--engine", "vllm", "--engine-version", "0.11.2",
            "--max-model-len", "32768", "--max-num-batched-tokens", "16384")
    peaks = []
    for extra in ((), ("--limit-mm-per-prompt", '{"image": 0}'), ("--skip-mm-profiling",)):
        r = _capacity(*args, *extra)
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        peaks.append(next(t["bytes"] for t in doc["terms"] if t["name"] == "activation_peak"))
    assert peaks[0] - peaks[1] == 63 * 16384 * 5376 * 2 + 63 * 3 * 896 * 896 * 2 and peaks[1] == peaks[2]
    _refused(_capacity("-m", "gemma-3-27b", "-g", "b200", "--engine", "sglang", "--skip-mm-profiling"),
             "--skip-mm-profiling is vLLM's")


_V1_T4_LOG = ("INFO 09-28 09:44:43 [core.py:76] Initializing a V1 LLM engine (v0.10.2) with config: model='m', "
              "dtype=torch.float16, max_seq_len=512, tensor_parallel_size=1, kv_cache_dtype=auto\n{sampler}"
              "INFO 09-28 09:47:45 [gpu_worker.py:298] Available KV cache memory: 6.46 GiB\n")
_T4 = ("-m", "llama-3.1-8b", "-g", "t4", "--max-num-seqs", "192", "--max-num-batched-tokens", "2048")


def test_no_flashinfer_against_a_log_that_used_it_is_refused(tmp_path):
    """--no-flashinfer is one of the options a log's stated setting is checked against (engine_table_for's
    `fields`): against v0.10.2's 'Using FlashInfer for top-p & top-k sampling' (topk_topp_sampler.py) it is refused
    naming both (hostile session 16: dropped, exit 0); against 'FlashInfer is not available' it agrees."""
    log = tmp_path / "engine.log"
    log.write_text(_V1_T4_LOG.format(sampler="INFO 09-28 09:44:43 [topk_topp_sampler.py:36] Using FlashInfer for "
                                             "top-p & top-k sampling.\n"))
    _refused(_capacity(*_T4, "--engine-log", str(log), "--no-flashinfer"), "--no-flashinfer contradicts the log")
    log.write_text(_V1_T4_LOG.format(sampler="WARNING 09-28 09:44:43 [topk_topp_sampler.py:69] FlashInfer is not "
                                             "available. Falling back to the PyTorch-native implementation of top-p & "
                                             "top-k sampling.\n"))
    assert _capacity(*_T4, "--engine-log", str(log), "--no-flashinfer").exit_code == 0


def test_a_multimodal_option_the_log_contradicts_is_refused(tmp_path):
    """--limit-mm-per-prompt against a log's 'limit_mm_per_prompt': {'image': 0} (vLLM v0.11.2 non-default args):
    refused naming both; the same value agrees."""
    log = tmp_path / "gemma.log"
    log.write_text("INFO 09-28 09:44:40 [utils.py:253] non-default args: {'model': 'google/gemma-3-27b-it', "
                   "'limit_mm_per_prompt': {'image': 0}}\n"
                   "INFO 09-28 09:44:43 [core.py:76] Initializing a V1 LLM engine (v0.11.2) with config: "
                   "model='google/gemma-3-27b-it', dtype=torch.bfloat16, max_seq_len=131072, tensor_parallel_size=1, "
                   "kv_cache_dtype=auto\n"
                   "INFO 09-28 09:47:45 [gpu_worker.py:298] Available KV cache memory: 20.00 GiB\n")
    base = ("-m", "gemma-3-27b", "-g", "h100-sxm", "--engine-log", str(log))
    _refused(_capacity(*base, "--limit-mm-per-prompt", '{"image": 2}'),
             "--limit-mm-per-prompt 2 contradicts the log's 0")
    assert _capacity(*base, "--limit-mm-per-prompt", '{"image": 0}').exit_code == 0

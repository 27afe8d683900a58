"""Tests of `rooflab capacity --engine-version`: a release as the engine prints it picks the accounting that release
used and reaches the release-dependent terms (EngineSettings.release); the accountings' labels keep working.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rooflab.cli import app

runner = CliRunner()


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
    (["--engine", "vllm", "--engine-version", "0.21.0"], "--engine-version '0.21.0': no vLLM accounting rooflab "
                                                          "models covers v0.21.0"),
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
    assert "vLLM v0.2 (0.2.5 - 0.6.3), v0.6.4" in text and "SGLang v0.4 (0.1.17 - 0.5.2) or v0.5" in text


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

"""The capacity planner, and the CLI for `rooflab report --phase decode` and `rooflab capacity`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rooflab import DType, load_gpu, load_model
from rooflab.capacity import plan_capacity
from rooflab.cli import app
from rooflab.errors import InputError
from rooflab.units import GiB, KiB

runner = CliRunner()
LLAMA = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")


def test_capacity_plan_arithmetic():
    plan = plan_capacity(LLAMA, H100, 8192)
    assert plan.kv_bytes_per_token == 128 * KiB
    assert plan.weights_bytes == LLAMA.total_parameters * 2
    assert plan.kv_budget_bytes == int(H100.hbm_capacity_bytes * 0.9) - plan.weights_bytes
    assert plan.num_blocks == plan.kv_budget_bytes // (16 * 128 * KiB)
    assert plan.max_sequences_paged == plan.num_blocks // 512
    assert plan.max_context_len == plan.num_blocks * 16
    # at the model's own max length, paging and max-length reservation hold the same sequences
    assert plan.max_sequences_paged == plan.max_sequences_contiguous == 56
    assert plan.reason is None


def test_paging_fits_more_short_sequences():
    plan = plan_capacity(LLAMA, H100, 2000)
    assert plan.max_sequences_contiguous == 56          # 8192 tokens reserved per request
    assert plan.max_sequences_paged == plan.num_blocks // 125
    assert plan.paging_gain > 4


def test_fp8_kv_doubles_tokens():
    fp16 = plan_capacity(LLAMA, H100, 4096)
    fp8 = plan_capacity(LLAMA, H100, 4096, kv_dtype=DType.fp8_e4m3)
    assert fp8.kv_bytes_per_token * 2 == fp16.kv_bytes_per_token
    assert fp8.max_context_len == pytest.approx(2 * fp16.max_context_len, rel=1e-3)


def test_workload_that_does_not_fit_is_an_answer():
    plan = plan_capacity(LLAMA, H100, 10_000_000)
    assert plan.max_sequences_paged == 0 and "longest that fits" in plan.reason
    starved = plan_capacity(LLAMA, H100, 1000, activation_reserve_bytes=200 * GiB)
    assert starved.max_sequences_paged == 0 and starved.kv_budget_bytes == 0 and "no memory left" in starved.reason


@pytest.mark.parametrize("kwargs, needle", [
    (dict(gpu_memory_utilization=0), "utilisation"),
    (dict(gpu_memory_utilization=1.01), "utilisation"),
    (dict(page_size=0), "page size"),
    (dict(activation_reserve_bytes=-1), "activation reserve"),
])
def test_capacity_bad_input(kwargs, needle):
    with pytest.raises(InputError, match=needle):
        plan_capacity(LLAMA, H100, 4096, **kwargs)


def test_weights_that_do_not_fit_are_an_error():
    with pytest.raises(InputError, match="do not fit"):
        plan_capacity(load_model("llama-3.1-405b"), H100, 4096)


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

"""Honest reports: the decode report says whether the batch fits (weights + KV on one GPU)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.cost.batch import DecodeBatch
from rooflab.kvcache import batch_memory, kv_layout
from rooflab.load import load_gpu, load_model
from rooflab.report import decode_report, prefill_report
from rooflab.units import DType, GiB

runner = CliRunner()
LLAMA70, H100 = load_model("llama-3-70b"), load_gpu("h100-sxm")


def test_llama_70b_batch_64_does_not_fit_one_h100():
    """The issue's example: 64 sequences of 8192 tokens of Llama-3-70B on one H100 cannot fit.

    KV: 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 320 KiB a token; 8,193 tokens (the step writes one)
    in 513 pages of 16 = 8,208 tokens -> 2.505 GiB a sequence, 160.3 GiB for 64; weights alone are ~131 GiB."""
    r = decode_report(LLAMA70, H100, DecodeBatch.uniform(8192, 64))
    assert r.fits is False
    assert r.memory.kv_bytes == 64 * 80 * 8208 * 8 * 128 * 2 * 2
    assert r.memory.weights_bytes == LLAMA70.weight_bytes(None) > 130 * GiB
    assert r.memory.hbm_bytes == H100.hbm_capacity_bytes
    doc = r.to_dict()
    assert doc["fits"] is False and doc["memory"]["needed_bytes"] == r.memory.needed_bytes


def test_small_batch_fits_and_the_sum_is_the_layouts():
    model, gpu = load_model("llama-3-8b"), H100
    batch = DecodeBatch(lengths=__import__("numpy").array([1000.0, 5000.0]), counts=__import__("numpy").array([3.0, 2.0]))
    m = batch_memory(model, gpu, batch, DType.fp16, 16, q_len=4)
    per = [kv_layout(model, n + 4, DType.fp16, 16).bytes_per_sequence for n in (1000, 5000)]
    assert m.kv_bytes == 3 * per[0] + 2 * per[1]
    assert m.fits and decode_report(model, gpu, batch, q_len=4).fits is True


def test_windows_and_fp8_shrink_what_a_batch_holds():
    gemma = load_model("gemma-2-9b")
    batch = DecodeBatch.uniform(8192, 32)
    full = batch_memory(gemma, H100, batch, DType.bf16)
    fp8 = batch_memory(gemma, H100, batch, DType.fp8_e4m3)
    assert fp8.kv_bytes * 2 == full.kv_bytes
    assert full.kv_bytes < 32 * kv_layout(gemma, 8193, DType.bf16).bytes_per_token_full * 8208   # windows keep less


def test_prefill_reports_have_no_fit_field():
    r = prefill_report(LLAMA70, H100)
    assert r.fits is None and "fits" not in r.to_dict()


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

"""Tests of rooflab/step/attention.py: the decode attention models (a GQA group's KV read once, or once per query
head as TensorRT-LLM's masked MHA kernel reads it), the engine-and-version rule that picks one, and the measured
L2 share the per-query-head model takes."""

from __future__ import annotations

import csv
import dataclasses
import statistics

import pytest

from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.load import data_dir, load_gpu, load_model
from rooflab.step import (PER_QUERY_HEAD_L2_SHARE, DecodeAttention, decode_attention_of, engine_decode_attention,
                          step_report)

H200 = load_gpu("h200-sxm")
MISTRAL = load_model("mistral-7b-v0.1")          # 32 query heads over 8 KV heads: a group of 4
LLAMA2_70B = load_model("llama-2-70b")           # a group of 8 (XQA's precompiled kernels)
LLAMA2_7B = load_model("llama-2-7b")             # multi-head attention: a group of 1
FP8_KV = Deployment(weight_format="fp8", kv_cache_dtype="fp8_e4m3")


def _attention(report):
    return next(r for r in report.rows if r.label.startswith("attention ["))


@pytest.mark.parametrize("engine, version, model, tp, expected", [
    ("tensorrt-llm", "0.9.0", MISTRAL, 1, "per_query_head"),        # group 4: no precompiled XQA kernel
    ("tensorrt-llm", "0.9.0", LLAMA2_70B, 1, "shared"),              # group 8, d 128: XQA
    ("tensorrt-llm", "0.9.0", LLAMA2_70B, 2, "shared"),              # 32 / 4 heads a GPU: still a group of 8
    ("tensorrt-llm", "0.5.0", LLAMA2_70B, 2, "per_query_head"),      # before XQA (0.8)
    ("tensorrt-llm", "0.9.0", LLAMA2_7B, 1, "shared"),               # MHA: one KV head a query head either way
    ("tensorrt-llm", "1.0", MISTRAL, 1, "shared"),                   # later versions: not read, shared assumed
    ("vllm", "0.7.4.dev181+gf35f8e22", MISTRAL, 1, "shared"),
    ("sglang", "", MISTRAL, 1, "shared"),                            # no version needed for other engines
])
def test_engine_decode_attention(engine, version, model, tp, expected):
    assert engine_decode_attention(engine, version, model, tp) is DecodeAttention(expected)


def test_bad_choices_are_refused():
    with pytest.raises(InputError, match="depends on its release: engine version .main. names none"):
        engine_decode_attention("tensorrt-llm", "main", MISTRAL)
    with pytest.raises(InputError, match="decode attention must be one of shared, per_query_head"):
        decode_attention_of("xqa")
    with pytest.raises(InputError, match="decode attention must be one of"):
        step_report(MISTRAL, H200, 8, 1024, decode_attention="mmha")


def test_l2_share_is_the_measured_median():
    path = data_dir("measurements") / "attention" / "h200-gqa-per-query-head.csv"
    rows = list(csv.DictReader(line for line in path.read_text().splitlines() if not line.startswith("#")))
    assert len(rows) >= 6
    ratios = [float(r["aliased_s"]) / float(r["distinct_s"]) for r in rows]
    assert PER_QUERY_HEAD_L2_SHARE == pytest.approx(statistics.median(ratios), abs=5e-4)
    # the group's repeated reads cost most of a read from distinct memory, far more than the shared read
    assert all(float(r["aliased_s"]) > 2 * float(r["gqa_s"]) for r in rows)


def test_per_query_head_prices_the_mha_equivalent_read():
    """Mistral-7B at batch 120 x 1152, fp8 KV: the per-query-head row is the share times the shared model's
    prediction for the same layer with one KV head a query head (the same bytes as the group read 4 times); its
    floor stays the shared read's (the physical minimum); nothing else in the step moves."""
    shared = step_report(MISTRAL, H200, 120, 1152, deployment=FP8_KV)
    per_head = step_report(MISTRAL, H200, 120, 1152, deployment=FP8_KV, decode_attention="per_query_head")
    mha_model = dataclasses.replace(MISTRAL, num_kv_heads=MISTRAL.num_qo_heads)
    mha = step_report(mha_model, H200, 120, 1152, deployment=FP8_KV, check_memory=False)
    a_shared, a_head, a_mha = _attention(shared), _attention(per_head), _attention(mha)
    assert "1 split(s)" in a_mha.label
    assert a_head.t_predicted_s == pytest.approx(PER_QUERY_HEAD_L2_SHARE * a_mha.t_predicted_s, rel=1e-9)
    assert a_head.t_predicted_s > 3 * a_shared.t_predicted_s
    assert a_head.t_floor_s == a_shared.t_floor_s and a_head.hbm_bytes == a_shared.hbm_bytes
    assert "KV read per query head" in a_head.label and "masked MHA" in a_head.source
    others = [(r.label, r.t_predicted_s) for r in shared.rows if r is not a_shared]
    assert others == [(r.label, r.t_predicted_s) for r in per_head.rows if r is not a_head]
    assert per_head.t_floor_s == shared.t_floor_s
    assert per_head.to_dict()["decode_attention"] == "per_query_head"
    assert shared.to_dict()["decode_attention"] == "shared"
    assert any("once per query head" in n for n in per_head.notes)
    assert not any("once per query head" in n for n in shared.notes)


@pytest.mark.parametrize("model, kwargs", [
    (LLAMA2_7B, {}),                                           # MHA: nothing to read twice
    (MISTRAL, {"step": "prefill"}),                            # a prefill is flash attention
])
def test_per_query_head_leaves_what_it_does_not_model(model, kwargs):
    a = step_report(model, H200, 16, 2048, deployment=FP8_KV, check_memory=False, **kwargs)
    b = step_report(model, H200, 16, 2048, deployment=FP8_KV, check_memory=False, decode_attention="per_query_head",
                    **kwargs)
    assert [(r.label, r.t_predicted_s) for r in a.rows] == [(r.label, r.t_predicted_s) for r in b.rows]


def test_fp8_ds_mla_decode_reads_the_656_byte_layout():
    """--kv-cache-dtype fp8_ds_mla: the step's MLA decode attention reads the cache it holds, 656 bytes a token a
    layer (specs.layers.MLA_SPARSE_FP8_BYTES: 512 fp8 latent + 4 fp32 scales + 64 bf16 rope), not the fp8 latent's
    576: DeepSeek-V3 at TP 8 (the latent replicated on every GPU), 32 decodes of 8,192 tokens, 61 layers, read
    32 x 8,192 x 61 x (656 - 576) = 1,279,262,720 bytes more a step than a plain fp8 cache, as much as the cache
    the memory check counts grows (test_memory.test_fp8_ds_mla_is_capacitys_layout)."""
    model = load_model("deepseek-v3")
    plain, sparse = (step_report(model, H200, 32, 8192, deployment=Deployment(
        tensor_parallel=8, kv_cache_dtype="fp8_e4m3", mla_sparse_fp8=flag)) for flag in (False, True))
    extra = 32 * 8192 * 61 * (656 - 576)
    assert extra == 1_279_262_720
    assert _attention(sparse).hbm_bytes - _attention(plain).hbm_bytes == pytest.approx(extra, rel=1e-9)
    assert sparse.kv_bytes_per_gpu - plain.kv_bytes_per_gpu == extra
    assert "fp8_ds_mla (656 bytes a token)" in _attention(sparse).label
    assert _attention(sparse).t_predicted_s > _attention(plain).t_predicted_s

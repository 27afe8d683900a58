"""Tests of rooflab/report/ through its public names (rooflab.report); the published rate's are in
test_published_rate.py.

Prefill and decode reports: whether a decode batch fits one GPU (Llama-3-70B, 64 x 8192 tokens, does not fit
an H100), huge batches priced in closed form, the fitted parallelism, rows and frames carrying the chapter's
figures (chapter "Naive attention and the online softmax": Llama-3-8B on an H100 SXM in fp16), facts whose
keys say what their values are, MLA's intensity formula, a bare shape as one layer of its model; bad batches
and switches refused by name, and the same answer for every form of a valid one.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from rooflab.cost.paged import DecodeBatch
from rooflab.kvcache import batch_memory, kv_layout
from rooflab.limits import MAX_BATCH, MAX_TOKENS
from rooflab.load import load_gpu, load_model
from rooflab.report import decode_report, prefill_report
from rooflab.units import DType, GiB
from fuzz_support import bounded
from support import HUGE, refused


@pytest.mark.parametrize("argument, name", [("page_size", "page size"), ("splits", "splits")])
def test_decode_report_refuses_ints_past_2_64(llama, h100, argument, name):
    refused(lambda: decode_report(llama, h100, [8192], **{argument: HUGE}), name)


def test_reports_with_huge_batches_run(llama, h100):
    report = prefill_report(llama, h100, MAX_TOKENS, MAX_BATCH)
    assert report.facts.naive_max_seq_len == 0 and not report.facts.naive_fits
    assert prefill_report(llama, h100, 8192, Fraction(8192)).batch == 8192


# --- reports and workloads (13d, 13e, 13g) ------------------------------------------------------------------------

@pytest.mark.parametrize("value", [8192, np.int64(8192), True, "8192", b"8192", Fraction(8192), Decimal(8192),
                                   np.array(8192), np.array([[8192]]), None])
def test_decode_report_wants_a_list_or_a_decode_batch(llama, h100, value):
    message = refused(lambda: decode_report(llama, h100, value), "context_lens")
    assert "DecodeBatch.uniform" in message


def test_decode_report_same_answer_for_every_form_of_a_batch(llama, h100):
    base = decode_report(llama, h100, DecodeBatch.uniform(8192, 4)).to_dict()
    for lens in ([8192] * 4, (8192,) * 4, np.array([8192] * 4), np.array([8192.0] * 4), [np.int64(8192)] * 4):
        report = decode_report(llama, h100, lens).to_dict()
        assert report["rows"] == base["rows"] and report["facts"] == base["facts"]
        assert report["context_lens"] == [8192] * 4


@pytest.mark.parametrize("value", [[8192], [8192, 1024], np.array([8192, 1]), "8192", 1.5, True, 0, MAX_TOKENS + 1,
                                   None, math.nan])
@pytest.mark.parametrize("argument", ["seq_len", "batch"])
def test_prefill_report_wants_one_whole_number(llama, h100, argument, value):
    refused(lambda: prefill_report(llama, h100, **{argument: value}), argument)


def test_prefill_report_same_answer_for_every_form_of_a_whole_number(llama, h100):
    base = prefill_report(llama, h100, 8192, 2).to_dict()
    for t, b in ((np.int64(8192), 2), (8192.0, np.float64(2)), (Fraction(8192), Decimal(2))):
        report = prefill_report(llama, h100, t, b).to_dict()
        assert report == base
    assert prefill_report(llama, h100, 8192, 2, "fp16").to_dict() == base


LLAMA70 = load_model("llama-3-70b")
H100 = load_gpu("h100-sxm")


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


def test_prefill_reports_have_no_fit_field():
    r = prefill_report(LLAMA70, H100)
    assert r.fits is None and "fits" not in r.to_dict()


# --- bounded work -----------------------------------------------------------------------------------------

def test_a_huge_uniform_batch_is_priced_in_closed_form():
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    with bounded():         # a watchdog for a walk of 2^24 sequences, not a speed bound
        big = decode_report(model, gpu, DecodeBatch.uniform(8192, 1 << 24))
    one = decode_report(model, gpu, DecodeBatch.uniform(8192, 1))
    assert big.rows[0].kv_bytes == one.rows[0].kv_bytes * (1 << 24)
    assert big.context_lens is None and big.context_len_counts == ((8192, 1 << 24),)


def test_decode_report_uses_the_fitted_parallelism():
    from rooflab.report import decode_report
    from rooflab import load_model

    h200 = decode_report(load_model("llama-3-8b"), load_gpu("h200-sxm"), [32768])
    h100 = decode_report(load_model("llama-3-8b"), load_gpu("h100-sxm"), [32768])
    assert h200.facts.units_per_sm == 1.5 and h200.facts.recommended_splits == 25
    assert h100.facts.units_per_sm == 1.0 and h100.facts.recommended_splits == 17


LLAMA8 = load_model("llama-3-8b")


H200 = load_gpu("h200-sxm")


# --- DataFrame views ----------------------------------------------------------------------------

def test_report_to_frame_matches_rows():
    report = prefill_report(LLAMA8, H100)
    frame = report.to_frame()
    assert list(frame.index) == ["naive", "flash"]
    for row in report.rows:
        assert frame.loc[row.variant, "hbm_bytes"] == row.hbm_bytes
        assert frame.loc[row.variant, "t_floor_s"] == row.t_floor_s
    assert frame.loc["flash", "tile"] == "{}x{}".format(*report.rows[1].tile)
    launches = report.to_frame(breakdown=True)
    assert list(launches.index) == [("naive", "qk"), ("naive", "softmax"), ("naive", "pv")]
    assert launches["hbm_bytes"].sum() == pytest.approx(frame.loc["naive", "hbm_bytes"])
    decode = decode_report(LLAMA8, H200, [32768], splits=8).to_frame()
    assert list(decode.index) == ["paged", "split_kv (8 splits)"]


# The chapter prints three or four significant figures; compare at that precision.
REL = 5e-4


def test_report_rows_carry_the_chapter_figures(llama, h100):
    rep = prefill_report(llama, h100).to_dict()
    naive, flash = rep["rows"]
    assert (naive["variant"], flash["variant"]) == ("naive", "flash")
    assert naive["s_bytes"] / GiB == pytest.approx(4.0)
    assert naive["hbm_bytes"] / GiB == pytest.approx(16.156, rel=REL)
    assert rep["facts"]["naive_fits"] is True
    assert [k["kernel"] for k in naive["kernels"]] == ["qk", "softmax", "pv"]


@pytest.mark.parametrize("causal", ["no", None, 0])
def test_causal_must_be_a_switch(causal):
    """causal='no' is truthy: it was read as a causal mask without a word."""
    from rooflab.errors import InputError
    from rooflab.report import prefill_facts, prefill_report

    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    for call in (prefill_report, prefill_facts):
        with pytest.raises(InputError, match="causal"):
            call(model, gpu, causal=causal)


# --- labels that said something else than their figures ---------------------------------------------------------

def test_prefill_facts_json_has_no_key_naming_the_inverse_of_its_value():
    """facts held flash_over_naive_intensity and naive_over_flash_intensity, both 102.76: the second named the
    inverse of its value."""
    facts = prefill_report(load_model("llama-3-8b"), load_gpu("h100-sxm")).to_dict()["facts"]
    assert "naive_over_flash_intensity" not in facts and facts["flash_over_naive_intensity"] > 1


def test_mla_decode_facts_say_the_mla_intensity_formula():
    from rooflab.render import render_report

    text = render_report(decode_report(load_model("deepseek-v3"), load_gpu("h200-sxm"), DecodeBatch.uniform(32000, 8)))
    assert "2h (d_qk + d_v) / (b d_latent)" in text and "2h/(b h_kv)" not in text
    assert "context 32,000 x 8" in text                       # a uniform batch, not the length eight times
    gqa = render_report(decode_report(load_model("llama-3-8b"), load_gpu("h100-sxm"), [8192, 4096]))
    assert "2h/(b h_kv) = 4.0 FLOP/byte" in gqa and "context 8192, 4096" in gqa


# --- a bare attention shape (report --shape): the model path's own rows, and a published rate as time ------------

#: Row fields that describe the whole model, not the layer (a shape is one layer): the rest must be equal.
_MODEL_WIDE = ("num_layers", "model_t_floor_s")


def _layer_figures(row) -> dict:
    return {k: v for k, v in row.to_dict().items() if k not in _MODEL_WIDE}


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm", "a100-sxm-80gb", "t4"])
@pytest.mark.parametrize("causal", [True, False])
def test_a_shape_prefills_as_one_layer_of_its_model(gpu, causal):
    # Llama-3-8B's heads (32 / 8 x 128) as --shape 1,32,8,8192,128: the same rows, floors and predictions
    from rooflab.shape import parse_shape

    g, shape = load_gpu(gpu), parse_shape("1,32,8,8192,128")
    bare = prefill_report(shape.layer, g, shape.seq_len, shape.batch, causal=causal)
    model = prefill_report(load_model("llama-3-8b"), g, 8192, 1, causal=causal)
    assert [_layer_figures(r) for r in bare.rows] == [_layer_figures(r) for r in model.rows]
    assert bare.bare_shape and not model.bare_shape and bare.num_layers == 1
    assert bare.facts.weights_bytes == 0 and bare.facts.naive_max_seq_len >= model.facts.naive_max_seq_len
    assert bare.facts.flash_over_naive_intensity == model.facts.flash_over_naive_intensity


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm"])
def test_a_shape_decodes_as_one_layer_of_its_model(gpu):
    from rooflab.shape import parse_shape

    g, shape = load_gpu(gpu), parse_shape("16,32,8,8192,128")         # T is the context in decode
    lens = DecodeBatch.uniform(shape.seq_len, shape.batch)
    bare = decode_report(shape.layer, g, lens)
    model = decode_report(load_model("llama-3-8b"), g, DecodeBatch.uniform(8192, 16))
    assert [_layer_figures(r) for r in bare.rows] == [_layer_figures(r) for r in model.rows]
    assert bare.facts.recommended_splits == model.facts.recommended_splits
    assert bare.facts.weight_bytes_per_step == 0 and bare.facts.attention_flop_share == 1
    assert bare.facts.kv_bytes_per_step == pytest.approx(model.facts.kv_bytes_per_step / 32)   # one of 32 layers
    assert bare.memory.weights_bytes == 0 and bare.fits


def test_a_gpu_without_an_exp_rate_shows_the_exp_roof_as_unknown_not_zero():
    """The MI300X's YAML gives no exp rate: its t_exp printed 0.0 ns (an unknown shown as zero)."""
    import csv
    import io
    import json

    from rooflab.render import render_report
    from rooflab.output import Format

    mi300x = load_gpu("mi300x")
    assert mi300x.exp_per_s is None
    r = prefill_report(load_model("llama-3-8b"), mi300x, 8192, 1, DType.fp16, True)
    assert r.exp_per_s is None
    doc = json.loads(render_report(r, Format.json))
    assert doc["exp_per_s"] is None and all(row["t_exp_s"] is None for row in doc["rows"])
    rows = list(csv.DictReader(io.StringIO(render_report(r, Format.csv))))
    assert rows and all(row["t_exp_s"] == "" for row in rows)
    table = render_report(r, Format.table)
    assert "0.0 ns" not in table and "gives no exp (special-function) rate" in table
    assert r.to_frame()["t_exp_s"].isna().all() and r.to_frame(breakdown=True)["t_exp_s"].isna().all()
    h100 = prefill_report(load_model("llama-3-8b"), load_gpu("h100-sxm"), 8192, 1, DType.fp16, True)
    assert h100.exp_per_s > 0 and json.loads(render_report(h100, Format.json))["rows"][0]["t_exp_s"] > 0

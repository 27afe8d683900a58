"""Tests of rooflab/report/published_rate.py: a published rate for a --shape as time under its convention."""

from __future__ import annotations

import json

import pytest

from rooflab.cost.paged import DecodeBatch
from rooflab.load import load_gpu
from rooflab.report import decode_report, prefill_report
from rooflab.units import DType


def test_a_published_rate_is_time_under_its_convention():
    # FlashAttention's count 4 B H T^2 d (FlashAttention-2, arXiv 2307.08691, section 4.1), halved when causal;
    # FlashMLA's 2 H T_q T_kv (d + d_v), never halved. The rates below are arguments, not measurements.
    from rooflab.report import with_published_rate
    from rooflab.shape import parse_shape

    shape, h100 = parse_shape("1,32,8,8192,128"), load_gpu("h100-sxm")
    report = prefill_report(shape.layer, h100, shape.seq_len, shape.batch, causal=True)
    fa = with_published_rate(report, shape, 500, "fa").published
    whole = 4 * 1 * 32 * 8192 ** 2 * 128
    assert fa.flops == whole / 2 and fa.t_published_s == pytest.approx(whole / 2 / 500e12)
    no_half = with_published_rate(report, shape, 500, "fa_no_half").published
    assert no_half.flops == whole and no_half.t_published_s == pytest.approx(2 * fa.t_published_s)
    flash = next(r for r in report.rows if r.variant == "flash")
    assert fa.floor_row == "flash" and fa.t_floor_s == flash.t_floor_s and fa.t_predicted_s == flash.t_predicted_s
    assert not fa.beats_floor and fa.floor_over_published == pytest.approx(flash.t_floor_s / fa.t_published_s)
    # a rate above the roof the floor allows (a test argument, faster than any run can be) is named as beating it
    fast = with_published_rate(report, shape, 2 * h100.matmul_flop_per_s(DType.fp16) / 1e12, "fa").published
    assert fast.beats_floor and fast.to_dict()["beats_floor"] is True
    out = with_published_rate(report, shape, 500).to_dict()                   # the JSON contract gains 'published'
    assert out["published"]["convention"] == "fa" and out["bare_shape"] is True
    json.dumps(out, allow_nan=False)


def test_a_published_rate_in_decode_counts_the_context():
    from rooflab.report import with_published_rate
    from rooflab.shape import parse_shape

    shape = parse_shape("64,32,8,4096,128")
    report = decode_report(shape.layer, load_gpu("h200-sxm"), DecodeBatch.uniform(4096, 64))
    p = with_published_rate(report, shape, 10, "fa").published          # one query a sequence, never halved
    assert p.flops == 2 * 64 * 32 * 1 * 4096 * 256 and p.floor_row == "paged"


@pytest.mark.parametrize("tflops, convention, says", [
    (0, "fa", "--published-tflops"), (-1, "fa", "--published-tflops"), (float("nan"), "fa", "--published-tflops"),
    (1e9, "fa", "--published-tflops"), ("100", "fa", "--published-tflops"), (100, "time", "--convention time"),
    (100, "flops", "--convention"), (100, None, "--convention"),
])
def test_a_bad_published_rate_is_refused(tflops, convention, says):
    from rooflab.errors import InputError
    from rooflab.report import with_published_rate
    from rooflab.shape import parse_shape

    shape = parse_shape("1,32,8,2048,128")
    report = prefill_report(shape.layer, load_gpu("h100-sxm"), 2048, 1)
    with pytest.raises(InputError, match=says):
        with_published_rate(report, shape, tflops, convention)

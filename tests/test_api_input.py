"""Bad input to the Python API: each refused with rooflab's own error, naming the argument (and its limit), in a
short message; and the same answers as before for every form a valid value may take.

The fuzz suite (tests/test_fuzz_*.py) draws such values at random; these pin the cases it found, one by one.
"""

from __future__ import annotations

import dataclasses
import math
import time
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from rooflab.capacity import plan_capacity
from rooflab.cost.cascade import cascade_decode
from rooflab.cost.common import as_array, whole_number
from rooflab.cost.flash import flash_prefill
from rooflab.cost.merge import merge_pair
from rooflab.cost.naive import naive_ceiling, naive_prefill
from rooflab.cost.paged import DecodeBatch, paged_decode, recommend_splits
from rooflab.errors import InputError, RooflabError, SpecError, UnknownNameError, shown
from rooflab.limits import MAX_BATCH, MAX_TOKENS
from rooflab.load import load_gpu, load_model
from rooflab.numerics import NumericsError, dtype_limits, softmax_headroom
from rooflab.report import decode_report, prefill_report
from rooflab.specs import AttentionHeads
from rooflab.units import DType

#: A message fits one or two terminal lines; the fuzz suite allows 4,000 characters, this is the intent.
SHORT = 400
HUGE = 10**60
LONG_LIST = [8192] * (2**16 + 1)


@pytest.fixture(scope="module")
def llama():
    return load_model("llama-3-8b")


@pytest.fixture(scope="module")
def h100():
    return load_gpu("h100-sxm")


def heads() -> AttentionHeads:
    return AttentionHeads(32, 8, 128)


def refused(call, *names: str, error: type = InputError) -> str:
    """Run `call`; it must raise `error` whose short message names each of `names` (case-insensitive)."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert len(message) <= SHORT, f"a message of {len(message):,} characters"
    for name in names:
        assert name.lower() in message.lower(), f"{name!r} not in: {message}"
    return message


# --- whole_number: the one validator of whole-number arguments ---------------------------------------------------

@pytest.mark.parametrize("value", [8192, 8192.0, np.int64(8192), np.uint16(8192), np.float32(8192), Fraction(8192),
                                   Decimal("8192"), Decimal("8192.000"), np.array(8192)])
def test_whole_number_reads_every_numeric_form(value):
    out = whole_number(value, "page size", maximum=MAX_TOKENS)
    assert out == 8192 and type(out) is int


@pytest.mark.parametrize("value", [HUGE, 10**400, -(10**400), 2**64, 1e308, Fraction(10**5000, 3), Decimal("1e999999"),
                                   np.uint64(2**63 + 1)])
def test_whole_number_refuses_huge_values_of_any_type_with_the_limit(value):
    refused(lambda: whole_number(value, "page size", maximum=1 << 20), "page size", "1,048,576")


@pytest.mark.parametrize("value", [True, False, np.bool_(True), "8192", b"8192", None, [8192], (8192,), LONG_LIST,
                                   np.array([8192]), 1.5, Fraction(3, 2), Decimal("1.5"), math.nan, math.inf,
                                   Decimal("NaN"), complex(8192, 0), 0, -1, {}])
def test_whole_number_refuses_what_is_not_one_whole_number(value):
    refused(lambda: whole_number(value, "page size", maximum=1 << 20), "page size", "whole number")


# --- values past 2^64 through the API (item 6) --------------------------------------------------------------------

@pytest.mark.parametrize("call, name", [
    (lambda: DecodeBatch.uniform(HUGE, 4), "context length"),
    (lambda: DecodeBatch.uniform(8192, HUGE), "batch"),
    (lambda: paged_decode(heads(), [8192], HUGE), "page size"),
    (lambda: paged_decode(heads(), [8192], 16, num_splits=HUGE), "splits"),
    (lambda: paged_decode(heads(), [8192], 16, q_len=HUGE), "q_len"),
])
def test_cost_functions_refuse_ints_past_2_64(call, name):
    refused(call, name)


@pytest.mark.parametrize("argument, name", [("context_len", "context length"), ("page_size", "page size"),
                                            ("max_model_len", "max model length"),
                                            ("activation_reserve_bytes", "reserve"),
                                            ("shared_prefix_len", "prefix")])
def test_plan_capacity_refuses_ints_past_2_64(llama, h100, argument, name):
    kwargs = {"context_len": 8192, argument: HUGE}
    refused(lambda: plan_capacity(llama, h100, **kwargs), name)


@pytest.mark.parametrize("argument, name", [("page_size", "page size"), ("splits", "splits")])
def test_decode_report_refuses_ints_past_2_64(llama, h100, argument, name):
    refused(lambda: decode_report(llama, h100, [8192], **{argument: HUGE}), name)


# --- naive ceiling in exact integers (item 2) ---------------------------------------------------------------------

@pytest.mark.parametrize("batch", [1, 7, 1_000_000, MAX_BATCH])
def test_naive_ceiling_is_the_longest_prefill_that_fits(llama, h100, batch):
    ceiling = naive_ceiling(llama, h100, batch)
    free = ceiling.free_bytes
    t = ceiling.max_seq_len
    if t:
        assert naive_prefill(llama, t, batch).working_set_bytes <= free
    # exact: a T^2 + l T > free one token further
    assert ceiling.quadratic_bytes * (t + 1) ** 2 + ceiling.linear_bytes * (t + 1) > free


def test_naive_ceiling_golden_and_its_batch_checked(llama, h100):
    assert naive_ceiling(llama, h100).max_seq_len == naive_ceiling(llama, h100, np.int64(1)).max_seq_len
    for bad in (0, True, 1.5, "8", HUGE):
        refused(lambda: naive_ceiling(llama, h100, bad), "batch")


def test_reports_with_huge_batches_run(llama, h100):
    report = prefill_report(llama, h100, MAX_TOKENS, MAX_BATCH)
    assert report.facts.naive_max_seq_len == 0 and not report.facts.naive_fits
    assert prefill_report(llama, h100, 8192, Fraction(8192)).batch == 8192


# --- numerics (item 3, 13f) ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [d for d in DType if d is not DType.tf32])
def test_exp_limits_are_finite_in_every_dtype(dtype):
    lim = dtype_limits(dtype)
    for x in (lim.overflow_logit, lim.max_finite_logit, lim.underflow_logit, lim.ftz_underflow_logit):
        assert math.isfinite(x)
    assert lim.underflow_logit < lim.ftz_underflow_logit < 0 < lim.max_finite_logit <= lim.overflow_logit
    h = softmax_headroom(dtype, 2)
    assert math.isfinite(h.headroom_logit) and math.isfinite(h.critical_logit_std)


def test_exp_limits_golden():
    """fp16: ln 2**-25 and ln 65520 (the chapter's section 2 and 1); fp64: ln 2**-1075 and ln(max + ulp/2)."""
    assert dtype_limits(DType.fp16).underflow_logit == pytest.approx(-25 * math.log(2), rel=1e-15)
    assert dtype_limits(DType.fp16).overflow_logit == pytest.approx(math.log(65520), rel=1e-15)
    assert dtype_limits(DType.fp64).underflow_logit == pytest.approx(-1075 * math.log(2), rel=1e-15)
    assert dtype_limits(DType.fp64).overflow_logit == pytest.approx(709.782712893384, rel=1e-15)


@pytest.mark.parametrize("value", ["1", None, [1.0], [], complex(1, 0), b"1", HUGE, 10**400, 0, -1.0, math.nan,
                                   math.inf, True, 1e7, np.array([[1.0]]), 5e-324, 1e-7])
def test_softmax_headroom_refuses_bad_logit_std(value):
    message = refused(lambda: softmax_headroom(DType.fp16, 8192, value), "logit_std", error=NumericsError)
    assert "1e+06" in message


@pytest.mark.parametrize("value", [MAX_TOKENS + 1, HUGE, 1, "8192", True, [8192]])
def test_softmax_headroom_refuses_bad_seq_len(value):
    refused(lambda: softmax_headroom(DType.fp16, value), "seq_len", error=NumericsError)


def test_softmax_headroom_same_answer_for_every_form_of_its_arguments():
    base = softmax_headroom(DType.fp16, 8192, 1.0)
    for seq_len, std in ((np.int64(8192), 1), (8192, np.float64(1.0)), (8192, Fraction(1)), (8192, Decimal(1))):
        assert softmax_headroom("fp16", seq_len, std) == base


# --- short, cheap messages (item 7, 10c) --------------------------------------------------------------------------

def test_an_unknown_name_is_not_printed_whole():
    with pytest.raises(UnknownNameError) as info:
        load_gpu("a" * 100_000)
    assert len(str(info.value)) < 600 and "GPU 'aaa" in str(info.value)


def test_a_20k_character_name_is_cut_in_the_error(llama):
    message = refused(lambda: dataclasses.replace(llama, name="x" * 20_001), "name", "10,000", error=SpecError)
    assert "..." in message


@pytest.mark.parametrize("call, name", [
    (lambda m, g: plan_capacity(m, g, LONG_LIST), "context length"),
    (lambda m, g: plan_capacity(m, g, 8192, page_size=LONG_LIST), "page size"),
    (lambda m, g: plan_capacity(m, g, 8192, gpu_memory_utilization=LONG_LIST), "utilisation"),
    (lambda m, g: paged_decode(heads(), [8192], 16, num_splits=LONG_LIST), "splits"),
])
def test_a_long_list_where_a_number_belongs_is_not_printed_whole(llama, h100, call, name):
    refused(lambda: call(llama, h100), name)


def test_describing_a_value_is_bounded_whatever_its_size():
    """Nine levels of ten references (YAML aliases): 10^9 leaves if printed, so repr must not walk them."""
    value: list = ["x"] * 10
    for _ in range(9):
        value = [value] * 10
    start = time.perf_counter()
    error = SpecError("gpu.yaml", "a8", value, "unknown key")
    text = shown(value) + str(error) + shown(10**5000) + shown(np.zeros(10**6)) + shown({i: i for i in range(10**5)})
    assert time.perf_counter() - start < 1.0
    assert len(str(error)) < 200 and len(shown(10**5000)) <= 60
    assert "5,000 digits" in text


def test_many_problems_are_counted_not_listed():
    problems = tuple((f"key{i}", i, "unknown key") for i in range(1000))
    message = str(SpecError("gpu.yaml", "key0", 0, "unknown key", problems))
    assert "1000 problems" in message and "and 990 more" in message and len(message) < 1500


# --- spec fields (item 11) ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [HUGE, 10**400, -(10**400)])
def test_a_huge_number_where_text_belongs_is_refused(value):
    measured = load_gpu("h200-sxm").measured
    refused(lambda: dataclasses.replace(measured, date=value), "date", error=SpecError)


@pytest.mark.parametrize("value", [1e-300, 5e-324, 0.005, 0, -1.0, 65])
def test_units_per_sm_has_a_sensible_range(h100, value):
    refused(lambda: dataclasses.replace(h100, units_per_sm=value), "units_per_sm", error=SpecError)


@pytest.mark.parametrize("value", [0.01, 0.5, 1.5, 8, 64])
def test_units_per_sm_in_range_is_kept(h100, value):
    assert dataclasses.replace(h100, units_per_sm=value).units_per_sm == value


def test_layer_counts_of_a_shared_spec_are_read_only(llama):
    expected = llama.kv_bytes_per_token(DType.fp16)
    with pytest.raises(TypeError):
        llama.layer_counts["full"] = 1
    assert dict(llama.layer_counts) == {"full": 32}
    assert load_model("llama-3-8b").kv_bytes_per_token(DType.fp16) == expected


# --- dtypes by name (13a) -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("make, none_ok", [
    (lambda dt: naive_prefill(heads(), 1024, 1, dt), False),
    (lambda dt: flash_prefill(heads(), 1024, 1, dt), False),
    (lambda dt: paged_decode(heads(), [1024], 16, dt), False),
    (lambda dt: paged_decode(heads(), [1024], 16, DType.fp16, dt), True),    # kv_dtype None: the compute dtype's
    (lambda dt: merge_pair(1024, 32, 128, dt), False),
    (lambda dt: cascade_decode(heads(), 1024, [16, 32], 16, dt), False),
])
def test_cost_functions_take_a_dtype_by_name(make, none_ok):
    by_name, by_enum = make("bf16"), make(DType.bf16)
    assert by_name.flops == by_enum.flops and by_name.hbm_bytes == by_enum.hbm_bytes
    for bad in [2, "FP16", " fp16", "fp99", [DType.fp16]] + ([] if none_ok else [None]):
        refused(lambda: make(bad), "dtype", "fp16, bf16")


# --- merge_pair and the parallelism model (13b, 13c) --------------------------------------------------------------

@pytest.mark.parametrize("value", [-1, 0, math.nan, 1.5, complex(8, 0), 1e18, HUGE, [1, -1], "8", None, True,
                                   np.array([8.0])])
@pytest.mark.parametrize("argument", ["num_heads", "head_dim"])
def test_merge_pair_checks_its_heads(argument, value):
    args = {"tokens": 8192, "num_heads": 32, "head_dim": 128, argument: value}
    refused(lambda: merge_pair(**args), argument)


def test_merge_pair_limits_its_tokens():
    refused(lambda: merge_pair(MAX_BATCH * MAX_TOKENS * 2, 32, 128), "tokens")
    assert merge_pair(MAX_BATCH * MAX_TOKENS, 32, 128).flops > 0     # explain's merge of T x B tokens at the limits
    refused(lambda: merge_pair(True, 32, 128), "tokens")
    assert merge_pair(np.int64(8192), np.int64(32), 128.0).flops == merge_pair(8192, 32, 128).flops


@pytest.mark.parametrize("value", [0, -1, 1.5, True, 5e-324, 1e18, math.nan, math.inf, "132", [132, 66], Decimal("nan"),
                                   HUGE])
def test_num_sms_is_checked_wherever_it_enters(value):
    for call in (lambda: flash_prefill(heads(), 8192, num_sms=value),
                 lambda: paged_decode(heads(), [8192], 16, num_sms=value),
                 lambda: recommend_splits(heads(), [8192], value)):
        refused(call, "num_sms")


@pytest.mark.parametrize("value", [0, -0.0, -1, True, 5e-324, 1e-300, 1e18, math.nan, math.inf, "1", [], Decimal("nan")])
def test_units_per_sm_is_checked_wherever_it_enters(value):
    for call in (lambda: flash_prefill(heads(), 8192, num_sms=132, units_per_sm=value),
                 lambda: paged_decode(heads(), [8192], 16, num_sms=132, units_per_sm=value),
                 lambda: paged_decode(heads(), [8192], 16, units_per_sm=value)):
        refused(call, "units_per_sm")


def test_parallelism_arguments_in_any_numeric_form_give_the_same_answer():
    base = flash_prefill(heads(), 8192, num_sms=132, units_per_sm=1.5).kernel.parallel_fraction
    for n, k in ((np.int64(132), 1.5), (132.0, Fraction(3, 2)), (Decimal(132), np.float32(1.5))):
        assert flash_prefill(heads(), 8192, num_sms=n, units_per_sm=k).kernel.parallel_fraction == base
    assert flash_prefill(heads(), 8192, num_sms=None).kernel.parallel_fraction == 1.0
    assert paged_decode(heads(), [8192], 16, num_sms=None).parallel_fraction == 1.0


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


@pytest.mark.parametrize("call, name", [
    (lambda: naive_prefill(heads(), True), "seq_len"),
    (lambda: naive_prefill(heads(), 8192, True), "batch"),
    (lambda: naive_prefill(heads(), np.array([True, True])), "seq_len"),
    (lambda: flash_prefill(heads(), [True, 8192]), "seq_len"),
    (lambda: paged_decode(heads(), True), "context"),
    (lambda: paged_decode(heads(), [True, 8192]), "context"),
    (lambda: paged_decode(heads(), "8192"), "context"),
    (lambda: DecodeBatch.uniform(8192, True), "batch"),
])
def test_booleans_and_text_are_not_workloads(call, name):
    refused(call, name)


def test_as_array_keeps_every_valid_form():
    for value in (8192, 8192.0, np.int64(8192), [8192], np.array([8192.0]), Fraction(8192), Decimal(8192)):
        assert as_array(value, "seq_len").tolist() in (8192.0, [8192.0])


def test_cascade_checks_its_lengths():
    refused(lambda: cascade_decode(heads(), "1024", [16]), "prefix")
    refused(lambda: cascade_decode(heads(), 1024, [-1]), "suffix")
    refused(lambda: cascade_decode(heads(), 1024, "16"), "suffix")


def test_every_refusal_above_is_a_rooflab_error():
    """NumericsError stays a ValueError for library callers, and an InputError for the CLI."""
    assert issubclass(NumericsError, InputError) and issubclass(NumericsError, ValueError)
    assert issubclass(InputError, RooflabError) and issubclass(SpecError, RooflabError)

"""Tests of rooflab/cost/common.py: the cost functions' argument checks.

Whole numbers in every numeric form (huge values refused with the limit), dtypes by name, booleans and text
that are not workloads, arrays kept in every valid form, and layer types checked (None, a string or heads
where a LayerType goes, an MLA-only question on another layer) with an InputError naming the argument. The
fuzz suite (tests/test_fuzz_*.py) draws such values at random; these pin the cases it found.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from rooflab.cost.cascade import cascade_decode
from rooflab.cost.common import as_array, whole_number
from rooflab.cost.flash import flash_prefill
from rooflab.cost.merge import merge_pair
from rooflab.cost.naive import naive_prefill
from rooflab.cost.paged import DecodeBatch, paged_decode
from rooflab.limits import MAX_TOKENS
from rooflab.units import DType
from support import HUGE, heads, refused


LONG_LIST = [8192] * (2**16 + 1)


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
    for spelled in ("BF16", " bfloat16"):            # the one dtype vocabulary (units.DType.of): the engines' words
        again = make(spelled)
        assert again.flops == by_enum.flops and again.hbm_bytes == by_enum.hbm_bytes
    for bad in [2, "fp99", "", [DType.fp16]] + ([] if none_ok else [None]):
        refused(lambda: make(bad), "dtype", "fp16, bf16")


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


@pytest.mark.parametrize("call", [
    "linear_decode(None)", "linear_prefill('x', 8192)", "mla_decode(AttentionHeads(32, 8, 128), 128, [8192])",
    "mla_latent_bytes(None, DType.fp16)", "layer_heads(load_model('llama-3-8b'), None)",
])
def test_cost_functions_refuse_what_is_not_a_layer_type(call):
    """None, a string or an AttentionHeads where a LayerType goes raised AttributeError from inside (check_layer)."""
    from rooflab import load_model
    from rooflab.cost.layers import layer_heads
    from rooflab.cost.linear import linear_decode, linear_prefill
    from rooflab.cost.mla import mla_decode, mla_latent_bytes
    from rooflab.errors import InputError
    from rooflab.specs import AttentionHeads
    from rooflab.units import DType

    with pytest.raises(InputError, match="LayerType|layer type"):
        eval(call, locals())


def test_mla_latent_bytes_needs_an_mla_layer():
    from rooflab import load_model
    from rooflab.cost.mla import mla_latent_bytes
    from rooflab.errors import InputError
    from rooflab.units import DType

    with pytest.raises(InputError, match="mla"):
        mla_latent_bytes(load_model("llama-3-8b").layer_types["full"], DType.fp16)


@pytest.mark.parametrize("value", [1, 7, 2**53 + 1, 2**62, 2**63 - 1, 1.0, 0.5, 1e300, np.float64(3.5), np.int64(9),
                                   2**63, -(2**63), 0, -1, 0.0, math.nan, math.inf, -math.inf, 1e309 * 0])
@pytest.mark.parametrize("minimum, maximum, lo_open", [(1, None, False), (0, None, True), (1, MAX_TOKENS, False),
                                                       (1.0, 2.0**62, True)])
def test_as_array_answers_plain_numbers_as_the_general_checks_do(value, minimum, maximum, lo_open):
    """The plain-scalar shortcut of as_array (issue 24: the fit prices thousands of costs) returns what the checks
    over an array return, a 0-d float64 array of the same value, and refuses with their words otherwise."""
    from rooflab.errors import InputError

    def general():
        arr = np.asarray(np.asarray(value).astype(np.float64)).reshape(())
        bad = not math.isfinite(arr) or arr < minimum or (lo_open and arr == minimum) or (
            maximum is not None and arr > maximum)
        return None if bad else arr

    want = general()
    if want is None:
        with pytest.raises(InputError, match="count"):
            as_array(value, "count", minimum, maximum, lo_open)
    else:
        got = as_array(value, "count", minimum, maximum, lo_open)
        assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == () and got == want

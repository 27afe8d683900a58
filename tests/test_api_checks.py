"""Every public API entry point checks its arguments: a wrong kind of value is rooflab's InputError (or SpecError /
NumericsError, both RooflabError) naming the argument, never a ZeroDivisionError, OverflowError, AttributeError
or TypeError from deep inside, and never a number read wrongly (issue 24).

Two parts. The walk: each entry point in ENTRY_POINTS is called with valid arguments, then with each argument in
turn replaced by each wrong kind of value in WRONG (None, text, a bool, NaN, inf, 0, negative, 1e300, a huge
integer, a list, a complex number, an object of the wrong class). Where a value is a valid input for that argument
(None for an optional one, a list for an array of lengths, a name for a DType, 0 for a count that may be 0), the
entry lists it in its `accepts`; everything else must be refused with a RooflabError whose message names the
argument. Then the regressions: numbers that were read wrongly instead of refused.
"""

from __future__ import annotations

import datetime
import math

import numpy as np
import pytest

from rooflab.cost.common import as_array
from rooflab.cost.flash import FlashTile, flash_prefill
from rooflab.cost.gemm import gemm
from rooflab.cost.naive import naive_prefill
from rooflab.errors import InputError
from rooflab.specs import AttentionHeads
from support import refused


def heads() -> AttentionHeads:
    return AttentionHeads(32, 8, 128)


# --- numbers read wrongly instead of refused ---------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    np.array([1024 + 0j]), np.complex128(1024), [1024 + 0j], np.array(["1024"]), ["1024"], np.array([b"1024"]),
    [b"1024"], bytearray(b"\x05"), memoryview(b"\x05"), np.array(["2024-01-01"], dtype="datetime64[D]"),
    np.datetime64("2024-01-01"), np.array([5], dtype="timedelta64[s]"), [datetime.date(2024, 1, 1)],
    np.ma.array([1024, 2048], mask=[False, True]), np.zeros(2, dtype=[("t", "f8")]), [[True, 2]], [None],
    [10**400], [[1024], [1024, 2048]]])
def test_cost_functions_refuse_arrays_that_are_not_real_numbers(value):
    """Complex numbers lost their imaginary part, text and raw bytes were parsed, dates became days since 1970 and
    masked entries were priced as if present; each is now refused naming the argument."""
    refused(lambda: as_array(value, "seq_len"), "seq_len")
    refused(lambda: flash_prefill(heads(), value), "seq_len")
    refused(lambda: naive_prefill(heads(), 1024, value), "batch")


def test_arrays_of_real_numbers_in_any_form_are_read_alike():
    forms = [[1024, 2048], (1024, 2048), np.array([1024, 2048], dtype=np.int32), np.array([1024.0, 2048.0]),
             np.ma.array([1024, 2048]), [np.int64(1024), 2048.0], np.array([1024, 2048], dtype=object)]
    for form in forms:
        assert as_array(form, "seq_len").tolist() == [1024.0, 2048.0]


@pytest.mark.parametrize("value", ["yes", "no", 1, 0, None, "True", [True]])
def test_causal_must_be_a_bool(value):
    """causal='yes' (and 'no', which is truthy) priced the causal half; a switch takes True or False only."""
    refused(lambda: flash_prefill(heads(), 1024, causal=value), "causal")
    refused(lambda: naive_prefill(heads(), 1024, causal=value), "causal")
    assert flash_prefill(heads(), 1024, causal=np.bool_(True)).flops == flash_prefill(heads(), 1024, causal=True).flops


@pytest.mark.parametrize("groups", [0, 0.0, -1, [1, 0], math.nan])
def test_gemm_groups_must_be_positive(groups):
    """groups=0 read no weights at all (G n k b_w = 0), a GEMM without its matrix."""
    refused(lambda: gemm(16, 4096, 4096, groups=groups), "groups")
    assert gemm(16, 4096, 4096, groups=0.5).hbm_bytes < gemm(16, 4096, 4096, groups=1).hbm_bytes   # touched share


@pytest.mark.parametrize("block", [0, -64, 64.5, True, None, "128", 10**6])
def test_flash_tile_is_checked(block):
    """FlashTile(0, 0) divided by zero in every tile count (a RuntimeWarning and infinite bytes, or a
    ZeroDivisionError in the parallelism model)."""
    refused(lambda: FlashTile(block, 64), "block_q")
    refused(lambda: FlashTile(64, block), "block_kv")
    refused(lambda: flash_prefill(heads(), 1024, tile="128x128"), "tile")

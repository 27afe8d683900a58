"""Tests of rooflab/specs/fitted.py: a GPU's fitted kernel models, checked field by field where they enter."""

from __future__ import annotations

import math

import pytest

from rooflab.errors import SpecError
from rooflab.specs import FittedModel
from rooflab.vocab import Kernel


def _model(**fields) -> FittedModel:
    return FittedModel(kernel=Kernel.flash_window, impl="rooflab_hopper", overhead_s=1e-5, efficiency=0.8, **fields)


@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, 1e300, "", 10**23, True])
def test_the_tile_term_is_refused_outside_0_to_64_naming_the_field(value):
    with pytest.raises(SpecError, match="unit_overhead_tiles"):
        _model(unit_overhead_tiles=value)


def test_the_tile_term_is_optional_and_takes_0_to_64():
    assert _model().unit_overhead_tiles is None
    assert _model(unit_overhead_tiles=0).unit_overhead_tiles == 0
    assert _model(unit_overhead_tiles=2).unit_overhead_tiles == 2


def _fused(**fields) -> FittedModel:
    base = dict(kernel=Kernel.gemm, impl="triton_fused_moe", overhead_s=1.3e-5, efficiency=0.95,
                memory_efficiency=0.95, tile_s=4e-9, max_tokens=512)
    return FittedModel(**{**base, **fields})


def test_a_fused_moe_fit_takes_its_tile_term_share_and_range():
    fit = _fused()
    assert fit.fused_moe and fit.tile_s == 4e-9 and fit.max_tokens == 512
    assert not _model().fused_moe and _model().tile_s is None and _model().max_tokens is None


@pytest.mark.parametrize("field, value", [("tile_s", -1e-9), ("tile_s", 1e-3), ("tile_s", math.nan),
                                          ("max_tokens", 0), ("max_tokens", 2.5), ("max_tokens", 10**9)])
def test_a_fused_moe_term_out_of_range_is_refused_naming_the_field(field, value):
    with pytest.raises(SpecError, match=field):
        _fused(**{field: value})


@pytest.mark.parametrize("missing", ["memory_efficiency", "max_tokens"])
def test_a_tile_term_without_its_share_or_range_is_refused(missing):
    """c0 + Q / (eta_mem beta) + tiles tau needs eta_mem, and the model holds only up to the tokens measured."""
    with pytest.raises(SpecError, match="tile_s.*memory_efficiency.*max_tokens"):
        _fused(**{missing: None})

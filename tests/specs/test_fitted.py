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

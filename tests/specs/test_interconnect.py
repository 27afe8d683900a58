"""Tests of rooflab/specs/interconnect.py: the GPU YAML's interconnect section and its checks."""

from __future__ import annotations

import pytest

from rooflab.specs.interconnect import Band, CollectiveFit, InterconnectSpec
from rooflab.vocab import Kernel


def test_interconnect_spec_checks():
    band = Band(1 << 20, 1e-5, 1e11)
    with pytest.raises(Exception, match="ascend"):
        CollectiveFit(Kernel.all_gather, 2, "graph", (band, band))
    with pytest.raises(Exception, match="timing"):
        CollectiveFit(Kernel.all_gather, 2, "sometimes", (band,))
    with pytest.raises(Exception, match="collective"):
        CollectiveFit(Kernel.flash, 2, "graph", (band,))
    fit = CollectiveFit(Kernel.all_gather, 2, "graph", (band,))
    with pytest.raises(Exception, match="fitted twice"):
        InterconnectSpec("x", 1e11, 8, "s", None, (fit, fit))

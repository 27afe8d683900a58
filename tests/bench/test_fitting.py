"""The measurement format, `rooflab validate` and the calibrated-ceilings writer, without a GPU.

The files written here are test fixtures built from rooflab's own predictions (so the expected
fractions are known exactly); the real H200 data lives in measurements/ and has its own test.
"""

from __future__ import annotations

import numpy as np

from rooflab.bench.validate import fit_overhead_efficiency


def test_fit_handles_negative_overhead():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    fit = fit_overhead_efficiency(x, 2 * x - 0.5)  # would need c0 < 0: clamp to 0
    assert fit.overhead_s == 0.0 and 0.4 < fit.efficiency < 0.6


def test_fit_refuses_a_negative_efficiency():
    # Two points whose times fall as the floor grows: the exact fit would be c0 > 0 with a < 0.
    fit = fit_overhead_efficiency(np.array([1.0, 2.0]), np.array([3.0, 2.9]))
    assert fit.overhead_s == 0.0 and fit.efficiency > 0

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


def test_decode_variants_take_the_gpus_units_per_sm_and_paged_decode_fits_its_own():
    # The windowed and multi-token decode are launches of the paged decode kernel: their parallelism is the GPU's
    # fitted decode value, whatever their own rows would pick; paged decode itself is fitted on the grid.
    import dataclasses
    from pathlib import Path

    from rooflab.bench.fitting import DECODE_VARIANTS, UNITS_PER_SM_GRID, fit_group
    from rooflab.bench.records import read_measurements
    from rooflab.load import load_gpu
    from rooflab.vocab import Kernel

    root = Path(__file__).resolve().parents[2] / "measurements"
    _, rows = read_measurements(root / "h200-new-kernels.csv")
    _, sweep = read_measurements(root / "h200-sweep.csv")
    gpu = dataclasses.replace(load_gpu("h200-sxm"), units_per_sm=2.5)
    assert set(DECODE_VARIANTS) == {Kernel.paged_window, Kernel.paged_multi}
    for kernel in DECODE_VARIANTS:
        members = [m for m in rows if m.kernel is kernel and m.impl == "rooflab"]
        fit, _ = fit_group(kernel, members, np.arange(len(members)) % 2 == 0, gpu)
        assert fit is not None and fit.units_per_sm == 2.5  # not on the grid
    paged = [m for m in sweep if m.kernel is Kernel.paged and m.impl == "rooflab"]
    fit, _ = fit_group(Kernel.paged, paged, np.arange(len(paged)) % 2 == 0, gpu)
    assert fit.units_per_sm in UNITS_PER_SM_GRID and fit.units_per_sm != 2.5

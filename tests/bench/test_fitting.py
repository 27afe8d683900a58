"""The measurement format, `rooflab validate` and the calibrated-ceilings writer, without a GPU.

The files written here are test fixtures built from rooflab's own predictions (so the expected
fractions are known exactly); the real H200 data lives in measurements/ and has its own test.
"""

from __future__ import annotations

import numpy as np
import pytest

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


def test_windowed_flash_fits_a_tile_term_it_was_given():
    """Rows timed as 5 us + t_model / 0.75 with whole tiles and 2 key tiles a query tile: the fit finds 2 and
    predicts the held-out rows exactly; the H200's windowed rows choose a tile term too."""
    import dataclasses
    from pathlib import Path

    from rooflab.bench.fitting import TILE_KERNELS, fit_group, model_times
    from rooflab.bench.records import read_measurements
    from rooflab.load import load_gpu
    from rooflab.vocab import Kernel

    assert TILE_KERNELS == (Kernel.flash_window, Kernel.flash, Kernel.mla_decode)
    gpu = load_gpu("h200-sxm")
    _, rows = read_measurements(Path(__file__).resolve().parents[2] / "measurements" / "h200-new-kernels.csv")
    members = [m for m in rows if m.kernel is Kernel.flash_window]
    t = model_times(members, gpu, 1.0, (0.0,), 2.0)[0]
    synthetic = [dataclasses.replace(m, time_s=5e-6 + x / 0.75) for m, x in zip(members, t)]
    fitted = np.arange(len(members)) % 2 == 0
    fit, t_model = fit_group(Kernel.flash_window, synthetic, fitted, gpu)
    assert fit.unit_overhead_tiles == 2.0 and fit.units_per_sm == 1.0
    assert np.allclose(fit(t_model), [m.time_s for m in synthetic], rtol=1e-6)
    real, _ = fit_group(Kernel.flash_window, members, fitted, gpu)
    assert real.unit_overhead_tiles is not None


# ---------------------------------------------------------------- session 7: MLA's unit rows and whole waves

def test_mla_units_compute_whole_row_tiles_and_run_in_whole_waves():
    from rooflab.cost.mla import mla_decode
    from rooflab.load import load_model
    from rooflab.predict import priced_launches

    layer = load_model("deepseek-v3").layer_types["mla"]
    h16_q1 = mla_decode(layer, 16, [4096] * 32, num_sms=132)
    assert h16_q1.unit_rows == 16 and float(h16_q1.tile_work(0.0)) == 1.0
    assert float(h16_q1.tile_work(16.0)) == 2.0                              # a fixed cost of 16 rows a token
    h16_q3 = mla_decode(layer, 16, [4096] * 32, q_len=3, num_sms=132)
    assert h16_q3.unit_rows == 64 and float(h16_q3.tile_work(0.0)) == pytest.approx(64 / 48)
    # 192 units on 132 SMs take two waves: the share of the GPU busy is 192 / 264, not 1
    h128_q3 = mla_decode(layer, 128, [4096] * 32, q_len=3, num_sms=132)
    assert float(h128_q3.work_units) == 192 and float(h128_q3.attention.parallel_fraction) == pytest.approx(192 / 264)
    split = mla_decode(layer, 16, [4096] * 32, num_splits=4, num_sms=132)
    scaled = priced_launches(split, 16.0)
    assert scaled[0].flops == pytest.approx(2 * split.attention.flops)          # the attention launch scaled ...
    assert all(a == b for a, b in zip(scaled[1:], split.kernels[1:]))          # ... the merge as it was

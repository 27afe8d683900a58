"""rooflab.fit.fitting: the fitted time models (c0 + t_model / eta and the parallelism model) on fixtures built from
rooflab's own predictions (so the fitted values are known exactly) and on the bundled H200 rows: negative overheads,
refused efficiencies, the decode variants' units per SM, windowed flash's tile term, MLA's whole waves, and the
grid search against its choice-by-choice reference."""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.fit.validate import fit_overhead_efficiency


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

    from rooflab.fit.fitting import DECODE_VARIANTS, UNITS_PER_SM_GRID, fit_group
    from rooflab.fit.records import read_measurements
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

    from rooflab.fit.fitting import TILE_KERNELS, fit_group, model_times
    from rooflab.fit.records import read_measurements
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


# ---------------------------------------------------------------- issue 24: the grid priced at once, the same floats

def _bundled_groups():
    from rooflab.fit.validate import _groups, bundled_dataset, read_campaigns
    from rooflab.load import load_gpu

    _, rows, spec = read_campaigns(bundled_dataset())
    return _groups(rows), load_gpu(spec)


def _reference_fit_group(kernel, members, fitted, gpu):
    """The oracle: the grid search choice by choice, each row priced by predict.model_time and every choice fitted
    by least squares, as fit_group was written before it priced the grid at once (issue 24)."""
    from rooflab.fit.fitting import (MAX_MEMORY_EFFICIENCY, MIN_ROWS_TO_FIT, MLA_FP8_ROWS_GRID, MLA_MEMORY_RATIO_GRID,
                                       Fit, _grid, fit_overhead_efficiency, priced_rows)
    from rooflab.predict import model_time
    from rooflab.vocab import Kernel

    measured = np.array([m.time_s for m in members])
    if int(np.sum(fitted)) < MIN_ROWS_TO_FIT:
        return None, np.array([float(np.asarray(model_time(c, r))) for c, r in priced_rows(members, gpu, None)])
    ks, alphas, tiles = _grid(kernel, gpu)
    best = (np.inf, None, np.array([]))
    for k in ks:
        priced = priced_rows(members, gpu, k)
        for n in tiles:
            extra = ([(r, f8) for r in MLA_MEMORY_RATIO_GRID for f8 in MLA_FP8_ROWS_GRID]
                     if kernel is Kernel.mla_decode and n is not None else [(None, None)])
            for ratio, f8 in extra:
                for alpha in alphas:
                    t = np.array([float(np.asarray(model_time(cost, roofs, alpha, n, 1.0 if ratio is None else ratio,
                                                              f8))) for cost, roofs in priced])
                    fit = fit_overhead_efficiency(t[fitted], measured[fitted])
                    if ratio is not None and fit.efficiency * ratio > MAX_MEMORY_EFFICIENCY:
                        continue
                    loss = float(np.sum((fit(t[fitted]) / measured[fitted] - 1) ** 2))
                    if loss < best[0] * (1 - 1e-12):
                        best = (loss, Fit(fit.overhead_s, fit.efficiency, k, alpha, n, ratio, f8), t)
    return best[1], best[2]


def test_model_times_are_predict_model_time_row_by_row():
    """Every term of the grid on the bundled rows of each kernel: exactly predict.model_time's floats."""
    from rooflab.fit.fitting import model_times, priced_rows
    from rooflab.predict import model_time

    groups, gpu = _bundled_groups()
    terms = [(0.0, None, None, None), (0.75, 2.0, None, None), (1.0, 16.0, 2.25, 8.0), (0.25, 0.5, 3.0, None)]
    for (kernel, impl), members in groups.items():
        for k in (None, 0.5, 3.0):
            priced = priced_rows(members, gpu, k)
            for alpha, n, ratio, f8 in terms:
                got = model_times(members, gpu, k, (alpha,), n, ratio, f8)[0]
                want = [float(np.asarray(model_time(c, r, alpha, n, 1.0 if ratio is None else ratio, f8)))
                        for c, r in priced]
                assert got.tolist() == want, (kernel, impl, k, alpha, n, ratio, f8)


def test_fit_group_chooses_what_the_search_choice_by_choice_chooses(monkeypatch):
    """fit_group against the oracle (_reference_fit_group) on bundled groups of each kind and on groups where many
    choices tie: 2 fitted rows (every free fit is exact), rows timed as the model itself (several choices fit
    exactly), and the MLA grid's memory ratios that pass the copy bandwidth; the same Fit and the same times."""
    import dataclasses

    import rooflab.fit.fitting as fitting
    from rooflab.fit.fitting import fit_group, model_times
    from rooflab.vocab import Kernel

    monkeypatch.setattr(fitting, "UNITS_PER_SM_GRID", (0.5, 1.5, 4.0))        # the oracle is slow: a smaller grid
    groups, gpu = _bundled_groups()
    cases = []
    for key in [(Kernel.flash_window, "rooflab_hopper"), (Kernel.mla_decode, "rooflab_hopper"),
                (Kernel.paged, "torch_flash_dense"), (Kernel.naive, "rooflab"), (Kernel.merge, "torch_eager"),
                (Kernel.flash, "rooflab"), (Kernel.flash, "torch_efficient")]:
        cases.append((key[0], groups[key], np.arange(len(groups[key])) % 2 == 0))
    window = groups[(Kernel.flash_window, "rooflab_hopper")]
    exact = model_times(window, gpu, 1.5, (0.5,), 2.0)[0]
    timed = [dataclasses.replace(m, time_s=4e-6 + x / 0.8) for m, x in zip(window, exact)]
    cases += [(Kernel.flash_window, timed, np.arange(len(timed)) % 2 == 0),
              (Kernel.flash_window, window[:4], np.array([True, False, True, False]))]
    mla = next(m for (k, _), m in groups.items() if k is Kernel.mla_decode and len(m) <= 10)
    cases.append((Kernel.mla_decode, mla[:3], np.array([True, True, True])))
    for kernel, members, fitted in cases:
        fit, t = fit_group(kernel, members, fitted, gpu)
        want_fit, want_t = _reference_fit_group(kernel, members, fitted, gpu)
        assert fit == want_fit and t.tolist() == want_t.tolist(), (kernel, members[0].impl, len(members))

"""Tests of rooflab/fit/moe_fit.py: the grouped-GEMM fit's form against the measured CSV
(measurements/moe/h200-moe-gemm.csv, benchmarks/moe_gemm.py on an H200), the bundled constants as that fit gives
them, a row priced by hand, and the physical bounds of the constants; the same for the fused block-fp8 kernel's fit
(measurements/moe/h200-fused-moe-block-fp8.csv, benchmarks/h200_early2025_decode_kernels.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rooflab.cost.gemm import gemm
from rooflab.errors import InputError
from rooflab.fit.fitting_io import fitted_yaml
from rooflab.fit.moe_fit import (FUSED_UNUSED_EFFICIENCY, GROUPED_IMPL, fit_fused, fit_moe_campaign, predicted_s,
                                 read_moe_csv)
from rooflab.floors import Ceilings
from rooflab.load import data_dir, load_gpu
from rooflab.predict import FUSED_MOE_IMPL, fused_moe_time, model_fits, predict_time
from rooflab.units import DType
from rooflab.vocab import CeilingSource, Kernel

H200 = load_gpu("h200-sxm")
CSV = data_dir("measurements") / "moe" / "h200-moe-gemm.csv"


def _bundled(impl):
    return next(f for f in H200.fitted if f.kernel is Kernel.gemm and f.impl == impl)


def test_the_csv_holds_its_metadata_and_every_grouped_shape():
    meta, rows = read_moe_csv(CSV)
    for key in ("date", "device_name", "torch", "git_commit", "command", "nvidia_smi_driver_maxsm_maxmem_power"):
        assert meta[key]
    assert meta["device_name"] == "NVIDIA H200" and meta["grouped_mm"] == "True"
    grouped = {(r["model"], r["shard"], r["gemm"], r["dtype"]) for r in rows if r["impl"] == "grouped_mm"}
    assert len(grouped) == 8                     # Mixtral TP 1, TP 2 (bf16); DeepSeek-V3 EP 8 (fp8, bf16); x 2 GEMMs
    for r in rows:                               # the FLOPs and pairs the script says it ran
        assert r["pairs"] == -(-r["tokens"] * (2 if r["model"] == "mixtral-8x7b" else 8) //
                               (1 if r["model"] == "mixtral-8x7b" else 8))
        assert int(r["flops"]) == 2 * r["pairs"] * r["n"] * r["k"]
        if r["rel_error"]:                       # the grouped result against a float32 per-expert reference
            assert float(r["rel_error"]) < 2e-2


def test_the_bundled_constants_are_the_fit_of_the_committed_csv():
    for fit in fit_moe_campaign(CSV, H200):
        yaml = _bundled(fit.impl)
        assert yaml.overhead_s == pytest.approx(fit.overhead_s, rel=1e-3)
        assert yaml.efficiency == pytest.approx(fit.efficiency, rel=1e-3)
        assert yaml.memory_efficiency == pytest.approx(fit.memory_efficiency, rel=1e-3)
        assert (yaml.rows, yaml.held_out_rows) == (fit.rows, fit.held_out_rows)
        assert yaml.median_error == pytest.approx(fit.median_error, abs=1e-4)
        assert yaml.campaigns == ("moe/h200-moe-gemm.csv",)


def test_the_form_holds_on_the_measured_rows():
    """c0 + max(F / pi, Q / (eta_mem beta)) / eta... within 30% of every grouped row it was fitted on (the worst is
    26%: the compute-to-memory crossing at 128 pairs an expert), held-out median under 10%."""
    _, rows = read_moe_csv(CSV)
    for dtype, impl in GROUPED_IMPL.items():
        fit = _bundled(impl)
        mine = [r for r in rows if r["impl"] == "grouped_mm" and r["dtype"] == dtype.value]
        errors = np.array([predicted_s(r, fit, H200) / r["seconds"] - 1 for r in mine])
        assert np.abs(errors).max() < 0.30 and np.median(np.abs(errors)) < 0.10
        assert fit.median_error < 0.10


def test_a_row_by_hand():
    """Mixtral-8x7B TP 2 down at T = 512: 1024 pairs over 8 experts of [4096, 7168] bf16."""
    _, rows = read_moe_csv(CSV)
    row = next(r for r in rows if (r["model"], r["shard"], r["gemm"], r["impl"], r["tokens"]) ==
               ("mixtral-8x7b", "tp2", "down", "grouped_mm", 512))
    fit = _bundled("torch_grouped_mm")
    flops = 2 * 1024 * 4096 * 7168
    hbm = 8 * 4096 * 7168 * 2 + (1024 * 7168 + 1024 * 4096) * 2          # 8 weights once, x in, y out
    pi, beta = H200.measured.gemm_flop_per_s["bf16"], H200.measured.copy_bytes_per_s
    hand = fit.overhead_s + max(flops / pi / fit.efficiency, hbm / beta / fit.memory_efficiency)
    assert predicted_s(row, fit, H200) == pytest.approx(hand, rel=1e-9)
    # the same through rooflab.predict with the implementation named, and the dense fit below it
    p = predict_time(H200, Kernel.gemm, lambda a, b: gemm(1024, 4096, 7168, DType.bf16, "down", None, 8), DType.bf16,
                     "torch_grouped_mm")
    assert p.t_predicted_s == pytest.approx(hand, rel=1e-9)


@pytest.mark.parametrize("m", [1, 16, 256, 4096, 65536])
def test_the_grouped_fits_are_physical_and_never_faster_than_dense_cublas(m):
    """eta and eta_mem are shares of measured roofs (<= 1); and on any dense shape the grouped fits price slower
    than the cuBLAS fit, so predict_time's automatic choice for a dense GEMM stays cuBLAS."""
    for dtype, impl in GROUPED_IMPL.items():
        fit = _bundled(impl)
        assert 0 < fit.efficiency <= 1 and 0 < fit.memory_efficiency <= 1
        cost = gemm(m, 4096, 4096, dtype)
        auto = predict_time(H200, Kernel.gemm, lambda a, b: cost, dtype)
        grouped = predict_time(H200, Kernel.gemm, lambda a, b: cost, dtype, impl)
        assert auto.impl == "torch_cublas" and grouped.t_predicted_s > auto.t_predicted_s


def test_a_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="MoE GEMM measurements"):
        read_moe_csv(tmp_path / "nothing.csv")


FUSED_CSV = data_dir("measurements") / "moe" / "h200-fused-moe-block-fp8.csv"


def test_the_fused_campaign_holds_its_metadata_and_checked_rows():
    """benchmarks/h200_early2025_decode_kernels.py's engine-config rows: both GEMMs at 13 token counts, every
    output checked against a float32 reference (fp8 inputs dequantised; bf16 output rounding: ~2e-3)."""
    meta, rows = read_moe_csv(FUSED_CSV)
    for key in ("date", "device_name", "torch", "triton", "git_commit", "command", "copy_bytes_per_s"):
        assert meta[key]
    assert meta["device_name"] == "NVIDIA H200"
    assert {r["impl"] for r in rows} == {"triton_fused_moe"} and len(rows) == 26
    assert all(0 < float(r["rel_error"]) < 5e-3 for r in rows)
    assert {r["gemm"] for r in rows} == {"gate_up", "down"}


def _fused():
    return H200.fitted_model(Kernel.gemm, FUSED_MOE_IMPL)


def test_the_bundled_fused_entry_is_the_fit_of_the_committed_csv():
    """hardware/h200-sxm.yaml's gemm / triton_fused_moe entry is fit_moe_campaign's on the committed CSV, to the
    digits fitting_io.fitted_yaml writes (overhead_s and tile_s 5 significant, memory_efficiency 4 decimals): a
    refit that moves a constant, or a CSV edited without rewriting the entry, fails here."""
    (fit,) = fit_moe_campaign(FUSED_CSV, H200)
    yaml = _fused()
    assert fit.fused_moe and yaml.fused_moe and fit.key == yaml.key == (Kernel.gemm, "triton_fused_moe")
    assert yaml.overhead_s == pytest.approx(fit.overhead_s, rel=1e-4)
    assert yaml.tile_s == pytest.approx(fit.tile_s, rel=1e-4)
    assert yaml.memory_efficiency == pytest.approx(fit.memory_efficiency, abs=5e-5)
    assert yaml.efficiency == fit.efficiency == FUSED_UNUSED_EFFICIENCY
    assert (yaml.rows, yaml.held_out_rows, yaml.max_tokens) == (fit.rows, fit.held_out_rows, fit.max_tokens)
    assert yaml.median_error == pytest.approx(fit.median_error, abs=5e-5)
    assert yaml.worst_error == pytest.approx(fit.worst_error, abs=5e-5)
    assert yaml.campaigns == fit.campaigns == ("moe/h200-fused-moe-block-fp8.csv",)
    assert fitted_yaml([fit]).splitlines()[-1] in (data_dir("hardware") / "h200-sxm.yaml").read_text()


def test_the_fused_fit_is_physical_and_holds_its_held_out_rows():
    """c0 a launch's order (1-50 us in a graph), B = eta_mem beta under the measured copy bandwidth (the run's own
    and the YAML's), tau under a microsecond a program, max_tokens the largest step measured; every row held out
    once (leave-one-out), predicted by the fit on the others within 10% at the median (the form's reason: a
    per-program cost is why the down GEMM, 14x the programs an expert, runs slower per byte than the gate/up GEMM)."""
    meta, rows = read_moe_csv(FUSED_CSV)
    fit = fit_fused(rows, H200)
    bytes_per_s = fit.memory_efficiency * H200.measured.copy_bytes_per_s
    assert 1e-6 < fit.overhead_s < 5e-5
    assert 0.5 * H200.measured.copy_bytes_per_s < bytes_per_s < min(float(meta["copy_bytes_per_s"]),
                                                                    H200.measured.copy_bytes_per_s)
    assert 0 < fit.tile_s < 1e-6 and fit.max_tokens == max(r["tokens"] for r in rows) == 512
    assert fit.held_out_rows == fit.rows == len(rows) and fit.median_error < 0.10


def test_the_fused_worst_error_covers_every_row_it_prices():
    """The reported worst error is no smaller than the full fit's own miss at any measured row (every row is inside
    its range, 1 .. max_tokens): a held-out split that always kept one tile class fitted (the 16-token gate/up row,
    BLOCK_K 64 / BLOCK_N 256) reported 0.13 where the fit missed that row by 35%."""
    _, rows = read_moe_csv(FUSED_CSV)
    fit = fit_fused(rows, H200)
    roofs = Ceilings.of(H200, DType.fp8_e4m3, CeilingSource.calibrated)
    for r in rows:
        q = float(gemm(r["pairs"], r["n"], r["k"], DType.fp8_e4m3, "experts", None, r["experts_touched"]).hbm_bytes)
        t = fused_moe_time(fit, roofs, r["tokens"], r["pairs"], r["experts_touched"], r["n"], q)
        assert r["tokens"] <= fit.max_tokens and abs(t / r["seconds"] - 1) <= fit.worst_error


def test_the_fused_fit_reads_no_compute_efficiency():
    """The form has no compute term: fused_moe_time's price does not move with `efficiency` (stored as 1.0)."""
    fit = _fused()
    roofs = Ceilings.of(H200, DType.fp8_e4m3, CeilingSource.calibrated)
    args = (roofs, 32, 256, 160, 7168, 3e8)
    assert fused_moe_time(dataclasses.replace(fit, efficiency=0.3), *args) == fused_moe_time(fit, *args)


def test_a_fused_row_priced_by_hand():
    """The 32-token down GEMM: 160 experts touched, 256 pairs, n 7168, k 256 (fp8: 1 byte each): Q = 160 x 7168
    x 256 + 256 x (256 + 7168), tiles = 160 x ceil(256 / (160 x 64)) x 7168 / 128 (BLOCK_M 64, BLOCK_N 128 at
    the shipped file's key 32), priced by rooflab.predict.fused_moe_time with the bundled entry."""
    _, rows = read_moe_csv(FUSED_CSV)
    fit = _fused()
    row = next(r for r in rows if r["gemm"] == "down" and r["tokens"] == 32)
    touched = row["experts_touched"]
    q = touched * 7168 * 256 + 256 * (256 + 7168)
    tiles = touched * 1 * 56
    hand = fit.overhead_s + q / (fit.memory_efficiency * H200.measured.copy_bytes_per_s) + tiles * fit.tile_s
    roofs = Ceilings.of(H200, DType.fp8_e4m3, CeilingSource.calibrated)
    assert fused_moe_time(fit, roofs, 32, 256, touched, 7168, q) == pytest.approx(hand, rel=1e-12)
    assert hand == pytest.approx(row["seconds"], rel=0.10)


def test_the_fused_entry_is_no_general_gemm_fit():
    """Its form is fused_moe_time's: predict_time never picks it for a GEMM (model_fits leaves it out), names it
    only to refuse it, and fused_moe_time refuses a fit without the tile term."""
    cost = gemm(16, 4096, 4096, DType.fp8_e4m3)
    assert FUSED_MOE_IMPL not in {f.impl for f in model_fits(H200, Kernel.gemm)}
    assert predict_time(H200, Kernel.gemm, lambda a, b: cost, DType.fp8_e4m3, FUSED_MOE_IMPL, optional=True) is None
    roofs = Ceilings.of(H200, DType.fp8_e4m3, CeilingSource.calibrated)
    with pytest.raises(InputError, match="fused_moe_time takes a fused MoE fit"):
        fused_moe_time(_bundled("torch_scaled_grouped_mm"), roofs, 32, 256, 8, 7168, 1e6)


def test_a_fused_campaign_too_small_or_unphysical_is_refused():
    _, rows = read_moe_csv(FUSED_CSV)
    with pytest.raises(InputError, match="at least 6 needed"):
        fit_fused(rows[:4], H200)
    flipped = [dict(r, seconds=1e-3 / (1 + r["tokens"])) for r in rows]     # slower with fewer bytes
    with pytest.raises(InputError, match="unphysical fit"):
        fit_fused(flipped, H200)

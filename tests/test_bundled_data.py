"""`rooflab validate` on the bundled H200 dataset (measurements/), on a machine without a GPU.

The data are real runs (RESULTS.md says when, where and with which command). These tests pin
what the committed data and the current cost model say together: every bundled kernel was
measured, its metadata is complete, and the calibrated model predicts the held-out half of the
sweep within the bounds rooflab claims (median <= 10%, worst <= 25% per kernel). The data are
fixed files, so nothing here depends on the speed of the machine running the tests.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rooflab import DType, load_gpu
from rooflab.bench.records import read_measurements
from rooflab.bench.validate import validate
from rooflab.cli import app
from rooflab.load import data_dir
from rooflab.roofline import Ceilings
from rooflab.vocab import CeilingSource, Kernel

SWEEP = data_dir("measurements") / "h200-sweep.csv"
META_KEYS = ("date", "gpu_spec", "device_name", "driver", "cuda_runtime", "cupy", "torch", "rooflab",
             "git_commit", "command", "clocks_sm_mem_mhz")

#: The kernels of the first campaigns: the bundled sweep measures each of them (later kernels join as measured).
FIRST_ROUND = {Kernel.naive, Kernel.naive_softmax, Kernel.flash, Kernel.paged, Kernel.split_kv, Kernel.merge}


@pytest.fixture(scope="module")
def validation():
    return validate(SWEEP)


def test_dataset_ships_with_metadata():
    meta, rows = read_measurements(SWEEP)
    for key in META_KEYS:
        assert meta.get(key), key
    assert meta["device_name"] == "NVIDIA H200" and meta["gpu_spec"] == "h200-sxm"
    assert {r.kernel for r in rows if r.impl == "rooflab"} >= FIRST_ROUND
    assert all(r.max_rel_err < 0.05 for r in rows)   # every row passed its oracle check before timing


def test_calibrated_ceilings_are_bundled():
    gpu = load_gpu("h200-sxm")
    m = gpu.measured
    assert m is not None and m.device_name == "NVIDIA H200" and m.date and m.driver and m.cupy
    # measured ceilings sit below the datasheet's, as real ones do
    assert 0.5 * gpu.hbm_bandwidth_bytes_per_s < m.copy_bytes_per_s < gpu.hbm_bandwidth_bytes_per_s
    for dtype in (DType.fp16, DType.bf16):
        roofs = Ceilings.of(gpu, dtype, CeilingSource.calibrated)
        assert 0.5 * gpu.matmul_flop_per_s(dtype) < roofs.matmul_flop_per_s < gpu.matmul_flop_per_s(dtype)


def test_every_rooflab_kernel_is_predicted_within_bounds(validation):
    # rooflab's implementations: "rooflab", and "rooflab_hopper" for the wgmma flash kernel (d 128 on
    # the H200); the mma.sync flash kernel still runs the two d-64 rows, too few to fit
    ours = [g for g in validation.groups if g.impl.startswith("rooflab") and g.fit is not None]
    assert {g.kernel for g in ours} >= FIRST_ROUND
    assert ("flash", "rooflab_hopper") in {(g.kernel, g.impl) for g in ours}
    for g in ours:
        assert g.held_out_rows >= 2, (g.kernel, g.impl)
        assert g.median_error <= 0.10, (g.kernel, g.impl, g.median_error)
        assert g.worst_error <= 0.25, (g.kernel, g.impl, g.worst_error)


def test_the_fit_never_sees_held_out_rows(tmp_path):
    # change every held-out time of the bundled sweep tenfold: the fitted constants must not move
    # (only the reported errors do), or the "held-out" error would be an in-sample one
    from dataclasses import replace

    from rooflab.bench.records import write_measurements

    meta, rows = read_measurements(SWEEP)
    seen: dict[tuple, int] = {}
    changed = []
    for m in rows:
        i = seen.setdefault((m.kernel, m.impl), 0)
        seen[(m.kernel, m.impl)] += 1
        changed.append(replace(m, time_s=m.time_s * 10) if i % 2 == 1 else m)
    path = tmp_path / "perturbed.csv"
    write_measurements(path, changed, meta)
    before = {(g.kernel, g.impl): g for g in validate(SWEEP).groups}
    after = {(g.kernel, g.impl): g for g in validate(path).groups}
    for key, g in before.items():
        if g.fit is None:
            continue
        assert after[key].fit == g.fit, key
        assert after[key].median_error > 0.5 > g.median_error, key   # predictions ~10x too fast: errors ~0.9


def test_pytorch_peers_are_in_the_dataset(validation):
    impls = {(g.kernel, g.impl) for g in validation.groups}
    assert {("flash", "torch_flash"), ("flash", "torch_cudnn"), ("paged", "torch_cudnn_dense"),
            ("naive", "torch_eager"), ("merge", "torch_eager")} <= impls


def test_validate_cli_on_bundled_data():
    r = CliRunner().invoke(app, ["validate", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["gpu"] == "h200-sxm" and doc["ceilings"] == "calibrated"
    table = CliRunner().invoke(app, ["validate"]).stdout
    assert "NVIDIA H200" in table and "held-out" in table


# --- the fitted decode parallelism, and the split counts it recommends ----------------------------

SPLITS = data_dir("measurements") / "h200-splits.csv"


def test_recorded_units_per_sm_is_what_the_fits_found():
    # hardware/h200-sxm.yaml records the units per SM `rooflab fit` found for rooflab's decode kernels over
    # every single-GPU campaign, and the independent split-count sweep alone finds the same value
    gpu = load_gpu("h200-sxm")
    recorded = gpu.units_per_sm
    assert recorded == 1.5
    for kernel in (Kernel.paged, Kernel.split_kv):
        assert gpu.fitted_model(kernel, "rooflab").units_per_sm == recorded, kernel
    fits = {g.kernel: g.fit.units_per_sm for g in validate(SPLITS).groups if g.impl == "rooflab"}
    assert fits == {Kernel.split_kv: recorded}
    assert load_gpu("h100-sxm").units_per_sm == 1.0   # none fitted: one unit an SM


def test_recommended_splits_are_near_the_fastest_measured():
    # measurements/h200-splits.csv times split-KV over a grid of counts for seven decode workloads
    # (benchmarks/split_recommendation.py); with the fitted value the recommended count is within
    # 10% of the fastest measured one everywhere, with units_per_sm = 1 it is up to 49% slower
    from rooflab.bench.cases import LLAMA3_8B
    from rooflab.cost.paged import recommend_splits

    meta, rows = read_measurements(SPLITS)
    assert meta["device_name"] == "NVIDIA H200" and meta["git_commit"] and meta["command"]
    times: dict[tuple[int, int], dict[int, float]] = {}
    for m in rows:
        times.setdefault((m.lengths()[0], m.batch), {})[m.splits] = m.time_s
    assert len(times) == 7
    gpu = load_gpu("h200-sxm")
    fitted, plain = [], []
    for (ctx, batch), by_splits in times.items():
        best = min(by_splits.values())
        for k, out in ((gpu.units_per_sm, fitted), (1.0, plain)):
            s = recommend_splits(LLAMA3_8B, [ctx] * batch, gpu.num_sms, units_per_sm=k)
            out.append(by_splits[s] / best)
    assert max(fitted) < 1.10, fitted
    assert max(plain) > 1.25 and sum(fitted) < sum(plain)


def test_decode_report_uses_the_fitted_parallelism():
    from rooflab.report import decode_report
    from rooflab import load_model

    h200 = decode_report(load_model("llama-3-8b"), load_gpu("h200-sxm"), [32768])
    h100 = decode_report(load_model("llama-3-8b"), load_gpu("h100-sxm"), [32768])
    assert h200.facts.units_per_sm == 1.5 and h200.facts.recommended_splits == 25
    assert h100.facts.units_per_sm == 1.0 and h100.facts.recommended_splits == 17


# --- the fp8 KV cache campaign ------------------------------------------------------------------

FP8 = data_dir("measurements") / "h200-fp8-decode.csv"


def test_fp8_decode_file_pairs_each_workload_and_is_predicted_with_its_kv_dtype():
    # measurements/h200-fp8-decode.csv (benchmarks/fp8_decode.py): each decode workload with an fp16 and
    # an fp8 e4m3 cache; validate must read kv_dtype, so an fp8 row's predicted bytes drop by half the KV
    meta, rows = read_measurements(FP8)
    for key in META_KEYS:
        assert meta.get(key), key
    assert [r.kv_dtype for r in rows] == ["", "fp8_e4m3"] * 4 and all(r.max_rel_err < 2e-3 for r in rows)
    by_row = {r.config: r for r in validate(FP8).rows}
    for fp16, fp8 in zip(rows[::2], rows[1::2]):
        assert (fp16.context_lens, fp16.splits) == (fp8.context_lens, fp8.splits)
        kv_fp16 = sum(fp16.lengths()) * fp16.num_kv_heads * fp16.head_dim * 2 * 2      # K and V, fp16
        saved = by_row[fp16.describe()].hbm_bytes - by_row[fp8.describe()].hbm_bytes
        assert saved == pytest.approx(kv_fp16 / 2, rel=1e-12)

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
from rooflab.bench.records import KERNELS, read_measurements
from rooflab.bench.validate import validate
from rooflab.cli import app
from rooflab.load import data_dir
from rooflab.roofline import CeilingSource, Ceilings

SWEEP = data_dir("measurements") / "h200-sweep.csv"
META_KEYS = ("date", "gpu_spec", "device_name", "driver", "cuda_runtime", "cupy", "torch", "rooflab",
             "git_commit", "command", "clocks_sm_mem_mhz")


@pytest.fixture(scope="module")
def validation():
    return validate(SWEEP)


def test_dataset_ships_with_metadata():
    meta, rows = read_measurements(SWEEP)
    for key in META_KEYS:
        assert meta.get(key), key
    assert meta["device_name"] == "NVIDIA H200" and meta["gpu_spec"] == "h200-sxm"
    assert {r.kernel for r in rows if r.impl == "rooflab"} == set(KERNELS)
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
    ours = {g.kernel: g for g in validation.groups if g.impl == "rooflab"}
    assert set(ours) == set(KERNELS)
    for kernel, g in ours.items():
        assert g.held_out_rows >= 2, kernel
        assert g.median_error <= 0.10, (kernel, g.median_error)
        assert g.worst_error <= 0.25, (kernel, g.worst_error)


def test_errors_are_reported_on_held_out_rows_only(validation):
    for g in validation.groups:
        rows = [r for r in validation.rows if (r.kernel, r.impl) == (g.kernel, g.impl)]
        assert g.held_out_rows == sum(r.held_out for r in rows if r.error is not None)
        # alternate rows: about half held out
        assert abs(2 * sum(r.held_out for r in rows) - len(rows)) <= 1


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

"""Tests of rooflab/fit/records.py: the measurement format (context lengths, a write read back, a good row)
and the metadata the bundled H200 dataset (measurements/) ships with.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from rooflab.fit.records import format_context_lens, parse_context_lens, read_measurements, write_measurements
from rooflab.load import data_dir
from rooflab.vocab import Kernel
from support import GOOD_ROW, _file, _flash, _merge, _write_text


META = {"gpu_spec": "h100-sxm", "device_name": "NVIDIA H100 80GB HBM3", "date": "fixture"}


def test_context_lens_round_trip():
    assert parse_context_lens(format_context_lens([8192] * 128)) == [8192] * 128
    assert parse_context_lens(format_context_lens([100, 5000, 17])) == [100, 5000, 17]


def test_write_then_read(tmp_path):
    rows = [_flash(4096, 1e-3), _merge(16384, 2e-4)]
    path = tmp_path / "m.csv"
    write_measurements(path, rows, META)
    meta, back = read_measurements(path)
    assert meta["gpu_spec"] == "h100-sxm" and back == rows


def test_the_good_row_reads():
    # the mutations below start from this file, so it must be valid itself
    from rooflab.fit.records import read_measurements

    meta, rows = read_measurements(Path(_write_text(Path(tempfile.mkdtemp()), _file(GOOD_ROW))))
    assert rows[0].seq_len == 4096 and rows[0].kernel == "flash" and meta["gpu_spec"] == "h100-sxm"


SWEEP = data_dir("measurements") / "h200-sweep.csv"
META_KEYS = ("date", "gpu_spec", "device_name", "driver", "cuda_runtime", "cupy", "torch", "rooflab",
             "git_commit", "command", "clocks_sm_mem_mhz")

#: The kernels of the first campaigns: the bundled sweep measures each of them (later kernels join as measured).
FIRST_ROUND = {Kernel.naive, Kernel.naive_softmax, Kernel.flash, Kernel.paged, Kernel.split_kv, Kernel.merge}


def test_dataset_ships_with_metadata():
    meta, rows = read_measurements(SWEEP)
    for key in META_KEYS:
        assert meta.get(key), key
    assert meta["device_name"] == "NVIDIA H200" and meta["gpu_spec"] == "h200-sxm"
    assert {r.kernel for r in rows if r.impl == "rooflab"} >= FIRST_ROUND
    assert all(r.max_rel_err < 0.05 for r in rows)   # every row passed its oracle check before timing

"""rooflab.fit.dist_validate: no row of any bundled measurement file (measurements/) runs faster than its physical
floor (distributed_floor for the distributed, collective, GEMM and step rows; the datasheet floor for the rest)."""

from __future__ import annotations

import pytest

from rooflab import load_gpu
from rooflab.fit.records import read_measurements
from rooflab.fit.validate import predict_measurement
from rooflab.load import data_dir
from rooflab.vocab import CeilingSource


@pytest.mark.parametrize("name", sorted(p.name for p in data_dir("measurements").glob("*.csv")))
def test_no_measured_row_runs_faster_than_its_floor(name):
    from rooflab.fit.dist_validate import distributed_floor, is_distributed

    meta, rows = read_measurements(data_dir("measurements") / name)
    gpu = load_gpu(meta["gpu_spec"])
    for m in rows:
        floor = distributed_floor(m, gpu, meta) if is_distributed(m) else \
            float(predict_measurement(m, gpu, CeilingSource.datasheet).t_floor_s)
        assert m.time_s >= floor, (m.describe(), m.time_s, floor)

"""Three roofs and physical floors: the exp roof, the bound it can set, floors no measurement beats.

Sources: the H200's measured rows (measurements/, RESULTS.md); NVIDIA's Blackwell datasheet, HGX B200 column
(2.25 PFLOP/s dense fp16); 16 exps per clock per SM (CUDA C++ Programming Guide, throughput table) at
148 SMs x 1.965 GHz = 4.65e12 exp/s; FlashAttention-4 (the exp units tie the tensor cores at d 128 on B200).
"""

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

"""Three roofs and physical floors: the exp roof, the bound it can set, floors no measurement beats.

Sources: the H200's measured rows (measurements/, RESULTS.md); NVIDIA's Blackwell datasheet, HGX B200 column
(2.25 PFLOP/s dense fp16); 16 exps per clock per SM (CUDA C++ Programming Guide, throughput table) at
148 SMs x 1.965 GHz = 4.65e12 exp/s; FlashAttention-4 (the exp units tie the tensor cores at d 128 on B200).
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflab import DType, load_gpu, load_model
from rooflab.bench.records import read_measurements
from rooflab.bench.validate import predict_measurement
from rooflab.cost.common import KernelCost
from rooflab.explain import explain
from rooflab.load import available, data_dir
from rooflab.roofline import EMULATED_EXP_FLOP, Ceilings, predict_kernel, shared_fma_time
from rooflab.vocab import CeilingSource, Pipe, Variant


@pytest.mark.parametrize("name", sorted(p.name for p in data_dir("measurements").glob("*.csv")))
def test_no_measured_row_runs_faster_than_its_floor(name):
    from rooflab.bench.dist_validate import distributed_floor, is_distributed

    meta, rows = read_measurements(data_dir("measurements") / name)
    gpu = load_gpu(meta["gpu_spec"])
    for m in rows:
        floor = distributed_floor(m, gpu, meta) if is_distributed(m) else \
            float(predict_measurement(m, gpu, CeilingSource.datasheet).t_floor_s)
        assert m.time_s >= floor, (m.describe(), m.time_s, floor)


def test_b200_exp_units_tie_the_tensor_cores_at_d128():
    e = explain(Variant.flash, load_model("llama-3-8b"), load_gpu("b200"), seq_len=8192)
    steps = {s.quantity: s.value for section in e.sections for s in section.steps}
    # t_exp_sfu / t_compute = (1 / 4.65e12) / (4 x 128 / 2.25e15) per pair = 0.945
    assert 0.9 <= steps["exp_over_tensor"] <= 1.1
    assert steps["exp_over_tensor"] == pytest.approx(2.25e15 / (4 * 128) / 4.65e12, rel=1e-3)


def test_the_exp_roof_can_bind():
    roofs = Ceilings.of(load_gpu("h100-sxm"), DType.fp16)
    # one exp per 8 FLOP on the tensor pipe: t_exp = E / (4.18e12 + 66.9e12 / 8) is above F / 989.4e12
    kernel = KernelCost("exp_heavy", np.float64(8e12), np.float64(1e6), Pipe.tensor, np.float64(1e12))
    p = predict_kernel(kernel, roofs)
    assert str(p.bound) == "exp" and float(p.t_floor_s) == pytest.approx(1e12 / (4.18e12 + 66.9e12 / EMULATED_EXP_FLOP))


def test_vector_exps_share_the_fma_units():
    roofs = Ceilings.of(load_gpu("h100-sxm"), DType.fp16)
    f, e = 8.59e9, 2.15e9                      # a row softmax: 4 FLOP and 1 exp an element
    t = float(shared_fma_time(np.float64(f), np.float64(e), roofs))
    # never faster than either pipe working alone at full rate, never slower than the exp units alone
    assert f / roofs.vector_flop_per_s <= t <= e / roofs.exp_per_s
    assert t >= e / (roofs.exp_per_s + roofs.vector_flop_per_s / EMULATED_EXP_FLOP)


def test_floors_ignore_the_parallelism_model():
    from rooflab.cost.paged import paged_decode

    h100, model = load_gpu("h100-sxm"), load_model("llama-3-8b")
    roofs = Ceilings.of(h100, DType.fp16)
    launched = paged_decode(model, [32768], num_sms=h100.num_sms)          # 8 units on 132 SMs
    ideal = paged_decode(model, [32768])
    assert float(launched.parallel_fraction) < 0.1
    assert float(predict_kernel(launched.attention, roofs).t_floor_s) == float(predict_kernel(ideal.attention, roofs).t_floor_s)

"""Tests of rooflab/floors.py: physical floors and the roofs they come from.

Memory- and compute-bound floors (golden figures for one layer of Llama-3-8B on an H100 SXM in fp16; "chapter 1" = the
chapter "Naive attention and the online softmax"), ridge distances, the exp roof and the bound it can set (16 exps per
clock per SM, CUDA C++ Programming Guide; vector exps share the FMA units), floors that ignore the parallelism
model and that no measurement beats, the per-SM streaming curve (busy SMs to bandwidth), and calibrated
ceilings: bundled, named, needing a measured section.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rooflab.cost.common import KernelCost
from rooflab.cost.flash import flash_prefill
from rooflab.cost.naive import naive_prefill
from rooflab.cost.paged import paged_decode_uniform
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.floors import Ceilings, EMULATED_EXP_FLOP, floor, floor_kernel, shared_fma_time
from rooflab.specs import AttentionHeads, MeasuredCeilings
from rooflab.units import DType
from rooflab.vocab import CeilingSource, Pipe


H200 = load_gpu("h200-sxm")
#: A made-up curve shaped like a Hopper's: a few SMs draw more than their 1/132 share, all 132 reach 4.3 TB/s.
CURVE = {"1": 60e9, "2": 120e9, "4": 240e9, "8": 470e9, "16": 900e9, "32": 1.7e12, "64": 3.1e12, "132": 4.3e12}


def _with_curve(curve: dict | None):
    m = H200.measured or MeasuredCeilings(copy_bytes_per_s=4.3e12, gemm_flop_per_s={"fp16": 7.6e14},
                                          date="2026-11-30", device_name="NVIDIA H200")
    return dataclasses.replace(H200, measured=dataclasses.replace(m, stream_bytes_per_s=curve))


def test_without_a_curve_the_share_is_the_fraction():
    roofs = Ceilings.of(_with_curve(None), DType.fp16, CeilingSource.calibrated)
    f = np.array([1 / 132, 0.25, 1.0])
    assert np.array_equal(roofs.busy_share(f), f)


def test_the_curve_turns_busy_sms_into_bandwidth():
    roofs = Ceilings.of(_with_curve(CURVE), DType.fp16, CeilingSource.calibrated)
    share = roofs.busy_share(np.array([8 / 132, 16 / 132, 100 / 132, 1.0, 1.5]))
    assert share[0] == pytest.approx(470e9 / 4.3e12)            # a measured count: its own rate
    assert share[1] == pytest.approx(900e9 / 4.3e12)
    lo, hi = 3.1e12 / 4.3e12, 1.0                               # between 64 and 132 SMs, log-log
    assert lo < share[2] < hi
    assert share[3] == 1.0 and share[4] == 1.0
    assert roofs.busy_share(0.5 / 132) == pytest.approx(0.5 * 60e9 / 4.3e12)   # below one SM: linear


def test_a_curve_below_the_linear_model_never_slows_a_launch_down():
    flat = {"1": 10e9, "132": 4.3e12}                           # one SM draws less than its 1/132 share
    roofs = Ceilings.of(_with_curve(flat), DType.fp16, CeilingSource.calibrated)
    assert roofs.busy_share(1 / 132) == pytest.approx(1 / 132)


def test_a_curve_for_another_sm_count_is_ignored():
    odd = {"1": 60e9, "100": 4.3e12}                            # not this GPU's 132 SMs: not this GPU's curve
    assert Ceilings.of(_with_curve(odd), DType.fp16, CeilingSource.calibrated).stream == ()


@pytest.fixture(scope="module")
def roofs(h100):
    return Ceilings.of(h100, DType.fp16)


def test_ridge_distances(llama, roofs):
    # chapter 1, "22x past the ridge", "4.7x left of it", "a factor of 103"
    naive = floor(naive_prefill(llama.heads, 8192), roofs)
    flash = floor(flash_prefill(llama.heads, 8192), roofs)
    assert round(float(flash.ridge_ratio)) == 22
    assert round(1 / float(naive.ridge_ratio), 1) == 4.7
    assert round(float(flash.intensity_flop_per_byte / naive.intensity_flop_per_byte)) == 103


def test_memory_bound_time(llama, roofs):
    # chapter 1, "at 3.35 TB/s, 16.156 GiB per layer is 5.18 ms, or 165.7 ms for all 32 layers"
    naive = floor(naive_prefill(llama.heads, 8192), roofs)
    assert float(naive.t_memory_s) * 1e3 == pytest.approx(5.18, abs=0.005)
    assert float(naive.t_floor_s) * llama.num_layers * 1e3 == pytest.approx(165.7, abs=0.05)
    assert str(naive.bound) == "memory"


def test_compute_floor(llama, roofs):
    # chapter 1, "F/pi = 1.0995e12 x 32 / 989.4e12 = 35.6 ms"
    naive = floor(naive_prefill(llama.heads, 8192), roofs)
    flash = floor(flash_prefill(llama.heads, 8192), roofs)
    assert float(naive.t_compute_s) * llama.num_layers * 1e3 == pytest.approx(35.6, abs=0.05)
    assert float(flash.t_floor_s) * llama.num_layers * 1e3 == pytest.approx(35.6, abs=0.05)
    assert str(flash.bound) == "compute"


def test_the_exp_roof_can_bind():
    roofs = Ceilings.of(load_gpu("h100-sxm"), DType.fp16)
    # one exp per 8 FLOP on the tensor pipe: t_exp = E / (4.18e12 + 66.9e12 / 8) is above F / 989.4e12
    kernel = KernelCost("exp_heavy", np.float64(8e12), np.float64(1e6), Pipe.tensor, np.float64(1e12))
    p = floor_kernel(kernel, roofs)
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
    launched = paged_decode(model.heads, [32768], num_sms=h100.num_sms)          # 8 units on 132 SMs
    ideal = paged_decode(model.heads, [32768])
    assert float(launched.parallel_fraction) < 0.1
    assert float(floor_kernel(launched.attention, roofs).t_floor_s) == float(floor_kernel(ideal.attention, roofs).t_floor_s)


def test_ceilings_take_their_names_and_refuse_others():
    gpu = load_gpu("h200-sxm")
    calibrated = Ceilings.of(gpu, "fp16", "calibrated")
    assert calibrated.bandwidth_bytes_per_s == gpu.measured.copy_bytes_per_s       # not the datasheet figure
    with pytest.raises(InputError):
        Ceilings.of(gpu, DType.fp16, "measured")


def test_calibrated_ceilings_are_bundled():
    gpu = load_gpu("h200-sxm")
    m = gpu.measured
    assert m is not None and m.device_name == "NVIDIA H200" and m.date and m.driver and m.cupy
    # measured ceilings sit below the datasheet's, as real ones do
    assert 0.5 * gpu.hbm_bandwidth_bytes_per_s < m.copy_bytes_per_s < gpu.hbm_bandwidth_bytes_per_s
    for dtype in (DType.fp16, DType.bf16):
        roofs = Ceilings.of(gpu, dtype, CeilingSource.calibrated)
        assert 0.5 * gpu.matmul_flop_per_s(dtype) < roofs.matmul_flop_per_s < gpu.matmul_flop_per_s(dtype)


def test_kernel_floors_sum_to_at_least_both_roofs():
    # floor() takes the variant's floor as the sum of its launches' floors; that sum must already be at
    # least the headline compute and memory times (floor clamps only float rounding, so check before it)
    g = load_gpu("h200-sxm")
    roofs = Ceilings.of(g, DType.bf16)
    t = np.geomspace(16, 131072, 50)
    for cost in (naive_prefill(AttentionHeads(64, 8, 128), t, causal=True), flash_prefill(AttentionHeads(64, 8, 128), t),
                 paged_decode_uniform(AttentionHeads(64, 8, 128), t, 4, num_splits=8)):
        kernels = sum(floor_kernel(k, roofs).t_floor_s for k in cost.kernels)
        p = floor(cost, roofs)
        assert np.all(kernels >= p.t_compute_s * (1 - 1e-12)) and np.all(kernels >= p.t_memory_s * (1 - 1e-12))


def test_calibrated_ceilings_need_a_measured_section():
    with pytest.raises(InputError, match="rooflab calibrate"):
        Ceilings.of(load_gpu("a100-40gb"), DType.fp16, CeilingSource.calibrated)


def test_busy_share_of_one_fraction_equals_the_array_form():
    """busy_share's scalar path (Python floats, for the fit's grid search) gives the array path's np.interp
    answer to rounding, on a fine grid, near zero, at the measured SM counts and past 1."""
    import numpy as np

    from rooflab import load_gpu
    from rooflab.floors import Ceilings
    from rooflab.vocab import CeilingSource

    c = Ceilings.of(load_gpu("h200"), "bf16", CeilingSource.calibrated)
    assert c.stream
    fs = np.concatenate([np.linspace(0, 1.2, 2001), np.geomspace(1e-12, 1, 200), [n / 132 for n, _ in c.stream]])
    one = np.array([float(c.busy_share(float(f))) for f in fs])
    assert np.allclose(one, c.busy_share(fs), rtol=1e-12, atol=0)

"""Tests of rooflab/specs/gpu.py.

From the suites this file gathers:

Bad input at the Python API's doors: specs, the YAML schema, counts and sizes, writes, bounded work.

The CLI's share is in the fuzz suite (tests/test_fuzz_*.py); these pin each door's behaviour once.

Golden figures for one layer of Llama-3-8B on an H100 SXM in fp16, T = 8192 unless stated.

Every number here is derived in the chapter "Naive attention and the online softmax",
in the opening part (cited as "chapter 1, <passage>"): the S tensor, the
three-kernel traffic count, the intensity reconciliation and the time floors.
rooflab computes them from the YAML specs; nothing below is fed in but the workload.
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import DType, load_gpu
from rooflab.errors import SpecError


# --- specs are checked on every construction ---------------------------------------------------------

def test_replace_checks_the_new_value():
    gpu = load_gpu("h100-sxm")
    with pytest.raises(SpecError) as err:
        dataclasses.replace(gpu, hbm_bandwidth_bytes_per_s=-3.35e12)
    assert err.value.field == "hbm_bandwidth_bytes_per_s"


@pytest.fixture(scope="module")
def h100():
    return load_gpu("h100-sxm")


def test_ridge_point_is_295(h100):
    # chapter 1, "Against the H100 SXM ridge point of I* = 295 FLOP/byte fixed in section 0.4"
    assert h100.ridge_flop_per_byte(DType.fp16) == pytest.approx(989.4e12 / 3.35e12)
    assert round(h100.ridge_flop_per_byte(DType.fp16)) == 295


# --- physical roofs: the maximum SM clock x the per-clock rate, every accumulate mode (issue 27) ----------------

from rooflab.load import available
from rooflab.roofline import Ceilings
from rooflab.vocab import CeilingSource
from support import HUGE

BAD_NUMBERS = [0, -1, -1.98e9, float("nan"), float("inf"), 1e300, "", HUGE]


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_max_sm_clock_refuses_bad_values_naming_the_field(h100, value):
    with pytest.raises(SpecError) as err:
        dataclasses.replace(h100, max_sm_clock_hz=value)
    assert "max_sm_clock_hz" in str(err.value)


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_per_clock_rates_refuse_bad_values_naming_the_field(h100, value):
    with pytest.raises(SpecError) as err:
        dataclasses.replace(h100, tensor_flop_per_clock_per_sm={"fp16": value})
    assert "tensor_flop_per_clock_per_sm" in str(err.value)


def test_a_max_clock_below_the_boost_clock_is_refused(h100):
    with pytest.raises(SpecError) as err:
        dataclasses.replace(h100, max_sm_clock_hz=1.5e9)
    assert err.value.field == "max_sm_clock_hz" and "boost_clock_hz" in str(err.value)


def test_a_physical_roof_below_the_rated_one_is_refused(h100):
    with pytest.raises(SpecError) as err:                      # 132 x 2048 x 1.98 GHz = 535 TFLOP/s < 989.4
        dataclasses.replace(h100, tensor_flop_per_clock_per_sm={"fp16": 2048})
    assert err.value.field == "tensor_flop_per_clock_per_sm.fp16" and "rated" in str(err.value)


def test_per_clock_rates_need_the_clock_and_the_sms(h100):
    with pytest.raises(SpecError, match="max_sm_clock_hz"):
        dataclasses.replace(h100, max_sm_clock_hz=None)
    with pytest.raises(SpecError, match="num_sms"):
        dataclasses.replace(h100, num_sms=None)


def test_an_accumulate_mode_needs_its_operand_rate(h100):
    with pytest.raises(SpecError) as err:
        dataclasses.replace(h100, dense_tensor_flop_per_s={"fp16": 989.4e12, "fp8_acc16": 3e15})
    assert err.value.field == "dense_tensor_flop_per_s.fp8_acc16"


def test_rated_beaten_by_needs_physical_roofs(h100):
    with pytest.raises(SpecError) as err:
        dataclasses.replace(h100, tensor_flop_per_clock_per_sm=None, rated_beaten_by="a run")
    assert err.value.field == "rated_beaten_by"
    for bad in ("", "   ", HUGE):
        with pytest.raises(SpecError, match="rated_beaten_by"):
            dataclasses.replace(h100, rated_beaten_by=bad)


def test_h100_datasheet_keeps_the_chapters_ridge_and_physical_runs_at_1980_mhz(h100):
    # chapter 1's ridge of 295 stays the datasheet's and the default floor's: no published run beat 989.4 TFLOP/s
    assert h100.floor_source is CeilingSource.datasheet
    assert round(Ceilings.of(h100, DType.fp16).ridge_flop_per_byte) == 295
    assert round(Ceilings.of(h100, DType.fp16, "datasheet").ridge_flop_per_byte) == 295
    physical = Ceilings.of(h100, DType.fp16, CeilingSource.physical)
    assert physical.matmul_flop_per_s == pytest.approx(132 * 4096 * 1.98e9)      # 1070.5 TFLOP/s
    assert physical.bandwidth_bytes_per_s == h100.hbm_bandwidth_bytes_per_s


def test_rtx_4090_floor_is_physical_in_fp16_accumulate():
    """Published runs beat the rated 165.2 TFLOP/s (FlashInfer's fp16-accumulate prefill, FFPA's 200 TFLOP/s): the
    4090's floor is its physical roof, 1024 FLOP a clock an SM x 128 SMs x 3105 MHz in fp16 accumulate."""
    g = load_gpu("rtx-4090")
    assert g.floor_source is CeilingSource.physical
    floor = Ceilings.of(g, DType.fp16)
    assert floor.source is CeilingSource.physical and floor.matmul_mode == "fp16_acc16"
    assert floor.matmul_flop_per_s == pytest.approx(1024 * 128 * 3.105e9)         # 407.0 TFLOP/s
    assert floor.matmul_flop_per_s > 240e12                                        # FlashInfer's prefill
    assert floor.vector_flop_per_s == pytest.approx(82.6e12 * 3.105 / 2.52)
    rated = Ceilings.of(g, DType.fp16, CeilingSource.datasheet)
    assert rated.matmul_flop_per_s == 165.2e12 and rated.matmul_mode == "fp16"
    assert Ceilings.of(g, DType.bf16).matmul_mode == "bf16"                        # bf16 accumulates in fp32 only


def test_b200_has_fp4_and_every_physical_roof_is_at_least_the_rated_one():
    assert load_gpu("b200").physical_tensor_flop_per_s["fp4"] == pytest.approx(32768 * 148 * 1.965e9)
    for name in available("hardware"):
        g = load_gpu(name)
        for key, rated in g.dense_tensor_flop_per_s.items():
            assert g.physical_tensor_flop_per_s[key] >= rated * 0.995, (name, key)
        if g.max_sm_clock_hz is not None and g.boost_clock_hz is not None:
            assert g.max_sm_clock_hz >= g.boost_clock_hz, name


# --- the GPUs issue 27 adds, each figure against its cited datasheet ---------------------------------------------

#: (file, nvidia-smi's name, bandwidth B/s, {rate key: dense FLOP/s}, SMs, capacity bytes): the datasheets cited in
#: each YAML's source (dense = half the sparsity figures where the datasheet gives those).
NEW_GPUS = [
    ("a100-pcie-80gb", "NVIDIA A100 80GB PCIe", 1.935e12, {"fp16": 312e12, "tf32": 156e12}, 108, 81920 << 20),
    ("h100-nvl", "NVIDIA H100 NVL", 3.9e12, {"fp16": 835.5e12, "fp8": 1670.5e12}, 132, 94 << 30),
    ("h800", "NVIDIA H800", 3.35e12, {"fp16": 989.4e12, "fp8": 1978.9e12}, 132, 81559 << 20),
    ("l4", "NVIDIA L4", 300e9, {"fp16": 121e12, "fp8": 242.5e12}, 58, 23034 << 20),
    ("a10", "NVIDIA A10", 600e9, {"fp16": 125e12, "tf32": 62.5e12}, 72, 23028 << 20),
    ("t4", "Tesla T4", 320e9, {"fp16": 65e12}, 40, 15360 << 20),
    ("l40", "NVIDIA L40", 864e9, {"fp16": 181.05e12, "fp8": 362e12}, 142, 46068 << 20),
    ("rtx-3090", "NVIDIA GeForce RTX 3090", 936e9, {"fp16": 71e12, "fp16_acc16": 142e12}, 82, 24576 << 20),
    ("mi325x", "AMD Instinct MI325X", 6e12, {"fp16": 1307.4e12, "fp8": 2614.9e12}, 304, 256 << 30),
    ("mi355x", "AMD Instinct MI355X", 8e12, {"fp16": 2516.6e12, "fp8": 5033.2e12, "fp4": 10066.3e12}, 256, 288 << 30),
]


@pytest.mark.parametrize("name, smi, bandwidth, rates, sms, capacity", NEW_GPUS)
def test_new_gpus_match_their_datasheets(name, smi, bandwidth, rates, sms, capacity):
    g = load_gpu(name)
    assert g.name == name and g.source and "http" in g.source
    assert g.hbm_bandwidth_bytes_per_s == bandwidth and g.num_sms == sms and g.hbm_capacity_bytes == capacity
    for key, rate in rates.items():
        assert g.dense_tensor_flop_per_s[key] == rate, key
    assert load_gpu(smi).name == name                                    # nvidia-smi's exact name finds it


def test_physical_roofs_of_new_gpus_are_per_clock_x_sms_x_max_clock():
    assert load_gpu("h100-nvl").physical_matmul_flop_per_s(DType.fp16)[0] == pytest.approx(4096 * 132 * 1.785e9)
    assert load_gpu("mi355x").physical_matmul_flop_per_s(DType.fp8_e4m3)[0] == pytest.approx(8192 * 256 * 2.4e9, rel=1e-4)   # the rated 5033.2 rounds it up
    # the 3090 gives no maximum clock: its physical roof is its fastest rated mode, fp16 accumulate
    assert load_gpu("rtx-3090").physical_matmul_flop_per_s(DType.fp16) == (142e12, "fp16_acc16")

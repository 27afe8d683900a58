"""Tests of rooflab/specs/gpu.py: GpuSpec's checks and the bundled GPUs' figures.

The ridge point (295 on the H100; "chapter 1" = the chapter "Naive attention and the online softmax"), clocks and per-clock
rates, physical roofs against rated ones (the RTX 4090 in fp16 accumulate, the B200's fp4), datasheet values
of the new GPUs, compute capabilities; and the cross-field checks, each refusing a self-contradicting spec
naming the field: calibrated ceilings far above the datasheet, stream rates for more SMs than the GPU has,
a capacity below the CUDA-visible memory, fit metadata with more held-out rows than rows, MoE and dense FFN
settings that contradict.
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


def test_ridge_point_is_295(h100):
    # chapter 1, "Against the H100 SXM ridge point of I* = 295 FLOP/byte fixed in section 0.4"
    assert h100.ridge_flop_per_byte(DType.fp16) == pytest.approx(989.4e12 / 3.35e12)
    assert round(h100.ridge_flop_per_byte(DType.fp16)) == 295


# --- physical roofs: the maximum SM clock x the per-clock rate, every accumulate mode (issue 27) ----------------

from rooflab.load import available
from rooflab.floors import Ceilings
from rooflab.vocab import CeilingSource
from support import HUGE
from rooflab import load_model
from rooflab.specs.fitted import FittedModel
from rooflab.specs.interconnect import CollectiveFit
from rooflab.vocab import Kernel

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
    ("rtx-6000-ada", "NVIDIA RTX 6000 Ada Generation", 960e9, {"fp16": 364.25e12, "fp8": 728.5e12}, 142, 49140 << 20),
    ("rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 1792e9,
     {"fp16": 500e12, "fp8": 1000e12, "fp4": 2000e12}, 188, 97887 << 20),
    # no NVIDIA datasheet: the HGX H20 spec sheet SemiAnalysis published (4.0 TB/s, 148 / 296 / 74 TFLOPS); 78 SMs and
    # 97871 MiB as torch and nvidia-smi report an "NVIDIA H20" (sources in hardware/h20.yaml)
    ("h20", "NVIDIA H20", 4.0e12, {"fp16": 148e12, "bf16": 148e12, "fp8": 296e12, "tf32": 74e12}, 78, 97871 << 20),
    # NVIDIA's Blackwell Ultra datasheet / HGX page (sparse / 2 / 8 GPUs); 148 SMs and 275040 MiB as a B300 reports them
    # no NVIDIA datasheet: tile-ai/TileOPs#1658's H20-3e profile; 143771 MiB as nvidia-smi reports an "NVIDIA H20-3e"
    ("h20-3e", "NVIDIA H20-3e", 4.8e12, {"fp16": 148e12, "fp8": 296e12, "tf32": 74e12}, 78, 143771 << 20),
    # no NVIDIA datasheet: derived (GA102's GeForce per-SM rates x 80 SMs x 1.71 GHz); 23028 MiB as nvidia-smi reports it
    ("a10g", "NVIDIA A10G", 600e9, {"fp16": 70.04e12, "bf16": 70.04e12, "tf32": 35.02e12}, 80, 23028 << 20),
    ("b300", "NVIDIA B300 SXM6 AC", 7.75e12, {"fp16": 2.25e15, "fp8": 4.5e15, "fp4": 14e15, "tf32": 1.125e15}, 148,
     275040 << 20),
]


@pytest.mark.parametrize("name, smi, bandwidth, rates, sms, capacity", NEW_GPUS)
def test_new_gpus_match_their_datasheets(name, smi, bandwidth, rates, sms, capacity):
    g = load_gpu(name)
    assert g.name == name and g.source and "http" in g.source
    assert g.hbm_bandwidth_bytes_per_s == bandwidth and g.num_sms == sms and g.hbm_capacity_bytes == capacity
    for key, rate in rates.items():
        assert g.dense_tensor_flop_per_s[key] == rate, key
    assert load_gpu(smi).name == name                                    # nvidia-smi's exact name finds it


def test_h20_is_a_capped_hopper_whose_physical_roofs_are_its_rated_ones():
    """The H20's 148 TFLOP/s is a cap far below 78 SMs x 4096 FLOP a clock x 1.98 GHz (633 TFLOP/s): no per-clock rate
    is published, so its physical roofs are the rated figures and nothing derives a faster one from the SM count."""
    g = load_gpu("h20")
    assert g.architecture == "hopper" and g.compute_capability_version == (9, 0)
    assert g.tensor_flop_per_clock_per_sm is None and g.max_sm_clock_hz == g.boost_clock_hz == 1.98e9
    assert g.exp_per_s == pytest.approx(16 * 78 * 1.98e9, rel=1e-3) and g.l2_bytes is None
    assert g.physical_tensor_flop_per_s == g.dense_tensor_flop_per_s
    assert g.cuda_visible_bytes == 97285 << 20 and g.vector_fp32_flop_per_s == 44e12
    assert g.interconnect.link_bytes_per_s * 2 == g.interconnect_bytes_per_s == 900e9
    assert g.dense_tensor_flop_per_s["bf16"] > 142.3e12                 # the fastest published H20 GEMM (source)
    assert load_gpu("H20").name == "h20"


def test_h20_3e_is_the_h20_compute_with_the_h200_memory_and_the_names_never_cross():
    """The H20-3e's SMs, clocks and FP32 rate are ASSUMED the H20's (hardware/h20-3e.yaml says so); its capacity is the
    H200's 143771 MiB and its bandwidth the H200's 4.8 TB/s. "H20" and "NVIDIA H20" mean the 96 GB part only."""
    e, h20, h200 = load_gpu("h20-3e"), load_gpu("h20"), load_gpu("h200-sxm")
    for field in ("num_sms", "boost_clock_hz", "max_sm_clock_hz", "vector_fp32_flop_per_s", "compute_capability"):
        assert getattr(e, field) == getattr(h20, field), field
    assert e.dense_tensor_flop_per_s == h20.dense_tensor_flop_per_s
    assert e.hbm_capacity_bytes == h200.hbm_capacity_bytes and e.hbm_bandwidth_bytes_per_s == h200.hbm_bandwidth_bytes_per_s
    assert "ASSUMED" in e.source and e.physical_tensor_flop_per_s == e.dense_tensor_flop_per_s
    assert [load_gpu(n).name for n in ("H20", "NVIDIA H20", "H20-3e", "NVIDIA H20-3e", "H20 141GB")] == \
        ["h20", "h20", "h20-3e", "h20-3e", "h20-3e"]


def test_a10g_rates_are_ga102_geforce_per_sm_rates_and_published_runs_reach_99_percent_of_them():
    """The A10G's rates are derived (hardware/a10g.yaml): 512 / 256 FLOP a clock an SM (fp16 / tf32 with fp32
    accumulate, half the A10's) x 80 SMs x 1.71 GHz. Published torch GEMMs on an A10G (zzc0721/torch-performance-test-data
    #126: FP16 69.47, TF32 34.71 TFLOP/s) sit just under them: a full-rate (A10-like) derivation would put them at 50%."""
    g, a10 = load_gpu("a10g"), load_gpu("a10")
    for key, measured in (("fp16", 69.47e12), ("bf16", 69.47e12), ("tf32", 34.71e12)):
        rate = g.dense_tensor_flop_per_s[key]
        assert rate == pytest.approx(g.tensor_flop_per_clock_per_sm[key] * 80 * 1.71e9, rel=1e-4)
        assert 0.98 < measured / rate < 1.0, key
        assert g.tensor_flop_per_clock_per_sm[key] * 2 == a10.tensor_flop_per_clock_per_sm[key], key
    assert g.physical_tensor_flop_per_s == pytest.approx(g.dense_tensor_flop_per_s, rel=1e-4)   # rated at the max clock
    assert load_gpu("NVIDIA A10G").name == "a10g" and load_gpu("NVIDIA A10").name == "a10"


def test_b300_roofs_sit_above_every_published_b300_measurement():
    """Measured on a B300 SXM6 AC (ademeure/QuickRunCUDA, cited in hardware/b300.yaml): cuBLAS FP16 2221, TF32 1109,
    FP8 4491 TFLOP/s, FFMA 74.6 TFLOP/s, HBM read 7.12 TB/s, MUFU.EX2 9.6e12/s; the rated figures and the physical
    roofs (per clock x 148 SMs x 2032 MHz) are never below them."""
    g = load_gpu("b300")
    assert g.architecture == "blackwell" and g.compute_capability_version == (10, 3)
    assert g.physical_tensor_flop_per_s["fp4"] == pytest.approx(49152 * 148 * 2.032e9)     # 14.78 PFLOP/s
    for key, measured in (("fp16", 2221e12), ("tf32", 1109e12), ("fp8", 4491e12)):
        assert g.dense_tensor_flop_per_s[key] > measured, key
    assert g.vector_fp32_flop_per_s > 74.6e12 and g.hbm_bandwidth_bytes_per_s > 7.12e12
    assert g.exp_per_s >= 9.6e12 and g.l2_bytes == 126 << 20
    assert load_gpu("NVIDIA B300 SXM6 AC").name == "b300" and load_gpu("B200").name == "b200"


def test_physical_roofs_of_new_gpus_are_per_clock_x_sms_x_max_clock():
    assert load_gpu("h100-nvl").physical_matmul_flop_per_s(DType.fp16)[0] == pytest.approx(4096 * 132 * 1.785e9)
    assert load_gpu("mi355x").physical_matmul_flop_per_s(DType.fp8_e4m3)[0] == pytest.approx(8192 * 256 * 2.4e9, rel=1e-4)   # the rated 5033.2 rounds it up
    # the 3090 gives no maximum clock: its physical roof is its fastest rated mode, fp16 accumulate
    assert load_gpu("rtx-3090").physical_matmul_flop_per_s(DType.fp16) == (142e12, "fp16_acc16")


# --- GpuSpec.compute_capability: checked where it enters, given for every bundled GPU (its source cited in the YAML) (test_compute_capability.py until session 7) ----------

@pytest.mark.parametrize("name, version", [("a100-sxm-80gb", (8, 0)), ("a10", (8, 6)), ("rtx-3090", (8, 6)),
                                           ("l4", (8, 9)), ("rtx-4090", (8, 9)), ("h100-sxm", (9, 0)),
                                           ("h200-sxm", (9, 0)), ("b200", (10, 0)), ("t4", (7, 5)),
                                           ("mi300x", (9, 4)), ("mi355x", (9, 5)), ("h20", (9, 0)), ("b300", (10, 3)), ("a10g", (8, 6)), ("h20-3e", (9, 0))])
def test_bundled_compute_capabilities(name, version):
    assert load_gpu(name).compute_capability_version == version


def test_every_bundled_gpu_gives_one():
    assert all(load_gpu(n).compute_capability is not None for n in available("hardware"))


@pytest.mark.parametrize("text", ["0", "-1.0", "nan", "inf", "1e300", "8", "8.0.1", "99999999999999999999.0",
                                  "2.0", "20.0", " 8.0", "sm_90"])
def test_bad_compute_capability_is_refused_naming_the_field(text):
    with pytest.raises(SpecError, match="compute_capability"):
        dataclasses.replace(load_gpu("h100-sxm"), compute_capability=text)


def test_empty_compute_capability_is_refused():
    with pytest.raises(SpecError, match="compute_capability"):
        dataclasses.replace(load_gpu("h100-sxm"), compute_capability="")


def test_without_one_the_version_is_none():
    assert dataclasses.replace(load_gpu("h100-sxm"), compute_capability=None).compute_capability_version is None


# --- Cross-field consistency checks of the specs (rooflab/specs/gpu.py, model.py, fitted.py, interconnect.py) (test_consistency.py until session 7) ----------
# Each case is a real bundled spec with one field changed to contradict another, as a hostile round wrote them;
# each must be a SpecError naming the field, and the bundled specs themselves all pass (loaded by every test).

@pytest.fixture(scope="module")
def h200():
    return load_gpu("h200-sxm")        # the bundled GPU with measured ceilings, stream rates and fits


def _refused(build, field: str) -> SpecError:
    with pytest.raises(SpecError) as err:
        build()
    assert err.value.field == field, str(err.value)
    return err.value


def test_every_bundled_spec_passes_the_checks():
    for name in available("hardware"):
        load_gpu(name)
    for name in available("models"):
        load_model(name)


@pytest.mark.parametrize("factor", [10, 100, 1000])
@pytest.mark.parametrize("field", ["copy_bytes_per_s", "gemm_flop_per_s", "exp_per_s"])
def test_calibrated_ceilings_far_above_the_datasheet_are_refused(h200, field, factor):
    m = h200.measured
    value = getattr(m, field)
    new = {k: v * factor for k, v in value.items()} if isinstance(value, dict) else value * factor
    try:
        changed = dataclasses.replace(m, **{field: new})
    except SpecError as err:            # past the field's own plausible range: refused there, as it should be
        assert err.field.startswith(field)
        return
    err = _refused(lambda: dataclasses.replace(h200, measured=changed),
                   f"measured.{field}" + (".fp16" if field == "gemm_flop_per_s" else ""))
    assert "datasheet roof" in str(err)


def test_measured_ceilings_near_the_datasheet_are_kept(h200):
    m = h200.measured
    dataclasses.replace(h200, measured=dataclasses.replace(m, copy_bytes_per_s=h200.hbm_bandwidth_bytes_per_s * 1.1))


def test_stream_rates_for_more_sms_than_the_gpu_has_are_refused(h200):
    rates = dict(h200.measured.stream_bytes_per_s)
    rates["264"] = rates["132"]
    m = dataclasses.replace(h200.measured, stream_bytes_per_s=rates)
    err = _refused(lambda: dataclasses.replace(h200, measured=m), "measured.stream_bytes_per_s.264")
    assert "num_sms (132)" in str(err)
    for key in ("0", "-1", "all"):
        m = dataclasses.replace(h200.measured, stream_bytes_per_s={**dict(h200.measured.stream_bytes_per_s), key: 1e10})
        _refused(lambda: dataclasses.replace(h200, measured=m), f"measured.stream_bytes_per_s.{key}")


def test_one_sm_faster_than_all_is_refused(h200):
    rates = dict(h200.measured.stream_bytes_per_s)
    rates["1"] = rates["132"] * 2             # within the HBM roof, but one SM out-reads all 132
    m = dataclasses.replace(h200.measured, stream_bytes_per_s=rates)
    err = _refused(lambda: dataclasses.replace(h200, measured=m), "measured.stream_bytes_per_s.1")
    assert "faster than 132 SMs" in str(err)


def test_a_capacity_below_the_cuda_visible_memory_is_refused(h200):
    err = _refused(lambda: dataclasses.replace(h200, hbm_capacity_bytes=h200.cuda_visible_bytes - 1),
                   "cuda_visible_bytes")
    assert "hbm_capacity_bytes" in str(err)


def test_fit_metadata_with_more_held_out_rows_than_rows_is_refused():
    _refused(lambda: FittedModel(kernel=Kernel.paged, impl="rooflab", overhead_s=1e-5, efficiency=0.9, rows=10,
                                 held_out_rows=11), "held_out_rows")
    FittedModel(kernel=Kernel.paged, impl="rooflab", overhead_s=1e-5, efficiency=0.9, rows=10, held_out_rows=10)


def test_collective_fit_metadata_with_more_held_out_rows_than_rows_is_refused(h200):
    fit = h200.interconnect.collectives[0]
    _refused(lambda: dataclasses.replace(fit, held_out_rows=fit.rows + 1), "held_out_rows")
    assert isinstance(fit, CollectiveFit)


def test_a_dense_ffn_size_on_a_dense_model_is_refused():
    """A dense model has ffn_size only: dense_ffn_size silently replaced it in every layer's MLP."""
    llama = load_model("llama-3-8b")
    err = _refused(lambda: dataclasses.replace(llama, dense_ffn_size=1024), "dense_ffn_size")
    assert "ffn_size (14336)" in str(err)
    dataclasses.replace(llama, dense_ffn_size=llama.ffn_size)       # the same size says nothing new: kept


@pytest.mark.parametrize("change, field", [({"first_dense_layers": 61}, "first_dense_layers"),
                                           ({"first_dense_layers": 1000}, "first_dense_layers"),
                                           ({"moe_layer_step": 62}, "moe_layer_step")])
def test_moe_settings_that_leave_no_moe_layer_are_refused(change, field):
    v3 = load_model("deepseek-v3")         # 61 layers, 256 experts, the first 3 dense
    err = _refused(lambda: dataclasses.replace(v3, **change), field)
    assert "no MoE layer" in str(err)
    dataclasses.replace(v3, first_dense_layers=60)                  # one MoE layer left: kept

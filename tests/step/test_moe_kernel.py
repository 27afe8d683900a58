"""Tests of rooflab/step/moe_kernel.py: each (engine, version) -> expert-kernel fact with its source (the engines'
wheels on PyPI: which tuned fused_moe config files a release shipped), the unknowns that keep the step's default,
and each kernel model's price of one shape by hand (the H200's fits in hardware/h200-sxm.yaml)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from rooflab.cost.model import experts_touched
from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.fit.moe_fit import grouped_cost, read_moe_csv
from rooflab.load import data_dir, load_gpu, load_model
from rooflab.predict import predict_time
from rooflab.step import (DEFAULT_MOE_KERNEL, MoeKernel, engine_moe_kernel, moe_kernel_fact, moe_kernel_of,
                          step_report)
from rooflab.step.moe_kernel import CONFIG_FACTS, expert_shape, release
from rooflab.units import DType
from rooflab.vocab import Kernel

H200 = load_gpu("h200-sxm")
DEEPSEEK = load_model("deepseek-v3")
MIXTRAL = load_model("mixtral-8x7b")
FP8, BF16 = DType.fp8_e4m3, DType.bf16


def _deepseek(engine, version, gpu="h200-sxm"):
    return engine_moe_kernel(engine, version, DEEPSEEK, gpu, 8, 1, FP8)


def _mixtral(engine, version):
    return engine_moe_kernel(engine, version, MIXTRAL, "h200-sxm", 2, 1, BF16)


def test_the_shapes_are_the_config_files_the_engines_look_up():
    """DeepSeek-V3 at TP 8: 256 experts, N = 2048 / 8 = 256 a rank, block fp8 ([128, 128] in its checkpoint's
    quantization_config); Mixtral at TP 2: 8 experts, N = 14336 / 2 = 7168, bf16 (no dtype in the file name)."""
    assert expert_shape(DEEPSEEK, 8, 1, FP8) == (256, 256, "fp8_w8a8", True)
    assert expert_shape(MIXTRAL, 2, 1, BF16) == (8, 7168, "", False)
    assert expert_shape(DEEPSEEK, 8, 8, FP8) == (32, 2048, "fp8_w8a8", True)     # EP 8: 32 local experts, whole
    keys = {(f.experts, f.width, f.dtype, f.block) for f in CONFIG_FACTS}
    assert keys == {(256, 256, "fp8_w8a8", True), (8, 7168, "", False)}


def test_sglang_0_5_12_runs_tuned_fused_moe_for_deepseek_on_the_h200():
    """sglang-0.5.12's wheel ships moe_runner/triton_utils/configs/triton_3_1_0/E=256,N=256,device_name=NVIDIA_H200,
    dtype=fp8_w8a8,block_shape=[128, 128].json (and E=257 files in triton_3_2_0/3_3_1/3_5_1); at EP 1 its auto MoE
    runner is Triton (quantization/fp8.py, Fp8MoEMethod.create_moe_runner)."""
    kernel, why = moe_kernel_fact("sglang", "0.5.12", DEEPSEEK, "h200-sxm", 8, 1, FP8)
    assert kernel is MoeKernel.tuned and "sglang 0.5.12 shipped" in why and "triton_3_1_0" in why


def test_sglang_0_5_12s_fused_shared_expert_config_is_not_the_measured_ones():
    """With the shared expert fused (E=257) SGLang 0.5.12 reads triton_3_5_1/'s H200 file (the newest with it:
    fused_moe_triton_config.py:96-122): BLOCK_M 16 and a _down file of its own, not the 64 x 128 x 128 config
    the fused_block_fp8 fit was measured at, so the 0.5.x experts stay `tuned` and the source says why."""
    kernel, why = moe_kernel_fact("sglang", "0.5.13", DEEPSEEK, "h200-sxm", 8, 1, FP8)   # after 0.5.12: its fact
    assert kernel is MoeKernel.tuned
    assert "falls back newest-first" in why and "BLOCK_M 16, BLOCK_N 64, BLOCK_K 128" in why and why.endswith("tuned")


def test_sglang_0_4_3_post2_runs_the_fused_block_fp8_kernel_for_deepseek_on_the_h200():
    """sglang-0.4.3.post2's wheel ships fused_moe_triton/configs/E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,
    block_shape=[128, 128].json (the dstack rows' SGLang), and its fused_moe_kernel's block-fp8 path was read at
    that release: the measured fused kernel."""
    kernel, why = moe_kernel_fact("sglang", "0.4.3.post2", DEEPSEEK, "h200-sxm", 8, 1, FP8)
    assert kernel is MoeKernel.fused_block_fp8 and "fused_moe_kernel, block-fp8 path) read" in why


def test_vllm_0_7_4_dev_runs_the_fused_block_fp8_kernel_for_deepseek_on_the_h200():
    """vllm-0.7.3's wheel ships fused_moe/configs/E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,
    block_shape=[128,128].json and its kernel was read there, so the dstack rows' 0.7.4.dev181+gf35f8e22 (after
    0.7.3) runs the measured fused kernel; before 0.7.3 no fact covers the shape (the default)."""
    kernel, why = moe_kernel_fact("vllm", "0.7.4.dev181+gf35f8e22", DEEPSEEK, "h200-sxm", 8, 1, FP8)
    assert kernel is MoeKernel.fused_block_fp8 and "vllm 0.7.3 shipped" in why
    assert _deepseek("vllm", "0.7.3") is MoeKernel.fused_block_fp8
    assert _deepseek("vllm", "0.7.2") is DEFAULT_MOE_KERNEL


def test_only_block_fp8_facts_read_with_their_kernel_imply_the_fused_model():
    """The fused model is the facts' own word: the block-fp8 files of the releases whose kernel was read; SGLang
    0.5.12's kernel was not read (tuned) and Mixtral's bf16 files are not block fp8 (tuned)."""
    fused = {(f.engine, f.version) for f in CONFIG_FACTS if f.kernel is MoeKernel.fused_block_fp8}
    assert fused == {("vllm", "0.7.3"), ("sglang", "0.4.3.post2")}
    assert all(f.block and f.shipped for f in CONFIG_FACTS if f.kernel is MoeKernel.fused_block_fp8)


def test_the_fused_model_holds_within_the_read_releases_line_only():
    """vLLM 0.7.x and SGLang 0.4.x run the kernel read at 0.7.3 / 0.4.3.post2; vLLM 0.8 and SGLang 0.5 (the
    serving scheduler's SGLang default) keep the shipped file's `tuned`, the kernel there not read."""
    assert _deepseek("vllm", "0.7.9") is MoeKernel.fused_block_fp8
    assert _deepseek("sglang", "0.4.10.post2") is MoeKernel.fused_block_fp8
    kernel, why = moe_kernel_fact("vllm", "0.8.0", DEEPSEEK, "h200-sxm", 8, 1, FP8)
    assert kernel is MoeKernel.tuned and "read in the 0.7.x line only" in why
    assert _deepseek("sglang", "0.5") is MoeKernel.tuned


def test_vllm_through_0_7_3_runs_mixtral_tp2_on_the_default_config_on_the_h200():
    """Neither vllm-0.6.3.post1's nor vllm-0.7.3's wheel ships E=8,N=7168,device_name=NVIDIA_H200.json (H100 and
    A100 files only): fused_moe logs 'Using default MoE config' and runs get_default_config's tiles."""
    for version in ("0.6.0", "0.6.3.post1", "0.7.3"):
        assert _mixtral("vllm", version) is MoeKernel.default_config
    assert "0.6.3.post1 shipped no E=8,N=7168" in moe_kernel_fact("vllm", "0.6.3", MIXTRAL, "h200-sxm", 2, 1,
                                                                   BF16)[1]


def test_sglang_0_4_3_post2_ships_mixtrals_tp2_h200_config():
    """sglang-0.4.3.post2's wheel ships fused_moe_triton/configs/E=8,N=7168,device_name=NVIDIA_H200.json."""
    assert _mixtral("sglang", "0.4.3.post2") is MoeKernel.tuned


def test_what_no_fact_covers_keeps_the_default():
    """No version (the Buildkite and pull-request rows), a version naming no release (vLLM's 'v1 (0.11+)'), a
    version no read release bounds (vLLM 0.7.2 for DeepSeek, 0.8 for Mixtral), another GPU, TensorRT-LLM (its own
    MoE plugin: no release's source read) and a dense model: the step's default, torch's grouped GEMM."""
    assert DEFAULT_MOE_KERNEL is MoeKernel.torch_grouped
    assert _deepseek("vllm", "") is _deepseek("vllm", "v1 (0.11+)") is DEFAULT_MOE_KERNEL
    assert _deepseek("vllm", "0.7.2") is _mixtral("vllm", "0.8.0") is DEFAULT_MOE_KERNEL
    assert _deepseek("sglang", "0.5.12", gpu="b200") is DEFAULT_MOE_KERNEL
    assert _deepseek("tensorrt-llm", "0.9.0") is _mixtral("TensorRT-LLM", "1.0") is DEFAULT_MOE_KERNEL
    assert engine_moe_kernel("vllm", "0.7.3", load_model("llama-3-8b"), "h200-sxm") is DEFAULT_MOE_KERNEL
    assert _deepseek("some-engine", "1.0") is DEFAULT_MOE_KERNEL


def test_release_numbers():
    assert release("0.7.4.dev181+gf35f8e22") == (0, 7, 4) and release("0.4.3.post2") == (0, 4, 3)
    assert release("v0.9.0") == (0, 9, 0) and release("0.5.12") == (0, 5, 12)
    assert release("") is None and release(None) is None and release("v1 (0.11+)") is None
    assert release("\uff10.9") is None and release("0.\uff19.0") is None     # digits outside ASCII name no release


def test_a_kernel_by_name_and_a_bad_name():
    assert moe_kernel_of("tuned") is MoeKernel.tuned and moe_kernel_of(MoeKernel.default_config).value == \
        "default_config"
    with pytest.raises(InputError, match="MoE kernel must be one of tuned, fused_block_fp8, torch_grouped, "
                                         "default_config"):
        moe_kernel_of("cutlass")
    with pytest.raises(InputError, match="MoE kernel"):
        step_report(MIXTRAL, H200, 64, 2048, deployment=Deployment(tensor_parallel=2), moe_kernel="fast")


def _fit(impl):
    return next(f for f in H200.fitted if f.kernel is Kernel.gemm and f.impl == impl)


def _t(fit, m, n, k, groups, pi, beta, b=2):
    """A fit's time of one GEMM: c0 + max(F / (eta pi), Q / (eta_mem beta)) (rooflab.predict's model_time)."""
    flops, hbm = 2 * m * n * k, groups * n * k * b + (m * k + m * n) * b
    return fit.overhead_s + max(flops / pi / fit.efficiency, hbm / beta / (fit.memory_efficiency or fit.efficiency))


@pytest.mark.parametrize("kernel", [k for k in MoeKernel if k is not MoeKernel.fused_block_fp8])
def test_each_kernel_models_price_of_mixtral_tp2_by_hand(kernel):
    """Mixtral-8x7B TP 2, 64 decodes, 32 layers: the router [64 x 8 x 4096] on cuBLAS, then the experts' gate/up
    [128 pairs x 14336 x 4096] and down [128 x 4096 x 7168] over the 8 touched experts' weights: `tuned` at the
    dense cuBLAS fit (torch_cublas) on that work in one launch, `torch_grouped` and `default_config` at the grouped
    fit (torch_grouped_mm). The floor is the same physical bound whatever the kernel."""
    dep = Deployment(tensor_parallel=2)
    report = step_report(MIXTRAL, H200, 64, 2048, deployment=dep, moe_kernel=kernel)
    moe = next(row for row in report.rows if row.component == "experts")
    pi, beta = H200.measured.gemm_flop_per_s["bf16"], H200.measured.copy_bytes_per_s
    touched, pairs, width = experts_touched(MIXTRAL, 64), 128, 7168
    dense = _fit("torch_cublas")
    experts = dense if kernel is MoeKernel.tuned else _fit("torch_grouped_mm")
    hand = 32 * (_t(dense, 64, 8, 4096, 1, pi, beta) + _t(experts, pairs, 2 * width, 4096, touched, pi, beta)
                 + _t(experts, pairs, 4096, width, touched, pi, beta))
    assert moe.t_predicted_s == pytest.approx(hand, rel=1e-9)
    assert moe.predicted_impl == ("torch_cublas" if kernel is MoeKernel.tuned else "torch_grouped_mm")
    words = {MoeKernel.tuned: "a tuned kernel, priced as cuBLAS", MoeKernel.torch_grouped: "torch's grouped GEMM",
             MoeKernel.default_config: "default config, priced as torch's grouped GEMM (assumed"}[kernel]
    assert words in moe.source
    default = next(row for row in step_report(MIXTRAL, H200, 64, 2048, deployment=dep).rows
                   if row.component == "experts")
    assert moe.t_floor_s == default.t_floor_s


def _deepseek_tp8_experts(batch, kernel, gpu=H200, phase="decode"):
    dep = Deployment(tensor_parallel=8, weight_format="fp8", fused_elementwise=True)
    report = step_report(DEEPSEEK, gpu, batch, 3600, phase, deployment=dep, moe_kernel=kernel, check_memory=False)
    return next(row for row in report.rows if row.component == "experts"), report


def test_the_fused_kernel_prices_deepseek_tp8_decode_by_hand():
    """DeepSeek-V3 fp8 at TP 8, 32 decodes (the dstack rows' shape), 58 MoE layers: the router [32 x 256 x 7168] on
    cuBLAS (bf16), then each expert GEMM at max(tuned, c0 + Q / B + tiles tau), the fit read from the bundled
    campaign: gate/up Q = G 512 x 7168 + 256 (7168 + 512) bytes, tiles G ceil(256 / (G 64)) (512 / 128); down
    Q = G 7168 x 256 + 256 (256 + 7168), tiles G ceil(256 / (G 64)) (7168 / 128); G the expected experts touched.
    Here the fit binds (memory-bound: the measured fused kernel is slower than cuBLAS on the same bytes). The fit:
    the GPU YAML's gemm / triton_fused_moe entry, B = its memory_efficiency x the calibrated copy bandwidth."""
    fit = _fit("triton_fused_moe")
    moe, _ = _deepseek_tp8_experts(32, MoeKernel.fused_block_fp8)
    touched, pairs = experts_touched(DEEPSEEK, 32), 256
    tiles = math.ceil(pairs / (touched * 64))
    pi, beta = H200.measured.gemm_flop_per_s["bf16"], H200.measured.copy_bytes_per_s
    bytes_per_s = fit.memory_efficiency * beta
    gate_up = fit.overhead_s + (touched * 512 * 7168 + pairs * (7168 + 512)) / bytes_per_s \
        + touched * tiles * 4 * fit.tile_s
    down = fit.overhead_s + (touched * 7168 * 256 + pairs * (256 + 7168)) / bytes_per_s \
        + touched * tiles * 56 * fit.tile_s
    router = _t(_fit("torch_cublas"), 32, 256, 7168, 1, pi, beta)
    assert moe.t_predicted_s == pytest.approx(58 * (router + gate_up + down), rel=1e-9)
    assert moe.predicted_impl == "triton_fused_moe" and "our kernel of it measured on the H200" in moe.source
    tuned, _ = _deepseek_tp8_experts(32, MoeKernel.tuned)
    assert moe.t_predicted_s > tuned.t_predicted_s and moe.t_floor_s == tuned.t_floor_s


def test_the_fused_kernel_is_never_below_tuned_and_falls_back_off_its_range_and_gpu():
    """Across decode sizes the fused price is at least tuned's; a prefill past the fit's measured 512 tokens is
    tuned's (the fit's per-tile term must not extrapolate into compute-bound launches), and so is every step on a
    GPU with no fused measurement (the H100), noted."""
    for batch in (1, 8, 64, 256):
        fused, _ = _deepseek_tp8_experts(batch, MoeKernel.fused_block_fp8)
        tuned, _ = _deepseek_tp8_experts(batch, MoeKernel.tuned)
        assert fused.t_predicted_s >= tuned.t_predicted_s
    assert _fit("triton_fused_moe").max_tokens == 512
    fused, report = _deepseek_tp8_experts(8, MoeKernel.fused_block_fp8, phase="prefill")      # 28,800 tokens
    tuned, _ = _deepseek_tp8_experts(8, MoeKernel.tuned, phase="prefill")
    assert fused.t_predicted_s == pytest.approx(tuned.t_predicted_s, rel=1e-12)
    assert any("28,800 tokens a step is past the 512" in n for n in report.notes)
    h100 = load_gpu("h100-sxm")
    fused, report = _deepseek_tp8_experts(32, MoeKernel.fused_block_fp8, h100)
    tuned, _ = _deepseek_tp8_experts(32, MoeKernel.tuned, h100)
    assert fused.t_predicted_s == pytest.approx(tuned.t_predicted_s, rel=1e-12)
    assert any("h100-sxm has no fitted triton_fused_moe model" in n and "not transferred" in n for n in report.notes)


def test_every_measured_fused_launch_ran_slower_than_tuned_prices_it():
    """The evidence for fused_time's max(tuned, fused): each of the campaign's launches (our Triton kernel at the
    shipped H200 config, measurements/moe/h200-fused-moe-block-fp8.csv) took longer than the dense cuBLAS fit's price
    of the same grouped work (2 P n k FLOPs, the touched experts' fp8 weights once); had one run faster, the max
    would price it above its measured time."""
    _, rows = read_moe_csv(data_dir("measurements") / "moe" / "h200-fused-moe-block-fp8.csv")
    assert len(rows) == 26
    for r in rows:
        cost = grouped_cost(r["pairs"], r["n"], r["k"], DType.fp8_e4m3, r["experts_touched"], r["gemm"])
        tuned = predict_time(H200, Kernel.gemm, lambda num_sms, units_per_sm: cost, DType.fp8_e4m3, "torch_cublas")
        assert r["seconds"] > tuned.t_predicted_s, (r["gemm"], r["tokens"])


def test_the_fused_kernel_reads_its_fit_from_the_gpu_spec():
    """The step takes the fused fit from the GpuSpec it is given (no file read when pricing): the H200 without its
    gemm / triton_fused_moe entry prices the fused kernel as tuned, noted; with the entry's tau doubled, the
    experts row costs more."""
    without = dataclasses.replace(H200, fitted=tuple(f for f in H200.fitted if f.impl != "triton_fused_moe"))
    fused, report = _deepseek_tp8_experts(32, MoeKernel.fused_block_fp8, without)
    tuned, _ = _deepseek_tp8_experts(32, MoeKernel.tuned, without)
    assert fused.t_predicted_s == pytest.approx(tuned.t_predicted_s, rel=1e-12)
    assert any("h200-sxm has no fitted triton_fused_moe model" in n for n in report.notes)
    slower = dataclasses.replace(H200, fitted=tuple(dataclasses.replace(f, tile_s=2 * f.tile_s) if f.fused_moe else f
                                                    for f in H200.fitted))
    assert _deepseek_tp8_experts(32, MoeKernel.fused_block_fp8, slower)[0].t_predicted_s > \
        _deepseek_tp8_experts(32, MoeKernel.fused_block_fp8)[0].t_predicted_s

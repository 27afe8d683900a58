"""Tests of rooflab/step/gemms.py: the MoE row's experts priced as grouped GEMMs (rooflab.fit.moe_fit's fit in the
H200's YAML) by hand, fp8 experts at the scaled grouped fit, the transfer to a GPU without fits, and the dense
fallback with its note."""

from __future__ import annotations

import dataclasses

import pytest

from rooflab.cost.model import experts_touched
from rooflab.deployment import Deployment
from rooflab.load import load_gpu, load_model
from rooflab.step import step_report
from rooflab.vocab import Kernel

H200 = load_gpu("h200-sxm")
MIXTRAL = load_model("mixtral-8x7b")


def _fit(impl):
    return next(f for f in H200.fitted if f.kernel is Kernel.gemm and f.impl == impl)


def _moe(report):
    return next(row for row in report.rows if row.label.startswith("MoE ("))


def test_mixtral_tp2_moe_row_by_hand():
    """Mixtral-8x7B TP 2, 64 decodes: each layer's router [64 x 8 x 4096] on cuBLAS, then the experts' gate/up
    [128 pairs x 14336 x 4096] and down [128 x 4096 x 7168] each one grouped launch over the touched experts:
    t = c0 + max(F / (eta pi), Q / (eta_mem beta)) (rooflab/fit/moe_fit.py), 32 layers."""
    r = step_report(MIXTRAL, H200, 64, 2048, deployment=Deployment(tensor_parallel=2))
    moe = _moe(r)
    pi, beta = H200.measured.gemm_flop_per_s["bf16"], H200.measured.copy_bytes_per_s
    touched, pairs, width = experts_touched(MIXTRAL, 64), 64 * 2, 14336 // 2
    assert touched == pytest.approx(8.0, abs=1e-3) and "128 token-expert pairs" in moe.label

    def t(fit, m, n, k, groups):
        flops, hbm = 2 * m * n * k, groups * n * k * 2 + (m * k + m * n) * 2
        return fit.overhead_s + max(flops / pi / fit.efficiency, hbm / beta / (fit.memory_efficiency or fit.efficiency))

    grouped, dense = _fit("torch_grouped_mm"), _fit("torch_cublas")
    hand = 32 * (t(dense, 64, 8, 4096, 1) + t(grouped, pairs, 2 * width, 4096, touched)
                 + t(grouped, pairs, 4096, width, touched))
    assert moe.t_predicted_s == pytest.approx(hand, rel=1e-9)
    assert moe.predicted_impl == "torch_grouped_mm" and "grouped-GEMM fit (torch_grouped_mm" in moe.source
    # slower than the same GEMMs priced dense at the cuBLAS fit (the pricing before the grouped fit)
    old = 32 * (t(dense, 64, 8, 4096, 1) + t(dense, pairs, 2 * width, 4096, touched)
                + t(dense, pairs, 4096, width, touched))
    assert moe.t_predicted_s > 1.2 * old
    # the floor is the same physical bound as before: the grouped fit changes predictions only
    assert moe.t_floor_s < old


def test_deepseek_fp8_experts_use_the_scaled_grouped_fit():
    ds = load_model("deepseek-v3")
    r = step_report(ds, H200, 32, 1024, deployment=Deployment(tensor_parallel=8, attention_data_parallel=8,
                                                              expert_parallel=8))
    moe = _moe(r)
    assert moe.predicted_impl == "torch_scaled_grouped_mm" and moe.predicted_from == "measured on this GPU"


def test_a_gpu_without_fits_takes_the_h200s_grouped_fit_transferred():
    r = step_report(MIXTRAL, load_gpu("h100-sxm"), 64, 2048, deployment=Deployment(tensor_parallel=2))
    moe = _moe(r)
    assert moe.predicted_impl == "torch_grouped_mm" and moe.predicted_from == "transferred from h200-sxm"


def test_a_gpu_whose_gemm_fits_have_no_grouped_one_prices_experts_dense_and_says_so():
    fitted = tuple(f for f in H200.fitted if "grouped" not in f.impl)
    gpu = dataclasses.replace(H200, fitted=fitted)
    r = step_report(MIXTRAL, gpu, 64, 2048, deployment=Deployment(tensor_parallel=2))
    moe = _moe(r)
    assert moe.predicted_impl == "torch_cublas" and moe.t_predicted_s is not None
    assert any("MoE experts priced as dense cuBLAS GEMMs" in n for n in r.notes)
    assert moe.t_predicted_s < _moe(step_report(MIXTRAL, H200, 64, 2048,
                                                deployment=Deployment(tensor_parallel=2))).t_predicted_s


def test_gemm_rows_name_their_component_arithmetic_and_m():
    """DeepSeek-V3 fp8 on 8 GPUs, TP 8 with attention DP 8 and EP 8, 256 decodes: a rank's 32 tokens through its
    projections and router, the TP group's 256 gathered through the dense MLP, the shared experts and the lm_head
    (SGLang gathers the DP ranks' hidden states before an lm_head split over TP: logits_processor.py
    do_tensor_parallel_all_gather_dp_attn); every GEMM row says so (explain's map from label to component, now
    fields), the others carry none."""
    model = load_model("deepseek-v3")
    dep = Deployment(tensor_parallel=8, attention_data_parallel=8, expert_parallel=8)
    r = step_report(model, H200, 256, 4096, deployment=dep)
    gemms = {row.component: row for row in r.rows if row.variant == "gemm"}
    assert set(gemms) == {"attention", "dense_mlp", "experts", "shared_experts", "lm_head"}
    assert {c: row.gemm_rows for c, row in gemms.items()} == {"attention": 32, "dense_mlp": 256, "experts": 32,
                                                               "shared_experts": 256, "lm_head": 256}
    assert gemms["experts"].gemm_dtype == "fp8_e4m3" and gemms["lm_head"].gemm_dtype == "bf16"
    assert gemms["attention"].label.startswith("attention projections")
    assert gemms["dense_mlp"].label.startswith("MLP (gate/up")
    for row in r.rows:
        if row.variant != "gemm":
            assert row.component is None and row.gemm_dtype is None and row.gemm_rows is None
            assert "component" not in row.to_dict()
    assert gemms["experts"].to_dict()["gemm_rows"] == 32
    bf16 = step_report(MIXTRAL, H200, 64, 2048, deployment=Deployment(tensor_parallel=2))
    assert {row.component: row.gemm_dtype for row in bf16.rows if row.variant == "gemm"} == {
        "attention": "bf16", "experts": "bf16", "lm_head": "bf16"}


def test_under_attention_dp_the_lm_head_reads_its_tp_slice_for_the_gathered_rows():
    """DeepSeek-V3 at TP 8 with attention DP 8: the lm_head is split over TP 8 as its weights are (capacity.
    weight_split), so the row reads 129,280 / 8 x 7168 bf16 weights once for the TP group's 8 x 32 rows, where
    without the gather it would read all 129,280 x 7168 for 32 rows: the same FLOPs."""
    import math
    model = load_model("deepseek-v3")
    r = step_report(model, H200, 256, 4096, deployment=Deployment(tensor_parallel=8, attention_data_parallel=8,
                                                                  expert_parallel=8))
    row = next(row for row in r.rows if row.component == "lm_head")
    assert row.weight_bytes == math.ceil(129_280 / 8) * 7168 * 2
    assert row.flops == 2 * 256 * math.ceil(129_280 / 8) * 7168


def test_before_v0_4_5_the_lm_head_is_whole_under_attention_dp():
    """D39 (hostile round session12): SGLang v0.4.4 builds the lm_head ReplicatedLinear(hidden, vocab) under DP
    attention, so at --engine-version 0.4.4 the step's lm_head row reads all 129,280 x 7,168 bf16 weights
    (1,853,358,080 B) for the rank's own 32 rows, with no logits all-gather; v0.4.5 splits it over TP 8."""
    import math
    model = load_model("deepseek-v3")
    dep = Deployment(tensor_parallel=8, attention_data_parallel=8, expert_parallel=8)
    rows = {v: step_report(model, H200, 256, 4096, deployment=dep, engine="sglang", engine_version=v).rows
            for v in ("0.4.4", "0.4.5")}
    old = next(row for row in rows["0.4.4"] if row.component == "lm_head")
    assert old.weight_bytes == 129_280 * 7168 * 2 == 1_853_358_080
    assert old.flops == 2 * 32 * 129_280 * 7168
    assert not any("logits: all-gather" in row.label for row in rows["0.4.4"])
    new = next(row for row in rows["0.4.5"] if row.component == "lm_head")
    assert new.weight_bytes == math.ceil(129_280 / 8) * 7168 * 2


@pytest.mark.parametrize("decodes, prefill", [(8, 0), (0, 64)])
def test_mla_projections_are_the_engines_gemms_by_hand(decodes, prefill):
    """DeepSeek-V3 at TP 8 (16 heads a rank; d_c 512, d_R 64, d_nope 128, d_v 128, r_q 1536, H 7168): per layer the
    replicated q_a [1536, 7168] and kv_a [576, 7168], q_b [16 x 192, 1536] and o [7168, 16 x 128]; decode rows take
    kv_b absorbed, W_UK [16 x 512, 128] and W_UV [16 x 128, 512], prefill rows the GEMM [16 x 256, 512]. FLOPs
    2 m n k summed (measurements/steps/h200-step-deepseek-v3-tp8-rank.csv measured six launches a decode layer)."""
    from rooflab.step import step_context
    from rooflab.step.gemms import _mla_projections

    model, gpu = load_model("deepseek-v3"), load_gpu("h200-sxm")
    ctx = step_context(model, gpu, Deployment(tensor_parallel=8))
    layer = model.layer_types["mla"]
    m = decodes or prefill
    priced = _mla_projections(ctx, layer, m, decodes)
    names = {c.kernel.name for c, _, _, _ in priced}
    assert names == ({"q_a", "kv_a", "q_b", "o", "w_uk", "w_uv"} if decodes else {"q_a", "kv_a", "q_b", "o", "kv_b"})
    nk = [(1536, 7168), (576, 7168), (16 * 192, 1536), (7168, 16 * 128)]
    nk += [(16 * 512, 128), (16 * 128, 512)] if decodes else [(16 * 256, 512)]
    assert sum(float(c.kernel.flops) for c, _, _, _ in priced) == pytest.approx(sum(2 * m * n * k for n, k in nk))
    if decodes:                                   # the absorbed matmuls run in the activations' dtype, not block fp8
        assert [b for c, _, b, _ in priced if c.kernel.name.startswith("w_u")] == [False, False]
    inputs = {c.kernel.name: shape for c, _, b, shape in priced if b}     # what each block-fp8 GEMM quantises
    assert inputs == {"q_a": (m, 7168), "kv_a": (m, 7168), "q_b": (m, 1536), "o": (m, 16 * 128),
                      **({} if decodes else {"kv_b": (m, 512)})}

"""Tests of rooflab/step/small_ops.py: the small kernels at the GPU's measured launch times (measured.launch), and
the block-fp8 layer's small launches (act_quant_time and moe_align_time): one per-token-group activation quantisation
a block-fp8 GEMM input, one MoE align a fused MoE layer, at the launch times measured on the H200
(measurements/launch/h200-block-fp8-launch.csv, benchmarks/block_fp8_launch.py), by hand."""

from __future__ import annotations

import csv
import dataclasses
import math

import numpy as np
import pytest

from rooflab.deployment import Deployment
from rooflab.load import data_dir
from rooflab.step import engine_kernels, gemms, step_context
from rooflab.step.small_ops import ACT_QUANT_WIDTH
from rooflab.step_table import StepTable

from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.predict import MEASURED_HERE
from rooflab.step import step_report
from rooflab.step.small_ops import reference_launch, small_op_time

H200 = load_gpu("h200-sxm")
LLAMA = load_model("llama-3-8b")


def _elementwise(report):
    return next(row for row in report.rows if row.variant == "elementwise")


def test_small_ops_table():
    graph = reference_launch().graph_s
    assert small_op_time("rms_norm", 1, 4096, 14336, 4e12) == graph["rms_norm"][0]
    assert graph["rms_norm"][0] <= small_op_time("rms_norm", 8, 4096, 14336, 4e12) <= graph["rms_norm"][1]
    assert small_op_time("residual_add", 1064, 4096, 14336, 4e12) == pytest.approx(
        graph["residual_add"][2] + 1000 * 3 * 4096 * 2 / 4e12)


def test_the_old_tables_read_the_h200s_yaml():
    from rooflab.step import EAGER_HOST_S, EAGER_SMALL_OPS, SMALL_OPS

    launch = H200.measured.launch
    assert SMALL_OPS == dict(launch.graph_s) and EAGER_SMALL_OPS == dict(launch.eager_s)
    assert EAGER_HOST_S == launch.eager_host_s == 1.848e-5


@pytest.mark.parametrize("args, named", [(("nope", 1, 4096, 14336, 1e12), "op"),
                                         (("rms_norm", -1, 4096, 14336, 1e12), "tokens"),
                                         (("rms_norm", 1, 4096, 14336, 0), "bw"),
                                         (("rms_norm", 1, 4096, 14336, float("nan")), "bw"),
                                         (("rms_norm", 1, 4096, 14336, 1e12, False, {"rms_norm": 1}), "launch")])
def test_small_op_time_names_a_bad_argument(args, named):
    """An unknown op raised KeyError; a bandwidth of 0 divided by zero past the table, NaN gave NaN."""
    with pytest.raises(InputError, match=named):
        small_op_time(*args)


def test_a_gpu_prices_its_small_kernels_at_its_own_measured_times():
    """A GPU whose YAML holds measured.launch uses it, not the H200's: doubled times double the row's prediction."""
    h100 = load_gpu("h100-sxm")
    base = _elementwise(step_report(LLAMA, h100, 8, 8192))
    assert base.predicted_from == "transferred from h200-sxm"
    launch = H200.measured.launch
    doubled = dataclasses.replace(launch, graph_s={op: tuple(2 * t for t in ts) for op, ts in launch.graph_s.items()})
    measured = dataclasses.replace(H200.measured, launch=doubled, gemm_flop_per_s={"bf16": 7e14})
    own = dataclasses.replace(h100, measured=measured)
    r = step_report(LLAMA, own, 8, 8192)
    row = _elementwise(r)
    assert row.predicted_from == MEASURED_HERE
    assert row.t_predicted_s == pytest.approx(2 * base.t_predicted_s)
    assert any("measured on h100-sxm" in n for n in r.notes)
    assert not any("transferred to" in n for n in r.notes if not n.startswith("sampling after the graph"))


def test_no_launch_times_transfer_to_another_vendor():
    """The H200's launch times were once applied to every GPU; an AMD part now gets no small-kernel prediction,
    and a note says why (as the other fits, which do not transfer to AMD either)."""
    r = step_report(LLAMA, load_gpu("mi300x"), 8, 8192)
    row = _elementwise(r)
    assert row.t_predicted_s is None and row.predicted_from is None and row.t_floor_s > 0
    assert any(n.startswith("no prediction for norms and elementwise") and "mi300x" in n for n in r.notes)


# The block-fp8 layer's small launches.

CSV = data_dir("measurements") / "launch" / "h200-block-fp8-launch.csv"


@pytest.fixture(scope="module")
def h200():
    return load_gpu(H200.name)


@pytest.fixture(scope="module")
def deepseek():
    return load_model("deepseek-v3")


def _measured() -> dict:
    lines = [line for line in CSV.read_text().splitlines() if line and not line.startswith("#")]
    return {(r["op"], int(r["batch"]), r["timing"]): float(r["seconds"]) for r in csv.DictReader(lines)}


def _t(op: str, rows: int, timing: str = "graph") -> float:
    """The measured time at `rows`, interpolated in log(rows) between the CSV's batches 1, 8 and 64 by hand."""
    m = _measured()
    xs = [1, 8, 64]
    ys = [m[(op, b, timing)] for b in xs]
    return float(np.interp(math.log(rows), [math.log(x) for x in xs], ys))


def _ctx(deepseek, h200, graphs=True):
    dep = Deployment(tensor_parallel=8, cuda_graphs=graphs)
    k = engine_kernels(deepseek, h200, dep, "vllm", "0.7.3")
    return step_context(deepseek, h200, dep, 1.0, k.decode_attention, k.moe_kernel, k.layout_release, k.routing)


def test_the_yaml_holds_the_campaigns_times(h200):
    """measured.launch's act_quant and moe_align are the CSV's, at its batches 1, 8 and 64."""
    launch, rows = h200.measured.launch, _measured()
    for op in ("act_quant", "moe_align"):
        for timing, table in (("graph", launch.graph_s), ("eager", launch.eager_s)):
            assert table[op] == pytest.approx([rows[(op, b, timing)] for b in launch.batches], rel=1e-4)
    meta = dict(line[2:].split(": ", 1) for line in CSV.read_text().splitlines() if line.startswith("# "))
    assert meta["device_name"] == "NVIDIA H200" and meta["date"].startswith("2026-12-03")
    assert f"[tokens, {ACT_QUANT_WIDTH}] bf16" in meta["shapes"]


def _without(monkeypatch, target: str):
    monkeypatch.setattr(gemms, target, lambda *args: 0.0)


def test_the_projections_quantise_each_block_fp8_gemm_input_by_hand(h200, deepseek, monkeypatch):
    """DeepSeek-V3 TP 8, 8 decode rows: each MLA layer quantises the inputs of q_a [8, 7168], kv_a [8, 7168] (the same
    hidden, twice: vLLM 0.7.3 quantises inside each block-fp8 linear, fp8_utils.py:61,70), q_b [8, 1536] and o
    [8, 16 x 128]; a quant of [m, k] is the measured launch at ceil(m k / 7168) rows (one program a 128-group:
    fp8_utils.py:277). The bf16 W_UK / W_UV bmm quantise nothing. 61 layers x (2 t(8) + t(2) + t(3))."""
    ctx = _ctx(deepseek, h200)
    row = gemms.projections(ctx, 8, 8)[0]
    _without(monkeypatch, "act_quant_time")
    plain = gemms.projections(_ctx(deepseek, h200), 8, 8)[0]
    by_hand = 61 * (2 * _t("act_quant", 8) + _t("act_quant", math.ceil(8 * 1536 / 7168))
                    + _t("act_quant", math.ceil(8 * 2048 / 7168)))
    assert row.t_predicted_s - plain.t_predicted_s == pytest.approx(by_hand, rel=1e-6)
    assert row.calls == 61 * (4 + 2 + 4)                      # q_a, kv_a, q_b, o; W_UK, W_UV; 4 quantisations
    assert row.t_floor_s == plain.t_floor_s and row.hbm_bytes == plain.hbm_bytes   # the floor: the GEMMs' alone
    assert "244 per-token-group activation quantisations" in row.source


def test_the_moe_and_mlp_rows_by_hand(h200, deepseek, monkeypatch):
    """The same step: a MoE layer quantises the experts' gate/up input once [8, 7168] and the down input [64 pairs,
    256] (fused_moe.py:653, once a GEMM for all experts), aligns once (moe_align_block_size, vLLM 0.7.3 fused_moe.py:
    586-621) and its shared experts quantise [8, 7168] and [8, 256]; a dense layer [8, 7168] and [8, 2304]. 482
    quantisations a step: the count the TP-8 rank step measured (measurements/steps/h200-step-deepseek-v3-tp8-rank.csv
    launches)."""
    ctx = _ctx(deepseek, h200)
    rows = {r.label.split(" (")[0]: r for r in gemms.mlp(ctx, 8)}
    _without(monkeypatch, "act_quant_time")
    _without(monkeypatch, "moe_align_time")
    plain = {r.label.split(" (")[0]: r for r in gemms.mlp(_ctx(deepseek, h200), 8)}
    q = lambda m, k: _t("act_quant", math.ceil(m * k / 7168))    # noqa: E731
    moe = 58 * (q(8, 7168) + q(64, 256) + _t("moe_align", 8))
    assert rows["MoE"].t_predicted_s - plain["MoE"].t_predicted_s == pytest.approx(moe, rel=1e-6)
    shared = 58 * (q(8, 7168) + q(8, 256))
    assert rows["shared experts"].t_predicted_s - plain["shared experts"].t_predicted_s == pytest.approx(shared,
                                                                                                         rel=1e-6)
    dense = 3 * (q(8, 7168) + q(8, 2304))
    assert rows["MLP"].t_predicted_s - plain["MLP"].t_predicted_s == pytest.approx(dense, rel=1e-6)
    calls = {k: r.calls for k, r in rows.items()}
    assert calls == {"MoE": 58 * (3 + 2 + 1), "shared experts": 58 * (2 + 2), "MLP": 3 * (2 + 2)}
    assert 61 * 4 + 58 * 2 + 58 * 2 + 3 * 2 == 482
    assert "58 MoE aligns (moe_align_block_size" in rows["MoE"].source
    assert rows["MoE"].t_floor_s == plain["MoE"].t_floor_s


def test_eager_launches_take_the_eager_table(h200, deepseek, monkeypatch):
    """Issued eagerly, a launch is priced at the eager table (22-27 us, above the graph's 1-15 us)."""
    row = gemms.mlp(_ctx(deepseek, h200, graphs=False), 8)[0]          # the dense MLP: 3 layers, 2 quants each
    _without(monkeypatch, "act_quant_time")
    plain = gemms.mlp(_ctx(deepseek, h200, graphs=False), 8)[0]
    assert row.t_predicted_s - plain.t_predicted_s == pytest.approx(3 * (_t("act_quant", 8, "eager")
                                                                         + _t("act_quant", 3, "eager")), rel=1e-6)


@pytest.mark.parametrize("model", ["llama-3-8b", "mixtral-8x7b"])
def test_models_without_block_fp8_weights_get_no_quantisation(h200, model):
    """bf16 weights (and per-tensor fp8): no activation quantisation a group, no align."""
    r = step_report(load_model(model), h200, 8, 2048, deployment=Deployment(tensor_parallel=2), engine="vllm",
                    engine_version="0.7.3", check_memory=False)
    assert not any("activation quantisations" in row.source or "MoE aligns" in row.source for row in r.rows)


def test_rooflabs_own_experts_kernel_runs_no_align(h200, deepseek):
    """rooflab's own step prices the experts as torch's grouped GEMM (DEFAULT_MOE_KERNEL): quantised, no align."""
    r = step_report(deepseek, h200, 8, 2048, deployment=Deployment(tensor_parallel=8), check_memory=False)
    moe = next(row for row in r.rows if row.label.startswith("MoE ("))
    assert "activation quantisations" in moe.source and "MoE aligns" not in moe.source


def test_report_explain_and_the_step_table_agree(h200, deepseek):
    """One path: report --phase step --engine, explain --phase step and StepTable (engine_kernels' kernels) give the
    step_report's number with the small launches in it."""
    import json

    from rooflab.explain.step import explain_step
    from tests.support import invoke

    dep = Deployment(tensor_parallel=8)
    api = step_report(deepseek, h200, 8, 2048, deployment=dep, engine="vllm", engine_version="0.7.3",
                      check_memory=False)
    r = invoke("report", "-m", "deepseek-v3", "-g", H200.name, "--phase", "step", "-b", "8", "-L", "2048", "-tp", "8",
               "--engine", "vllm", "--engine-version", "0.7.3", "-f", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["t_predicted_s"] == pytest.approx(api.t_predicted_s, rel=1e-12)
    explained = explain_step(deepseek, h200, 8, 2048, deployment=dep, engine="vllm", engine_version="0.7.3")
    assert explained.report.t_predicted_s == pytest.approx(api.t_predicted_s, rel=1e-12)
    k = engine_kernels(deepseek, h200, dep, "vllm", "0.7.3")
    table = StepTable.build(deepseek, h200, dep, max_decodes=8, max_context=2048, max_prefill=16, lazy=True,
                            moe_kernel=k.moe_kernel, decode_attention=k.decode_attention, routing=k.routing,
                            mla_decode_splits=k.mla_decode_splits, mla_layout=k.mla_layout,
                            absorbed_bytes=k.absorbed_bytes, sampler=k.sampler)
    assert 8 in table.decodes_grid and 2048 in table.context_grid
    floor, predicted = table.time_s(8, 8 * 2048, 0)
    assert float(predicted) == pytest.approx(api.t_predicted_s, rel=1e-9)
    assert float(floor) == pytest.approx(api.t_floor_s, rel=1e-9)

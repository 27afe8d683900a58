"""rooflab.step.routing: how a MoE layer picks its experts, by engine release, priced at the launch times measured on
the H200 (measurements/launch/h200-moe-routing.csv, benchmarks/moe_routing_launch.py), by hand; SGLang 0.5.x's
fused top-k (its wheel, topk.py:1001-1073) at the measured small ops' launches, with the shared expert fused into
the MoE kernel at EP 1 (deepseek_v2.py:2408-2459)."""

import csv
import dataclasses
import json

import pytest

from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.load import data_dir, load_gpu, load_model
from rooflab.step import Routing, engine_kernels, routing_fact, step_context, step_report
from rooflab.step.gemms import _experts, _routing_time, mlp
from rooflab.step.routing import routing_launches
from tests.support import invoke

H200 = "h200-sxm"
CSV = data_dir("measurements") / "launch" / "h200-moe-routing.csv"


@pytest.fixture(scope="module")
def h200():
    return load_gpu(H200)


@pytest.fixture(scope="module")
def deepseek():
    return load_model("deepseek-v3")


def _measured() -> dict:
    lines = [line for line in CSV.read_text().splitlines() if line and not line.startswith("#")]
    return {(r["op"], int(r["batch"]), r["timing"]): float(r["seconds"]) for r in csv.DictReader(lines)}


def test_the_yaml_holds_the_campaigns_times(h200):
    """measured.launch's routing rows are the CSV's, at its batches 1, 8 and 64 (256 is kept in the CSV only)."""
    launch, rows = h200.measured.launch, _measured()
    for op in ("grouped_topk", "grouped_topk_compiled"):
        assert launch.graph_s[op] == pytest.approx([rows[(op, b, "graph")] for b in launch.batches], rel=1e-4)
        assert launch.eager_s[op] == pytest.approx([rows[(op, b, "eager")] for b in launch.batches], rel=1e-4)
    meta = dict(line[2:].split(": ", 1) for line in CSV.read_text().splitlines() if line.startswith("# "))
    assert meta["device_name"] == "NVIDIA H200" and meta["date"].startswith("2026-12-03")
    assert "grouped_topk 1.60e-08" in meta["max_weight_error_vs_float64"]


@pytest.mark.parametrize("engine, version, expected", [
    ("vllm", "0.7.3", Routing.grouped_topk_compiled), ("vllm", "0.7.4.dev181+gf35f8e22", Routing.grouped_topk_compiled),
    ("sglang", "0.4.3.post2", Routing.grouped_topk_compiled), ("vllm", "0.9.0", Routing.unpriced),
    ("sglang", "0.5.10", Routing.unpriced), ("tensorrt-llm", "0.9.0", Routing.unpriced), (None, None, Routing.unpriced),
])
def test_the_release_facts_pick_the_routing(deepseek, engine, version, expected):
    """Without a GPU: the compiled facts hold on any; SGLang 0.5.x's fused routing, read for 9.x, is not priced."""
    assert routing_fact(engine, version, deepseek)[0] is expected


@pytest.mark.parametrize("version, gpu, ep, expected, said", [
    ("0.5.12", H200, 1, Routing.fused_topk_shared, "the shared expert fused as expert 257"),
    ("0.5.10", H200, 1, Routing.fused_topk_shared, "read at sglang 0.5.12"),
    ("0.5.12", H200, 8, Routing.fused_topk, "the shared expert apart"),
    ("0.5.12", "b200", 1, Routing.unpriced, "inside flashinfer_trtllm's MoE kernel"),
    ("0.5.12", "a100-sxm-80gb", 1, Routing.unpriced, "not read on compute capability 8.0"),
    ("0.6.0", H200, 1, Routing.unpriced, "routing not read"),
    ("0.4.3.post2", H200, 1, Routing.grouped_topk_compiled, "torch.compile"),
])
def test_sglang_0_5_x_runs_the_fused_top_k_on_9x(deepseek, version, gpu, ep, expected, said):
    """SGLang 0.5.12's wheel: FlashInfer's fused_topk_deepseek on 9.x (topk.py:1021-1073), the shared expert fused
    at EP 1 only (deepseek_v2.py:2440-2445), routing inside flashinfer_trtllm's MoE kernel on 10.x (server_args.py:
    1940-1960, 3135-3141); the 0.4.x fact unchanged."""
    routing, why = routing_fact("sglang", version, deepseek, load_gpu(gpu), ep)
    assert routing is expected and said in why


def test_a_shape_flashinfers_kernel_does_not_take_is_not_priced(deepseek):
    """The fused kernel's limits (topk.py:1021-1033): more than 32 experts a group is another kernel, not read."""
    wide = dataclasses.replace(deepseek, expert_groups=4, topk_groups=2)          # 64 experts a group
    routing, why = routing_fact("sglang", "0.5.12", wide, load_gpu(H200))
    assert routing is Routing.unpriced and "64 a group: not FlashInfer's fused kernel" in why


@pytest.mark.parametrize("routing, tokens, launches", [
    (Routing.fused_topk_shared, 16, (("rms_norm", 1, 256), ("residual_add", 5, 9))),
    (Routing.fused_topk_shared, 17, (("rms_norm", 1, 256), ("residual_add", 5, 9), ("residual_add", 1, 256))),
    (Routing.fused_topk, 8, (("rms_norm", 1, 256), ("residual_add", 1, 8))),               # the EP mask
    (Routing.grouped_topk_compiled, 64, (("grouped_topk_compiled", 1, 7168),)), (Routing.unpriced, 8, ()),
])
def test_the_fused_routings_launches(deepseek, routing, tokens, launches):
    """DeepSeek-V3 (E 256, top 8, 1 shared): topk.py:1055 (the cast of F.linear's bf16 [tokens, 256] logits above
    16 tokens; dsv3_router_gemm writes float32 up to 16, deepseek_v2.py:397-417), :1064-1073 (two pads, a sum, a
    divide, a copy over the 8 + 1 columns), :978-989 (the EP mask of the 8 ids); the fused top-k reads 256 scores
    a row."""
    assert routing_launches(routing, tokens, deepseek) == launches


def test_the_fused_routing_is_priced_at_the_measured_small_ops_by_hand(h200, deepseek):
    """DeepSeek-V3 TP 8, 8 tokens (a measured batch): 58 MoE layers x (RMSNorm's graph launch + k x the residual
    add's) from hardware/h200-sxm.yaml measured.launch at batch 8 (4.49 us, 1.28 us): fused_topk_shared k = 5,
    58 x 10.89 us = 631.6 us; fused_topk k = 1, the MoE row that much above the unpriced one."""
    dep = Deployment(tensor_parallel=8)
    launch = h200.measured.launch
    rms, add = launch.graph_s["rms_norm"][1], launch.graph_s["residual_add"][1]
    assert (rms, add) == (4.49e-06, 1.28e-06) and launch.batches[1] == 8
    t, words = _routing_time(step_context(deepseek, h200, dep, routing=Routing.fused_topk_shared), 8, 58)
    assert t == pytest.approx(58 * (rms + 5 * add), rel=1e-12) == pytest.approx(631.62e-6, rel=1e-4)
    assert "routing: fused_topk_shared as 1 x rms_norm + 5 x residual_add measured on h200-sxm (58 x 10.9 us)" in words
    plain = _experts(step_context(deepseek, h200, dep), 8)
    fused = _experts(step_context(deepseek, h200, dep, routing=Routing.fused_topk), 8)
    assert fused.t_predicted_s - plain.t_predicted_s == pytest.approx(58 * (rms + add), rel=1e-9)
    assert fused.t_floor_s == plain.t_floor_s


def test_the_fused_shared_expert_moves_into_the_moe_row(h200, deepseek):
    """fused_topk_shared: no shared-experts row; the MoE row has 8 more pairs for 8 tokens (one a token), one more
    expert touched of 257, and the shared row's weight bytes (the same expert, N = 2048 / 8 a rank, the same
    block-fp8 bits)."""
    dep = Deployment(tensor_parallel=8)
    apart = mlp(step_context(deepseek, h200, dep), 8)
    fused = mlp(step_context(deepseek, h200, dep, routing=Routing.fused_topk_shared), 8)
    assert [r.label.split(" (")[0] for r in apart] == ["MLP", "MoE", "shared experts"]
    assert [r.label.split(" (")[0] for r in fused] == ["MLP", "MoE"]
    assert "64 token-expert pairs" in apart[1].label and "72 token-expert pairs" in fused[1].label
    assert "of 256 experts" in apart[1].label and "of 257 experts" in fused[1].label
    touched = lambda row: float(row.label.split("MoE (")[1].split(" of")[0])
    assert touched(fused[1]) == pytest.approx(touched(apart[1]) + 1, abs=0.051)
    assert fused[1].weight_bytes == pytest.approx(apart[1].weight_bytes + apart[2].weight_bytes, rel=1e-9)


@pytest.mark.parametrize("model", ["mixtral-8x7b", "qwen3-30b-a3b", "llama-3-8b"])
def test_routing_that_is_not_grouped_is_not_priced(model):
    """Mixtral and Qwen3 route by a plain top-k (n_group 1), a dense model not at all: unpriced at every release."""
    assert routing_fact("vllm", "0.7.3", load_model(model))[0] is Routing.unpriced


@pytest.mark.parametrize("graphs, timing", [(True, "graph"), (False, "eager")])
def test_the_moe_row_adds_the_measured_routing_by_hand(h200, deepseek, graphs, timing):
    """DeepSeek-V3 TP 8, 8 tokens a step (a measured batch, no interpolation): the MoE row with vLLM 0.7.x's routing
    is the row without it plus 58 MoE layers x the measured grouped_topk time at batch 8 (graph: 43.73 us; eager:
    the eager table's 277.1 us, above the graph's)."""
    dep = Deployment(tensor_parallel=8, cuda_graphs=graphs)
    plain = _experts(step_context(deepseek, h200, dep), 8)
    routed = _experts(step_context(deepseek, h200, dep, routing=Routing.grouped_topk), 8)
    per_call = _measured()[("grouped_topk", 8, timing)]
    assert routed.t_predicted_s - plain.t_predicted_s == pytest.approx(58 * per_call, rel=1e-3)
    assert routed.t_floor_s == plain.t_floor_s                  # the floor: a fused engine's negligible bytes
    assert "routing: grouped_topk measured on h200-sxm" in routed.source


def test_a_bad_routing_name_is_refused(h200, deepseek):
    with pytest.raises(InputError, match="routing"):
        step_context(deepseek, h200, Deployment(tensor_parallel=8), routing="fused")


def test_report_and_the_api_price_the_same_routing(h200, deepseek):
    """One path: step_report(engine=...) and report --phase step --engine take the routing engine_kernels picks;
    its note says which."""
    dep = Deployment(tensor_parallel=8)
    k = engine_kernels(deepseek, h200, dep, "vllm", "0.7.3")
    assert k.routing is Routing.grouped_topk_compiled and "grouped_topk_compiled, read at vllm 0.7.3" in k.note
    api = step_report(deepseek, h200, 32, 2048, deployment=dep, engine="vllm", engine_version="0.7.3")
    plain = step_report(deepseek, h200, 32, 2048, deployment=dep)
    r = invoke("report", "-m", "deepseek-v3", "-g", H200, "--phase", "step", "-b", "32", "-L", "2048", "-tp", "8",
               "--engine", "vllm", "--engine-version", "0.7.3", "-f", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["t_predicted_s"] == pytest.approx(api.t_predicted_s, rel=1e-12)
    moe = [row for row in api.rows if row.label.startswith("MoE (")][0]
    assert "routing: grouped_topk_compiled measured on h200-sxm (58 x " in moe.source
    assert not any("routing:" in row.source for row in plain.rows)   # rooflab's own step: unpriced


def test_sglang_0_5_12s_step_prices_the_fused_routing_and_shared_expert(h200, deepseek):
    """One path: step_report and report --phase step at sglang 0.5.12 on the H200 (TP 8, EP 1) take
    fused_topk_shared: no shared-experts row, the routing in the MoE row, its note citing the wheel."""
    dep = Deployment(tensor_parallel=8)
    k = engine_kernels(deepseek, h200, dep, "sglang", "0.5.12")
    assert k.routing is Routing.fused_topk_shared and "fused_topk_deepseek" in k.note
    api = step_report(deepseek, h200, 8, 2048, deployment=dep, engine="sglang", engine_version="0.5.12")
    assert not any(row.label.startswith("shared experts") for row in api.rows)
    moe = next(row for row in api.rows if row.label.startswith("MoE ("))
    assert "routing: fused_topk_shared as 1 x rms_norm + 5 x residual_add" in moe.source
    r = invoke("report", "-m", "deepseek-v3", "-g", H200, "--phase", "step", "-b", "8", "-L", "2048", "-tp", "8",
               "--engine", "sglang", "--engine-version", "0.5.12", "-f", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["t_predicted_s"] == pytest.approx(api.t_predicted_s, rel=1e-12)

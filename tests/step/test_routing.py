"""rooflab.step.routing: how a MoE layer picks its experts, by engine release, priced at the launch times measured on
the H200 (measurements/launch/h200-moe-routing.csv, benchmarks/moe_routing_launch.py), by hand."""

import csv
import json

import pytest

from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.load import data_dir, load_gpu, load_model
from rooflab.step import Routing, engine_kernels, routing_fact, step_context, step_report
from rooflab.step.gemms import _experts
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
    assert routing_fact(engine, version, deepseek)[0] is expected


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

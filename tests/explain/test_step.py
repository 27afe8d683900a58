"""`rooflab explain --phase step` (rooflab/explain/step.py): one path with `rooflab report --phase step`.

For the same command line, explain's JSON holds each row's floor and prediction and the step's totals equal to the
report's JSON (the issue-29 cases: a DeepSeek-V3 fp8 step on 8 x H200 with EP 8 and attention DP 8, a Mixtral TP 2
step, a Llama-3-70B fp8 step with a 3-token EAGLE draft at acceptance 0.7), and every derived step's formula,
evaluated from its substituted symbols, gives the value shown (the derivation's double entry).
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.deployment import Deployment
from rooflab.explain import evaluate, render_explanation
from rooflab.explain.step import explain_step
from rooflab.load import load_gpu, load_model
from rooflab.step import step_report

runner = CliRunner()
REL = 1e-12

#: The issue's three steps, in the spellings of RESULTS.md "Session 7: the step as deployed" and tests/step/.
CASES = {
    "deepseek-v3 fp8, 8 x H200, EP 8, attention DP 8": [
        "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8", "--enable-dp-attention", "--dp", "8", "--ep", "8",
        "-b", "64", "-L", "4096"],
    "mixtral TP 2": ["-m", "mixtral-8x7b", "-g", "h200-sxm", "--tp", "2", "-b", "64", "-L", "4096"],
    "llama-3-70b fp8, 3-token draft at 0.7": [
        "-m", "llama-3-70b", "-g", "h200-sxm", "--quantization", "fp8", "--speculative-config",
        '{"method": "eagle", "num_speculative_tokens": 3}', "--acceptance-rate", "0.7", "-b", "16", "-L", "4096"],
}


def _json(args: list[str]) -> dict:
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


@pytest.mark.parametrize("name", CASES)
def test_explain_step_is_the_reports_step(name):
    report = _json(["report", "--phase", "step", *CASES[name], "-f", "json"])
    explained = _json(["explain", "--phase", "step", *CASES[name], "--json"])
    assert len(explained["rows"]) == len(report["rows"]) > 3
    for mine, theirs in zip(explained["rows"], report["rows"]):
        assert mine["label"] == theirs["label"]
        assert mine["t_floor_s"] == pytest.approx(theirs["t_floor_s"], rel=REL)
        assert mine["t_predicted_s"] == pytest.approx(theirs["t_predicted_s"], rel=REL)
        assert mine["predicted_from"] == theirs["predicted_from"] and mine["source"] == theirs["source"]
    for key in ("t_floor_s", "t_floor_serial_s", "t_predicted_s", "t_per_output_token_s"):
        assert explained[key] == pytest.approx(report[key], rel=REL)
    totals = explained["sections"][-1]["steps"]
    shown = {st["quantity"]: st["value"] for st in totals}
    assert shown["t_floor"] == pytest.approx(report["t_floor_s"], rel=REL)
    assert shown["t_predicted"] == pytest.approx(report["t_predicted_s"], rel=REL)


@pytest.mark.parametrize("name", CASES)
def test_each_rows_section_shows_the_rows_floor_and_prediction(name):
    explained = _json(["explain", "--phase", "step", *CASES[name], "--json"])
    for i, (section, row) in enumerate(zip(explained["sections"], explained["rows"]), start=1):
        assert section["title"] == row["label"]
        steps = {st["quantity"]: st for st in section["steps"]}
        assert steps[f"tf{i}"]["value"] == pytest.approx(row["t_floor_s"], rel=REL)
        assert steps[f"tp{i}"]["value"] == pytest.approx(row["t_predicted_s"], rel=REL)
        assert row["source"] in steps[f"tp{i}"]["note"] and row["predicted_from"] in steps[f"tp{i}"]["note"]


def _symbols(explained: dict) -> dict[str, float]:
    """Every symbol's value: the legend's and each step's result."""
    values = {s["symbol"]: float(s["value"].replace(",", "")) for s in explained["symbols"]}
    for section in explained["sections"]:
        values.update({st["quantity"]: st["value"] for st in section["steps"]})
    return values


def test_the_gemm_rows_are_derived_from_the_models_shapes():
    """Mixtral TP 2: the MoE row's F = L (2 m E H + 2 p 3 w H) with p = m k pairs (Mixtral top-2 of 8; the
    rooflab.cost.gemm formula, 2 m n k), and every formula shown evaluates to its value."""
    explained = _json(["explain", "--phase", "step", *CASES["mixtral TP 2"], "--json"])
    moe = next(s for s in explained["sections"] if s["title"].startswith("MoE ("))
    steps = {st["quantity"]: st for st in moe["steps"]}
    flops = next(st for q, st in steps.items() if q.startswith("F"))
    # by hand: 32 layers, 64 rows, router 8 x 4096, 128 pairs through [2 x 7168, 4096] and [4096, 7168] (TP 2)
    by_hand = 32 * (2 * 64 * 8 * 4096 + 2 * 128 * 3 * 7168 * 4096)
    assert flops["value"] == by_hand
    legend = {s["symbol"]: s["value"] for s in explained["symbols"]}
    shown = _symbols(explained)
    for section in explained["sections"]:
        for st in section["steps"]:
            if not st["formula"].startswith("row."):              # the rest are the row's own fields
                assert math.isclose(evaluate(st["formula"], shown), st["value"], rel_tol=1e-9), st
    assert legend["E"] == "8" and legend["H"] == "4096"


def test_the_speculative_step_divides_by_the_tokens_a_step():
    explained = _json(["explain", "--phase", "step", *CASES["llama-3-70b fp8, 3-token draft at 0.7"], "--json"])
    totals = {st["quantity"]: st for st in explained["sections"][-1]["steps"]}
    tokens = (1 - 0.7 ** 4) / (1 - 0.7)                          # (1 - a^(k+1)) / (1 - a), k 3
    assert totals["t_per_token"]["value"] == pytest.approx(totals["t_predicted"]["value"] / tokens)
    assert any(r["variant"] == "draft" for r in explained["rows"])


def test_the_api_and_the_text_output():
    model, gpu = load_model("mixtral-8x7b"), load_gpu("h200-sxm")
    dep = Deployment(tensor_parallel=2)
    e = explain_step(model, gpu, 64, 4096, deployment=dep)
    r = step_report(model, gpu, 64, 4096, deployment=dep)
    assert e.report.t_floor_s == r.t_floor_s and e.report.t_predicted_s == r.t_predicted_s
    text = render_explanation(e.explanation)
    assert "t_floor" in text and "MoE (" in text and "beta_link" in text


def test_step_options_and_kernel_options_refuse_each_other():
    r = runner.invoke(app, ["explain", "--pp", "2"])
    assert r.exit_code == 2 and "--pp" in r.output
    r = runner.invoke(app, ["explain", "--json"])
    assert r.exit_code == 2 and "--json" in r.output
    r = runner.invoke(app, ["explain", "--phase", "step", "-v", "flash"])
    assert r.exit_code == 2 and "--variant" in r.output
    r = runner.invoke(app, ["explain", "--phase", "step", "-L", "1k,2k"])
    assert r.exit_code == 2 and "--context-len" in r.output


def test_a_step_that_does_not_fit_is_an_input_error():
    r = runner.invoke(app, ["explain", "--phase", "step", "-m", "llama-3-70b", "-g", "h200-sxm", "-b", "64"])
    assert r.exit_code == 2 and "does not fit" in r.output


@pytest.mark.parametrize("name, gpu, kwargs", [
    ("llama-3-70b", "h200-sxm", dict(step="prefill", context_len=8192,
                                     deployment=Deployment(tensor_parallel=8, prefill_context_parallel=2))),
    ("llama-3-70b", "h200-sxm", dict(deployment=Deployment(pipeline_parallel=2, cuda_graphs=False))),
    ("llama-3-70b", "h200-sxm", dict(prefill_tokens=512, deployment=Deployment(tensor_parallel=2,
                                                                               fused_elementwise=False))),
    ("llama-3-8b", "h100-sxm", dict(deployment=Deployment())),             # predictions transferred from the H200
])
def test_other_deployments_are_the_reports_step_too(name, gpu, kwargs):
    """PCP ring prefill, pipeline stages issued eagerly, a mixed step unfused, a GPU without fits of its own."""
    model, g = load_model(name), load_gpu(gpu)
    kwargs.setdefault("context_len", 4096)
    e = explain_step(model, g, 8, **kwargs)
    r = step_report(model, g, 8, **kwargs)
    assert [x.t_floor_s for x in e.report.rows] == [x.t_floor_s for x in r.rows]
    assert [x.t_predicted_s for x in e.report.rows] == [x.t_predicted_s for x in r.rows]
    totals = {st.quantity: st.value for st in e.explanation.sections[-1].steps}
    assert totals["t_floor"] == pytest.approx(r.t_floor_s, rel=REL)
    assert totals["t_predicted"] == pytest.approx(r.t_predicted_s, rel=REL)
    if gpu != "h200-sxm":
        assert "transferred from h200-sxm" in render_explanation(e.explanation)


@pytest.mark.parametrize("ep, fused", [(1, True), (8, False)])
def test_the_fused_shared_expert_is_more_pairs_of_the_moe_row(ep, fused):
    """SGLang 0.5.12 fuses DeepSeek-V3's shared expert into the MoE at EP 1 (rooflab.step.routing): the MoE row's
    pairs are ceil(M k / EP) + s M and no shared-experts section is written; at EP 8 it stays apart. By hand: batch 8
    on one TP-8 rank, k 8, s 1."""
    e = explain_step(load_model("deepseek-v3"), load_gpu("h200-sxm"), 8, 2048,
                     deployment=Deployment(tensor_parallel=8, expert_parallel=ep), engine="sglang",
                     engine_version="0.5.12")
    titles = [s.title for s in e.explanation.sections]
    assert any(t.startswith("shared experts") for t in titles) is not fused, titles
    pairs = next(value for symbol, value, meaning in e.explanation.symbols
                 if symbol.startswith("p") and "token-expert" in meaning)
    assert float(pairs) == (8 * 8 + 8 if fused else math.ceil(8 * 8 / 8)), pairs


@pytest.mark.parametrize("batch, context, step, chunk", [(257, 512, "decode", 0), (8, 8192, "decode", 0),
                                                         (2, 512, "prefill", 0), (8, 1024, "decode", 256),
                                                         (8, 1024, "decode", 0)])
def test_v0_steps_are_explained_at_the_reports_timing(batch, context, step, chunk):
    """vLLM 0.7.3 (V0): where it runs the model eagerly (past 256 sequences, past 8,192 tokens, a prefill, a mixed
    step: StepReport.cuda_graph False) the sampler is the sum of its eager sequences at their `wall` times and the
    small kernels their eager launch times, as report prices them; a graphed decode (the last case) keeps the
    graph's. explain's terms substitute to the report's figures (no ExplainMismatch) and its t_predicted is the
    report's."""
    model, gpu = load_model("llama-3.2-1b"), load_gpu("h200-sxm")
    kw = dict(step=step, prefill_tokens=chunk, engine="vllm", engine_version="0.7.3")
    e = explain_step(model, gpu, batch, context, **kw)
    r = step_report(model, gpu, batch, context, **kw)
    assert e.report.t_predicted_s == r.t_predicted_s and e.report.cuda_graph is r.cuda_graph
    given = {symbol: meaning for symbol, _, meaning in e.explanation.symbols}
    sampled = [meaning for name, meaning in given.items() if name.startswith("t_v0_")]
    timings = {meaning.split(" logits, ")[1].split(" ")[0] for meaning in sampled}
    assert timings == ({"queued"} if r.cuda_graph else {"wall"}), sampled
    assert ("t_v0_graph_inputs" in given) is r.cuda_graph
    rms = given["t_rms_norm"]
    assert ("in a CUDA graph" in rms) is r.cuda_graph and ("eager" in rms) is (not r.cuda_graph), rms

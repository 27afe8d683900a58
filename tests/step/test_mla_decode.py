"""rooflab.step.mla_decode: the MLA decode priced at the split count the engine's kernel runs (vLLM 0.7.x TRITON_MLA: 4,
SGLang 0.4.x triton: 8, read from their wheels), through the same cost function and fit as rooflab's own."""

import json

import numpy as np
import pytest

from rooflab.cost.batch import DecodeBatch
from rooflab.cost.layers import layer_decode
from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.predict import OWN, decode_kernel, predict_time
from rooflab.step import engine_kernels, step_context, step_report
from rooflab.step.attention import decode_attention
from rooflab.step.mla_decode import mla_decode_fact
from rooflab.step_table import StepTable
from tests.support import invoke

H200 = "h200-sxm"


@pytest.fixture(scope="module")
def h200():
    return load_gpu(H200)


@pytest.fixture(scope="module")
def deepseek():
    return load_model("deepseek-v3")


@pytest.mark.parametrize("engine, version, splits", [
    ("vllm", "0.7.3", 4), ("vllm", "0.7.4.dev181+gf35f8e22", 4), ("sglang", "0.4.3.post2", 8),
    ("sglang", "0.4.3", 8), ("vllm", "0.9.0", None), ("sglang", "0.5.10", None), ("tensorrt-llm", "0.9.0", None),
    (None, None, None),
])
def test_the_release_facts_pick_the_split_count(deepseek, engine, version, splits):
    assert mla_decode_fact(engine, version, deepseek)[0] == splits


def test_sglang_0_5_x_picks_no_count_and_says_why(deepseek):
    """SGLang 0.5.12 runs MLA decode on fa3 by default on Hopper (server_args.py:2579-2633), num_splits=0: FA3's
    own heuristic (flashattention_backend.py:203-214); the fact keeps rooflab's split search and says so, for 0.5.x
    only (0.4.x keeps the triton backend's 8; 0.6 is not read)."""
    splits, why = mla_decode_fact("sglang", "0.5.12", deepseek)
    assert splits is None and "fa3 (by default) picks its own splits per batch, read at sglang 0.5.12" in why
    assert "flashattention_backend.py:203-214" in why and why.endswith("rooflab's own split search")
    assert mla_decode_fact("sglang", "0.4.3", deepseek)[0] == 8
    assert "not read" in mla_decode_fact("sglang", "0.6.0", deepseek)[1]


def test_a_model_without_mla_keeps_the_split_search():
    assert mla_decode_fact("vllm", "0.7.3", load_model("llama-3-8b")) == (None, "")


def test_the_row_is_the_cost_function_at_the_engines_count_by_hand(h200, deepseek):
    """DeepSeek-V3 TP 8, one decode of 3,600 tokens: the MLA row at vLLM 0.7.3's 4 splits is 61 layers x the fitted
    MLA split-decode model (rooflab.predict) on cost.layers.layer_decode at S = 4; one sequence is 4 work units
    (cost.mla.mla_decode: units = busy splits x 64-row tiles = 4 x 1), against rooflab's own search's count."""
    dep = Deployment(tensor_parallel=8)
    row = decode_attention(step_context(deepseek, h200, dep, mla_decode_splits=4), 1, 1, 3600)[0]
    own = decode_attention(step_context(deepseek, h200, dep), 1, 1, 3600)[0]
    lens = DecodeBatch.uniform(3600, 1)

    def price(num_sms, units_per_sm):
        return layer_decode(deepseek, "mla", lens, 16, deepseek.weight_dtype, None, 4, 1, num_sms, units_per_sm,
                            tensor_parallel=8)

    layer = deepseek.layer_types["mla"]
    by_hand = 61 * predict_time(h200, decode_kernel(layer, 4, 1), price, deepseek.weight_dtype, OWN).t_predicted_s
    assert row.t_predicted_s == pytest.approx(by_hand, rel=1e-12)
    assert float(price(h200.num_sms, h200.units_per_sm).work_units) == 4
    assert row.label.startswith("attention [mla], 4 split(s)") and "the engine's fixed count" in row.source
    assert not own.label.startswith("attention [mla], 4 split(s)")
    assert row.t_predicted_s > 2 * own.t_predicted_s       # 4 CTAs of 132 SMs at batch 1 (measured 4.50 ms)


def test_a_bad_split_count_is_refused_naming_it(h200, deepseek):
    for bad in (0, 2.5, "4"):
        with pytest.raises(InputError, match="mla_decode_splits"):
            step_context(deepseek, h200, Deployment(tensor_parallel=8), mla_decode_splits=bad)


@pytest.mark.parametrize("engine, version, splits", [("vllm", "0.7.3", 4), ("sglang", "0.4.3.post2", 8)])
def test_report_explain_and_the_step_table_take_the_engines_count(h200, deepseek, engine, version, splits):
    """One path: engine_kernels resolves the count once; step_report, report --phase step --engine, explain --phase
    step and StepTable (with the resolved kernels) price the same MLA row and step; the note says why."""
    from rooflab.explain.step import explain_step

    dep = Deployment(tensor_parallel=8)
    k = engine_kernels(deepseek, h200, dep, engine, version)
    assert k.mla_decode_splits == splits and f"MLA decode {splits} splits" in k.note
    api = step_report(deepseek, h200, 8, 2048, deployment=dep, engine=engine, engine_version=version,
                      check_memory=False)
    mla = next(row for row in api.rows if row.label.startswith("attention [mla]"))
    assert mla.label.startswith(f"attention [mla], {splits} split(s)")
    r = invoke("report", "-m", "deepseek-v3", "-g", H200, "--phase", "step", "-b", "8", "-L", "2048", "-tp", "8",
               "--engine", engine, "--engine-version", version, "-f", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["t_predicted_s"] == pytest.approx(api.t_predicted_s, rel=1e-12)
    explained = explain_step(deepseek, h200, 8, 2048, deployment=dep, engine=engine, engine_version=version)
    assert explained.report.t_predicted_s == pytest.approx(api.t_predicted_s, rel=1e-12)
    table = StepTable.build(deepseek, h200, dep, max_decodes=8, max_context=2048, max_prefill=16, lazy=True,
                            moe_kernel=k.moe_kernel, decode_attention=k.decode_attention, routing=k.routing,
                            mla_decode_splits=k.mla_decode_splits, mla_layout=k.mla_layout,
                            absorbed_bytes=k.absorbed_bytes, sampler=k.sampler)
    floor, predicted = table.time_s(8, 8 * 2048, 0)
    assert float(predicted) == pytest.approx(api.t_predicted_s, rel=1e-9)


def test_serve_prices_the_engines_split_count(h200, deepseek):
    """rooflab.serve's step times take the count as engine_kernels resolves it (serve.replica threads it)."""
    from rooflab.serve.steptime import step_times

    dep = Deployment(tensor_parallel=8)
    args = dict(max_decodes=8, min_context=2048, max_context=2048, max_prefill=16)
    four = step_times(deepseek, h200, dep, mla_decode_splits=4, **args)
    own = step_times(deepseek, h200, dep, **args)
    at = lambda steps: float(np.ravel(steps.predicted_s([1], [2048], [0]))[0])      # noqa: E731
    assert at(four) != pytest.approx(at(own), rel=1e-6)
    table = StepTable.build(deepseek, h200, dep, max_decodes=8, max_context=2048, max_prefill=16, lazy=True,
                            mla_decode_splits=4)
    assert at(four) == pytest.approx(float(table.time_s(1, 2048, 0)[1]), rel=1e-9)


@pytest.mark.parametrize("gpu, backend", [("h200-sxm", "fa3"), ("b200", "trtllm_mla"), ("mi300x", "aiter or triton")])
def test_sglang_0_5_x_names_the_backend_it_picks_on_the_gpu(deepseek, gpu, backend):
    """SGLang 0.5.12's default MLA backend follows the GPU: fa3 on Hopper (server_args.py:2630-2631), trtllm_mla for
    DeepSeek-V3 on 10.x (:1892-1900), aiter or triton on HIP (:2636-2642); the count is the split search on each."""
    splits, why = mla_decode_fact("sglang", "0.5.12", deepseek, load_gpu(gpu))
    assert splits is None and why.startswith(f"{backend} (by default on "), why
    assert why.endswith("rooflab's own split search")

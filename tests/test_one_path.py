"""One path from a model to its numbers: every chart's series equals the report's and explain's figure.

The charts (rooflab.plot's sweeps and roofline points), the reports and explain all price a model
through rooflab.cost.layers, so for the same workload they give the same number; this walks every
bundled model and hybrid config.json files (exported from bundled hybrids) at a few points on the H200,
whose GPU YAML has fitted kernel models, so predictions are compared beside floors. The three charts that
used to price a whole model as its first layer type (issue 25) are checked by name against their reports.

A report builds each distinct cost once: counting wrappers around the kernel cost functions
rooflab.cost.layers calls show no (layer type, shape, launch) priced twice.
"""

from __future__ import annotations

import collections
import dataclasses
import json

import pytest

import rooflab.cost.layers as layers
from rooflab.cost.batch import DecodeBatch
from rooflab.cost.flash import flash_prefill
from rooflab.cost.paged import paged_decode
from rooflab.errors import InputError
from rooflab.explain import explain
from rooflab.hf import export_hf_config
from rooflab.load import available, load_gpu, load_model
from rooflab.plot import decode_sweep, memory_sweep, roofline_data, time_sweep
from rooflab.report import decode_report, prefill_report
from rooflab.vocab import Variant

H200 = load_gpu("h200-sxm")
REL = 1e-9

#: Prefill lengths and decode (batch, context) points the walk compares at.
PREFILL_LENS = (8192, 32768)
DECODE_POINTS = ((8, 32768), (1, 4096))

#: Bundled hybrids whose config.json the walk loads as a user would (`-m path/to/config.json`).
HYBRIDS = ("gemma-3-27b", "qwen3-next-80b-a3b")


def _hybrid_config(tmp_path_factory, name: str):
    folder = tmp_path_factory.mktemp(name)
    path = folder / "config.json"
    # the exporter writes text models: a vision tower is refused, not dropped
    text = dataclasses.replace(load_model(name), vision_parameters=0, image_tokens=0, image_input_elements=0)
    path.write_text(json.dumps(export_hf_config(text), indent=2))
    return load_model(path)


@pytest.fixture(scope="module", params=[*available("models"), *(f"{h} config.json" for h in HYBRIDS)])
def model(request, tmp_path_factory):
    name = request.param
    if name.endswith(" config.json"):
        hybrid = _hybrid_config(tmp_path_factory, name.split()[0])
        assert hybrid.is_hybrid
        return hybrid
    return load_model(name)


def _total(report, variant: str):
    return next(t for t in report.totals if t.variant == variant)


def _step(explanation, quantity: str, section: str = "") -> float:
    """The value of the last step called `quantity` (in a section whose title holds `section`)."""
    found = [s.value for sec in explanation.sections if section.lower() in sec.title.lower() for s in sec.steps
             if s.quantity == quantity]
    assert found, f"no step {quantity} in {[sec.title for sec in explanation.sections]}"
    return found[-1]


def _explained_total(model, variant: Variant, report, **workload) -> tuple[float, float | None]:
    """explain's floor and predicted time of the whole model for `variant`: each softmax layer type's derivation
    (floor x layers, predicted x layers) and the report's recurrent rows for linear layer types."""
    floor, predicted = 0.0, 0.0
    for row in report.rows:
        if row.variant == Variant.recurrent.value:
            floor += row.model_t_floor_s
            predicted = None
            continue
        if row.variant != variant.value:
            continue
        e = explain(variant, model, H200, layer_type=row.layer_type, **workload)
        layer_floor = _step(e, "t_floor", "time floors (one layer)")
        assert layer_floor == pytest.approx(row.t_floor_s, rel=REL)
        floor += layer_floor * row.num_layers
        if any(sec.title.startswith("Predicted time") for sec in e.sections):
            t = _step(e, "t_predicted", "Predicted time")
            assert t == pytest.approx(row.t_predicted_s, rel=REL)
            predicted = None if predicted is None else predicted + t * row.num_layers
        else:
            assert row.t_predicted_s is None
            predicted = None
    return floor, predicted


@pytest.mark.parametrize("seq_len", PREFILL_LENS)
def test_prefill_charts_equal_the_report_and_explain(model, seq_len):
    report = prefill_report(model, H200, seq_len)
    sweep = time_sweep(model, H200, seq_lens=[seq_len])
    for variant, series in ((Variant.naive, sweep.naive_s), (Variant.flash, sweep.flash_s)):
        total = _total(report, variant.value)
        assert float(series[0]) == pytest.approx(total.t_floor_s, rel=REL), variant
        floor, predicted = _explained_total(model, variant, report, seq_len=seq_len)
        assert floor == pytest.approx(total.t_floor_s, rel=REL)
        assert (predicted is None) == (total.t_predicted_s is None)
        if predicted is not None:
            assert predicted == pytest.approx(total.t_predicted_s, rel=REL)
    main = [r for r in report.rows if r.layer_type == layers.main_attention(model)]
    naive = next(r for r in main if r.variant == "naive")
    flash = next(r for r in main if r.variant == "flash")
    memory = memory_sweep(model, [H200], seq_lens=[seq_len])
    assert float(memory.sp_bytes[0]) == naive.peak_extra_bytes
    points = {p.kind: p for p in roofline_data(model, [H200], seq_len).points}
    assert points["flash"].intensity_flop_per_byte == pytest.approx(flash.intensity_flop_per_byte, rel=REL)
    assert points["naive"].intensity_flop_per_byte == pytest.approx(naive.intensity_flop_per_byte, rel=REL)
    assert points["flash"].flop_per_s == pytest.approx(flash.flops / flash.t_floor_s, rel=REL)


@pytest.mark.parametrize("batch, context_len", DECODE_POINTS)
def test_decode_chart_equals_the_report_and_explain(model, batch, context_len):
    lens = DecodeBatch.uniform(context_len, batch)
    report = decode_report(model, H200, lens)
    sweep = decode_sweep(model, H200, batches=(batch,), context_lens=[context_len])
    paged = _total(report, Variant.paged.value)
    assert float(sweep.floor_s[0][0]) == pytest.approx(paged.t_floor_s, rel=REL)
    if paged.t_predicted_s is None:
        assert sweep.predicted_s is None
    else:
        assert float(sweep.predicted_s[0][0]) == pytest.approx(paged.t_predicted_s, rel=REL)
    floor, predicted = _explained_total(model, Variant.paged, report, context_lens=lens)
    assert floor == pytest.approx(paged.t_floor_s, rel=REL)
    if predicted is not None:
        assert predicted == pytest.approx(paged.t_predicted_s, rel=REL)
    # the as-launched line is the parallelism model of the report's own rows: their memory time over the share
    # of the GPU the launch keeps busy (memory-bound rows), never below the floor
    launched = float(sweep.launched_s[0][0])
    assert launched >= float(sweep.floor_s[0][0]) * (1 - REL)
    rows = [r for r in report.rows if r.variant == "paged"]
    recurrent = any(r.variant == "recurrent" for r in report.rows)
    if all(r.bound == "memory" for r in rows) and not recurrent:
        assert launched == pytest.approx(sum(r.t_memory_s / r.parallel_fraction * r.num_layers for r in rows),
                                         rel=1e-6)
    points = {p.kind: p for p in roofline_data(model, [H200], context_len, decode_batch=batch).points}
    main = next(r for r in rows if r.layer_type == layers.main_attention(model))
    assert points["paged"].intensity_flop_per_byte == pytest.approx(main.intensity_flop_per_byte, rel=REL)


# --- the charts issue 25 found wrong, by name -------------------------------------------------------------------

def test_deepseek_v3_decode_chart_is_the_reports_4_5_ms():
    """It drew about 270 ms: MLA priced as full attention with 128 KV heads."""
    model = load_model("deepseek-v3")
    sweep = decode_sweep(model, H200, batches=(8,), context_lens=[32768])
    report = decode_report(model, H200, DecodeBatch.uniform(32768, 8))
    assert float(sweep.floor_s[0][0]) == pytest.approx(_total(report, "paged").t_floor_s, rel=REL)
    assert float(sweep.floor_s[0][0]) == pytest.approx(4.50e-3, rel=1e-3)


def test_gemma_3_decode_chart_is_the_reports_5_2_ms():
    """It drew 27.7 ms (all SMs) and 43 ms (as launched): every layer priced as a full-attention layer."""
    model = load_model("gemma-3-27b")
    sweep = decode_sweep(model, H200, batches=(8,), context_lens=[32768])
    report = decode_report(model, H200, DecodeBatch.uniform(32768, 8))
    assert float(sweep.floor_s[0][0]) == pytest.approx(_total(report, "paged").t_floor_s, rel=REL)
    assert float(sweep.floor_s[0][0]) == pytest.approx(5.20e-3, rel=1e-3)
    assert float(sweep.launched_s[0][0]) < 10e-3


def test_gpt_oss_prefill_chart_is_the_reports_108_ms():
    """It drew 213 ms: the 128-token windows of half the layers ignored."""
    model = load_model("gpt-oss-20b")
    sweep = time_sweep(model, H200, seq_lens=[32768])
    report = prefill_report(model, H200, 32768)
    assert float(sweep.flash_s[0]) == pytest.approx(_total(report, "flash").t_floor_s, rel=REL)
    assert float(sweep.flash_s[0]) == pytest.approx(108.2e-3, rel=1e-3)


# --- one aggregator: a kernel cost function refuses a model ---------------------------------------------------------

@pytest.mark.parametrize("call", [lambda m: flash_prefill(m, 8192), lambda m: paged_decode(m, [8192])])
def test_kernel_cost_functions_refuse_a_model_naming_the_aggregator(call):
    with pytest.raises(InputError) as err:
        call(load_model("gemma-3-27b"))
    assert "rooflab.cost.layers.model_prefill" in str(err.value) and "model.heads" in str(err.value)


# --- price once ---------------------------------------------------------------------------------------------------

def _counting(monkeypatch, names):
    """Wrap rooflab.cost.layers' kernel cost functions: calls[name] lists each call's arguments."""
    calls = collections.defaultdict(list)
    for name in names:
        original = getattr(layers, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name].append(repr((args, sorted(kwargs.items()))))
            return _original(*args, **kwargs)

        monkeypatch.setattr(layers, name, counted)
    return calls


def test_a_prefill_report_builds_each_distinct_cost_once(monkeypatch):
    """Llama-3-8B on the H200 called flash_prefill 6 times and naive_prefill 5 (predict_time rebuilt the cost
    per fit, prefill_facts again); now: naive once, flash once a distinct launch (no parallelism model, and one
    per units-per-SM of the fitted flash models; a kernel model's entry, cudnn_kernel's, reprices the launch without
    one)."""
    from rooflab.cudnn_kernel import KERNEL_MODELS

    calls = _counting(monkeypatch, ["flash_prefill", "naive_prefill"])
    model = load_model("llama-3-8b")
    prefill_report(model, H200, 8192)
    launches = {(H200.num_sms, f.units_per_sm) if f.units_per_sm else (None, 1.0) for f in H200.fitted
                if f.kernel.value == "flash" and f.impl not in KERNEL_MODELS.values()} | {(None, 1.0)}
    assert len(calls["naive_prefill"]) == 1
    assert len(calls["flash_prefill"]) == len(launches) <= 3
    for name, made in calls.items():
        assert len(made) == len(set(made)), f"{name} priced the same cost twice"


def test_a_decode_report_runs_the_split_search_once(monkeypatch):
    """decode_report made 136 paged_decode calls (the facts and the rows each ran the split search); now the
    search's costs are the rows' and the facts', and no cost is built twice."""
    calls = _counting(monkeypatch, ["paged_decode", "mla_decode"])
    model = load_model("llama-3-8b")
    decode_report(model, H200, DecodeBatch.uniform(8192, 1))
    limit = layers.split_limit(model, "full", DecodeBatch.uniform(8192, 1))
    made = calls["paged_decode"]
    assert len(made) == len(set(made)), "paged_decode priced the same cost twice"
    assert limit <= len(made) <= limit + 4        # the search, and the fits' other launches
    assert len(made) < 136 // 2


def test_a_hybrid_report_prices_each_layer_type_once(monkeypatch):
    calls = _counting(monkeypatch, ["flash_prefill", "naive_prefill", "linear_prefill", "paged_decode",
                                    "linear_decode"])
    model = load_model("qwen3-next-80b-a3b")
    prefill_report(model, H200, 8192)
    decode_report(model, H200, DecodeBatch.uniform(8192, 4))
    for name, made in calls.items():
        assert len(made) == len(set(made)), f"{name} priced the same cost twice"
    assert len(calls["linear_prefill"]) == 1
    assert len(calls["linear_decode"]) == 2       # the report's batch, and the facts' whole step of one sequence


@pytest.mark.parametrize("name", available("models"))
def test_the_steps_attention_rows_are_the_reports_rows(name):
    """rooflab.step prices each layer type's decode attention through the same cost.layers calls as the decode
    report: on one GPU, batch 8 x 4,096, its attention row (all layers of the type, the split count it chose) has
    the report's row of that layer type and split count times the layer count, in bytes and in the floor."""
    import re

    from rooflab.deployment import Deployment
    from rooflab.step import step_report

    model = load_model(name)
    step = step_report(model, H200, 8, 4096, deployment=Deployment(dtype="fp16"), check_memory=False)
    report = decode_report(model, H200, DecodeBatch.uniform(4096, 8), dtype="fp16")
    compared = 0
    for row in step.rows:
        found = re.match(r"attention \[(\w+)\], (\d+) split", row.label)
        if not found:
            continue
        same = [r for r in report.rows if r.layer_type == found.group(1) and r.splits == int(found.group(2))]
        if not same:
            continue                                   # a split count the report does not show (it shows 1 and its own)
        assert row.hbm_bytes == pytest.approx(same[0].hbm_bytes * same[0].num_layers, rel=REL)
        assert row.t_floor_s == pytest.approx(same[0].t_floor_s * same[0].num_layers, rel=REL)
        compared += 1
    assert compared or not any(t.is_attention for _, t, _ in model.layer_walk())


def _published_cudnn_rows(gpu: str):
    from rooflab.fit.published_check import Family, check_rows

    return [c for c in check_rows() if c.family is Family.cudnn and c.row.gpu == gpu]


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm"])
def test_report_at_a_published_cudnn_rows_shape_gives_its_checked_prediction(gpu):
    """`rooflab report --impl torch_cudnn` and explain at each published cuDNN row's shape give exactly the
    t_predicted `rooflab validate --published` holds against the row: one cuDNN prediction (rooflab.cudnn_kernel's
    model, fitted on the H200 shapes runs), whichever command asks (h200-sxm: no published cuDNN row, the check's
    own prediction at the shape instead)."""
    from rooflab.fit.published_check import Family, predict_row
    from rooflab.shape import BareAttention

    target = load_gpu(gpu)
    rows = _published_cudnn_rows("h100-sxm")
    assert len(rows) >= 30
    for c in rows[:: 1 if gpu == "h100-sxm" else 7]:
        r = c.row
        checked = c.prediction if gpu == "h100-sxm" else predict_row(r, target, Family.cudnn)[0]
        assert checked.impl == "torch_cudnn"
        report = prefill_report(BareAttention.of(r.heads), target, r.seq_len_q, r.batch, r.dtype, r.causal,
                                impl="torch_cudnn")
        flash = next(row for row in report.rows if row.variant == Variant.flash.value)
        assert flash.t_predicted_s == checked.t_predicted_s and flash.predicted_impl == "torch_cudnn", c.label
        derived = explain(Variant.flash, BareAttention.of(r.heads), target, r.seq_len_q, r.batch, r.dtype, r.causal,
                          impl="torch_cudnn")
        assert _step(derived, "t_predicted", "predicted") == pytest.approx(checked.t_predicted_s, rel=1e-12)


def test_the_cli_report_and_the_published_check_agree_on_a_cudnn_row():
    """The same through the commands a user runs: report -f json and validate --published -f json."""
    from typer.testing import CliRunner

    from rooflab.cli import app

    runner = CliRunner()
    rows = json.loads(runner.invoke(app, ["validate", "--published", "-f", "json"]).output)
    row = next(c for c in _published_cudnn_rows("h100-sxm") if c.row.causal and c.row.head_dim == 128).row
    shape = f"{row.batch},{row.num_qo_heads},{row.num_kv_heads},{row.seq_len_q},{row.head_dim}"
    published = next(r for r in rows if r["gpu"] == "h100-sxm" and r["family"] == "cudnn" and
                     r["shape"].endswith(f"B{row.batch} H{row.num_qo_heads}/{row.num_kv_heads} T{row.seq_len_q}x"
                                         f"{row.seq_len_kv} d{row.head_dim} causal"))
    out = runner.invoke(app, ["report", "-g", "h100-sxm", "--impl", "torch_cudnn", "--shape", shape, "--causal",
                              "-f", "json"])
    assert out.exit_code == 0, out.output
    flash = next(r for r in json.loads(out.output)["rows"] if r["variant"] == "flash")
    assert flash["t_predicted_s"] == published["t_predicted_s"] and published["provenance"] == \
        "transferred from h200-sxm"

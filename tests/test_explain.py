"""`rooflab explain`: the chapter's figures, formulas that agree with the cost functions, and the CLI."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rooflab import DType, ModelSpec, load_gpu, load_model
from rooflab.cli import app
from rooflab.vocab import Variant
from rooflab.errors import InputError
from rooflab.explain import (EXPLAINED, ExplainMismatch, Unit, _Derivation, evaluate, explain, number,
                             render_explanation)
from rooflab.report import decode_report, prefill_report

runner = CliRunner()
LLAMA, H100 = load_model("llama-3-8b"), load_gpu("h100-sxm")
#: The variants of softmax attention (recurrent derives linear-attention layers; tests/test_explain_layers.py)
SOFTMAX = tuple(v for v in EXPLAINED if v is not Variant.recurrent)

# "Naive attention and the online softmax", the opening sections: S, the traffic of
# the three kernels, F, the two intensities, the ridge, the factor between them, and the times
CHAPTER_FIGURES = ["4.000 GiB", "16.156 GiB", "1.0995e12", "1.100 TFLOP", "63.4", "6553.6", "295",
                   "22.2x right", "4.7x left", "103", "5.18 ms", "165.7 ms", "35.6 ms"]


def _steps(e):
    return {s.quantity: s for section in e.sections for s in section.steps}


def test_default_text_contains_the_chapter_figures():
    r = runner.invoke(app, ["explain", "--no-causal"])
    assert r.exit_code == 0, r.output
    for figure in CHAPTER_FIGURES:
        assert figure in r.stdout, figure
    assert "S = B * h * T^2 * b = 1 * 32 * 8192^2 * 2 = 4.295e9 B = 4.000 GiB" in r.stdout
    assert "I_compulsory = 2 * h * T / (b * (h + h_kv)) = 2 * 32 * 8192 / (2 * (32 + 8)) = 6553.6 FLOP/byte" \
        in r.stdout
    assert "fits" in r.stdout and "23,215" in r.stdout


def test_default_follows_the_chapter_order():
    e = explain(Variant.naive, LLAMA, H100)
    order = [s.quantity for section in e.sections for s in section.steps]
    chapter = ["S", "P", "Q_qk", "Q_softmax", "Q_pv", "Q_total", "F", "I", "I_compulsory", "t_memory",
               "t_compute", "I_star", "ratio", "t_model", "t_model_compute", "T_max"]
    positions = [order.index(q) for q in chapter]
    assert positions[:9] == sorted(positions[:9])           # S .. compulsory intensity
    assert order.index("I_star") < order.index("ratio") < order.index("t_model") < order.index("T_max")


def test_markdown_has_the_same_figures():
    r = runner.invoke(app, ["explain", "--format", "markdown", "--no-causal"])
    assert r.exit_code == 0
    assert r.stdout.startswith("## naive attention") and "| `S` | `B * h * T^2 * b` |" in r.stdout
    for figure in CHAPTER_FIGURES:
        assert figure in r.stdout, figure


def test_explain_agrees_with_report():
    report = prefill_report(LLAMA, H100)
    naive, flash = report.rows
    steps = _steps(explain(Variant.naive, LLAMA, H100))
    assert steps["Q_total"].value == naive.hbm_bytes and steps["t_floor"].value == naive.t_floor_s
    assert steps["F"].value == naive.flops and steps["ratio"].value == naive.ridge_ratio
    fsteps = _steps(explain(Variant.flash, LLAMA, H100))
    assert fsteps["Q_total"].value == flash.hbm_bytes and fsteps["t_floor"].value == flash.t_floor_s
    assert fsteps["Q_tiled"].value == flash.hbm_bytes_tiled
    decode = decode_report(LLAMA, H100, [8192])
    paged, split = decode.rows
    assert _steps(explain(Variant.paged, LLAMA, H100))["t_floor"].value == paged.t_floor_s
    ssteps = _steps(explain(Variant.split_kv, LLAMA, H100))
    assert ssteps["t_floor"].value == split.t_floor_s and ssteps["Q_total"].value == split.hbm_bytes


def test_merge_matches_the_chapter():
    steps = _steps(explain(Variant.merge, LLAMA, H100, dtype=DType.bf16))
    assert steps["row_bytes"].value == 776 and steps["row_flops"].value == 390      # "776 bytes ... 390 FLOPs"
    assert steps["I"].value == pytest.approx(0.5, abs=0.01)


def test_decode_intensity_is_four():
    steps = _steps(explain(Variant.paged, LLAMA, H100, context_lens=[2500] * 3))
    assert steps["I_kv"].value == 4.0                                               # 2h / (b h_kv)
    assert steps["f"].value == pytest.approx(24 / 132)


@pytest.mark.parametrize("variant", SOFTMAX)
@pytest.mark.parametrize("model_name, gpu_name, dtype, causal", [
    ("llama-3-70b", "h200-sxm", DType.bf16, True),
    ("mixtral-8x7b", "mi300x", DType.fp16, False),      # no exp rate in the spec
    ("gemma-2-9b", "a100-40gb", DType.fp32, True),
])
def test_every_variant_derives_on_several_specs(variant, model_name, gpu_name, dtype, causal):
    e = explain(variant, load_model(model_name), load_gpu(gpu_name), 3000, 2, dtype, causal,
                context_lens=[100, 7000], page_size=32, splits=3 if variant is Variant.split_kv else None)
    text = render_explanation(e)
    assert text.startswith(f"{variant.value} attention") and e.sections
    assert render_explanation(e, markdown=True).count("| quantity |") == len(e.sections)


@settings(max_examples=25, deadline=None)
@given(heads=st.sampled_from([(32, 8, 128), (64, 8, 128), (16, 16, 64), (28, 4, 128), (8, 1, 256)]),
       seq_len=st.integers(1, 40_000), batch=st.integers(1, 8), causal=st.booleans(),
       lens=st.lists(st.integers(1, 50_000), min_size=1, max_size=5), page=st.sampled_from([1, 16, 128]),
       splits=st.integers(1, 40), variant=st.sampled_from(SOFTMAX))
def test_formulas_agree_with_the_cost_functions_on_random_shapes(heads, seq_len, batch, causal, lens, page, splits,
                                                                  variant):
    """explain() raises ExplainMismatch if any shown formula disagrees with rooflab's value."""
    h, h_kv, d = heads
    model = ModelSpec(name="m", display_name="M", num_layers=4, hidden_size=h * d, num_qo_heads=h,
                      num_kv_heads=h_kv, head_dim=d, ffn_size=4 * h * d, vocab_size=1000, max_context_len=8192,
                      source="test")
    split = splits if variant is Variant.split_kv else None
    explain(variant, model, H100, seq_len, batch, DType.fp16, causal, lens, page, splits=split)


def test_a_disagreement_is_a_bug_not_a_rounding():
    d = _Derivation({"a": 2.0, "b": 3.0})
    d.section("x")
    assert d.step("c", "a * b", 6.0, Unit.count) == 6.0
    with pytest.raises(ExplainMismatch, match="c2 = a \\* b gives 6.0, but rooflab computes 6.000001"):
        d.step("c2", "a * b", 6.000001, Unit.count)


def test_evaluate_and_number():
    assert evaluate("ceil(T / B) * max(2, x) - 2^3", {"T": 10, "B": 4, "x": 1}) == 3 * 2 - 8
    with pytest.raises(ValueError):
        evaluate("__import__('os')", {})
    with pytest.raises(ValueError):
        evaluate("a.b", {"a": 1})
    assert number(1.0995116e12) == "1.0995e12" and number(4294967296) == "4.295e9"
    assert number(8192) == "8192" and number(6553.6) == "6553.6" and number(5.1784e-3) == "5.1784e-3"
    assert number(999_999_999.9) == "1e9"


def test_cli_decode_options():
    r = runner.invoke(app, ["explain", "--variant", "split_kv", "-L", "100,5000", "-L", "17", "--page-size", "32",
                            "--kv-dtype", "fp8_e4m3", "--splits", "4"])
    assert r.exit_code == 0, r.output
    assert "3 sequences" in r.stdout and re.search(r"n_split +=  ?4 ", r.stdout) and "fp8_e4m3" in r.stdout
    assert "Q_merge" in r.stdout


@pytest.mark.parametrize("args, needle", [
    (["--variant", "paged", "--splits", "4"], "--splits applies to --variant split_kv"),
    (["--variant", "cascade"], "--variant"),
    (["--format", "json"], "--format"),
    (["-L", "10,20", "-b", "3", "--variant", "paged"], "disagrees"),
    (["--seq-len", "0"], "--seq-len"),
    (["--ceilings", "calibrated"], "no measured: section"),
])
def test_cli_bad_input(args, needle):
    r = runner.invoke(app, ["explain", *args])
    assert r.exit_code == 2, r.output
    assert 1 <= len(r.stderr.strip().splitlines()) <= 2 and needle in r.stderr and r.stdout == ""


def test_unexplained_variant_is_an_input_error():
    with pytest.raises(InputError, match="cascade"):
        explain(Variant.cascade, LLAMA, H100)


def test_the_predicted_time_is_derived_beside_the_floor():
    """Where the GPU has a fitted model, explain's last section derives t_predicted = c0 + t_launch / eta and
    agrees with the report's row (rooflab.predict.predict_time); without a fit it says there is only the floor."""
    from rooflab.explain import explain as derive
    from rooflab.report import prefill_report
    from rooflab.vocab import Variant

    h200 = load_gpu("h200-sxm")
    e = derive(Variant.flash, LLAMA, h200)
    section = e.sections[-1]
    assert section.title.startswith("Predicted time (") and "not a bound" in section.title
    (step,) = section.steps
    assert step.quantity == "t_predicted" and step.formula == "c0 + t_launch / eta"
    row = next(r for r in prefill_report(LLAMA, h200).rows if r.variant == "flash")
    assert step.value == pytest.approx(row.t_predicted_s, rel=1e-12)
    assert any(line.startswith("predicted ") and row.predicted_impl in line for line in e.conclusion)
    named = derive(Variant.flash, LLAMA, h200, impl="rooflab_hopper")
    assert "rooflab_hopper" in named.sections[-1].title
    none = derive(Variant.flash, LLAMA, H100)
    assert not none.sections[-1].title.startswith("Predicted") and any("only the floor" in t for t in none.conclusion)
    r = runner.invoke(app, ["explain", "-v", "paged", "-g", "h200", "--impl", "nope"])
    assert r.exit_code == 2 and "--impl nope" in r.stderr

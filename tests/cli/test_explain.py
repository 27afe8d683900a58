"""Tests of rooflab/cli/explain.py: `rooflab explain` from the command line.

The chapter's figures in text and markdown, decode options, layer types (--layer, the decode variants each
allows, a type the model lacks listed with the model's own), the engines' parallelism and what they refuse,
the predicted time derived beside the floor where the GPU has a fitted model, and bad input (exit 2).
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from rooflab import load_gpu, load_model
from rooflab.cli import app
from support import _COMMON, DEEPSEEK, GEMMA3


runner = CliRunner()
LLAMA = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")


# "Naive attention and the online softmax", the opening sections: S, the traffic of
# the three kernels, F, the two intensities, the ridge, the factor between them, and the times
CHAPTER_FIGURES = ["4.000 GiB", "16.156 GiB", "1.0995e12", "1.100 TFLOP", "63.4", "6553.6", "295",
                   "22.2x right", "4.7x left", "103", "5.18 ms", "165.7 ms", "35.6 ms"]


def test_default_text_contains_the_chapter_figures():
    r = runner.invoke(app, ["explain", "--no-causal"])
    assert r.exit_code == 0, r.output
    for figure in CHAPTER_FIGURES:
        assert figure in r.stdout, figure
    assert "S = B * h * T^2 * b = 1 * 32 * 8192^2 * 2 = 4.295e9 B = 4.000 GiB" in r.stdout
    assert "I_compulsory = 2 * h * T / (b * (h + h_kv)) = 2 * 32 * 8192 / (2 * (32 + 8)) = 6553.6 FLOP/byte" \
        in r.stdout
    assert "fits" in r.stdout and "23,215" in r.stdout


def test_markdown_has_the_same_figures():
    r = runner.invoke(app, ["explain", "--format", "markdown", "--no-causal"])
    assert r.exit_code == 0
    assert r.stdout.startswith("## naive attention") and "| `S` | `B * h * T^2 * b` |" in r.stdout
    for figure in CHAPTER_FIGURES:
        assert figure in r.stdout, figure


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
    moved = derive(Variant.flash, LLAMA, H100)         # no fits of its own: the H200's transfer (rooflab.transfer)
    assert "transferred from h200-sxm" in moved.sections[-1].title
    (step,) = moved.sections[-1].steps
    h100_row = next(r for r in prefill_report(LLAMA, H100).rows if r.variant == "flash")
    assert step.value == pytest.approx(h100_row.t_predicted_s, rel=1e-12) and "h200-sxm" in h100_row.predicted_from
    none = derive(Variant.flash, LLAMA, load_gpu("mi300x"))   # nothing transfers to AMD: only the floor
    assert not none.sections[-1].title.startswith("Predicted") and any("only the floor" in t for t in none.conclusion)
    r = runner.invoke(app, ["explain", "-v", "paged", "-g", "h200", "--impl", "nope"])
    assert r.exit_code == 2 and "--impl nope" in r.stderr


# Qwen3-Next model card and config: Gated DeltaNet on three of every four layers
QWEN3_NEXT = """
name: qwen3-next-like
display_name: Qwen3-Next-like
num_layers: 48
hidden_size: 2048
num_qo_heads: 16
num_kv_heads: 2
head_dim: 256
source: Qwen3-Next config (linear attention 3:1)
layer_types:
  linear: {kind: linear, linear_num_key_heads: 16, linear_num_value_heads: 32, linear_key_head_dim: 128,
           linear_value_head_dim: 128, linear_conv_kernel: 4}
  full: {kind: full}
layer_pattern: [linear, linear, linear, full]
""" + _COMMON


# --- the CLI ------------------------------------------------------------------------------------------------

@pytest.fixture
def yaml_models(tmp_path):
    paths = {}
    for key, text in (("gemma3", GEMMA3), ("deepseek", DEEPSEEK.format(heads=128)), ("qwen3-next", QWEN3_NEXT)):
        paths[key] = tmp_path / f"{key}.yaml"
        paths[key].write_text(text)
    return paths


def test_cli_layer_type(yaml_models):
    r = runner.invoke(app, ["explain", "-m", str(yaml_models["gemma3"]), "--layer-type", "local", "-v", "flash",
                            "-T", "5000"])
    assert r.exit_code == 0, r.output
    assert "'local' layers (sliding (window 1,024))" in r.stdout
    assert re.search(r"pairs += W \* \(W \+ 1\) / 2 \+ \(T - W\) \* W = ", r.stdout)
    for model in load_model("llama-3-8b"), load_model("mistral-7b"):
        for name in model.layer_types:
            r = runner.invoke(app, ["explain", "-m", model.name, "--layer-type", name, "-v", "flash"])
            assert r.exit_code == 0, r.output


def test_cli_decode_variants_of_layer_types(yaml_models):
    r = runner.invoke(app, ["explain", "-m", str(yaml_models["deepseek"]), "-v", "split_kv", "--dtype", "bf16",
                            "--q-len", "2", "--mla-sparse-fp8"])
    assert r.exit_code == 0, r.output
    assert re.search(r"lat += 512 \+ 4 \* 4 \+ 64 \* 2 = 656 B", r.stdout)
    r = runner.invoke(app, ["explain", "-m", str(yaml_models["qwen3-next"]), "-v", "recurrent", "-b", "4"])
    assert r.exit_code == 0, r.output
    assert "state = (h_v * d_k * d_v + (K - 1) * (2 * h_k * d_k + h_v * d_v)) * b_s = " in r.stdout


@pytest.mark.parametrize("args, needle", [
    (["--layer-type", "sliding"], "'sliding'"),
    (["--variant", "recurrent"], "--variant recurrent"),
    (["--variant", "flash", "--q-len", "4"], "--q-len"),
    (["--variant", "paged", "--q-len", "0"], "--q-len"),
])
def test_cli_layer_errors(args, needle):
    r = runner.invoke(app, ["explain", *args])
    assert r.exit_code == 2, r.output
    assert needle in r.stderr and r.stdout == ""


def test_cli_bad_layer_type_lists_the_models_types(yaml_models):
    r = runner.invoke(app, ["explain", "-m", str(yaml_models["gemma3"]), "--layer-type", "glob"])
    assert r.exit_code == 2 and "'glob'" in r.stderr and "local (sliding), global (full)" in r.stderr


@pytest.mark.parametrize("args, code, needle", [
    (["-v", "paged", "-m", "deepseek-v3", "-g", "h200-sxm", "-b", "8", "-L", "32k", "-tp", "8", "-dcp", "8"], 0,
     "one GPU of 8 x NVIDIA H200 SXM 141GB (TP 8, DCP 8)"),
    (["-v", "flash", "-m", "llama-3-70b", "--tensor-parallel-size", "4"], 0, "(TP 4)"),
    (["-v", "paged", "-m", "llama-3-70b", "--tp", "8", "--dcp", "8"], 2, "DCP <= TP / H_kv"),
    (["-v", "paged", "--tp", "8", "--dcp", "3"], 2, "--dcp 3 must divide --tp 8"),
    (["-v", "flash", "-m", "llama-3-70b", "--tp", "3"], 2, "does not divide the 64 query heads"),
    (["-v", "paged", "--kvp", "0"], 2, "--kv-parallel"),
])
def test_explain_takes_the_engines_parallelism_and_refuses_what_they_refuse(args, code, needle):
    r = runner.invoke(app, ["explain", *args])
    assert r.exit_code == code and needle in (r.output if code == 0 else r.stderr), r.output + r.stderr


def test_explain_step_refuses_a_kv_cache_dtype_the_vllm_release_does_not_take():
    """explain --phase step --engine vllm --engine-version 0.7.3: vLLM 0.7.3's --kv-cache-dtype choices only
    (arg_utils.py:359-361; engines/vocab.py VLLM_KV_CACHE_DTYPES); 0.11.0 takes bfloat16 (config/cache.py:25-26)."""
    base = ["explain", "--phase", "step", "-m", "llama-3-8b", "-g", "h200-sxm", "--engine", "vllm",
            "--kv-cache-dtype", "bfloat16", "--engine-version"]
    r = runner.invoke(app, [*base, "0.7.3"])
    assert r.exit_code == 2 and "--kv-cache-dtype 'bfloat16' is not one vLLM v0.7.3 takes" in r.stderr, r.output
    assert runner.invoke(app, [*base, "0.11.0"]).exit_code == 0

"""Tests of rooflab/cli/__init__.py.

From the suites this file gathers:

`rooflab report` and `rooflab list`: output, the JSON contract, and bad input (stderr, exit 2).

Hugging Face config.json as a model spec: the configs' own rules, strict reading, and errors naming file,
field and value (exit 2 from the CLI).

Configs here are small dicts written for the rule under test (a real file's fields where one is at hand);
the real files are read in tests/hf/test_init.py (test_real_config_loads_to_the_bundled_spec).

GPU YAMLs need only what a roofline needs, report every problem at once, and JSON Schemas ship.
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.load import data_dir, load_gpu, read_yaml
from rooflab.schema import schema_path


runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def _assert_short_error(result, *needles):
    assert result.exit_code == 2, result.output
    err = result.stderr.strip().splitlines()
    assert 1 <= len(err) <= 2, result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.stderr
    assert result.stdout == ""  # nothing half-written


def test_unknown_gpu_name():
    _assert_short_error(invoke("report", "--gpu", "h300"), "unknown GPU 'h300'", "a100-40gb")


@pytest.mark.parametrize("name, spec", [("h200", "h200-sxm"), ("NVIDIA H200", "h200-sxm"), ("H100-SXM5-80GB", "h100-sxm"),
                                        ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("nvidia a100-sxm4-80gb", "a100-sxm-80gb"),
                                        ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("L40S", "l40s"), ("h200 sxm", "h200-sxm")])
def test_gpu_names_people_and_nvidia_smi_use(name, spec):
    r = invoke("report", "--gpu", name, "-f", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["gpu"] == spec


@pytest.mark.parametrize("name, candidates", [("H100", ("h100-sxm", "h100-pcie")), ("a100", ("a100-40gb", "a100-sxm-80gb"))])
def test_ambiguous_gpu_names_list_the_candidates(name, candidates):
    r = invoke("report", "--gpu", name)
    _assert_short_error(r, "ambiguous", *candidates)
    assert "b200" not in r.stderr


@pytest.mark.parametrize("name, suggestion", [("l40s-2", "l40s"), ("mi300", "mi300x"), ("b20", "b200"),
                                              ("rtx-4090-2", "rtx-4090")])
def test_a_prefix_must_end_between_words(name, suggestion):
    """The MI300A is not the MI300X (and the L40, now bundled, resolves to itself, never the L40S): a name that stops
    inside a model name is unknown (and the suggestion names the GPU it may mean), not silently resolved."""
    _assert_short_error(invoke("report", "--gpu", name), f"unknown GPU '{name}'", f"Did you mean '{suggestion}'")


def test_unknown_model_name_suggests():
    _assert_short_error(invoke("report", "--model", "llama3-8b"), "Did you mean 'llama-3-8b'")


@pytest.mark.parametrize("args, needle", [
    (("--seq-len", "0"), "--seq-len"),
    (("--batch", "-3"), "--batch"),
    (("--batch", "10000000000000000000"), "--batch"),
    (("--seq-len", "1e160"), "--seq-len"),
    (("--dtype", "fp9"), "--dtype"),
    (("--format", "xml"), "--format"),
    (("--no-such-option",), "No such option"),
])
def test_bad_options(args, needle):
    _assert_short_error(invoke("report", *args), needle)


def _bad_yaml(tmp_path, mutate):
    data = yaml.safe_load((data_dir("models") / "llama-3-8b.yaml").read_text())
    mutate(data)
    path = tmp_path / "bad-model.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("mutate, needles", [
    (lambda d: d.update(num_kv_heads=5), ["num_kv_heads", "5", "multiple"]),
    (lambda d: d.update(num_layers=-1), ["num_layers", "-1", "positive"]),
    (lambda d: d.update(head_dims=128), ["head_dims", "unknown field"]),
    (lambda d: d.pop("vocab_size"), ["vocab_size", "missing"]),
    (lambda d: d.update(hidden_size="big"), ["hidden_size", "'big'"]),
])
def test_bad_model_file(tmp_path, mutate, needles):
    path = _bad_yaml(tmp_path, mutate)
    _assert_short_error(invoke("report", "--model", path), path, *needles)


def test_malformed_gpu_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\n  bad indentation: [\n")
    _assert_short_error(invoke("report", "--gpu", str(path)), str(path), "malformed YAML")


def test_help_texts():
    r = invoke("report", "--help")
    assert r.exit_code == 0
    for opt in ("--model", "--gpu", "--seq-len", "--batch", "--dtype", "--causal", "--format"):
        assert opt in r.stdout


def test_version_and_python_dash_m():
    """`rooflab --version` and `python -m rooflab` (the same app as the console script)."""
    import subprocess
    import sys

    from rooflab import __version__

    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout.strip() == f"rooflab {__version__}"
    done = subprocess.run([sys.executable, "-m", "rooflab", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"rooflab {__version__}"
    bad = subprocess.run([sys.executable, "-m", "rooflab", "report", "--seq-len", "0"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "--seq-len" in bad.stderr


LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
         "max_position_embeddings": 8192, "num_attention_heads": 32, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16"}
QWEN3 = {**LLAMA, "architectures": ["Qwen3ForCausalLM"], "head_dim": 128, "num_hidden_layers": 8,
         "sliding_window": 4096, "use_sliding_window": False, "max_window_layers": 8}


def test_nan_in_a_config_file_is_refused_by_the_cli(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA).replace('"hidden_size": 4096', '"hidden_size": NaN'))
    result = CliRunner().invoke(app, ["report", "-m", str(path)])
    assert result.exit_code == 2 and str(path) in result.stderr and "NaN" in result.stderr


def test_bad_model_yaml_stacks_exit_2(tmp_path):
    base = yaml.safe_load((data_dir("models") / "deepseek-v3.yaml").read_text())
    cases = {
        "mla.yaml": (dict(base, head_dim=200), "qk_nope_head_dim"),
        "sinks.yaml": (dict(base, layer_types={"mla": dict(base["layer_types"]["mla"], sinks=True)}), "sinks"),
        "pattern.yaml": (dict(base, layer_pattern=["mla", "global"]), "layer_pattern"),
        "first.yaml": (dict(base, first_layers=["mla"] * 62), "first_layers"),
        "window.yaml": (dict(base, layer_types={"mla": base["layer_types"]["mla"], "local": {"kind": "sliding",
                                                                                              "window": 0}}),
                        "window"),
    }
    for file_name, (data, needle) in cases.items():
        path = tmp_path / file_name
        path.write_text(yaml.safe_dump(data))
        result = CliRunner().invoke(app, ["report", "-m", str(path)])
        assert result.exit_code == 2, (file_name, result.output)
        assert str(path) in result.stderr and needle in result.stderr, (file_name, result.stderr)


def test_bad_config_json_exits_2_naming_file_field_and_value(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3, "max_window_layers": -1}))
    result = CliRunner().invoke(app, ["capacity", "-m", str(path)])
    assert result.exit_code == 2
    assert str(path) in result.stderr and "max_window_layers" in result.stderr and "-1" in result.stderr


jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in rooflab[test]; install it to check the schemas")


MINIMAL = ("name: mygpu\nhbm_capacity_bytes: 80e9\nhbm_bandwidth_bytes_per_s: 3.0e12\n"
           "dense_tensor_flop_per_s: {fp16: 900e12}\nvector_fp32_flop_per_s: 60e12\n")


def _validator(name: str):
    return jsonschema.Draft202012Validator(json.loads(schema_path(name).read_text()))


def test_a_minimal_gpu_yaml_runs_every_command(tmp_path):
    path = tmp_path / "mygpu.yaml"
    path.write_text(MINIMAL)
    assert not list(_validator("gpu").iter_errors(read_yaml(path)))
    gpu = load_gpu(path)
    assert gpu.display_name == "mygpu" and gpu.num_sms is None and gpu.source is None
    for args in (["report"], ["report", "--phase", "decode", "-b", "16"], ["capacity"], ["explain"],
                 ["explain", "--variant", "split_kv"], ["explain", "-m", "deepseek-v3", "--variant", "paged"],
                 ["plot", "decode", "-o", str(tmp_path / "d.png")], ["plot", "roofline", "-o", str(tmp_path / "r.png")]):
        r = runner.invoke(app, [*args, "-g", str(path)])
        assert r.exit_code == 0, (args, r.output)
    decode = runner.invoke(app, ["report", "--phase", "decode", "-g", str(path)])
    assert "an unknown number of SMs" in decode.stdout


def test_the_cli_catches_the_errors_of_the_click_typer_runs_on():
    """typer >= 0.20 vendors click as typer._click; where a real click is installed beside it, catching click's own
    classes let every bad option value through as a traceback. The classes caught are typer's."""
    import typer

    import rooflab.cli as cli

    assert issubclass(typer.BadParameter, cli.UsageError) and issubclass(cli.UsageError, cli.ClickException)
    assert cli.get_current_context.__module__.rsplit(".", 1)[0] == typer.BadParameter.__module__.rsplit(".", 1)[0]

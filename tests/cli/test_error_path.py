"""Tests of rooflab/cli/error_path.py: bad input (names, options, spec files, config.json) is one or two lines on
stderr naming it, exit 2, never a traceback; Ctrl-C is one line, exit 130 (while a command runs and while the CLI
loads); an unknown MPLBACKEND and PYTHONWARNINGS=error are clear errors."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

import io
import subprocess
import sys

import rooflab.cli as cli
from rooflab.cli import app
from rooflab.load import data_dir, load_gpu, read_yaml
from rooflab.schema import schema_path

from .test_stdout import COMMANDS, _Failing, _rooflab, _run


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


@pytest.mark.parametrize("name", ["report", "list models", "--help"])
def test_ctrl_c_while_a_command_runs_is_one_line_and_exit_130(name, monkeypatch, tmp_path):
    code, err = _run(COMMANDS[name], _Failing(KeyboardInterrupt()), monkeypatch, tmp_path)
    assert (code, err) == (cli.EXIT_INTERRUPTED, "error: interrupted\n")


def test_ctrl_c_while_the_cli_loads_is_one_line_and_exit_130(monkeypatch, capsys):
    """The console script starts in rooflab._entry, which catches an interrupt during the half second the CLI's
    modules take to load (a bare KeyboardInterrupt traceback before)."""
    import builtins

    import rooflab._entry as entry

    real_import = builtins.__import__

    def interrupted(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "cli" and level == 1:
            raise KeyboardInterrupt
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as exc:
        entry.main()
    assert exc.value.code == 130 and capsys.readouterr().err == "error: interrupted\n"


def test_the_package_imports_nothing_heavy_before_the_console_script_can_handle_an_interrupt():
    code = "import sys, rooflab._entry; print(sorted(m for m in ('numpy', 'yaml', 'typer', 'click') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_unknown_matplotlib_backend_is_one_line_naming_it(monkeypatch, tmp_path):
    monkeypatch.setenv("MPLBACKEND", "no-such-backend")
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    code, err = _run(["plot", "roofline", "-o", "x.png"], io.StringIO(), monkeypatch, tmp_path)
    assert code == 2 and err.splitlines() == ["error: MPLBACKEND='no-such-backend' is not a matplotlib backend; "
                                              "unset it or set MPLBACKEND=Agg"]
    assert list(tmp_path.iterdir()) == []


def test_warnings_as_errors_do_not_fail_every_command():
    """PYTHONWARNINGS=error: typer 0.19's import of click.utils.get_binary_stream (deprecated in click 8.2+) was an
    exception at import, so every command failed."""
    proc = _rooflab(["list", "gpus"], stdout=subprocess.PIPE, env={"PYTHONWARNINGS": "error"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("name")


@pytest.mark.parametrize("words", [["validate", "-o", "a\x00b.csv"], ["plot", "capacity", "-o", "a\x00b.png"],
                                   ["report", "-m", "x\x00y"], ["capacity", "--gpu", "h100\x00"]])
def test_a_nul_in_any_word_is_one_line_and_exit_2(words):
    """The hostile round left `validate -o 'a\\x00b.csv'` ending in a bare ValueError (click's path check calls
    os.stat, which raises ValueError, not OSError); every command now refuses such a word before it runs."""
    from typer.testing import CliRunner

    from rooflab.cli import app

    result = CliRunner().invoke(app, words)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert "cannot hold a NUL character" in result.output and "Traceback" not in result.output

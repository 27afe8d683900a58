"""Tests of rooflab/cli/__init__.py: what every command shares.

GPU and model names (aliases, nvidia-smi names, ambiguous prefixes, suggestions), bad options and bad spec
files (YAML and config.json: one line naming file, field and value, exit 2), a minimal GPU YAML running every
command, help texts and their defaults, repeated options, --version and `python -m rooflab`; and the process
edges: a full, closed or broken standard output, Ctrl-C while loading or running, a strict encoding, an
unknown matplotlib backend, and warnings as errors.
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.load import data_dir, load_gpu, read_yaml
from rooflab.schema import schema_path
import typer.main
import errno
import io
import os
import subprocess
import sys
from pathlib import Path
import rooflab.cli as cli


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


# --- `--help` of every command shows its defaults as '[default: ...]', never the rich-markup escape '\[default: ...]' (test_help.py until session 7) ----------
# typer escapes the bracket for rich markup whenever rich is installed, even where rich does not render the help
# (rooflab runs with rich_markup_mode None); rooflab/cli/__init__.py's _HelpFormatter shows the text as written.

def _command_paths() -> list[list[str]]:
    out = []

    def walk(command, path):
        out.append(path)
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return out


PATHS = _command_paths()


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "rooflab")
def test_help_shows_defaults_without_a_markup_escape(path):
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "\\[" not in result.output
    assert result.output.startswith("Usage: ")


def test_every_command_with_a_default_shows_it():
    shown = [p for p in PATHS if "[default: " in CliRunner().invoke(app, [*p, "--help"]).output]
    assert ["report"] in shown and ["capacity"] in shown and ["plot", "capacity"] in shown


# --- A single-value option given twice is refused naming it (click kept the last silently): every option of every (test_repeats.py until session 7) ----------
# command (rooflab/cli/__init__.py: _refuse_repeats). Options that take lists (--context-len, --gpu of the charts,
# --fit-from) may repeat.

def _single_value_options():
    out = []

    def walk(command, path):
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
            return
        for param in command.params:
            if getattr(param, "opts", None) and not getattr(param, "multiple", False) and param.opts[0] != "--help" \
                    and param.param_type_name == "option":
                out.append((path, param))

    walk(typer.main.get_command(app), [])
    return out


CASES = _single_value_options()


@pytest.mark.parametrize("path, param", CASES, ids=[f"{' '.join(p)} {q.opts[0]}" for p, q in CASES])
def test_a_single_value_option_given_twice_is_refused_naming_it(path, param):
    opt = param.opts[-1]
    args = [opt, opt] if param.is_flag else [opt, "1", opt, "2"]
    result = CliRunner().invoke(app, [*path, *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {opt} given 2 times"), result.stderr
    assert result.stdout == ""


def test_both_spellings_of_one_option_count_as_one_option():
    result = CliRunner().invoke(app, ["report", "-T", "1k", "--seq-len=2k"])
    assert result.exit_code == 2 and "-T and --seq-len given 2 times" in result.stderr
    result = CliRunner().invoke(app, ["report", "--causal", "--no-causal"])
    assert result.exit_code == 2 and "--causal and --no-causal given 2 times" in result.stderr


def test_list_options_still_repeat():
    result = CliRunner().invoke(app, ["report", "--phase", "decode", "-L", "1k", "-L", "2k"])
    assert result.exit_code == 0, result.output


# --- Tests of the one output-stream wrapper (rooflab/cli/__init__.py: _ShortErrors, _GuardedStdout) on every command (test_streams.py until session 7) ----------
# Standard output full (`> /dev/full`), closed (`>&-`) or a reader gone (`| head -n 1`): the first two end in one
# 'error:' line and exit 2, the broken pipe in a quiet exit 141 (128 + SIGPIPE, what `cat` and `seq` end with in
# the same pipeline); never 'internal error', never exit 0 having written nothing. Ctrl-C ends in one line and exit
# 130; PYTHONWARNINGS=error, an unknown MPLBACKEND and a strict encoding that cannot show the output are clear
# errors. Each command runs in this process with a stand-in standard output; a few real processes check the
# descriptors themselves (/dev/full, a closed descriptor, a pipe closed by its reader).

ROOT = Path(__file__).resolve().parents[2]


SMALL_CSV = ROOT / "measurements" / "h200-fp8-decode.csv"


COMMANDS = {
    "report": ["report"],
    "capacity": ["capacity"],
    "numerics": ["numerics"],
    "calibrate": ["calibrate", "--help"],
    "validate": ["validate", str(SMALL_CSV)],
    "bench": ["bench", "--help"],
    "fit": ["fit", str(SMALL_CSV), "-o", "{tmp}/gpu.yaml"],
    "explain": ["explain"],
    "schema": ["schema", "gpu"],
    "list gpus": ["list", "gpus"],
    "list models": ["list", "models"],
    "plot roofline": ["plot", "roofline", "--help"],
    "plot memory": ["plot", "memory", "--help"],
    "plot time": ["plot", "time", "--help"],
    "plot decode": ["plot", "decode", "--help"],
    "plot capacity": ["plot", "capacity", "--help"],
    "plot validation": ["plot", "validation", "--help"],
    "plot serve": ["plot", "serve", "--help"],
    "serve": ["serve", "--help"],
    "--help": ["--help"],
    "--version": ["--version"],
}


def _leaf_commands() -> set[str]:
    out = set()

    def walk(command, path):
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        else:
            out.add(" ".join(path))

    walk(typer.main.get_command(app), [])
    return out


def test_the_table_names_every_command():
    assert _leaf_commands() <= set(COMMANDS), "a new command: add it to COMMANDS"


class _Failing(io.TextIOBase):
    """A standard output whose writes fail as a full device (ENOSPC), a gone reader (EPIPE) or an interrupt do."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.written = 0

    encoding = "utf-8"
    errors = "strict"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            self.written += 1
            raise self.error
        return 0

    def isatty(self) -> bool:
        return False


def _run(args: list[str], stdout, monkeypatch, tmp_path) -> tuple[int, str]:
    """`rooflab *args` in this process with `stdout` as standard output: (exit status, stderr)."""
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.chdir(tmp_path)
    try:
        app([a.replace("{tmp}", str(tmp_path)) for a in args], prog_name="rooflab")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    else:
        code = 0
    finally:
        monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    return code, err.getvalue()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_full_standard_output_is_one_line_and_exit_2(name, monkeypatch, tmp_path):
    stdout = _Failing(OSError(errno.ENOSPC, "No space left on device"))
    code, err = _run(COMMANDS[name], stdout, monkeypatch, tmp_path)
    assert stdout.written, "the command printed nothing: the case tests nothing"
    assert code == 2, err
    assert err.splitlines() == ["error: cannot write standard output: No space left on device"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_broken_pipe_is_a_quiet_exit_141(name, monkeypatch, tmp_path):
    stdout = _Failing(BrokenPipeError(errno.EPIPE, "Broken pipe"))
    code, err = _run(COMMANDS[name], stdout, monkeypatch, tmp_path)
    assert stdout.written
    assert (code, err) == (cli.EXIT_BROKEN_PIPE, "")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_closed_standard_output_is_refused_before_any_work(name, monkeypatch, tmp_path):
    """`>&-`: Python starts with sys.stdout None and click printed nothing, exit 0; now one line, exit 2, and no
    file written (fit's -o)."""
    code, err = _run(COMMANDS[name], None, monkeypatch, tmp_path)
    assert code == 2 and err.splitlines() == ["error: standard output is closed; redirect it to a file or to "
                                              "/dev/null"]
    assert list(tmp_path.iterdir()) == []


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


def test_a_strict_encoding_that_cannot_show_the_output_is_one_line(monkeypatch, tmp_path):
    class Latin1(io.StringIO):
        encoding = "latin-1"
        errors = "strict"

        def write(self, text):
            text.encode("latin-1")
            return super().write(text)

    code, err = _run(["schema", "gpu", "-o", "\u2713.json"], Latin1(), monkeypatch, tmp_path)    # prints "wrote \u2713.json"
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: standard output's encoding (latin-1) cannot show") and "PYTHONIOENCODING" in err


def test_an_unknown_matplotlib_backend_is_one_line_naming_it(monkeypatch, tmp_path):
    monkeypatch.setenv("MPLBACKEND", "no-such-backend")
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    code, err = _run(["plot", "roofline", "-o", "x.png"], io.StringIO(), monkeypatch, tmp_path)
    assert code == 2 and err.splitlines() == ["error: MPLBACKEND='no-such-backend' is not a matplotlib backend; "
                                              "unset it or set MPLBACKEND=Agg"]
    assert list(tmp_path.iterdir()) == []


def _rooflab(args, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    env.pop("ROOFLAB_TRACEBACK", None)
    env.update(kw.pop("env", {}))
    return subprocess.run([sys.executable, "-c", "from rooflab._entry import main; main()", *args], env=env,
                          stderr=subprocess.PIPE, text=True, **kw)


def test_a_process_writing_to_dev_full_says_so():
    with open("/dev/full", "w") as full:
        proc = _rooflab(["list", "models"], stdout=full)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["error: cannot write standard output: No space left on device"]


def test_a_process_with_standard_output_closed_says_so():
    proc = _rooflab(["list", "models"], stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2 and proc.stderr.splitlines()[0].startswith("error: standard output is closed")


def test_a_process_whose_reader_is_gone_exits_quietly():
    read, write = os.pipe()
    os.close(read)                        # the reader has gone before the first write (`| head -n 0`)
    try:
        proc = _rooflab(["list", "models"], stdout=write)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (141, "")


def test_warnings_as_errors_do_not_fail_every_command():
    """PYTHONWARNINGS=error: typer 0.19's import of click.utils.get_binary_stream (deprecated in click 8.2+) was an
    exception at import, so every command failed."""
    proc = _rooflab(["list", "gpus"], stdout=subprocess.PIPE, env={"PYTHONWARNINGS": "error"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("name")

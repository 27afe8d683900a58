"""Tests of rooflab/cli/click_compat.py: the errors caught are those of the click typer runs on; every command's
--help shows '[default: ...]' without rich's escape; a single-value option given twice is refused naming it."""

from __future__ import annotations


import pytest
from typer.testing import CliRunner

from rooflab.cli import app, command_tree


def test_the_cli_catches_the_errors_of_the_click_typer_runs_on():
    """typer >= 0.20 vendors click as typer._click; where a real click is installed beside it, catching click's own
    classes let every bad option value through as a traceback. The classes caught are typer's."""
    import typer

    import rooflab.cli as cli

    assert issubclass(typer.BadParameter, cli.UsageError) and issubclass(cli.UsageError, cli.ClickException)
    assert cli.get_current_context.__module__.rsplit(".", 1)[0] == typer.BadParameter.__module__.rsplit(".", 1)[0]


# --- `--help` of every command shows its defaults as '[default: ...]', never the rich-markup escape '\[default: ...]' (test_help.py until session 7) ----------
# typer escapes the bracket for rich markup whenever rich is installed, even where rich does not render the help
# (rooflab runs with rich_markup_mode None); rooflab/cli/click_compat.py's HelpFormatter shows the text as written.

def _command_paths() -> list[list[str]]:
    out = []

    def walk(command, path):
        out.append(path)
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(command_tree(), [])
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
# command (rooflab/cli/click_compat.py: refuse_repeats). Options that take lists (--context-len, --gpu of the charts,
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

    walk(command_tree(), [])
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

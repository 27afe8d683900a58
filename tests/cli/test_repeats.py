"""A single-value option given twice is refused naming it (click kept the last silently): every option of every
command (rooflab/cli/__init__.py: _refuse_repeats). Options that take lists (--context-len, --gpu of the charts,
--fit-from) may repeat."""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

from rooflab.cli import app


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

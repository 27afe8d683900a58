"""`--help` of every command shows its defaults as '[default: ...]', never the rich-markup escape '\\[default: ...]'.

typer escapes the bracket for rich markup whenever rich is installed, even where rich does not render the help
(rooflab runs with rich_markup_mode None); rooflab/cli/__init__.py's _HelpFormatter shows the text as written.
"""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

from rooflab.cli import app


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

"""Tests of rooflab/cli/app.py: the commands registered by name and built only when invoked; --help lists them
all; --version and `python -m rooflab`."""

from __future__ import annotations


from typer.testing import CliRunner

from rooflab.cli import app, command_tree


runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


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


def _names(table, prefix=()):
    """Every command path of app.COMMANDS: ('report',), ('plot', 'serve'), ..."""
    from rooflab.cli.app import Group

    for name, target in table.items():
        if isinstance(target, Group):
            yield from _names(target.commands, (*prefix, name))
        else:
            yield (*prefix, name)


def test_help_lists_every_command_with_its_short_help():
    """--help builds each command to list it: the names in COMMANDS' order, each with its docstring's first line."""
    from rooflab.cli.app import COMMANDS, Group

    tree = command_tree()
    for group_path, table in [((), COMMANDS)] + [((n,), t.commands) for n, t in COMMANDS.items()
                                                  if isinstance(t, Group)]:
        out = invoke(*group_path, "--help")
        assert out.exit_code == 0, out.output
        listed = out.stdout[out.stdout.index("Commands:"):].splitlines()[1:]
        assert [line.split()[0] for line in listed if line.startswith("  ") and line[2] != " "] == list(table)
        group = tree
        for name in group_path:
            group = group.commands[name]
        for name in table:
            short = group.commands[name].get_short_help_str(limit=30).removesuffix("...")
            assert any(line.split(None, 1)[0] == name and short.split()[0] in line for line in listed), (name, listed)


def test_every_command_is_a_function_behind_the_one_error_path():
    """Each name in COMMANDS resolves to a function wrapped by error_path.friendly (its __wrapped__ is the command)."""
    import importlib

    from rooflab.cli.app import COMMANDS

    for path in _names(COMMANDS):
        target = COMMANDS[path[0]] if len(path) == 1 else COMMANDS[path[0]].commands[path[1]]
        module, function = target.split(":")
        fn = getattr(importlib.import_module(f"rooflab.cli.{module}"), function)
        assert callable(getattr(fn, "__wrapped__", None)), path


def test_no_module_registers_a_command_when_imported():
    """Commands are registered by name in app.COMMANDS, not by a decorator run at import: importing every module of
    rooflab/cli leaves the app with no registered command or group."""
    import importlib
    import pkgutil

    import rooflab.cli

    for info in pkgutil.iter_modules(rooflab.cli.__path__):
        if info.name != "__main__":
            importlib.import_module(f"rooflab.cli.{info.name}")
    assert app.registered_commands == [] and app.registered_groups == []


def test_a_command_builds_and_imports_only_itself():
    """`rooflab report` imports the report command's module, not the charts', serving's or the measurements'."""
    import subprocess
    import sys

    code = ("import sys\nfrom rooflab.cli import app\ntry:\n    app(['report'])\nexcept SystemExit as exc:\n"
            "    assert exc.code in (0, None), exc.code\n"
            "sys.stderr.write(' '.join(sorted(m for m in sys.modules if m.startswith('rooflab.cli.'))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stderr.split())
    assert "rooflab.cli.report" in loaded
    assert not loaded & {"rooflab.cli.charts", "rooflab.cli.serve", "rooflab.cli.measure", "rooflab.cli.explain",
                         "rooflab.cli.capacity", "rooflab.cli.fit", "rooflab.cli.schema"}, loaded

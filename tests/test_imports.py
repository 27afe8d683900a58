"""Import hygiene: the core imports no plotting, GPU, CLI or dataframe library; the CLI's startup none but typer.

Each group is imported module by module in a fresh interpreter, checking sys.modules after every
import, so the first module that pulls in a library it should not is named. The module list is
walked from the package, so a new module is covered without editing this file.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import rooflab

HEAVY = ("typer", "matplotlib", "pandas", "cupy", "torch")


def _modules(*exclude: str) -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(rooflab.__path__, "rooflab.")]
    exclude += ("rooflab.__main__",)   # runs the CLI when imported: `python -m rooflab`, tested in tests/cli/test_init.py
    return sorted(n for n in names if not any(n == e or n.startswith(e + ".") for e in exclude))


def _first_offenders(modules: list[str], banned: tuple[str, ...]) -> dict[str, list[str]]:
    """{module: banned libraries present in sys.modules right after importing it}, in a fresh interpreter."""
    code = (
        "import importlib, json, sys\n"
        f"banned = {list(banned)!r}\n"
        "out = {}\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "    bad = sorted(b for b in banned if b in sys.modules)\n"
        "    if bad:\n"
        "        out[name] = bad\n"
        "        break\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_module_walk_finds_the_core():
    core = _modules("rooflab.cli", "rooflab.plot")
    for name in ("rooflab.specs", "rooflab.cost.flash", "rooflab.floors", "rooflab.roofline", "rooflab.capacity", "rooflab.report",
                 "rooflab.numerics.softmax", "rooflab.explain.derivation", "rooflab.bench.validate",
                 "rooflab.kernels.decode", "rooflab.output", "rooflab.vocab"):
        assert name in core


def test_core_imports_no_heavy_library():
    # kernels and bench import CuPy and torch inside the functions that launch work, never at import
    assert _first_offenders(_modules("rooflab.cli", "rooflab.plot"), HEAVY) == {}


def test_the_sweeps_compute_without_matplotlib():
    """rooflab.sweeps (every chart's numbers) imports and runs where matplotlib cannot be imported at all."""
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None        # as if not installed: any import of it raises ImportError\n"
        "from rooflab import load_gpu, load_model\n"
        "from rooflab.sweeps import decode_sweep, roofline_data, time_sweep\n"
        "model, gpu = load_model('llama-3-8b'), load_gpu('h200')\n"
        "assert decode_sweep(model, gpu, context_lens=[1024, 8192], batches=[1, 8]).context_lens.size == 2\n"
        "assert time_sweep(model, gpu, seq_lens=[1024, 4096]).seq_lens.size == 2\n"
        "assert roofline_data(model, [gpu]).points\n"
        "assert sys.modules['matplotlib'] is None and 'pandas' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_charts_import_no_cli_gpu_or_dataframe_library():
    assert _first_offenders(_modules("rooflab.cli"), ("typer", "pandas", "cupy", "torch")) == {}


@pytest.mark.parametrize("command", [["report"], ["report", "--phase", "decode"], ["capacity"], ["list", "gpus"],
                                     ["report", "-f", "json"]])
def test_a_table_or_json_command_imports_no_pandas_or_matplotlib(command):
    code = (
        "import sys\n"
        "from rooflab.cli import app\n"
        "try:\n"
        f"    app({command!r})\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "bad = sorted(b for b in ('matplotlib', 'pandas', 'cupy', 'torch') if b in sys.modules)\n"
        "sys.stderr.write(','.join(bad))\n"
        "sys.exit(3 if bad else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_every_module_compiles_without_a_warning():
    """A SyntaxWarning (`x is not 1`) is printed once, when a module is first compiled, into whatever runs it: a
    notebook's stderr, a user's terminal. Every module of the package compiles with warnings as errors."""
    import warnings
    from pathlib import Path

    bad = []
    for path in sorted(Path(rooflab.__file__).parent.rglob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                compile(path.read_text(encoding="utf-8"), str(path), "exec")
            except (SyntaxError, SyntaxWarning, DeprecationWarning) as exc:   # an error-filtered SyntaxWarning is raised as SyntaxError
                bad.append(f"{path.name}: {exc}")
    assert not bad, bad

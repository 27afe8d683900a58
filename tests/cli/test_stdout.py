"""Tests of rooflab/cli/stdout.py on every command: standard output full (`> /dev/full`), closed (`>&-`), a strict
encoding that cannot show the output (one 'error:' line, exit 2), or its reader gone (`| head -n 1`: a quiet exit
141, what `cat` and `seq` end with in the same pipeline); never 'internal error', never exit 0 having written
nothing. Each command runs in this process with a stand-in standard output; a few real processes check the
descriptors themselves."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rooflab.cli as cli
from rooflab.cli import app, command_tree


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

    walk(command_tree(), [])
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

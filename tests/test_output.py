"""Tests of rooflab/output.py: tables and the atomic writer.

Tables that fit the terminal (wide ones split into column blocks that repeat every key column; only a terminal
or $COLUMNS wraps), JSON refusing non-finite numbers; write_atomic: modes from the umask, kept modes and
symbolic links, signals during a write, OS errors, long or NUL-carrying names and hard links to an input
as OutputErrors naming the path.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import signal
import stat
import subprocess
import sys

import pytest

from rooflab.output import Column, Format, Table, OutputError, check_writable, json_text, render, table, terminal_width, write_atomic
from support import _words


HEADERS = ["variant", "FLOPs", "HBM bytes", "FLOP/byte", "t_compute", "t_memory", "t_floor", "bound"]
ROWS = [["naive", "549.823 GFLOP", "16.156 GiB", "31.7", "555.713 us", "5.178 ms", "5.178 ms", "memory"],
        ["  qk", "274.911 GFLOP", "4.078 GiB", "62.8", "277.857 us", "1.307 ms", "1.307 ms", "memory"],
        ["flash", "549.823 GFLOP", "161.000 MiB", "3256.8", "555.713 us", "50.394 us", "555.713 us", "compute"]]
FULL_WIDTH = max(len(line) for line in table(HEADERS, ROWS).splitlines())


def _table(**kw) -> Table:
    columns = tuple(Column(str(i), h) for i, h in enumerate(HEADERS))
    records = tuple({str(i): cell for i, cell in enumerate(row)} for row in ROWS)
    return Table(columns, records, title="a title " * 20, notes=("a note " * 30,), **kw)


@pytest.fixture
def no_terminal(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())     # not a terminal


def _blocks(text: str) -> list[list[str]]:
    return [block.splitlines() for block in text.split("\n\n")]


def test_a_table_that_fits_is_unchanged():
    assert FULL_WIDTH > 60
    assert table(HEADERS, ROWS, width=FULL_WIDTH) == table(HEADERS, ROWS)
    assert table(HEADERS, ROWS, width=None) == table(HEADERS, ROWS)


@pytest.mark.parametrize("width", [30, 45, 60, 80])
def test_a_wide_table_splits_into_blocks_that_fit_and_repeat_the_label_column(width):
    text = table(HEADERS, ROWS, width=width)
    blocks = _blocks(text)
    assert len(blocks) >= 2
    for block in blocks:
        assert all(len(line) <= width for line in block), block
        assert block[0].startswith("variant") and block[1].startswith("-------")
        assert [line.split()[0] for line in block[2:]] == ["naive", "qk", "flash"]   # every row, in order
    # every header once, in order, across the blocks (after the repeated label column)
    headers = [h for block in blocks for h in HEADERS[1:] if f"  {h}" in block[0]]
    assert headers == HEADERS[1:]
    # every cell kept whole
    for row in ROWS:
        for cell in row[1:]:
            assert cell in text


def test_a_column_wider_than_the_terminal_gets_a_block_of_its_own():
    blocks = _blocks(table(HEADERS, ROWS, width=12))
    assert len(blocks) == len(HEADERS) - 1          # one column a block, each led by the labels
    assert all(block[0].split()[0] == "variant" for block in blocks)


def test_render_wraps_only_in_a_terminal_or_under_columns(monkeypatch, no_terminal):
    shown = _table()
    full = render(shown)
    assert terminal_width() is None
    assert max(len(line) for line in full.splitlines()) > 80        # so wrapping would show
    assert full == render(shown, width=10_000)
    monkeypatch.setenv("COLUMNS", "80")
    assert terminal_width() == 80
    wrapped = render(shown)
    assert wrapped != full and max(len(line) for line in wrapped.splitlines()) <= 80
    assert _words(wrapped) == _words(full)        # laid out again, nothing dropped


@pytest.mark.parametrize("value", ["", "abc", "0", "-5"])
def test_a_columns_value_that_is_not_a_width_is_ignored(monkeypatch, no_terminal, value):
    monkeypatch.setenv("COLUMNS", value)
    assert terminal_width() is None
    assert render(_table()) == render(_table(), width=10_000)


def test_a_terminal_is_asked_its_width(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stdout", Tty())
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a, **k: shutil.os.terminal_size((70, 24)))
    assert terminal_width() == 70
    assert max(len(line) for line in render(_table()).splitlines()) <= 70


@pytest.mark.parametrize("fmt", [Format.markdown, Format.csv, Format.json])
def test_other_formats_never_wrap(monkeypatch, no_terminal, fmt):
    shown = _table()
    unwrapped = render(shown, fmt)
    monkeypatch.setenv("COLUMNS", "40")
    assert render(shown, fmt) == unwrapped


def test_a_vertical_table_wraps_its_values_under_the_value_column():
    long = "one two three four five six seven eight nine ten eleven twelve thirteen"
    shown = Table((Column("a", "short"), Column("b", "a longer label")), ({"a": "x", "b": long},), vertical=True)
    text = render(shown, width=50)
    lines = text.splitlines()
    assert all(len(line) <= 50 for line in lines)
    assert " ".join(text.split()[text.split().index("label") + 1:]) == long
    assert lines[2].startswith(" " * (len("a longer label") + 4)) and not lines[2].strip().startswith("a longer")


# --- JSON is strict; writes are atomic and never clobber inputs -------------------------------------------

def test_json_refuses_non_finite_numbers_and_names_where():
    with pytest.raises(OutputError) as err:
        json_text({"rows": [{"t_floor_s": float("inf")}]})
    assert "$.rows[0].t_floor_s" in str(err.value)


def test_atomic_write_refuses_input_folder_and_missing_folder(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("data")
    for target, needle in ((source, "overwrite an input"), (tmp_path, "is a folder"),
                           (tmp_path / "no" / "x.txt", "does not exist")):
        with pytest.raises(OutputError, match=needle):
            write_atomic(target, "new", inputs=[source])
    assert source.read_text() == "data" and sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_atomic_write_into_a_folder_that_takes_no_files_is_an_output_error(tmp_path, monkeypatch):
    """`-o /proc/x.png`: the temporary file cannot be made; an OutputError naming the path, not a traceback."""
    import rooflab.output as output

    def refuse(target):
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(output, "_create_temporary", refuse)
    with pytest.raises(OutputError, match="x.png"):
        write_atomic(tmp_path / "x.png", b"data")
    assert list(tmp_path.iterdir()) == []


# --- the one atomic writer: mode, links, signals, OS errors -----------------------------------------------------

@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664), (0o000, 0o666)])
def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path, umask, mode):
    """mkstemp made every -o file 0600 whatever the umask; a new file is 0666 & ~umask, as `>` would make it."""
    old = os.umask(umask)
    try:
        write_atomic(tmp_path / "out.csv", "a,b\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "out.csv").st_mode) == mode


def test_a_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "out.yaml"
    target.write_text("old")
    os.chmod(target, 0o640)
    write_atomic(target, "new")
    assert target.read_text() == "new" and stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_writing_through_a_symbolic_link_keeps_the_link_and_writes_its_target(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "fits.yaml"
    target.write_text("old")
    link = tmp_path / "fits.yaml"
    link.symlink_to(target)
    write_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    dangling = tmp_path / "chart.svg"
    dangling.symlink_to(tmp_path / "real" / "chart.svg")        # a link to a file not made yet
    write_atomic(dangling, "<svg/>")
    assert dangling.is_symlink() and (tmp_path / "real" / "chart.svg").read_text() == "<svg/>"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["chart.svg", "fits.yaml"]


_SIGNAL_CHILD = """
import os, signal, sys
import rooflab.output as output
target = sys.argv[1]
signal.signal(getattr(signal, sys.argv[2]), signal.SIG_DFL)   # the default action, whatever was inherited (nohup)
real_fdopen = os.fdopen
class Slow:
    def __init__(self, handle): self.handle = handle
    def __enter__(self): return self
    def __exit__(self, *exc): self.handle.close()
    def fileno(self): return self.handle.fileno()
    def write(self, data):
        self.handle.write(data[:10])
        os.kill(os.getpid(), getattr(signal, sys.argv[2]))    # the signal arrives half-way through the write
        self.handle.write(data[10:])
output.os.fdopen = lambda fd, mode: Slow(real_fdopen(fd, mode))
output.write_atomic(target, "x" * 100000)
print("survived")
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_a_write_removes_the_temporary_file_and_ends_the_process(tmp_path, name):
    """SIGTERM (a kill) or SIGHUP (a closed terminal) half-way through a write: the process still ends by that
    signal, the temporary file is gone and the old file is untouched."""
    target = tmp_path / "out.csv"
    target.write_text("old")
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_CHILD, str(target), name], capture_output=True, text=True)
    assert proc.returncode == -getattr(signal, name), proc.stderr
    assert "survived" not in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"] and target.read_text() == "old"


def test_an_ignored_or_handled_signal_is_left_to_its_handler(tmp_path):
    """write_atomic takes over SIGTERM / SIGHUP only where they have the default action, and gives them back."""
    seen = []
    old = signal.signal(signal.SIGTERM, lambda *a: seen.append(a[0]))
    old_hup = signal.signal(signal.SIGHUP, signal.SIG_DFL)    # the default action, whatever was inherited (nohup)
    try:
        write_atomic(tmp_path / "a.txt", "x")
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
        os.kill(os.getpid(), signal.SIGTERM)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)          # an ignored SIGHUP (nohup) stays ignored
        write_atomic(tmp_path / "b.txt", "y")
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGHUP, old_hup)
    assert seen == [signal.SIGTERM]


@pytest.mark.parametrize("error", [
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.EROFS, "Read-only file system"),
    PermissionError(errno.EACCES, "Permission denied"),
    OSError(errno.EIO, "Input/output error"),
])
def test_an_os_error_while_writing_is_an_output_error_naming_the_path(tmp_path, monkeypatch, error):
    import rooflab.output as output

    class Failing:
        def __init__(self, fd): os.close(fd)
        def __enter__(self): return self
        def __exit__(self, *exc): return False
        def fileno(self): return -1
        def write(self, data): raise error

    monkeypatch.setattr(output.os, "fdopen", lambda fd, mode: Failing(fd))
    with pytest.raises(OutputError, match=f"out.csv: {error.strerror}"):
        write_atomic(tmp_path / "out.csv", "data")
    assert list(tmp_path.iterdir()) == []


def test_a_name_longer_than_the_system_allows_is_an_output_error(tmp_path):
    with pytest.raises(OutputError, match="File name too long"):
        write_atomic(tmp_path / ("a" * 300 + ".csv"), "data")
    with pytest.raises(OutputError, match="--output .*File name too long"):
        check_writable(tmp_path / ("b" * 300) / "x.csv", option="--output")
    assert list(tmp_path.iterdir()) == []


def test_a_hard_link_to_an_input_is_the_input(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("data")
    os.link(source, tmp_path / "same.csv")
    with pytest.raises(OutputError, match="overwrite an input"):
        write_atomic(tmp_path / "same.csv", "new", inputs=[source])
    assert source.read_text() == "data"


@pytest.mark.parametrize("width", [40, 60, 90])
def test_a_wrapped_table_repeats_every_key_column(width):
    """validate's table wrapped with `kernel` alone in each block, so four flash rows of different impls could not
    be told apart; with key_columns=2 each block repeats kernel and impl."""
    headers = ["kernel", "impl", *HEADERS[1:]]
    rows = [["flash", impl, *row[1:]] for impl, row in zip(["rooflab", "torch_flash", "torch_cudnn"], ROWS)]
    blocks = _blocks(table(headers, rows, width=width, key_columns=2))
    assert len(blocks) > 1
    for block in blocks:
        assert block[0].split()[:2] == ["kernel", "impl"]
        assert [line.split()[1] for line in block[2:]] == ["rooflab", "torch_flash", "torch_cudnn"]


def test_a_nul_character_in_an_output_name_is_refused_naming_the_option(tmp_path):
    """The hostile round (issue 24): a NUL in an -o name was exit 70 for the plots and a bare ValueError for
    validate (os.stat refuses it with ValueError, not OSError)."""
    from rooflab.output import OutputError, check_writable

    with pytest.raises(OutputError, match="-o .*cannot hold a NUL"):
        check_writable(tmp_path / "a\x00b.csv")


@pytest.mark.parametrize("module, old, new", [
    ("rooflab.output", "Frame", "Table"),
    ("rooflab.render", "report_frame", "report_table"), ("rooflab.render", "capacity_frame", "capacity_table"),
    ("rooflab.render_step", "step_frame", "step_report_table"),
    ("rooflab.render_validation", "validation_frame", "validation_table"),
    ("rooflab.render_numerics", "headroom_frame", "headroom_table"),
    ("rooflab.render_numerics", "state_error_frame", "state_error_table"),
    ("rooflab.catalog", "gpu_frame", "gpus_table"), ("rooflab.catalog", "model_frame", "models_table"),
    ("rooflab.catalog", "gpu_table", "render_gpus"), ("rooflab.catalog", "model_table", "render_models"),
    ("rooflab.engines.tables", "engine_frame", "engine_table"),
    ("rooflab.engines.tables", "explanation_frame", "explanation_table"),
    ("rooflab.engines.frame", "engine_frame", "engine_table"),
    ("rooflab.engines.request", "engine_frame_for", "engine_table_for"),
])
def test_a_text_table_s_old_frame_name_is_kept_for_one_release(module, old, new):
    import importlib

    mod = importlib.import_module(module)
    assert getattr(mod, old) is getattr(mod, new)


def test_engines_frame_is_the_old_path_of_engines_tables():
    from rooflab.engines import frame, tables

    assert frame.engine_table is tables.engine_table and frame.explanation_table is tables.explanation_table


def test_a_catalog_table_is_a_table():
    from rooflab.catalog import gpus_table, render_gpus

    assert isinstance(gpus_table(), Table) and "h200" in render_gpus().lower()
    assert render_gpus(Format.csv) == render(gpus_table(), Format.csv)


_INTERRUPT_AFTER_WRITE_CHILD = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)   # as from a terminal (a test runner may pass SIGINT ignored)
from rooflab import output
if sys.argv[2] == "cli":
    output.finish_once_written()
output.write_atomic(sys.argv[1], "whole")
os.kill(os.getpid(), getattr(signal, sys.argv[3]))     # a signal after the file is in place, before the process ends
time.sleep(0.05)
print("ran to its end")
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("mode", ["cli", "library"])
def test_a_kill_after_the_output_is_in_place(tmp_path, mode, name):
    """SIGTERM or SIGHUP after the console script's output is renamed into place: the command runs to its end
    (exit 0; the hostile harness's 'plot roofline SIGTERM after 0.8s' had ended as -15 with out.svg whole, under
    load); a program that imports rooflab keeps the signal's default action."""
    target = tmp_path / "c.png"
    proc = subprocess.run([sys.executable, "-c", _INTERRUPT_AFTER_WRITE_CHILD.replace(
        "signal.signal(signal.SIGINT, signal.default_int_handler)",
        f"signal.signal(signal.{name}, signal.SIG_DFL)"), str(target), mode, name], capture_output=True, text=True)
    assert target.read_text() == "whole"
    if mode == "cli":
        assert (proc.returncode, proc.stdout) == (0, "ran to its end\n"), proc.stderr
    else:
        assert proc.returncode == -getattr(signal, name), proc.stderr


@pytest.mark.parametrize("mode", ["cli", "library"])
def test_ctrl_c_after_the_first_file_is_in_place(tmp_path, mode):
    """The console script's process (rooflab._entry calls finish_once_written) ignores Ctrl-C once a file is renamed
    into place, so an interrupt between the write and the exit no longer ends a finished command as interrupted
    with its file present (the session-11 flake of test_ctrl_c_while_python_m_rooflab_loads, exit -2 with c.png
    written); a program that imports rooflab keeps its KeyboardInterrupt."""
    target = tmp_path / "c.png"
    proc = subprocess.run([sys.executable, "-c", _INTERRUPT_AFTER_WRITE_CHILD, str(target), mode, "SIGINT"],
                          capture_output=True, text=True)
    assert target.read_text() == "whole"
    if mode == "cli":
        assert (proc.returncode, proc.stdout) == (0, "ran to its end\n"), proc.stderr
    else:
        assert proc.returncode == -signal.SIGINT and "KeyboardInterrupt" in proc.stderr, proc.stderr

"""Results -> text and files: the one tabular path (table, markdown, CSV, JSON), strict JSON, the one atomic writer.

Every result rooflab prints is first a Table: raw records in SI units (what CSV writes), the
columns a person reads (header and how each cell is shown), and the JSON document. `render`
turns a Table into any of the four formats; nothing else in rooflab writes CSV or JSON text.
(A Table is text to print; a result's `to_frame()` is a pandas DataFrame. `Frame` is Table's old
name, kept for one release.)

JSON is strict: a NaN or an infinity anywhere in a document is an error naming where it is
(json.dumps would print the non-JSON tokens NaN and Infinity). Files are written through a
temporary file in the same folder and a rename, so a failure leaves no partial file.
"""

from __future__ import annotations

import contextlib
import csv
import enum
import errno
import io
import json
import math
import os
import secrets
import shutil
import signal
import stat
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .errors import RooflabError


class Format(str, enum.Enum):
    """How a result is printed: an aligned table, a GitHub markdown table, CSV or JSON."""

    table = "table"
    markdown = "markdown"
    csv = "csv"
    json = "json"

    def __str__(self) -> str:
        return self.value


class OutputError(RooflabError):
    """A result that cannot be written as asked (a non-finite number in JSON, an unwritable path)."""


@dataclass(frozen=True)
class Column:
    """One column a person reads: its header and how a record's cell is shown (default: str of record[key])."""

    key: str
    header: str
    shown: Callable[[Mapping[str, Any]], str] | None = None

    def cell(self, record: Mapping[str, Any]) -> str:
        if self.shown is not None:
            return self.shown(record)
        value = record.get(self.key, "")
        return "" if value is None else str(value)


@dataclass(frozen=True)
class Table:
    """A result ready to render: `records` (raw values; CSV writes every key), `columns` (the table), `doc` (JSON).

    `vertical` shows a single record as label / value lines (a plan, a list of limits).
    """

    columns: tuple[Column, ...]
    records: tuple[Mapping[str, Any], ...]
    doc: Any = None
    title: str = ""
    notes: tuple[str, ...] = ()
    vertical: bool = False
    csv_keys: tuple[str, ...] = field(default=())
    key_columns: int = 1        # leading columns that name a row: each block of a wrapped table repeats them

    def json_doc(self) -> Any:
        return [dict(r) for r in self.records] if self.doc is None else self.doc


def render(result: Table, fmt: Format = Format.table, width: int | None = None) -> str:
    """The table as text in `fmt`; JSON and CSV refuse non-finite numbers (OutputError names where).

    A table wider than `width` characters (default: terminal_width(), None when printing to a pipe
    or a file) is split into blocks of columns stacked one under another, each repeating the first
    (label) column, and its title and notes wrap at word boundaries. Markdown, CSV and JSON never wrap.
    """
    fmt = Format(fmt)
    if fmt is Format.json:
        return json_text(result.json_doc())
    if fmt is Format.csv:
        return csv_text(result.records, result.csv_keys)
    md = fmt is Format.markdown
    width = None if md else (terminal_width() if width is None else width)
    if result.vertical:
        body = _vertical(result, md, width)
    else:
        body = table([c.header for c in result.columns], [[c.cell(r) for c in result.columns] for r in result.records],
                     markdown=md, width=width, key_columns=result.key_columns)
    parts = []
    if result.title:
        heading = f"## {result.title}" if md else _wrap(result.title, width)
        parts += [heading, *([""] if md or not result.vertical else [])]
    parts.append(body)
    if result.notes:
        parts += ["", *[("- " if md else "") + _wrap(n, width) for n in result.notes]]
    return "\n".join(parts).rstrip() + "\n"


def terminal_width() -> int | None:
    """Columns to fit a table in: $COLUMNS when set to a positive number, else the terminal's width when stdout is a
    terminal, else None (a pipe or a file: tables keep their full width)."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdecimal() and int(columns) > 0:           # isdecimal: what int() reads ('²' is a digit, not decimal)
        return int(columns)
    try:
        if sys.stdout is not None and sys.stdout.isatty():
            return shutil.get_terminal_size().columns
    except (AttributeError, ValueError, OSError):   # a closed or replaced stdout
        pass
    return None


def _wrap(text: str, width: int | None) -> str:
    """Each line of `text` wrapped at word boundaries to `width`, continuation lines indented two spaces."""
    if width is None:
        return text
    return "\n".join(textwrap.fill(line, width, subsequent_indent="  ", break_long_words=False,
                                   break_on_hyphens=False) if len(line) > width else line
                     for line in text.split("\n"))


def _vertical(result: Table, markdown: bool, width: int | None = None) -> str:
    record = result.records[0] if result.records else {}
    pairs = [(c.header, c.cell(record)) for c in result.columns]
    if markdown:
        return "\n".join(["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in pairs])
    label = max((len(k) for k, _ in pairs), default=0)
    room = None if width is None else max(width - label - 4, 20)
    lines = []
    for k, v in pairs:
        wrapped = textwrap.wrap(v, room, break_long_words=False, break_on_hyphens=False) if room and len(v) > room \
            else [v]
        lines.append(f"  {k.ljust(label)}  {wrapped[0]}".rstrip() if wrapped else f"  {k}")
        lines += [" " * (label + 4) + more for more in wrapped[1:]]
    return "\n".join(lines)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool = False,
          width: int | None = None, key_columns: int = 1) -> str:
    """Align columns (numbers right, text left); a GitHub table when `markdown`.

    Wider than `width` (plain tables only): the columns after the first `key_columns` (those that name a row:
    kernel and implementation) are split into blocks that fit, stacked with a blank line between them, each block
    led by the key columns again, so every block's rows can be told apart.
    """
    cells = [list(map(str, headers))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_numeric(r[i]) for r in cells[1:] if r[i]) and len(cells) > 1 for i in range(len(headers))]

    def line(r: list[str], cols: Sequence[int]) -> str:
        parts = [r[i].rjust(widths[i]) if numeric[i] else r[i].ljust(widths[i]) for i in cols]
        return ("| " + " | ".join(parts) + " |") if markdown else "  ".join(parts).rstrip()

    if markdown:
        cols = range(len(headers))
        rule = "|" + "|".join(("-" * (widths[i] + 1) + ":") if numeric[i] else ("-" * (widths[i] + 2))
                              for i in cols) + "|"
        return "\n".join([line(cells[0], cols), rule] + [line(r, cols) for r in cells[1:]])
    blocks = []
    for cols in _column_blocks(widths, width, key_columns):
        blocks.append("\n".join([line(cells[0], cols), "  ".join("-" * widths[i] for i in cols)]
                                + [line(r, cols) for r in cells[1:]]))
    return "\n\n".join(blocks)


def _column_blocks(widths: Sequence[int], width: int | None, key_columns: int = 1) -> list[list[int]]:
    """Column indices per block: all of them when they fit in `width` (or no width is given); else the
    `key_columns` first columns, then as many of the next as fit beside them (at least one a block)."""
    full = sum(widths) + 2 * (len(widths) - 1)
    keys = list(range(max(1, min(key_columns, len(widths) - 1))))
    if width is None or full <= width or len(widths) < 2:
        return [list(range(len(widths)))]
    lead = sum(widths[i] for i in keys) + 2 * (len(keys) - 1)
    blocks, block, used = [], list(keys), lead
    for i in range(len(keys), len(widths)):
        if len(block) > len(keys) and used + 2 + widths[i] > width:
            blocks.append(block)
            block, used = list(keys), lead
        block.append(i)
        used += 2 + widths[i]
    blocks.append(block)
    return blocks


def _numeric(text: str) -> bool:
    head = text.split(" ")[0].replace(",", "").rstrip("x")
    try:
        float(head)
    except ValueError:
        return False
    return True


def csv_text(records: Sequence[Mapping[str, Any]], keys: Sequence[str] = ()) -> str:
    """Records as CSV: a header of `keys` (default: every key, in first-seen order), one line a record.

    Non-finite numbers are refused, as in JSON; None is an empty cell.
    """
    if not keys:
        keys = list(dict.fromkeys(k for r in records for k in r))
    for i, record in enumerate(records):
        _check_finite(record, f"row {i + 1}")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(keys), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for record in records:
        writer.writerow({k: ("" if record.get(k) is None else record.get(k)) for k in keys})
    return buf.getvalue()


def json_text(doc: Any) -> str:
    """`doc` as indented JSON; a NaN or infinity anywhere is an OutputError naming its path in the document."""
    _check_finite(doc, "$")
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def _check_finite(value: Any, where: str) -> None:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise OutputError(f"{where} is {value}, which JSON and CSV cannot hold; this is a bug in rooflab "
                              f"if the inputs were valid")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _check_finite(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_finite(item, f"{where}[{i}]")


def check_writable(path: Path | str, inputs: Sequence[Path | str] = (), option: str = "-o") -> Path:
    """The checks write_atomic makes before it writes, for a command to make before long work (a benchmark):
    an OutputError naming `option` for a folder, a missing folder, something that is not a regular file (a
    FIFO, a device: an atomic rename would replace it), one of `inputs`, or a path the system refuses to look at
    (a name too long, a folder without permission)."""
    path = Path(path).expanduser()
    try:
        return _check_writable(path, inputs, option)
    except OSError as exc:
        raise OutputError(f"{option} {_shown_path(path)}: {exc.strerror or exc}") from None


def _check_writable(path: Path, inputs: Sequence[Path | str], option: str) -> Path:
    if "\x00" in str(path):
        raise OutputError(f"{option} {_shown_path(path)}: a file name cannot hold a NUL character")
    target = _resolve(path)
    for source in inputs:
        if source is not None and _same_file(_resolve(Path(source).expanduser()), target):
            raise OutputError(f"{option} {path}: the output would overwrite an input file; choose another")
    if path.is_dir():
        raise OutputError(f"{option} {path}: is a folder; give a file name")
    if path.exists() and not path.is_file():
        raise OutputError(f"{option} {path}: not a regular file (a pipe or a device); write to a file")
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"{option} {path}: the folder {folder} does not exist")
    return path


def _same_file(a: Path, b: Path) -> bool:
    """`a` and `b` are one file: the same path, or the same inode (a hard link)."""
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _shown_path(path: Path) -> str:
    from .errors import clip

    return clip(str(path), 120)


#: Signals that end a process by default and can arrive during a write (a `kill`, a closed terminal).
_CLEANUP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))

#: Whether a command's signals are ignored from its output's commit on (the CLI sets it: finish_once_written).
_FINISH_ONCE_WRITTEN = False


def finish_once_written() -> None:
    """From now on, Ctrl-C (SIGINT), SIGTERM and SIGHUP are ignored from the moment write_atomic renames an output
    into place: the command then runs to its end and exits with its own status. A signal before that ends the
    command with nothing written; without this, one between the rename and the exit (the command's last lines,
    click's return, the interpreter's shutdown) ended it as interrupted with its file in place. Only the console
    script's process calls this (rooflab._entry): a program that imports rooflab, or runs the CLI in-process as
    click's test runner does, keeps its own signal handling."""
    global _FINISH_ONCE_WRITTEN
    _FINISH_ONCE_WRITTEN = True


#: Set once a command's output is being renamed into place in the console script's process: from then on SIGINT,
#: SIGTERM and SIGHUP are ignored and the command runs to its end (a few milliseconds: the rest of its lines, the
#: exit), so that a signal never ends a finished command with its file in place.
_FINISHING = False


def ignore_interrupts_if_finishing() -> None:
    """Where finish_once_written was called (the CLI's process), in the main thread: ignore SIGINT, SIGTERM and
    SIGHUP from here on (the command is finishing: its output is going into place)."""
    global _FINISHING
    if _FINISH_ONCE_WRITTEN and threading.current_thread() is threading.main_thread():
        _FINISHING = True
        for signum in (signal.SIGINT, *_CLEANUP_SIGNALS):
            signal.signal(signum, signal.SIG_IGN)


class _Signalled(BaseException):
    """SIGTERM or SIGHUP arrived while write_atomic held a temporary file (raised by its handler)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _signals_raise():
    """Within the body, SIGTERM and SIGHUP raise _Signalled (where they would have ended the process at once), so
    that a `finally` can remove a temporary file; afterwards the signal is delivered again under its old handler.
    Only where the handler is the default and in the main thread (signal handlers can be set nowhere else)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):  # noqa: ARG001
        if _FINISHING:                 # the output is going into place: the command runs to its end
            return
        raise _Signalled(signum)

    old = {}
    for signum in _CLEANUP_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            old[signum] = signal.signal(signum, handler)
    try:
        yield
    except _Signalled as exc:
        for signum, previous in old.items():
            signal.signal(signum, previous)
        old.clear()
        signal.raise_signal(exc.signum)      # ends the process as the signal would have
        raise
    finally:
        for signum, previous in old.items():
            signal.signal(signum, signal.SIG_IGN if _FINISHING else previous)


def write_atomic(path: Path | str, data: str | bytes, inputs: Sequence[Path | str] = (),
                 checkpoint: bool = False) -> Path:
    """Write `data` to `path` through a temporary file in the same folder and a rename.

    The file gets the mode the umask gives a new file (0666 & ~umask), or keeps the mode of the file it replaces.
    A symbolic link is kept: the file it points to is written. A failure, SIGTERM or SIGHUP removes the temporary
    file and leaves `path` as it was. Refused with an OutputError (check_writable): a path that is a folder, a
    missing folder, something that is not a regular file, a path equal to one of `inputs` (so a command never
    overwrites the file it reads), and any OSError, named with the path.

    In the console script's process (finish_once_written) the rename of a command's output ends the hold of Ctrl-C,
    SIGTERM and SIGHUP on the command; a `checkpoint` (a campaign saving what it has measured so far, then
    measuring on) keeps them live: a signal then stops the campaign with the last checkpoint kept.
    """
    path = check_writable(path, inputs)
    target = _resolve(path)            # through symbolic links: the link stays, its target is written
    with _signals_raise():
        try:
            _replace(target, data.encode() if isinstance(data, str) else data, finishing=not checkpoint)
        except OSError as exc:
            raise OutputError(f"cannot write {_shown_path(path)}: {exc.strerror or exc}") from None
    return path


def _replace(target: Path, data: bytes, finishing: bool = True) -> None:
    """`data` into a new file beside `target`, then renamed over it; the new file is removed on any failure.
    `finishing`: the command's signals are ignored from just before the rename (ignore_interrupts_if_finishing)."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    tmp, fd = _create_temporary(target)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
        if finishing:
            ignore_interrupts_if_finishing()  # before the rename: an interrupt either precedes it or is ignored
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _create_temporary(target: Path) -> tuple[Path, int]:
    """A new file '.<name>.<random>.tmp' beside `target`, created with mode 0666 so that the umask applies (mkstemp
    makes 0600 whatever the umask)."""
    for _ in range(100):
        tmp = target.with_name(f".{target.name[:200]}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(target))


def _resolve(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


#: Table's old name, kept for one release.
Frame = Table

__all__ = ["Column", "Format", "Frame", "OutputError", "Table", "check_writable", "csv_text", "json_text", "render",
           "table", "terminal_width", "write_atomic"]

"""Results -> text and files: the one tabular path (table, markdown, CSV, JSON), strict JSON, the one atomic writer.

Every result rooflab prints is first a Frame: raw records in SI units (what CSV writes), the
columns a person reads (header and how each cell is shown), and the JSON document. `render`
turns a Frame into any of the four formats; nothing else in rooflab writes CSV or JSON text.

JSON is strict: a NaN or an infinity anywhere in a document is an error naming where it is
(json.dumps would print the non-JSON tokens NaN and Infinity). Files are written through a
temporary file in the same folder and a rename, so a failure leaves no partial file.
"""

from __future__ import annotations

import csv
import enum
import io
import json
import math
import os
import tempfile
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
class Frame:
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

    def json_doc(self) -> Any:
        return [dict(r) for r in self.records] if self.doc is None else self.doc


def render(frame: Frame, fmt: Format = Format.table) -> str:
    """The frame as text in `fmt`; JSON and CSV refuse non-finite numbers (OutputError names where)."""
    fmt = Format(fmt)
    if fmt is Format.json:
        return json_text(frame.json_doc())
    if fmt is Format.csv:
        return csv_text(frame.records, frame.csv_keys)
    md = fmt is Format.markdown
    if frame.vertical:
        body = _vertical(frame, md)
    else:
        body = table([c.header for c in frame.columns], [[c.cell(r) for c in frame.columns] for r in frame.records],
                     markdown=md)
    parts = []
    if frame.title:
        parts += [f"## {frame.title}" if md else frame.title, *([""] if md or not frame.vertical else [])]
    parts.append(body)
    if frame.notes:
        parts += ["", *[("- " if md else "") + n for n in frame.notes]]
    return "\n".join(parts).rstrip() + "\n"


def _vertical(frame: Frame, markdown: bool) -> str:
    record = frame.records[0] if frame.records else {}
    pairs = [(c.header, c.cell(record)) for c in frame.columns]
    if markdown:
        return "\n".join(["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in pairs])
    width = max((len(k) for k, _ in pairs), default=0)
    return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in pairs)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool = False) -> str:
    """Align columns (numbers right, text left); a GitHub table when `markdown`."""
    cells = [list(map(str, headers))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_numeric(r[i]) for r in cells[1:] if r[i]) and len(cells) > 1 for i in range(len(headers))]

    def line(r: list[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric)]
        return ("| " + " | ".join(parts) + " |") if markdown else "  ".join(parts).rstrip()

    out = [line(cells[0])]
    if markdown:
        out.append("|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2))
                                  for w, num in zip(widths, numeric)) + "|")
    else:
        out.append("  ".join("-" * w for w in widths))
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


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


def write_atomic(path: Path | str, data: str | bytes, inputs: Sequence[Path | str] = ()) -> Path:
    """Write `data` to `path` through a temporary file in the same folder and a rename.

    A failure removes the temporary file and leaves `path` as it was. Refused with an OutputError:
    a path that is a folder, a missing folder, and a path equal to one of `inputs` (so a command
    never overwrites the file it reads).
    """
    path = Path(path).expanduser()
    target = _resolve(path)
    for source in inputs:
        if source is not None and _resolve(Path(source).expanduser()) == target:
            raise OutputError(f"{path}: the output would overwrite an input file; choose another -o")
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; give a file name")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{path}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    return path


def _resolve(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


__all__ = ["Column", "Format", "Frame", "OutputError", "csv_text", "json_text", "render", "table", "write_atomic"]

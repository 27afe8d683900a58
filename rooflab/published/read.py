"""Reading measurements/published/: each CSV strictly (file, line, column and value in every error), every row
checked against its source, and the whole folder as one Published."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import InputError, SpecError, shown
from ..files import check_path, read_text
from .cells import REQUIRED, _Bad
from .engine_runs import SERVING_COLUMNS, STEP_COLUMNS, ServingRow, StepRow, _check_engine_run, _check_serving
from .kernels import KERNEL_COLUMNS, KernelRow, _check_kernel
from .kinds import Convention
from .sources import Source, published_dir, read_sources

#: A published CSV larger than this is refused (the largest bundled one is a few KiB).
MAX_CSV_BYTES = 4 << 20

#: Each kind of row's columns, in the order a CSV's header gives them.
COLUMNS: dict[type, dict[str, tuple[Callable, object]]] = {
    KernelRow: KERNEL_COLUMNS, StepRow: STEP_COLUMNS, ServingRow: SERVING_COLUMNS}
#: Which row each folder holds.
FOLDERS: dict[str, type] = {"kernels": KernelRow, "steps": StepRow, "serving": ServingRow}


def read_rows(path: Path, kind: type, sources: dict[str, Source]) -> tuple:
    """One CSV of `kind` rows (KernelRow, StepRow or ServingRow). Lines starting with '#' are comments; the
    header is exactly the format's columns in order; every cell is checked (SpecError: file, line, column, value)."""
    path = check_path(path, "path")
    if not any(kind is k for k in COLUMNS):        # an unhashable kind (a list) is refused too
        raise InputError(f"kind must be one of {', '.join(k.__name__ for k in COLUMNS)}, got {shown(kind)}")
    if not isinstance(sources, dict):
        raise InputError(f"sources must be read_sources()'s mapping of source id -> Source, got {shown(sources)}")
    where = str(path)
    text = read_text(path, MAX_CSV_BYTES, "a published CSV")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    columns = list(COLUMNS[kind])
    if not lines:
        raise SpecError(where, None, None, f"no header; the columns are {','.join(columns)}")
    header = next(csv.reader([lines[0][1]]))
    if header != columns:
        raise SpecError(f"{where}: line {lines[0][0]}", None, ",".join(header)[:200],
                        f"the header must be exactly {','.join(columns)}")
    rows = []
    seen: dict[tuple[str, ...], int] = {}       # a row's stripped cells -> its line: a repeat counts a run twice
    for (number, line), cells in zip(lines[1:], csv.reader(line for _, line in lines[1:])):
        at = f"{where}: line {number}"
        if len(cells) != len(columns):
            raise SpecError(at, None, len(cells), f"a row has {len(columns)} cells; this one has {len(cells)}")
        key = tuple(c.strip() for c in cells)
        if key in seen:
            raise SpecError(at, None, None, f"repeats line {seen[key]} cell for cell; give each run once")
        seen[key] = number
        rows.append(_row(kind, dict(zip(columns, cells)), at, sources))
    if not rows:
        raise SpecError(where, None, None, "a header but no rows")
    return tuple(rows)


def _row(kind: type, cells: dict[str, str], at: str, sources: dict[str, Source]):
    values: dict[str, object] = {"where": at}
    for name, (read, default) in COLUMNS[kind].items():
        text = cells[name].strip()
        if not text:
            if default is REQUIRED:
                raise SpecError(at, name, text, "empty; this column is required")
            values[name] = default
            continue
        try:
            values[name] = read(text)
        except _Bad as exc:
            raise SpecError(at, name, text, str(exc)) from None
    source = sources.get(values["source"])
    if source is None:
        raise SpecError(at, "source", values["source"], "names no entry of sources.yaml")
    if values["gpu"] not in source.gpus:
        raise SpecError(at, "gpu", values["gpu"], f"is not among source '{source.id}''s gpus "
                                                  f"({', '.join(source.gpus)})")
    row = kind(**values)
    _CHECKS[kind](row, source)
    return row


_CHECKS = {KernelRow: _check_kernel, StepRow: _check_engine_run, ServingRow: _check_serving}


@dataclass(frozen=True)
class Published:
    """Everything under measurements/published/."""

    sources: dict[str, Source]
    kernels: tuple[KernelRow, ...]
    steps: tuple[StepRow, ...]
    serving: tuple[ServingRow, ...]

    def convention(self, row: KernelRow) -> Convention:
        return self.sources[row.source].convention or Convention.time

    def time_s(self, row: KernelRow) -> float:
        """A kernel row's time in seconds under its source's convention."""
        return row.time_s(self.convention(row))


def _csvs(root: Path, folder: str) -> list[Path]:
    return sorted((root / folder).glob("*.csv"))


def published_files(root: Path | None = None) -> list[Path]:
    """The files load_published(root) reads: sources.yaml and every CSV of its folders, for a command that writes to
    keep its outputs off them."""
    root = check_path(root, "root") if root is not None else published_dir()
    return [root / "sources.yaml", *(path for folder in FOLDERS for path in _csvs(root, folder))]


def load_published(root: Path | None = None) -> Published:
    """sources.yaml and every CSV of kernels/, steps/ and serving/ under `root` (default: the bundled folder)."""
    root = check_path(root, "root") if root is not None else published_dir()
    sources = read_sources(root / "sources.yaml")
    found: dict[str, tuple] = {}
    for folder, kind in FOLDERS.items():
        rows: list = []
        for path in _csvs(root, folder):
            if path.stem not in sources:
                raise SpecError(str(path), None, path.stem, "a published CSV is named <source-id>.csv, and "
                                                            "sources.yaml has no such source")
            file_rows = read_rows(path, kind, sources)
            stray = next((r for r in file_rows if r.source != path.stem), None)
            if stray is not None:
                raise SpecError(stray.where, "source", stray.source, f"a row of {path.name} names its source "
                                                                     f"'{path.stem}'")
            rows += file_rows
        found[folder] = tuple(rows)
    return Published(sources, found["kernels"], found["steps"], found["serving"])


__all__ = ["COLUMNS", "FOLDERS", "MAX_CSV_BYTES", "Published", "load_published", "published_files", "read_rows"]

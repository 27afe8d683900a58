"""sources.yaml: the registry of where published rows come from (title, URL or paper, section, date, GPUs, the
FLOP convention of their rates)."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional

from ..errors import SpecError
from ..files import check_path, read_yaml
from ..load import data_dir
from .cells import _Bad, _gpu
from .kinds import Convention


@dataclass(frozen=True)
class Source:
    """One entry of sources.yaml: where a set of rows comes from and how to read them."""

    id: str
    title: str
    section: str
    date: str
    gpus: tuple[str, ...]
    implementation: str
    timing: str
    read_by: str
    url: str = ""
    paper: str = ""
    clock: str = ""
    version: str = ""
    convention: Optional[Convention] = None
    note: str = ""


def published_dir() -> Path:
    """measurements/published in a checkout; rooflab/_data/measurements/published in a wheel."""
    return data_dir("measurements") / "published"


_SOURCE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_DATE = re.compile(r"[0-9]{4}-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12][0-9]|3[01]))?")
_SOURCE_TEXT = ("title", "section", "implementation", "timing", "read_by", "url", "paper", "clock", "version",
                "note")


def read_sources(path: Path | None = None) -> dict[str, Source]:
    """sources.yaml -> {id: Source}; every problem is a SpecError naming the file, the source and the field."""
    path = check_path(path, "path") if path is not None else published_dir() / "sources.yaml"
    where = str(path)
    data = read_yaml(path)
    if set(data) != {"sources"} or not isinstance(data["sources"], dict):
        raise SpecError(where, None, sorted(map(str, data)), "expected one top-level key 'sources:' holding a "
                                                             "mapping of source id -> entry")
    return {str(key): _source(str(key), entry, where) for key, entry in data["sources"].items()}


def _source(key: str, entry: object, where: str) -> Source:
    at = f"sources.{key}"
    if not _SOURCE_ID.fullmatch(key):
        raise SpecError(where, at, key, "a source id is lower-case letters and digits joined by '-'")
    if not isinstance(entry, dict):
        raise SpecError(where, at, entry, "must be a mapping of field: value")
    known = {f.name for f in fields(Source)} - {"id"}
    unknown = sorted(str(k) for k in entry if k not in known)
    if unknown:
        raise SpecError(where, f"{at}.{unknown[0]}", entry[unknown[0]], f"unknown field; known: {', '.join(sorted(known))}")
    values: dict[str, object] = {"id": key}
    for name in _SOURCE_TEXT:
        value = entry.get(name, "")
        if not isinstance(value, str) or (name in ("title", "section", "implementation", "timing", "read_by")
                                          and not value.strip()):
            raise SpecError(where, f"{at}.{name}", value, "must be text" + (", and is required" if not value else ""))
        values[name] = value.strip()
    if not (values["url"] or values["paper"]):
        raise SpecError(where, f"{at}.url", None, "a source needs a url or a paper")
    date = entry.get("date")
    if not isinstance(date, str) or not _DATE.fullmatch(date):
        raise SpecError(where, f"{at}.date", date, "must be a date YYYY-MM-DD (or YYYY-MM), quoted")
    gpus = entry.get("gpus")
    if not isinstance(gpus, list) or not gpus or not all(isinstance(g, str) for g in gpus):
        raise SpecError(where, f"{at}.gpus", gpus, "must be a list of bundled GPU names")
    for gpu in gpus:
        try:
            _gpu(gpu)
        except _Bad as exc:
            raise SpecError(where, f"{at}.gpus", gpu, str(exc)) from None
    convention = entry.get("convention")
    if convention is not None and convention not in Convention._value2member_map_:
        raise SpecError(where, f"{at}.convention", convention,
                        f"must be one of {', '.join(c.value for c in Convention)}")
    return Source(**values, date=date, gpus=tuple(gpus),
                  convention=Convention(convention) if convention is not None else None)


__all__ = ["Source", "published_dir", "read_sources"]

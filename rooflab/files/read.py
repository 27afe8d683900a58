"""Bounded file reads: a file's bytes or text, never more than a limit, one set of errors for every reader.

Every file rooflab reads from the user (a spec, a config.json, a measurement file, an engine's log) goes through
here, so each is refused the same way: unreadable, larger than its limit, or not text. A named pipe reads as what
its writer sends, and one no process writes to as empty, never blocking forever.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

from ..errors import InputError, SpecError, shown

#: Spec, config.json and measurement-metadata files larger than this are refused before they are parsed.
MAX_SPEC_FILE_BYTES = 1 << 20
#: A log holding a NUL byte in its first this many bytes is a binary file, not a text log.
_BINARY_PROBE_BYTES = 4096


def check_path(value: object, what: str) -> Path:
    """`value`, a file or folder named as a str or an os.PathLike (pathlib.Path), as a Path; InputError naming `what`
    for anything else (bytes, a number, a bool: os.fspath's TypeError), for '' and for a NUL byte (open()'s
    ValueError)."""
    if isinstance(value, os.PathLike):
        try:
            value = os.fspath(value)
        except TypeError:
            pass                        # its __fspath__ returned no str or bytes: refused below
    if not isinstance(value, str) or not value or "\0" in value:
        raise InputError(f"{what} must be a path (a str or pathlib.Path naming a file or folder), got {shown(value)}")
    return Path(value)


def read_bounded(path: Path | str, limit: int) -> bytes:
    """Up to `limit` + 1 bytes of a file (the caller refuses more). A named pipe no process writes to reads as
    empty instead of blocking forever: the file is opened with O_NONBLOCK (which returns at once for a FIFO),
    then read blocking, which for a FIFO without writers is end of file, and for `<(command)` waits for the
    command's output. Raises OSError as open() does."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            return handle.read(limit + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def read_text(path: Path | str, limit: int, kind: str, error: Optional[Callable[[str], Exception]] = None,
              too_large: Optional[str] = None, lenient: bool = False) -> str:
    """A file's text (UTF-8, a BOM allowed), or `error(problem)` (by default a SpecError naming the file) where
    the file is unreadable ('cannot read file (...)'), over `limit` bytes ('larger than N MiB; ' then `too_large`,
    by default '<kind> is a few KiB'), or not UTF-8 ('not UTF-8 text (byte n)').

    `lenient` (an engine's log: a stray byte must not hide the rest) replaces bytes that are not UTF-8, and
    refuses instead a file with a NUL byte near its start ('a binary file, not <kind>').
    """
    fail = error or (lambda problem: SpecError(str(path), None, None, problem))
    try:
        raw = read_bounded(path, limit)
    except OSError as exc:
        raise fail(f"cannot read file ({exc.strerror or exc})") from None
    if len(raw) > limit:
        raise fail(f"larger than {limit >> 20} MiB; {too_large or f'{kind} is a few KiB'}")
    if lenient:
        if b"\0" in raw[:_BINARY_PROBE_BYTES]:
            raise fail(f"a binary file, not {kind}")
        return raw.decode("utf-8-sig", errors="replace")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(f"not UTF-8 text (byte {exc.start})") from None


__all__ = ["MAX_SPEC_FILE_BYTES", "check_path", "read_bounded", "read_text"]

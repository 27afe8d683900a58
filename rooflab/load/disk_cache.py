"""Parsed specs kept on disk between runs, so a command does not parse and check the same YAML at every start.

A spec file is read, parsed and checked field by field on first use (the H200's 22 KB spec, which every report on
another NVIDIA GPU reads for its transferred predictions, took about 40 ms of a 0.6 s start). The checked spec is
pickled under the user's cache folder, keyed by the file's bytes and by the code that builds specs (the size and
modification time of every module of the package), so an edited file or an edited rooflab is parsed again. Only a
spec that was built without error is kept: a refusal is always the reader's own.

Where: `$ROOFLAB_CACHE_DIR`, else `$XDG_CACHE_HOME/rooflab`, else `~/.cache/rooflab`. `ROOFLAB_NO_CACHE=1` turns it
off. A folder that cannot be written, or an entry that cannot be read, is passed over silently: the cache can make
a start faster, never fail it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
from pathlib import Path
from typing import Callable, Optional, TypeVar

T = TypeVar("T")

_PACKAGE = Path(__file__).resolve().parents[1]
#: Bumped when the entry format changes.
_FORMAT = b"rooflab-spec-cache-1"


def cache_dir() -> Optional[Path]:
    """The folder entries go to, or None where the cache is off."""
    if os.environ.get("ROOFLAB_NO_CACHE", "") not in ("", "0"):
        return None
    given = os.environ.get("ROOFLAB_CACHE_DIR")
    if given is not None:
        return Path(given).expanduser() if given else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rooflab"


@functools.lru_cache(maxsize=1)
def code_stamp() -> bytes:
    """A digest of every module of the package (path, size, modification time): specs built by other code are
    not reused."""
    digest = hashlib.sha256(_FORMAT)
    for folder, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(f for f in files if f.endswith(".py")):
            st = os.stat(os.path.join(folder, name))
            digest.update(f"{folder[len(str(_PACKAGE)):]}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.digest()


def cached_spec(cls: type[T], path: Path, build: Callable[[], T]) -> T:
    """`build()` (which parses and checks `path` into a `cls`), or the spec an earlier run built from the same
    bytes with the same code."""
    folder = cache_dir()
    if folder is None:
        return build()
    try:
        data = path.read_bytes()
    except OSError:
        return build()                          # the reader names the problem
    kind = cls.__name__
    key = hashlib.sha256(code_stamp() + kind.encode() + b"\0" + str(path).encode() + b"\0" + data).hexdigest()
    entry = folder / f"{kind}-{key[:40]}.pickle"
    try:
        with open(entry, "rb") as fh:
            spec = pickle.load(fh)              # noqa: S301 - the user's own cache folder, written below
        if type(spec) is cls:
            return spec
    except Exception:                           # absent, unreadable or from an older format: build again
        pass
    spec = build()
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            pickle.dump(spec, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except Exception:                           # a read-only home, a full disk, a spec that does not pickle
        try:
            tmp.unlink()
        except Exception:
            pass
    return spec


__all__ = ["cache_dir", "cached_spec", "code_stamp"]

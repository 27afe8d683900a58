"""Figure -> image file, for the CLI: the extension picks the format, and a failure leaves nothing behind.

Chart functions never save; this is the one place rooflab writes an image.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from matplotlib.figure import Figure

from ..errors import RooflabError

#: Image formats `rooflab plot -o` writes, by file extension.
FORMATS = ("png", "svg", "pdf")
PNG_DPI = 150


def save_figure(fig: Figure, path: Path | str) -> Path:
    """Write `fig` to `path` (.png, .svg or .pdf) through a temp file in the same folder and a rename.

    An unsupported extension or an unwritable path is a RooflabError; an existing file is only
    replaced once the new image is complete.
    """
    path = Path(path).expanduser()
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        shown = f"'{path.suffix}'" if path.suffix else "no extension"
        raise RooflabError(f"cannot write {path}: {shown} is not an image type rooflab writes; "
                           f"use .png, .svg or .pdf")
    folder = path.parent
    if not folder.is_dir():
        raise RooflabError(f"cannot write {path}: folder {folder} does not exist")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as out:
            fig.savefig(out, format=fmt, dpi=PNG_DPI, metadata=_metadata(fmt))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise RooflabError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def _metadata(fmt: str) -> dict:
    """No creation date in SVG and PDF, so the same chart gives the same bytes."""
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}

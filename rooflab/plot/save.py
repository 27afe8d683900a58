"""Figure -> image file, for the CLI: the extension picks the format, and a failure leaves nothing behind.

Chart functions never save; this is the one place rooflab writes an image.
"""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure

from ..errors import RooflabError
from ..output import write_atomic

#: Image formats `rooflab plot -o` writes, by file extension.
FORMATS = ("png", "svg", "pdf")
PNG_DPI = 150


def save_figure(fig: Figure, path: Path | str) -> Path:
    """Write `fig` to `path` (.png, .svg or .pdf) with output.write_atomic.

    An unsupported extension or an unwritable path is a RooflabError; an existing file is only
    replaced once the new image is complete.
    """
    path = Path(path).expanduser()
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        shown = f"'{path.suffix}'" if path.suffix else "no extension"
        raise RooflabError(f"cannot write {path}: {shown} is not an image type rooflab writes; "
                           f"use .png, .svg or .pdf")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=PNG_DPI, metadata=_metadata(fmt))
    return write_atomic(path, buf.getvalue())


def _metadata(fmt: str) -> dict:
    """No creation date in SVG and PDF, so the same chart gives the same bytes."""
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}

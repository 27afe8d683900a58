"""Figure -> image file, and a chart's numbers -> .csv or .json, for the CLI: the extension picks the format, and
a failure leaves nothing behind.

Chart functions never save; this is the one place rooflab writes an image or a chart's data.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

from ..errors import RooflabError
from ..output import csv_text, json_text, write_atomic

#: Image formats `rooflab plot -o` writes, by file extension.
FORMATS = ("png", "svg", "pdf")
#: Formats `rooflab plot --data` writes a chart's numbers in, by file extension.
DATA_FORMATS = ("csv", "json")
PNG_DPI = 150
#: zlib level of a PNG (Pillow's default is 6): level 3 encodes a 1500 x 960 chart in about two thirds of the time
#: (some 25 ms less) for a file some 8% larger; the pixels are the same.
PNG_COMPRESS_LEVEL = 3


def save_figure(fig: Figure, path: Path | str, inputs: Sequence[Path | str] = ()) -> Path:
    """Write `fig` to `path` (.png, .svg or .pdf) with output.write_atomic, never over one of `inputs`.

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
    extra = {"pil_kwargs": {"compress_level": PNG_COMPRESS_LEVEL}} if fmt == "png" else {}
    fig.savefig(buf, format=fmt, dpi=PNG_DPI, metadata=_metadata(fmt), **extra)
    return write_atomic(path, buf.getvalue(), inputs)


def _metadata(fmt: str) -> dict:
    """No creation date in SVG and PDF, so the same chart gives the same bytes."""
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return {}


def save_data(frame, path: Path | str, inputs: Sequence[Path | str] = ()) -> Path:
    """Write a chart's numbers (a pandas DataFrame: a sweep's to_frame(), one row a point) to `path`: .csv (a header
    of the frame's columns, one line a row) or .json (a list of records, strict JSON: a NaN or an infinity is
    refused), with output.write_atomic, never over one of `inputs`. An empty cell is an empty CSV field and a JSON
    null."""
    path = Path(path).expanduser()
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in DATA_FORMATS:
        shown = f"'{path.suffix}'" if path.suffix else "no extension"
        raise RooflabError(f"cannot write {path}: {shown} is not a data format rooflab writes; use .csv or .json")
    records = [{key: _plain(value) for key, value in row.items()} for row in frame.to_dict(orient="records")]
    text = csv_text(records, tuple(str(c) for c in frame.columns)) if fmt == "csv" else json_text(records)
    return write_atomic(path, text, inputs)


def _plain(value):
    """A frame's cell as a JSON value: NumPy scalars as Python ones, a missing value (None, NaN of an absent field)
    as None."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value

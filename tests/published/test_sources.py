"""The registry sources.yaml (rooflab/published/sources.py): each bad entry refused naming the source and the field."""

from __future__ import annotations

import numpy as np
import pytest

from rooflab.errors import SpecError
from rooflab.published import read_sources
from support import refused

from .rows_support import GOOD_ROW, SOURCES, _folder


@pytest.mark.parametrize("edit, says", [
    (("convention: fa", "convention: flops"), "must be one of fa, fa_no_half, time"),
    (('date: "2024-07-11"', 'date: "11 July 2024"'), "YYYY-MM-DD"),
    (('date: "2024-07-11"', 'date: "2024-13-01"'), "YYYY-MM-DD"),
    (("gpus: [h100-sxm, rtx-4090]", "gpus: [h100]"), "not a bundled GPU"),
    (("gpus: [h100-sxm, rtx-4090]", "gpus: []"), "list of bundled GPU names"),
    (('    read_by: "bar labels"\n', ""), "sources.demo.read_by"),
    (('url: "https://example.org/demo"', 'ulr: "https://example.org/demo"'), "unknown field"),
    (("  demo:", "  Demo_1:"), "lower-case"),
    (('    section: "Figure 1"\n', '    section: "Figure 1"\n    section: "Figure 2"\n'), "duplicate key"),
])
def test_a_bad_source_is_refused_naming_the_field(tmp_path, edit, says):
    folder = _folder(tmp_path, [GOOD_ROW], SOURCES.replace(*edit))
    refused(lambda: read_sources(folder / "sources.yaml"), "sources.yaml", says, error=SpecError)


@pytest.mark.parametrize("path", [b"x", True, 3, np.float64(1.0), "a\0b"])
def test_read_sources_refuses_what_is_not_a_path(path):
    """read_sources(b'x') ended in pathlib's TypeError; a NUL byte would reach open()'s ValueError."""
    refused(lambda: read_sources(path), "path")


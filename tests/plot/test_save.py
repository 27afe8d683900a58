"""Tests of rooflab/plot/save.py: charts saved as valid images, bad paths refused leaving nothing, and a chart
displaying itself as an image in a fresh Jupyter kernel.
"""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from rooflab import load_gpu, load_model
from rooflab.errors import RooflabError
from rooflab.plot import roofline_chart, roofline_data, save_figure


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --- saving ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def default_roofline() -> Figure:
    return roofline_chart(roofline_data(load_model("llama-3-8b"), [load_gpu("h100-sxm")]))


def test_save_writes_valid_images(tmp_path, default_roofline):
    png = save_figure(default_roofline, tmp_path / "r.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000
    svg = save_figure(default_roofline, tmp_path / "r.svg").read_bytes()
    assert svg.startswith(b"<?xml") and b"<svg" in svg and svg.rstrip().endswith(b"</svg>")
    pdf = save_figure(default_roofline, tmp_path / "r.PDF").read_bytes()
    assert pdf.startswith(b"%PDF") and b"%%EOF" in pdf[-32:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.PDF", "r.png", "r.svg"]   # no temp files left


def test_save_refuses_bad_paths_and_leaves_nothing(tmp_path, default_roofline):
    target = tmp_path / "keep.png"
    target.write_bytes(b"old")
    with pytest.raises(RooflabError, match=r"'\.jpg' is not an image type"):
        save_figure(default_roofline, tmp_path / "keep.jpg")
    with pytest.raises(RooflabError, match="does not exist"):
        save_figure(default_roofline, tmp_path / "missing" / "r.png")
    with pytest.raises(RooflabError, match="no extension"):
        save_figure(default_roofline, tmp_path / "roofline")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["keep.png"]


def test_a_chart_displays_as_an_image_in_a_fresh_kernel():
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
    pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from rooflab import load_gpu, load_model\n"
        "from rooflab.plot import decode_chart, decode_sweeps\n"
        "decode_chart(decode_sweeps(load_model('llama-3-8b'), [load_gpu('h100-sxm'), load_gpu('h200-sxm')]))")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    (out,) = nb.cells[0].outputs
    assert out.output_type == "execute_result" and "image/png" in out.data, out

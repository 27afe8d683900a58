"""The notebooks run top to bottom in a fresh kernel without a GPU, and their committed outputs are current.

Each notebook is executed with nbclient exactly as notebooks/refresh.py does, and every code
cell's text outputs (printed streams and the plain-text form of results) must equal the ones
committed, so the outputs a reader sees when browsing the repository are what the code produces.
A stream is compared as its whole text: the kernel may deliver one print as one chunk or several,
depending on the machine's load, so consecutive chunks of one stream are joined first. Images are
compared by presence and pixel size (their bytes depend on the matplotlib and FreeType build).
After changing a notebook or anything it prints, run `python notebooks/refresh.py`.
"""

from __future__ import annotations

import ast
import base64
import copy
import importlib.util
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
pytest.importorskip("nbclient", reason="nbclient is in the test extra")
pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = {"capacity_planning", "context_parallel_planning", "roofline_tour", "validation_h200"}


def _refresh_module():
    spec = importlib.util.spec_from_file_location("notebook_refresh", NOTEBOOK_DIR / "refresh.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _text(outputs) -> list[tuple]:
    """The comparable part of a cell's outputs: each stream's joined text, plain-text results, which MIME types,
    and each PNG's width and height."""
    out: list[tuple] = []
    for o in outputs:
        if o.output_type == "stream":
            if out and out[-1][0] == "stream" and out[-1][1] == o.name:
                out[-1] = ("stream", o.name, out[-1][2] + o.text)
            else:
                out.append(("stream", o.name, o.text))
        elif o.output_type in ("execute_result", "display_data"):
            out.append((o.output_type, sorted(o.data), _lines(o.data.get("text/plain", "")),
                        _png_size(o.data.get("image/png"))))
        else:
            out.append((o.output_type, getattr(o, "ename", ""), getattr(o, "evalue", "")))
    return [("stream", item[1], _lines(item[2])) if item[0] == "stream" else item for item in out]


#: How far a chart's width or height may move between matplotlib / FreeType builds (a tight bounding box follows
#: the fonts' metrics by a few pixels); a chart of another layout moves far more.
SIZE_TOLERANCE = 0.05


def _without_size(item: tuple) -> tuple:
    return item[:-1] if item[0] in ("execute_result", "display_data") else item


def _same_size(old: tuple, new: tuple) -> bool:
    if old[0] not in ("execute_result", "display_data") or old[-1] is None or new[-1] is None:
        return old[-1] == new[-1] if old[0] in ("execute_result", "display_data") else True
    return all(abs(a - b) <= SIZE_TOLERANCE * a for a, b in zip(old[-1], new[-1]))


def _png_size(data) -> tuple[int, int] | None:
    """A base64 PNG's (width, height) from its IHDR chunk; None where there is no PNG."""
    if not data:
        return None
    head = base64.b64decode(data[:64] if isinstance(data, str) else data)
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _lines(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _code(nb) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def test_the_notebooks_are_there():
    assert {p.stem for p in NOTEBOOKS} == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_and_committed_outputs_are_current(path, tmp_path):
    committed = nbformat.read(path, as_version=4)
    fresh = _refresh_module().execute(copy.deepcopy(committed), tmp_path)
    code_cells = [(c, f) for c, f in zip(committed.cells, fresh.cells) if c.cell_type == "code"]
    assert code_cells
    for i, (old, new) in enumerate(code_cells):
        assert not any(o.output_type == "error" for o in new.outputs)
        before, after = _text(old.outputs), _text(new.outputs)
        assert [_without_size(o) for o in before] == [_without_size(o) for o in after], (
            f"{path.name}, code cell {i}: committed outputs differ from a fresh run; "
            "run `python notebooks/refresh.py` and commit the notebooks")
        for o_old, o_new in zip(before, after):
            assert _same_size(o_old, o_new), f"{path.name}, code cell {i}: a chart's size changed ({o_old[-1]} px " \
                                             f"committed, {o_new[-1]} now)"
    assert all(c.outputs for c, _ in code_cells), f"{path.name}: a code cell has no output"
    assert all(c.execution_count == n for n, (c, _) in enumerate(code_cells, 1)), "not run top to bottom"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_defines_no_helpers(path):
    # analyses use rooflab's public API: functions and classes a notebook needs belong in the package
    nb = nbformat.read(path, as_version=4)
    source = "\n".join(line for line in _code(nb).splitlines() if not line.startswith("%"))
    tree = ast.parse(source)
    defined = [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
    assert not defined, f"{path.name} defines {defined}"
    private = re.findall(r"\b(?:from|import)\s+(rooflab\S*\._\w+)", source)
    assert not private, f"{path.name} imports private modules {private}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_draws_charts_and_starts_with_a_title(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert images >= 2, f"{path.name} commits {images} charts"


def test_capacity_sections_end_with_a_decision():
    nb = nbformat.read(NOTEBOOK_DIR / "capacity_planning.ipynb", as_version=4)
    sections = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    decisions = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("**Decision.**")]
    assert len(sections) >= 6 and len(decisions) == len(sections)
    code = _code(nb)
    for needle in ("llama-3-8b", "llama-3-70b", "h100-sxm", "h200-sxm", "tensor_parallel", "fp8_e4m3",
                   "shared_prefix_blocks", "naive_prefill_max_seq_len", "(1, 16, 256)"):
        assert needle in code


def test_readme_links_every_notebook():
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert f"notebooks/{path.name}" in readme

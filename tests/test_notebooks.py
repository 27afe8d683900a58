"""Every notebook's code runs top to bottom on a machine without a GPU (Agg backend)."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    nb = nbformat.read(path, as_version=4)
    namespace: dict = {"__name__": "__notebook__"}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            source = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))  # magics
            exec(compile(source, f"{path.name}[cell {i}]", "exec"), namespace)

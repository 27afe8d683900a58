"""Execute every notebook in notebooks/ top to bottom and save it with its outputs.

    python notebooks/refresh.py               # all notebooks
    python notebooks/refresh.py roofline_tour # one, by name

Run it after changing a notebook or anything its outputs depend on, then commit the
.ipynb files. Outputs are kept deterministic: no timing metadata, execution counts from 1,
and a fixed kernel name, so re-running on an unchanged tree gives an unchanged file.
tests/test_notebooks.py executes the notebooks the same way and compares the text outputs.
Needs the test extra (nbclient, ipykernel); no GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 600


def notebooks(names: list[str] | None = None) -> list[Path]:
    """The notebooks in this folder, or those whose file stem is in `names`."""
    found = sorted(HERE.glob("*.ipynb"))
    if names:
        unknown = set(names) - {p.stem for p in found}
        if unknown:
            raise SystemExit(f"no such notebook: {', '.join(sorted(unknown))} (have: "
                             f"{', '.join(p.stem for p in found)})")
        found = [p for p in found if p.stem in names]
    return found


def execute(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Run `nb` in a fresh python3 kernel with `cwd` as its working directory; outputs land in `nb`."""
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def main(argv: list[str]) -> None:
    for path in notebooks(argv):
        nb = nbformat.read(path, as_version=4)
        execute(nb, HERE)
        nbformat.write(nb, path)
        print(f"executed {path.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""The README's Python example runs and prints what its comment says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_example_runs():
    text = README.read_text()
    section = text[text.index("### From Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md (From Python)", "exec"), {"__name__": "__readme__"})
    assert out.getvalue().split() == ["48", "4"]
    assert "# 48 sequences, 4 KV heads per GPU" in code


def test_the_map_of_the_package_is_the_real_one():
    """README's "How it is built" lists every module and package of rooflab in layers, and every import goes to
    the same layer or one listed above it (the cli, the readers' hf <-> load lookup and plot's use of bench's
    validation for measured points are the only ones that reach across, and they reach up)."""
    import ast

    import rooflab

    root = Path(rooflab.__file__).parent
    text = README.read_text()
    block = text[text.index("## How it is built"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    layers = []
    for line in block.splitlines():
        if not line.strip():
            continue
        names = line[:41].replace("<-", ",").replace("  ", " ").strip()
        if line.startswith(" "):           # a continuation of the layer above
            layers[-1] |= {n.strip().rstrip("/*") for n in names.split(",") if n.strip()}
        else:
            layers.append({n.strip().rstrip("/*") for n in names.split(",") if n.strip()})
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    units = {p.stem for p in root.glob("*.py") if p.stem not in ("__init__", "__main__")}
    units |= {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    units = {u if not u.startswith("render_") else "render" for u in units}
    assert units <= set(rank), sorted(units - set(rank))

    def unit(name: str) -> str:
        return "render" if name.startswith("render_") else name

    upward = {("load", "hf"), ("plot", "bench")}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).with_suffix("").parts
        me = unit(rel[0])
        if me in ("__init__", "__main__", "cli"):
            continue
        pkg = list(path.relative_to(root).parent.parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue
            base = pkg[:len(pkg) - (node.level - 1)]
            full = base + (node.module.split(".") if node.module else [])
            targets = [unit(full[0])] if full else [unit(a.name) for a in node.names]
            for target in targets:
                if target == me or target not in rank:
                    continue
                assert rank[target] <= rank[me] or (me, target) in upward, \
                    f"rooflab/{'/'.join(rel)} imports {target} (layer {rank[target]}) from layer {rank[me]}"

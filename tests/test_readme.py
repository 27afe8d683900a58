"""The README's Python example runs and prints what its comment says."""

from __future__ import annotations

import contextlib
import functools
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


@functools.cache
def _imports() -> dict[str, frozenset[str]]:
    """{module: the rooflab modules it imports}, read from every import statement of the package (those inside
    functions too: a lazy import is still a dependency). `from pkg import name` counts as importing pkg.name
    where that is a module, else pkg itself; modules are dotted names, a package is its __init__. Read once a test
    process (the package's ~300 modules parsed: about a second); the tests only read it."""
    import ast

    import rooflab

    root = Path(rooflab.__file__).parent
    files = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def known(name: str) -> str | None:
        while name not in files and "." in name:
            name = name.rsplit(".", 1)[0]
        return name if name in files else None

    graph = {}
    for name, path in files.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.split(".")[0] == "rooflab"}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(package[:len(package) - (node.level - 1)] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                    if base.split(".")[0] != "rooflab":
                        continue
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names}
        graph[name] = frozenset(t for t in map(known, targets) if t and t != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_cycle():
    """No module reaches itself through the package's imports, lazy ones included (a cycle hides a layer that
    is not one: the module pair should be one module, or the shared part a third below both)."""
    cycles = _cycles(_imports())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_cycles():
    """The finder itself, on a small graph with one three-module cycle and a tail."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_map_of_the_package_is_the_real_one():
    """README's "How it is built" lists every module and package of rooflab in layers, and every import (lazy
    ones included) goes to the same layer or one listed above it; only the cli, the top of the map, is not
    checked, since it may import anything."""
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

    def unit(module: str) -> str | None:
        parts = module.split(".")
        if len(parts) < 2:
            return None                    # rooflab/__init__.py: the public API, above nothing
        return "render" if parts[1].startswith("render_") else parts[1]

    wrong = []
    for module, targets in sorted(_imports().items()):
        me = unit(module)
        if me in (None, "__main__", "_entry", "cli"):
            continue
        for target in sorted(targets):
            there = unit(target)
            if there is None or there == me or there not in rank:
                continue
            if rank[there] > rank[me]:
                wrong.append(f"{module} imports {target} (layer {rank[there]}) from layer {rank[me]}")
    assert not wrong, "imports against the README's layer order: " + "; ".join(wrong)

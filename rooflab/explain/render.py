"""An explanation as plain text (one line per figure, its meaning below) or markdown (a table per section)."""

from __future__ import annotations

from .derivation import Explanation, is_symbol


def render_explanation(e: Explanation, markdown: bool = False) -> str:
    """Plain text (one line per figure, its meaning below it) or markdown (a table per section)."""
    return _markdown(e) if markdown else _text(e)


def _text(e: Explanation) -> str:
    out = [e.title, "", "Symbols"]
    width = max(len(s) for s, _, _ in e.symbols)
    vwidth = max(len(v) for _, v, _ in e.symbols)
    out += [f"  {s.ljust(width)} = {v.ljust(vwidth)}  {m}" for s, v, m in e.symbols]
    for i, section in enumerate(e.sections, start=1):
        out += ["", f"{i}. {section.title}"]
        qwidth = max(len(st.quantity) for st in section.steps)
        for st in section.steps:
            parts = [st.quantity.ljust(qwidth), st.formula]
            if st.substituted != st.formula and not is_symbol(st.formula):
                parts.append(st.substituted)
            parts.append(st.result)
            out.append("  " + " = ".join(parts))
            if st.note:
                out.append(f"  {' ' * qwidth}   ({st.note})")
    if e.conclusion:
        out += [""] + list(e.conclusion)
    return "\n".join(out) + "\n"


def _markdown(e: Explanation) -> str:
    out = [f"## {e.title}", "", "| symbol | value | meaning |", "|---|---:|---|"]
    out += [f"| `{s}` | {v} | {m} |" for s, v, m in e.symbols]
    for i, section in enumerate(e.sections, start=1):
        out += ["", f"### {i}. {section.title}", "", "| quantity | formula | with numbers | result | note |",
                "|---|---|---|---:|---|"]
        for st in section.steps:
            out.append(f"| `{st.quantity}` | `{st.formula}` | `{st.substituted}` | {st.result} | {st.note} |")
    if e.conclusion:
        out += [""] + [f"- {line}" for line in e.conclusion]
    return "\n".join(out) + "\n"

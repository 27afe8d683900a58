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

"""`rooflab explain`: the chapter's figures, formulas that agree with the cost functions, and the CLI.
"""

from __future__ import annotations

import pytest

from rooflab.explain import ExplainMismatch, Unit, _Derivation, evaluate, number


def test_a_disagreement_is_a_bug_not_a_rounding():
    d = _Derivation({"a": 2.0, "b": 3.0})
    d.section("x")
    assert d.step("c", "a * b", 6.0, Unit.count) == 6.0
    with pytest.raises(ExplainMismatch, match="c2 = a \\* b gives 6.0, but rooflab computes 6.000001"):
        d.step("c2", "a * b", 6.000001, Unit.count)


def test_evaluate_and_number():
    assert evaluate("ceil(T / B) * max(2, x) - 2^3", {"T": 10, "B": 4, "x": 1}) == 3 * 2 - 8
    with pytest.raises(ValueError):
        evaluate("__import__('os')", {})
    with pytest.raises(ValueError):
        evaluate("a.b", {"a": 1})
    assert number(1.0995116e12) == "1.0995e12" and number(4294967296) == "4.295e9"
    assert number(8192) == "8192" and number(6553.6) == "6553.6" and number(5.1784e-3) == "5.1784e-3"
    assert number(999_999_999.9) == "1e9"

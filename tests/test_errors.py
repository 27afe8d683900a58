"""Tests of rooflab/errors.py: describing a bad value stays bounded whatever its size, many problems are
counted rather than listed, every refusal is a rooflab error (NumericsError also a ValueError), and a very
long word in an error line is cut at both ends.
"""

from __future__ import annotations

import numpy as np

from fuzz_support import bounded
from rooflab.errors import InputError, RooflabError, SpecError, shown
from rooflab.numerics import NumericsError


def test_describing_a_value_is_bounded_whatever_its_size():
    """Nine levels of ten references (YAML aliases): 10^9 leaves if printed, so repr must not walk them."""
    value: list = ["x"] * 10
    for _ in range(9):
        value = [value] * 10
    with bounded():         # a watchdog for a walk of 10^9 leaves, not a speed bound
        error = SpecError("gpu.yaml", "a8", value, "unknown key")
        text = shown(value) + str(error) + shown(10**5000) + shown(np.zeros(10**6)) + shown({i: i for i in range(10**5)})
    assert len(str(error)) < 200 and len(shown(10**5000)) <= 60
    assert "5,000 digits" in text


def test_many_problems_are_counted_not_listed():
    problems = tuple((f"key{i}", i, "unknown key") for i in range(1000))
    message = str(SpecError("gpu.yaml", "key0", 0, "unknown key", problems))
    assert "1000 problems" in message and "and 990 more" in message and len(message) < 1500


def test_every_refusal_above_is_a_rooflab_error():
    """NumericsError stays a ValueError for library callers, and an InputError for the CLI."""
    assert issubclass(NumericsError, InputError) and issubclass(NumericsError, ValueError)
    assert issubclass(InputError, RooflabError) and issubclass(SpecError, RooflabError)


def test_a_very_long_word_in_an_error_line_is_cut_at_both_ends():
    """The hostile round (issue 24): a 5,000-character path was quoted whole in validate's and --engine-log's
    errors (5,050 characters on stderr); the CLI's error line keeps its start and end."""
    from rooflab.errors import clip_words

    path = "a" * 5000 + ".csv"
    line = clip_words(f"--engine-log {path}: cannot read it (File name too long)")
    assert len(line) < 250 and line.startswith("--engine-log aaa") and ".csv: cannot read it (File name too long)" in line
    assert clip_words("short words stay whole") == "short words stay whole"

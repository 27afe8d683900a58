"""Errors rooflab raises for bad input. The CLI prints them in one or two lines and exits 2."""

from __future__ import annotations

import itertools
import reprlib

#: Characters of a value an error message quotes; a longer one is cut and ends in '...'.
MAX_SHOWN_CHARS = 60
#: Problems one SpecError spells out; the rest are counted.
MAX_PROBLEMS_SHOWN = 10


class RooflabError(Exception):
    """Any error caused by the user's input, as opposed to a bug in rooflab."""


class SpecError(RooflabError):
    """A GPU or model spec that cannot be used: names the file, the field and the value.

    One error can carry several problems (`problems`, each with field, value and problem), so a
    file reports everything wrong with it at once; `field`, `value` and `problem` are the first.
    """

    def __init__(self, where: str, field: str | None, value: object, problem: str, problems: tuple = ()):
        self.where = where
        where = clip(where, 200)     # a file's path, or a spec's type and name
        self.field = field
        self.value = value
        self.problem = problem
        self.problems = problems or ((field, value, problem),)
        parts = [_describe(f, v, p) for f, v, p in self.problems[:MAX_PROBLEMS_SHOWN]]
        more = len(self.problems) - len(parts)
        if len(self.problems) == 1:
            super().__init__(f"{where}: {parts[0]}")
        else:
            super().__init__(f"{where}: {len(self.problems)} problems: " + "; ".join(parts)
                             + (f"; and {more} more" if more else ""))

    @classmethod
    def of(cls, where: str, problems) -> "SpecError":
        """One error for a list of problems (objects with field, value and problem)."""
        triples = tuple((p.field, p.value, p.problem) for p in problems)
        first = triples[0]
        return cls(where, first[0], first[1], first[2], triples)

    def at(self, where: str) -> "SpecError":
        """The same problems, located in `where` (a file) instead."""
        return SpecError(where, self.field, self.value, self.problem, self.problems)


def clip(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """`text` as a message quotes it: at most `limit` characters, the last three '...' where it was cut."""
    text = str(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def clip_words(text: str, limit: int = 160) -> str:
    """`text` with every run of more than `limit` non-space characters (a 5,000-character path, a pasted blob) cut
    to its start and end around '...': an error line stays a line, and still says where and why."""
    import re

    def cut(match: "re.Match[str]") -> str:
        word = match.group(0)
        return word[:limit - 43] + "..." + word[-40:]

    return re.sub(r"\S{%d,}" % (limit + 1), cut, str(text))


class _BoundedRepr(reprlib.Repr):
    """repr() whose work is bounded whatever the value's size: a few levels and items of a container (in their
    own order), the first characters of a string, the size of a huge integer or array instead of its digits."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxtuple = self.maxlist = self.maxarray = self.maxset = self.maxfrozenset = self.maxdeque = 6
        self.maxdict = 4
        self.maxother = MAX_SHOWN_CHARS + 2

    def repr_str(self, x: str, level: int) -> str:
        return repr(x[:MAX_SHOWN_CHARS + 2])

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() <= 128:
            return repr(x)
        sign = "-" if x < 0 else ""
        if x.bit_length() > 10_000:  # past int's str() limit: the size from its bits
            return f"{sign}<an integer of about {int(x.bit_length() * 0.30103):,} digits>"
        return f"{sign}<an integer of {len(str(abs(x))):,} digits>"

    def repr_dict(self, x: dict, level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        items = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}"
                 for k, v in itertools.islice(x.items(), self.maxdict)]
        return "{" + ", ".join(items) + (", ..." if len(x) > self.maxdict else "") + "}"

    def repr_instance(self, x: object, level: int) -> str:
        if isinstance(x, dict):      # a dict subclass (FrozenDict)
            return self.repr_dict(x, level)
        size = getattr(x, "size", None)
        if type(x).__module__ == "numpy" and isinstance(size, int) and size > self.maxlist:
            return f"<an array of {size:,} values>"
        try:
            return clip(repr(x), self.maxother)
        except Exception:  # noqa: BLE001 - a value that cannot print itself (a Fraction of 10^5000) is still named
            return f"<a {type(x).__name__} that cannot be shown>"


_REPR = _BoundedRepr()


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """A value as an error message quotes it: its repr, cut to `limit` characters, cheap to build whatever the
    value (a 65,537-element list, a 20,000-character name, nested YAML aliases of 10^9 leaves)."""
    return clip(_REPR.repr(value), limit)


def _describe(field: str | None, value: object, problem: str) -> str:
    if field is None:
        return problem
    return f"field '{clip(field, 120)}' = {shown(value)}: {problem}"


class UnknownNameError(RooflabError):
    """A bundled spec name that does not exist: lists what does and suggests the closest."""

    def __init__(self, kind: str, name: str, available: list[str], suggestion: str | None, ambiguous: bool = False):
        self.kind = kind
        self.name = name
        self.available = available
        self.suggestion = suggestion
        name = clip(name)
        if ambiguous:
            super().__init__(f"{kind} '{name}' is ambiguous: it could be {' or '.join(available)}; give one of them")
            return
        hint = f" Did you mean '{suggestion}'?" if suggestion else ""
        super().__init__(
            f"unknown {kind} '{name}'.{hint} Available: {', '.join(available)}"
        )


class InputError(RooflabError):
    """A workload parameter out of range (a page size of 0, an empty list of context lengths, ...)."""


class MissingGpuError(RooflabError):
    """A GPU feature was asked for on a machine without CuPy or without a CUDA device."""

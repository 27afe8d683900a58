"""Errors rooflab raises for bad input. The CLI prints them in one or two lines and exits 2."""

from __future__ import annotations


class RooflabError(Exception):
    """Any error caused by the user's input, as opposed to a bug in rooflab."""


class SpecError(RooflabError):
    """A GPU or model spec that cannot be used: names the file, the field and the value.

    One error can carry several problems (`problems`, each with field, value and problem), so a
    file reports everything wrong with it at once; `field`, `value` and `problem` are the first.
    """

    def __init__(self, where: str, field: str | None, value: object, problem: str, problems: tuple = ()):
        self.where = where
        self.field = field
        self.value = value
        self.problem = problem
        self.problems = problems or ((field, value, problem),)
        parts = [_describe(f, v, p) for f, v, p in self.problems]
        if len(parts) == 1:
            super().__init__(f"{where}: {parts[0]}")
        else:
            super().__init__(f"{where}: {len(parts)} problems: " + "; ".join(parts))

    @classmethod
    def of(cls, where: str, problems) -> "SpecError":
        """One error for a list of problems (objects with field, value and problem)."""
        triples = tuple((p.field, p.value, p.problem) for p in problems)
        first = triples[0]
        return cls(where, first[0], first[1], first[2], triples)

    def at(self, where: str) -> "SpecError":
        """The same problems, located in `where` (a file) instead."""
        return SpecError(where, self.field, self.value, self.problem, self.problems)


def _describe(field: str | None, value: object, problem: str) -> str:
    if field is None:
        return problem
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"field '{field}' = {shown}: {problem}"


class UnknownNameError(RooflabError):
    """A bundled spec name that does not exist: lists what does and suggests the closest."""

    def __init__(self, kind: str, name: str, available: list[str], suggestion: str | None, ambiguous: bool = False):
        self.kind = kind
        self.name = name
        self.available = available
        self.suggestion = suggestion
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

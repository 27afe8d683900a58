"""Errors rooflab raises for bad input. The CLI prints them in one or two lines and exits 2."""

from __future__ import annotations


class RooflabError(Exception):
    """Any error caused by the user's input, as opposed to a bug in rooflab."""


class SpecError(RooflabError):
    """A GPU or model spec that cannot be used: names the file, the field and the value."""

    def __init__(self, where: str, field: str | None, value: object, problem: str):
        self.where = where
        self.field = field
        self.value = value
        self.problem = problem
        if field is None:
            super().__init__(f"{where}: {problem}")
        else:
            super().__init__(f"{where}: field '{field}' = {value!r}: {problem}")


class UnknownNameError(RooflabError):
    """A bundled spec name that does not exist: lists what does and suggests the closest."""

    def __init__(self, kind: str, name: str, available: list[str], suggestion: str | None):
        self.kind = kind
        self.name = name
        self.available = available
        self.suggestion = suggestion
        hint = f" Did you mean '{suggestion}'?" if suggestion else ""
        super().__init__(
            f"unknown {kind} '{name}'.{hint} Available: {', '.join(available)}"
        )


class InputError(RooflabError):
    """A workload parameter out of range (a page size of 0, an empty list of context lengths, ...)."""


class MissingGpuError(RooflabError):
    """A GPU feature was asked for on a machine without CuPy or without a CUDA device."""

"""Mappings -> spec dataclasses: every unknown, missing and bad field of a file in one SpecError.

A spec class is built from its parsed YAML field by field; nested dataclasses (a GPU's `measured:` section), mappings
of them (a model's layer_types) and tuples of them (a GPU's fits) are built the same way, keys under an old spelling
(the class's RENAMED map) read as the new one, and the values are checked by the class itself, so a spec built here
and one built in Python pass the same door.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from functools import lru_cache
from typing import Any, TypeVar, Union

from ..errors import SpecError
from ..fields import Problem, check_values

T = TypeVar("T")


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict:
    """A spec class's resolved field types, once per class (typing.get_type_hints compiles every string annotation
    each call: a GPU spec's 23 fits resolved FittedModel's hints 23 times)."""
    return typing.get_type_hints(cls)


def build(cls: type[T], data: dict, where: str, prefix: str = "") -> T:
    """Build a spec dataclass from a mapping; every problem (unknown, missing and bad fields) in one SpecError.

    Nested dataclass fields (a GPU's `measured:` section) are built the same way. The values are
    checked by the class itself (fields.validate_fields in its __post_init__), so a spec built here
    and one built in Python pass the same door.
    """
    data, spelled = _renamed(cls, data, where, prefix)
    problems = _unknown_and_missing(cls, data, prefix)
    kwargs = {}
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        nested = _nested_class(hints[f.name])
        mapped = _mapped_class(hints[f.name])
        listed = _listed_class(hints[f.name])
        try:
            if nested is not None and isinstance(value, dict):
                value = build(nested, value, where, prefix=f"{prefix}{f.name}.")
            elif mapped is not None and isinstance(value, dict):
                value = _build_each(mapped, value, where, f"{prefix}{f.name}.")
            elif listed is not None and isinstance(value, list):
                value = tuple(_build_each(listed, dict(enumerate(value)), where, f"{prefix}{f.name}.").values())
        except SpecError as exc:
            problems += [Problem(*p) for p in exc.problems]
            continue
        kwargs[f.name] = value
    present, found = check_values(cls, kwargs, prefix)
    problems += [Problem(spelled.get(p.field.removeprefix(prefix), p.field) if p.field.removeprefix(prefix)
                         in spelled else p.field, p.value, p.problem) for p in found]
    if problems:
        raise SpecError.of(where, problems)
    try:
        return cls(**kwargs)
    except SpecError as exc:
        raise exc.at(where) from None


def _unknown_and_missing(cls: type, data: dict, prefix: str) -> list[Problem]:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    problems = []
    for key in data:
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(Problem(f"{prefix}{key}", data[key], f"unknown field{hint}"))
    for name, f in fields.items():
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required and name not in data:
            problems.append(Problem(f"{prefix}{name}", None, "missing required field"))
    return problems


def _listed_class(tp: Any) -> type | None:
    """The dataclass of a tuple[Dataclass, ...] field (a GPU's fitted models), else None."""
    if typing.get_origin(tp) is tuple:
        item = typing.get_args(tp)[0]
        return item if dataclasses.is_dataclass(item) else None
    return None


def _mapped_class(tp: Any) -> type | None:
    """The dataclass of a dict[str, Dataclass] field (a model's layer_types), else None."""
    if typing.get_origin(tp) is dict:
        value_tp = typing.get_args(tp)[1]
        return value_tp if dataclasses.is_dataclass(value_tp) else None
    return None


def _build_each(cls: type, mapping: dict, where: str, prefix: str) -> dict:
    """Build every value of a mapping as `cls`; all problems of all entries in one SpecError."""
    out, problems = {}, []
    for key, value in mapping.items():
        if not isinstance(value, dict):
            problems.append(Problem(f"{prefix}{key}", value, f"must be a mapping of {cls.__name__} fields"))
            continue
        try:
            out[str(key)] = build(cls, value, where, prefix=f"{prefix}{key}.")
        except SpecError as exc:
            problems += [Problem(*p) for p in exc.problems]
    if problems:
        raise SpecError.of(where, problems)
    return out


def _nested_class(tp: Any) -> type | None:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = args[0] if len(args) == 1 else tp
    return tp if dataclasses.is_dataclass(tp) else None


def _renamed(cls: type, data: dict, where: str, prefix: str) -> tuple[dict, dict[str, str]]:
    """Keys under their old spelling (the class's RENAMED map) read as their new one; both at once is an error.

    Returns the mapping with new keys, and new -> old for the keys given under their old spelling
    (errors name the key as the file spells it).
    """
    renamed = getattr(cls, "RENAMED", {})
    out, spelled = {}, {}
    for key, value in data.items():
        new = renamed.get(key, key)
        if new != key:
            if new in data:
                raise SpecError(where, f"{prefix}{key}", value, f"is the old spelling of '{new}', which is also given")
            spelled[new] = key
        out[new] = value
    return out, spelled


def spec_from_mapping(cls: type[T], data: dict, where: str) -> T:
    """A checked spec from a parsed mapping; every problem is a SpecError naming `where`."""
    return build(cls, data, where)


__all__ = ["build", "spec_from_mapping"]

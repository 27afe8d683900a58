"""Validating spec fields from their annotations: one door for every value that enters a spec.

A spec dataclass (GpuSpec, ModelSpec, ...) calls `validate_fields(self)` in __post_init__, so a
spec is checked on every construction: from YAML (load/build.py), from a Hugging Face config, from
Python, and by `dataclasses.replace`. Each field's annotation says its type; `spec_field(...)`
adds a plausibility range (a bandwidth of 1e-300 B/s is not a GPU), a unit and a one-line
meaning, which also feed the JSON Schema of the YAML formats. All problems are collected and
reported at once, each naming the field and the value.

Values are normalised as they pass: a whole float becomes an int, a number in a string field
becomes its text, a mapping becomes a read-only FrozenDict, a list becomes a tuple, an enum's
value becomes the enum.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Union

from .errors import SpecError, clip

MISSING = dataclasses.MISSING


class FrozenDict(dict):
    """A dict that cannot be changed after it is built, so specs shared by callers stay as loaded."""

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a spec's mapping is read-only; build a new spec with dataclasses.replace")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))

    def __reduce__(self):
        return (FrozenDict, (dict(self),))

    def __deepcopy__(self, memo: dict) -> "FrozenDict":
        return self

    def __copy__(self) -> "FrozenDict":
        return self


@dataclass(frozen=True)
class Range:
    """Plausible values of a field: lo <= x <= hi (either may be None), with the unit for messages."""

    lo: float | None = None
    hi: float | None = None
    unit: str = ""
    lo_open: bool = False        # lo < x instead of lo <= x

    def problem(self, value: float) -> str | None:
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            if self.lo == 0:
                return "must be positive" if self.lo_open else "must be >= 0"
            bound = f"{'>' if self.lo_open else '>='} {self.lo:g}{self._unit}"
            if self.lo > 0 and value <= 0:
                return f"must be positive ({bound})"
            return f"must be {bound}"
        if self.hi is not None and value > self.hi:
            return f"must be <= {self.hi:g}{self._unit} (no real device or model is that large)"
        return None

    @property
    def _unit(self) -> str:
        return f" {self.unit}" if self.unit else ""


def spec_field(lo: float | None = None, hi: float | None = None, unit: str = "", doc: str = "",
               default: Any = MISSING, lo_open: bool = False, keys: tuple[str, ...] = (), nonempty: bool = False) -> Any:
    """A dataclass field with a plausibility range, a unit and a meaning (`keys`: the allowed keys of a mapping;
    `nonempty`: a mapping or list that must hold something)."""
    meta = {"range": Range(lo, hi, unit, lo_open), "doc": doc, "keys": keys, "nonempty": nonempty}
    if default is MISSING:
        return dataclasses.field(metadata=meta)
    if isinstance(default, list) or (isinstance(default, dict) and not isinstance(default, FrozenDict)):
        raise TypeError("mutable defaults: use a FrozenDict or a tuple")
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Problem:
    field: str
    value: Any
    problem: str


def where_of(obj: Any) -> str:
    name = getattr(obj, "name", None)
    return f"{type(obj).__name__} '{clip(name)}'" if isinstance(name, str) and name else type(obj).__name__


def validate_fields(obj: Any) -> None:
    """Check and normalise every field of a frozen spec dataclass in place; raise one SpecError listing all problems."""
    values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    normalised, problems = check_values(type(obj), values)
    if problems:
        raise SpecError.of(where_of(obj), problems)
    for name, value in normalised.items():
        object.__setattr__(obj, name, value)


def check_values(cls: type, values: dict[str, Any], prefix: str = "") -> tuple[dict[str, Any], list[Problem]]:
    """Normalised values and the problems of `values` against `cls`'s annotated fields (present ones only)."""
    out, problems = {}, []
    for f, tp, optional in _field_types(cls):
        if f.name not in values:
            continue
        value = values[f.name]
        name = f"{prefix}{f.name}"
        if value is None:
            if not optional:
                problems.append(Problem(name, None, "must not be empty"))
            out[f.name] = None
            continue
        converted, found = _convert(name, tp, value, f.metadata)
        problems += found
        out[f.name] = converted
    return out, problems


@functools.lru_cache(maxsize=None)
def _field_types(cls: type) -> tuple[tuple[dataclasses.Field, Any, bool], ...]:
    """Each field of `cls` with its type and whether it is Optional, resolved once per class: typing.get_type_hints
    evaluates every annotation string and took a fifth of `rooflab validate`, which builds ~14,000 specs."""
    hints = typing.get_type_hints(cls)
    return tuple((f, *_unwrap_optional(hints[f.name])) for f in dataclasses.fields(cls))


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _convert(name: str, tp: Any, value: Any, meta: Any) -> tuple[Any, list[Problem]]:
    rng: Range = meta.get("range", Range()) if meta else Range()
    if tp is bool:
        return (value, []) if isinstance(value, bool) else (value, [Problem(name, value, "must be true or false")])
    if tp in (int, float):
        return _number(name, value, tp is int, rng)
    if tp is str:
        if _plain_number(value):
            value = str(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            return value, [Problem(name, value, "must be text, not a number this large (quote it in YAML)")]
        if not isinstance(value, str) or not value.strip():
            return value, [Problem(name, value, "must be a non-empty string")]
        if len(value) > 10_000:
            return value, [Problem(name, value, "is longer than 10,000 characters")]
        return value, []
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value), []
        except ValueError:
            allowed = ", ".join(str(m.value) for m in tp)
            return value, [Problem(name, value, f"must be one of {allowed}")]
    origin = typing.get_origin(tp)
    if origin is dict:
        return _mapping(name, typing.get_args(tp)[1], value, meta, rng)
    if origin is tuple:
        return _sequence(name, typing.get_args(tp)[0], value, meta)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value, []
        return value, [Problem(name, value, f"must be a {tp.__name__}")]
    raise TypeError(f"no converter for {tp}")  # a bug in rooflab, not bad input


def _plain_number(value: Any) -> bool:
    """A number YAML may give where text belongs (a name of digits), small enough to stand for its text."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= 2**63
    return isinstance(value, float) and math.isfinite(value)


def _number(name: str, value: Any, integer: bool, rng: Range) -> tuple[Any, list[Problem]]:
    kind = "a whole number" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value, [Problem(name, value, f"must be {kind}")]
    if isinstance(value, int) and abs(value) > 2**63:
        return value, [Problem(name, value, "is past what rooflab computes with (2^63)")]
    if not math.isfinite(value):
        return value, [Problem(name, value, f"must be {kind}, finite")]
    if integer:
        if float(value) != int(value):
            return value, [Problem(name, value, "must be a whole number")]
        value = int(value)
    else:
        value = float(value)
    lo = rng if rng.lo is not None else Range(0, rng.hi, rng.unit, lo_open=True)   # default: positive
    found = lo.problem(value)
    return value, [Problem(name, value, found)] if found else []


def _mapping(name: str, value_tp: Any, value: Any, meta: Any, rng: Range) -> tuple[Any, list[Problem]]:
    keys: tuple[str, ...] = meta.get("keys", ()) if meta else ()
    if not isinstance(value, dict) or (not value and meta and meta.get("nonempty")):
        allowed = f", keys from {', '.join(keys)}" if keys else ""
        return value, [Problem(name, value, f"must be a {'non-empty ' if meta.get('nonempty') else ''}mapping{allowed}")]
    out, problems = {}, []
    for key, item in value.items():
        if keys and key not in keys:
            import difflib

            close = difflib.get_close_matches(str(key), keys, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problems.append(Problem(f"{name}.{key}", item, f"unknown key{hint}; allowed: {', '.join(keys)}"))
            continue
        converted, found = _convert(f"{name}.{key}", value_tp, item, {"range": rng})
        out[str(key)] = converted
        problems += found
    return FrozenDict(out), problems


def _sequence(name: str, item_tp: Any, value: Any, meta: Any) -> tuple[Any, list[Problem]]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        return value, [Problem(name, value, "must be a list")]
    if not value and meta and meta.get("nonempty"):
        return value, [Problem(name, value, "must not be an empty list")]
    out, problems = [], []
    for i, item in enumerate(value):
        converted, found = _convert(f"{name}[{i}]", item_tp, item, meta)
        out.append(converted)
        problems += found
    return tuple(out), problems


def field_docs(cls: type) -> dict[str, dict[str, Any]]:
    """{field: {type, required, range, unit, doc}} of a spec class: what the JSON Schema and the docs are built from."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        tp, optional = _unwrap_optional(hints[f.name])
        rng = f.metadata.get("range", Range())
        required = f.default is MISSING and f.default_factory is MISSING
        out[f.name] = {"type": tp, "required": required, "optional": optional, "range": rng,
                       "doc": f.metadata.get("doc", ""), "keys": f.metadata.get("keys", ()),
                       "default": None if required else f.default}
    return out


__all__ = ["FrozenDict", "Problem", "Range", "check_values", "field_docs", "spec_field", "validate_fields"]

"""YAML -> specs. The only reader of spec files.

A spec is named either by a bundled name ("h100-sxm", "llama-3-8b") or by a
path to the user's own YAML file. Every problem is a SpecError that names the
file, the field and the value; an unknown name lists what exists and suggests
the closest.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import types
import typing
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml

from .errors import SpecError, UnknownNameError
from .specs import GpuSpec, MeasuredCeilings, ModelSpec
from .units import RATE_KEYS

T = TypeVar("T")

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(kind: str) -> Path:
    """Folder of bundled files of one kind ("hardware", "models", "measurements").

    In a wheel they live in rooflab/_data/<kind>; in a source checkout, at the top of the repo.
    """
    installed = _PACKAGE_DIR / "_data" / kind
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / kind


# --- YAML parsing -----------------------------------------------------------------

class _SpecLoader(yaml.SafeLoader):
    """SafeLoader that reads 3.35e12 as a float (YAML 1.1 wants 3.35e+12) and refuses duplicate keys."""


_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}'", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_SpecLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: Path) -> dict:
    """Parse one YAML file into a mapping, or raise SpecError naming the file."""
    where = str(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(where, None, None, f"cannot read file ({exc.strerror or exc})") from None
    return parse_yaml(text, where)


def parse_yaml(text: str, where: str) -> dict:
    """Parse YAML text into a mapping, or raise SpecError naming `where`."""
    try:
        data = yaml.load(text, Loader=_SpecLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(where, None, None, f"malformed YAML{at}: {problem}") from None
    if not isinstance(data, dict):
        raise SpecError(where, None, type(data).__name__, "expected a mapping of field: value at the top level")
    return data


# --- validation from annotations ---------------------------------------------------

def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _positive_number(where: str, name: str, value: Any, integer: bool) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "a positive integer" if integer else "a positive number"
        raise SpecError(where, name, value, f"must be {kind}")
    if not math.isfinite(value) or value <= 0:
        raise SpecError(where, name, value, "must be positive and finite")
    if integer:
        if float(value) != int(value):
            raise SpecError(where, name, value, "must be a whole number")
        return int(value)
    return float(value)


def _rates(where: str, name: str, value: Any) -> dict[str, float]:
    if not isinstance(value, dict) or not value:
        raise SpecError(where, name, value, f"must be a mapping of dtype to FLOP/s, keys from {', '.join(RATE_KEYS)}")
    out = {}
    for key, rate in value.items():
        if key not in RATE_KEYS:
            close = difflib.get_close_matches(str(key), RATE_KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise SpecError(where, f"{name}.{key}", rate, f"unknown dtype key{hint}; allowed: {', '.join(RATE_KEYS)}")
        out[key] = _positive_number(where, f"{name}.{key}", rate, integer=False)
    return out


def _convert(where: str, name: str, tp: Any, value: Any) -> Any:
    if tp is int:
        return _positive_number(where, name, value, integer=True)
    if tp is float:
        return _positive_number(where, name, value, integer=False)
    if tp is bool:
        if not isinstance(value, bool):
            raise SpecError(where, name, value, "must be true or false")
        return value
    if tp is str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            raise SpecError(where, name, value, "must be a non-empty string")
        return value
    if typing.get_origin(tp) is dict:
        return _rates(where, name, value)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise SpecError(where, name, value, "must be a mapping")
        return build(tp, value, where, prefix=f"{name}.")
    raise TypeError(f"no converter for {tp}")  # a bug in rooflab, not bad input


def build(cls: type[T], data: dict, where: str, prefix: str = "") -> T:
    """Build a spec dataclass from a mapping, checking every field against its annotation."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    data, spelled = _renamed(cls, data, where, prefix)
    for key in data:
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise SpecError(where, f"{prefix}{key}", data[key], f"unknown field{hint}")
    kwargs = {}
    for name, f in fields.items():
        tp, optional = _unwrap_optional(hints[name])
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if name not in data or data[name] is None:
            if name in data and not optional:
                raise SpecError(where, f"{prefix}{name}", None, "must not be empty")
            if not has_default:
                raise SpecError(where, f"{prefix}{name}", None, "missing required field")
            continue
        kwargs[name] = _convert(where, f"{prefix}{spelled.get(name, name)}", tp, data[name])
    return cls(**kwargs)


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


def _spec_from_file(cls: type[T], path: Path) -> T:
    return spec_from_mapping(cls, read_yaml(path), str(path))


def spec_from_mapping(cls: type[T], data: dict, where: str) -> T:
    """A checked spec from a parsed mapping; every problem is a SpecError naming `where`."""
    spec = build(cls, data, where)
    try:
        spec.check()
    except SpecError as exc:
        raise SpecError(where, exc.field, exc.value, exc.problem) from None
    return spec


# --- lookup by name or path -------------------------------------------------------

def _looks_like_path(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml")) or "/" in ref or "\\" in ref


def available(kind: str) -> list[str]:
    """Names of the bundled specs of one kind ("hardware" or "models")."""
    return sorted(p.stem for p in data_dir(kind).glob("*.yaml"))


def spec_path(kind: str, label: str, ref: str | os.PathLike) -> Path:
    """The YAML file a reference names: a path as given (str or Path), or a bundled spec by name."""
    if isinstance(ref, os.PathLike):
        ref = os.fspath(ref)
    if not isinstance(ref, str):
        raise UnknownNameError(label, repr(ref), available(kind), None)
    if _looks_like_path(ref):
        path = Path(ref).expanduser()
        if not path.is_file():
            raise SpecError(str(path), None, None, "no such file")
        return path
    names = available(kind)
    key = ref.strip().lower()
    if key in names:
        return data_dir(kind) / f"{key}.yaml"
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.4)
    raise UnknownNameError(label, ref, names, close[0] if close else None)


@lru_cache(maxsize=64)
def _load_gpu(path: Path) -> GpuSpec:
    return _spec_from_file(GpuSpec, path)


@lru_cache(maxsize=64)
def _load_model(path: Path) -> ModelSpec:
    return _spec_from_file(ModelSpec, path)


def load_gpu(ref: str | os.PathLike) -> GpuSpec:
    """A GPU by bundled name (see `rooflab list gpus`) or by path to a YAML file."""
    return _load_gpu(spec_path("hardware", "GPU", ref).resolve())


def load_model(ref: str | os.PathLike) -> ModelSpec:
    """A model by bundled name (see `rooflab list models`) or by path to a YAML file."""
    return _load_model(spec_path("models", "model", ref).resolve())


def clear_cache() -> None:
    """Forget parsed specs (after `rooflab calibrate` rewrites a GPU file, say)."""
    _load_gpu.cache_clear()
    _load_model.cache_clear()


__all__ = ["load_gpu", "load_model", "available", "data_dir", "read_yaml", "build",
           "clear_cache", "GpuSpec", "ModelSpec", "MeasuredCeilings"]

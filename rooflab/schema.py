"""JSON Schemas of the GPU and model YAML formats, derived from the spec dataclasses themselves.

The fields' annotations give the types, `spec_field(...)` the ranges, units and meanings, the
dataclass defaults which fields are optional, and a class's RENAMED map the old spellings the
loader still reads. The schemas ship in the package (rooflab/schemas/*.schema.json, kept equal to
what this module derives by a test) so an editor can check a YAML as it is written:

    # yaml-language-server: $schema=<path to gpu.schema.json>

`rooflab schema gpu` / `rooflab schema model` print them. The loader stays the authority: a few
cross-field rules (a pattern covering the layers, MLA dimensions adding up) are only in the specs.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import typing
from pathlib import Path
from typing import Any

from .fields import Range, _unwrap_optional
from .specs import GpuSpec, ModelSpec

DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: The YAML formats with a schema: name -> spec class.
FORMATS: dict[str, type] = {"gpu": GpuSpec, "model": ModelSpec}


def schema_path(name: str) -> Path:
    """Where the shipped schema of format `name` lives inside the package."""
    return Path(__file__).with_name("schemas") / f"{name}.schema.json"


def json_schema(name: str) -> dict:
    """The JSON Schema (draft 2020-12) of the YAML format `name` ('gpu' or 'model')."""
    cls = FORMATS[name]
    defs: dict[str, dict] = {}
    top = _object(cls, defs)
    return {"$schema": DRAFT, "$id": f"https://rooflab.dev/schemas/{name}.schema.json",
            "title": f"rooflab {name} spec", **top, "$defs": dict(sorted(defs.items()))}


def schema_text(name: str) -> str:
    """The schema as the shipped file holds it: sorted keys, two-space indent, a final newline."""
    return json.dumps(json_schema(name), indent=2, sort_keys=True, allow_nan=False) + "\n"


def _object(cls: type, defs: dict[str, dict]) -> dict:
    hints = typing.get_type_hints(cls)
    properties, required = {}, []
    for f in dataclasses.fields(cls):
        properties[f.name] = _field(hints[f.name], f.metadata, defs)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
        elif f.default is not None and _plain(f.default):
            properties[f.name]["default"] = _plain(f.default)
    for old, new in getattr(cls, "RENAMED", {}).items():
        properties[old] = {**properties[new], "deprecated": True, "description": f"old spelling of {new}"}
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    return {"type": "object", "description": " ".join(doc.split()), "properties": properties,
            "required": required, "additionalProperties": False}


def _plain(value: Any) -> Any:
    """A default as JSON can hold it, or None where it is not a plain value."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value) and value:
        return list(value)
    return None


def _field(tp: Any, meta: Any, defs: dict[str, dict]) -> dict:
    inner, optional = _unwrap_optional(tp)
    out = _type(inner, meta, defs)
    rng: Range = meta.get("range", Range()) if meta else Range()
    doc = (meta or {}).get("doc", "")
    words = [doc] if doc else []
    if rng.unit:
        words.append(f"unit: {rng.unit}")
    if words:
        out = {**out, "description": "; ".join(words)}
    return {"anyOf": [out, {"type": "null"}]} if optional else out


def _type(tp: Any, meta: Any, defs: dict[str, dict]) -> dict:
    rng: Range = meta.get("range", Range()) if meta else Range()
    if tp is bool:
        return {"type": "boolean"}
    if tp in (int, float):
        out: dict[str, Any] = {"type": "integer" if tp is int else "number"}
        if rng.lo is not None:
            out["exclusiveMinimum" if rng.lo_open else "minimum"] = rng.lo
        if rng.hi is not None:
            out["maximum"] = rng.hi
        return out
    if tp is str:
        return {"type": "string", "minLength": 1, "maxLength": 10_000}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    origin = typing.get_origin(tp)
    if origin is dict:
        value = _type(typing.get_args(tp)[1], meta, defs)
        out = {"type": "object", "additionalProperties": value}
        keys = (meta or {}).get("keys", ())
        if keys:
            out["propertyNames"] = {"enum": list(keys)}
        if (meta or {}).get("nonempty"):
            out["minProperties"] = 1
        return out
    if origin is tuple:
        return {"type": "array", "items": _type(typing.get_args(tp)[0], None, defs)}
    if dataclasses.is_dataclass(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}          # placeholder: a class that refers to itself stops here
            defs[tp.__name__] = _object(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    raise TypeError(f"no JSON Schema for {tp}")  # a bug in rooflab: a new field type


__all__ = ["FORMATS", "json_schema", "schema_path", "schema_text"]

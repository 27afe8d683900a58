"""Finding a config.json, parsing it strictly, and reading its fields with errors that name file, field and value.

A reference is a config.json file, a folder holding one, or a Hugging Face id ('org/name') found in the
local Hugging Face cache (huggingface_hub's layout: <cache>/models--org--name/snapshots/<commit>/config.json,
with refs/main naming the commit). Nothing here reaches the network.

JSON is read strictly: at most MAX_CONFIG_BYTES, UTF-8, no NaN or Infinity (Python's json module accepts
both by default, and 1e999 as infinity), no duplicate keys, a mapping at the top.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from ..errors import SpecError
from ..files import MAX_SPEC_FILE_BYTES, read_text

#: config.json files larger than this are refused before they are parsed (the largest bundled one is 2 KiB).
MAX_CONFIG_BYTES = MAX_SPEC_FILE_BYTES

#: 'org/name' as the Hub spells a model id (letters, digits, '-', '_', '.'; neither part '.' or '..').
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


# --- strict JSON ------------------------------------------------------------------------------------------

class _Refused(ValueError):
    pass


def _no_constant(text: str) -> Any:
    raise _Refused(f"{text} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"{text} overflows to infinity")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"duplicate key '{key}'")
        out[key] = value
    return out


def parse_json(text: str, where: str) -> dict:
    """A config.json's text as a mapping; NaN, infinities and duplicate keys are errors naming `where`."""
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float,
                          object_pairs_hook=_no_duplicates)
    except _Refused as exc:
        raise SpecError(where, None, None, f"malformed config.json: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SpecError(where, None, None, f"malformed JSON (line {exc.lineno}, column {exc.colno}): "
                                           f"{exc.msg}") from None
    except RecursionError:
        raise SpecError(where, None, None, "malformed config.json: nested too deeply") from None
    except ValueError as exc:       # an integer of more than sys.get_int_max_str_digits() digits
        raise SpecError(where, None, None, f"malformed config.json: {str(exc).split(';')[0]}") from None
    if not isinstance(data, dict):
        raise SpecError(where, None, type(data).__name__, "expected a JSON object at the top level")
    return data


def read_json(path: Path) -> dict:
    """Parse one config.json file, or raise SpecError naming it."""
    return parse_json(read_text(path, MAX_CONFIG_BYTES, "a config.json"), str(path))


# --- finding the file ---------------------------------------------------------------------------------------

def is_hf_reference(ref: str | os.PathLike) -> bool:
    """A config.json path, a folder holding one (or any folder named by a path), or an 'org/name' id that is not
    a file; a YAML path, or a bare name such as a bundled model's, is none of these."""
    text = os.fspath(ref)
    if text.endswith((".yaml", ".yml")):
        return False
    if text.endswith(".json"):
        return True
    path = Path(text).expanduser()
    if path.is_dir():
        return (path / "config.json").is_file() or "/" in text or os.sep in text
    return bool(_HUB_ID.match(text)) and not path.exists()


def hub_cache() -> Path:
    """The local Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else
    $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub's order)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "huggingface" / "hub"


@dataclass(frozen=True)
class Located:
    """Where a reference's config.json is, and the model's name and label as the reference gives them."""

    path: Path
    name: str
    label: str


def locate(ref: str | os.PathLike) -> Located:
    """The config.json a reference names: the file itself, <folder>/config.json, or the cached snapshot of an id."""
    text = os.fspath(ref)
    path = Path(text).expanduser()
    if path.is_file():
        name = path.parent.name if path.name == "config.json" else path.name.removesuffix(".json")
        return Located(path, name or "config", text)
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise SpecError(str(path), None, None, "folder holds no config.json")
        return Located(config, path.resolve().name, text)
    if text.endswith(".json") or not _HUB_ID.match(text):
        raise SpecError(text, None, None, "no such file")
    return Located(_cached_config(text), text.split("/")[1], text)


def _cached_config(model_id: str) -> Path:
    """<cache>/models--org--name/snapshots/<commit>/config.json: the commit refs/main names, else the newest
    snapshot holding a config.json."""
    cache = hub_cache()
    repo = cache / ("models--" + model_id.replace("/", "--"))
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        raise SpecError(model_id, None, None, f"not a file, and not in the local Hugging Face cache ({repo} is "
                                              "missing; rooflab never downloads: fetch it with `huggingface-cli "
                                              f"download {model_id} config.json`, or give a path)")
    main = repo / "refs" / "main"
    try:
        commit = main.read_text(encoding="utf-8").strip() if main.is_file() else ""
    except (OSError, UnicodeDecodeError):
        commit = ""
    pinned = snapshots / commit / "config.json"
    if commit and "/" not in commit and pinned.is_file():
        return pinned
    found = sorted((p for p in snapshots.glob("*/config.json") if p.is_file()), key=lambda p: p.stat().st_mtime)
    if not found:
        raise SpecError(str(snapshots), None, None, f"no snapshot of {model_id} in the cache holds a config.json")
    return found[-1]


# --- reading fields -----------------------------------------------------------------------------------------

_REQUIRED = object()


@dataclass(frozen=True)
class Fields:
    """The text model's fields of one config.json, read with checks; errors name the file and the field as written.

    `prefix` is 'text_config.' where the text model is nested (Gemma 3, Llama 4); `outer` is the top level,
    where such wrappers keep torch_dtype and quantization_config. `defaults` are the values transformers'
    configuration class gives the keys a family's files leave out (a key that is absent, not one set to null).
    """

    data: Mapping[str, Any]
    where: str
    prefix: str = ""
    outer: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def error(self, key: str, value: Any, problem: str) -> SpecError:
        """An error on the text model's `key` (named with its prefix, as the file nests it)."""
        return SpecError(self.where, self.prefix + key, value, problem)

    def error_at(self, field: str, value: Any, problem: str) -> SpecError:
        """An error on `field` spelled in full (a key `either` found)."""
        return SpecError(self.where, field, value, problem)

    def raw(self, key: str, default: Any = _REQUIRED) -> Any:
        """The value as written; an absent key takes the family default, then `default`; else 'missing'."""
        if key in self.data:
            return self.data[key]
        if key in self.defaults:
            return self.defaults[key]
        if default is _REQUIRED:
            raise self.error(key, None, "missing required field")
        return default

    def count(self, key: str, default: Any = _REQUIRED, lo: int = 1, hi: Optional[int] = None) -> int:
        """A whole number >= lo (a whole float such as 4096.0 is read as 4096), and <= hi where given (a count
        the reader loops over, such as num_hidden_layers); null counts as missing."""
        value = self.raw(key, default)
        if value is None and default is _REQUIRED:
            raise self.error(key, None, "missing required field (null)")
        number = self._whole(key, value, lo)
        if hi is not None and number > hi:
            raise self.error(key, value, f"must be <= {hi:,} (no real model is that large)")
        return number

    def count_or_none(self, key: str, default: Any = None, lo: int = 1) -> Optional[int]:
        """A whole number >= lo, or None where the value is null (or absent with no default)."""
        value = self.raw(key, default)
        return None if value is None else self._whole(key, value, lo)

    def _whole(self, key: str, value: Any, lo: int) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise self.error(key, value, "must be a whole number")
        if abs(value) > 2**63:
            raise self.error(key, value, "is past what rooflab computes with (2^63)")
        if value != int(value):
            raise self.error(key, value, "must be a whole number")
        if value < lo:
            raise self.error(key, value, "must be positive" if lo == 1 else f"must be >= {lo}")
        return int(value)

    def flag(self, key: str, default: Any = _REQUIRED) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(key, value, "must be true or false")
        return value

    def names(self, key: str) -> Optional[tuple[str, ...]]:
        """A list of strings, or None where absent or null."""
        value = self.raw(key, None)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, value, "must be a list of strings")
        return tuple(value)

    def indices(self, key: str, default: Any = None) -> Optional[tuple[int, ...]]:
        """A list of whole numbers >= 0, or None where absent or null."""
        value = self.raw(key, default)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.error(key, value, "must be a list of whole numbers")
        return tuple(self._whole(f"{key}[{i}]", v, 0) for i, v in enumerate(value))

    def either(self, key: str) -> tuple[Any, str]:
        """(value, field) of a key the text model or the wrapper around it may hold (torch_dtype,
        quantization_config): the text model's where it has one; (None, key) where neither has."""
        if key in self.data:
            return self.data[key], self.prefix + key
        return self.outer.get(key), key


__all__ = ["Fields", "Located", "MAX_CONFIG_BYTES", "hub_cache", "is_hf_reference", "locate", "parse_json",
           "read_json"]

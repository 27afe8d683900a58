"""YAML -> specs. The only reader of spec files.

A spec is named either by a bundled name ("h100-sxm", "llama-3-8b") or by a
path to the user's own YAML file. Every problem is a SpecError that names the
file, the field and the value; an unknown name lists what exists and suggests
the closest.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import types
import typing
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml

from .errors import SpecError, UnknownNameError
from .fields import Problem, check_values
from .specs import GpuSpec, MeasuredCeilings, ModelSpec

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

#: Spec and measurement files larger than this are refused before they are parsed.
MAX_SPEC_FILE_BYTES = 1 << 20


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2's core schema for plain scalars, and duplicate keys refused.

    YAML 1.1 (PyYAML's default) reads `0132` as octal 90, `2:12` as 132 (base 60), `1_000` as 1000,
    `yes`/`on` as true and `2026-11-30` as a date. Here a plain scalar is an int only if it is
    decimal without a leading zero, a float only in decimal or exponent notation (3.35e12 too, which
    1.1 leaves a string), a bool only if true or false, null only if null or ~; the 1.1 forms that
    would have meant something else are refused with a message saying how to write them; the rest
    are strings.
    """

    yaml_implicit_resolvers: dict = {}

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        """Refuse aliases (*name): a spec is a few plain values, and alias chains can expand without bound."""
        if self.check_event(yaml.events.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "an alias (*name); write the value out",
                                              self.peek_event().start_mark)
        return super().compose_node(parent, index)


_AMBIGUOUS = "tag:rooflab,2026:ambiguous"
_SCALARS = (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^[-+]?(?:0|[1-9][0-9]*)$", list("-+0123456789")),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|(?:0|[1-9][0-9]*)(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     list("-+0123456789.")),
    (_AMBIGUOUS, r"^(?:[-+]?0[0-9_]+(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"
                 r"|[-+]?0[xXoObB][0-9a-fA-F_]+|[-+]?[0-9][0-9]*_[0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
                 r"|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$",
     list("-+0123456789yYnNoO")),
)
for _tag, _pattern, _first in _SCALARS:
    _SpecLoader.add_implicit_resolver(_tag, re.compile(_pattern), _first)


def _ambiguous(node: yaml.ScalarNode, key: object = None) -> yaml.constructor.ConstructorError:
    """The error for a scalar YAML 1.1 and 1.2 read differently, naming the field where the mapping knows it."""
    text = node.value
    hint = ("write true or false" if text.lower() in ("yes", "no", "on", "off", "y", "n")
            else "write it as a plain decimal number (no leading zero, underscore, base prefix or colon), "
                 "or quote it if it is text")
    field = f"field '{key}': " if key is not None else ""
    return yaml.constructor.ConstructorError(None, None, f"{field}'{text}' is ambiguous (YAML 1.1 reads it as "
                                             f"another value than YAML 1.2): {hint}", node.start_mark)


def _refuse_ambiguous(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> None:
    raise _ambiguous(node)


_SpecLoader.add_constructor(_AMBIGUOUS, _refuse_ambiguous)


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict:
    seen: set = set()
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise yaml.constructor.ConstructorError(None, None, "a key that is not a plain name (a list or "
                                                    "mapping used as a key)", key_node.start_mark)
        key = loader.construct_object(key_node)
        if isinstance(value_node, yaml.ScalarNode) and value_node.tag == _AMBIGUOUS:
            raise _ambiguous(value_node, key)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}'", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_SpecLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


try:                                             # PyYAML built with libyaml: parse in C, ten times as fast
    from yaml.cyaml import CParser as _CParser
except ImportError:                              # pragma: no cover - a PyYAML without libyaml
    _CParser = None

if _CParser is not None:
    class _CSpecLoader(_CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """_SpecLoader's resolvers and constructors over libyaml's parser. It cannot refuse an alias while
        composing, so _fast_load checks the composed tree and leaves anything unusual to _SpecLoader."""

        yaml_implicit_resolvers = _SpecLoader.yaml_implicit_resolvers
        yaml_constructors = _SpecLoader.yaml_constructors

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
else:                                            # pragma: no cover - a PyYAML without libyaml
    _CSpecLoader = None

#: Deeper documents go to the Python loader, which refuses what is too deep with its own message.
_FAST_DEPTH = 64


def _plain_tree(node: yaml.Node) -> bool:
    """Whether a composed document has no alias (no node reached twice) and is at most _FAST_DEPTH deep."""
    seen, stack = set(), [(node, 0)]
    while stack:
        current, depth = stack.pop()
        if id(current) in seen or depth > _FAST_DEPTH:
            return False
        seen.add(id(current))
        if isinstance(current, yaml.SequenceNode):
            stack += [(child, depth + 1) for child in current.value]
        elif isinstance(current, yaml.MappingNode):
            stack += [(part, depth + 1) for pair in current.value for part in pair]
    return True


def _fast_load(text: str) -> object:
    """The document as _SpecLoader reads it: through libyaml where the document is plain (no alias, not deep) and
    parses cleanly, else through _SpecLoader itself, which gives every refusal its precise message."""
    if _CSpecLoader is not None:
        loader = _CSpecLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None and _plain_tree(node):
                return loader.construct_document(node)
        except yaml.YAMLError:
            pass                                 # the Python loader names the problem, with its position
        finally:
            loader.dispose()
    return yaml.load(text, Loader=_SpecLoader)  # noqa: S506 - a SafeLoader subclass


def read_bounded(path: Path | str, limit: int) -> bytes:
    """Up to `limit` + 1 bytes of a file (the caller refuses more). A named pipe no process writes to reads as
    empty instead of blocking forever: the file is opened with O_NONBLOCK (which returns at once for a FIFO),
    then read blocking, which for a FIFO without writers is end of file, and for `<(command)` waits for the
    command's output. Raises OSError as open() does."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            return handle.read(limit + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def read_text(path: Path, limit: int, kind: str) -> str:
    """A spec file's text (UTF-8, a BOM allowed), or SpecError naming it: unreadable, over `limit` bytes
    (`kind` says what such a file usually weighs), or not UTF-8."""
    where = str(path)
    try:
        raw = read_bounded(path, limit)
    except OSError as exc:
        raise SpecError(where, None, None, f"cannot read file ({exc.strerror or exc})") from None
    if len(raw) > limit:
        raise SpecError(where, None, None, f"larger than {limit >> 20} MiB; {kind} is a few KiB")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(where, None, None, f"not UTF-8 text (byte {exc.start})") from None


def read_yaml(path: Path) -> dict:
    """Parse one YAML file into a mapping, or raise SpecError naming the file."""
    return parse_yaml(read_text(path, MAX_SPEC_FILE_BYTES, "a spec file"), str(path))


def parse_yaml(text: str, where: str) -> dict:
    """Parse YAML text into a mapping, or raise SpecError naming `where`."""
    try:
        data = _fast_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(where, None, None, f"malformed YAML{at}: {problem}") from None
    except RecursionError:
        raise SpecError(where, None, None, "malformed YAML: nested too deeply for a spec file") from None
    if not isinstance(data, dict):
        raise SpecError(where, None, type(data).__name__, "expected a mapping of field: value at the top level")
    return data


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


def _spec_from_file(cls: type[T], path: Path) -> T:
    return spec_from_mapping(cls, read_yaml(path), str(path))


def spec_from_mapping(cls: type[T], data: dict, where: str) -> T:
    """A checked spec from a parsed mapping; every problem is a SpecError naming `where`."""
    return build(cls, data, where)


# --- lookup by name or path -------------------------------------------------------

def _looks_like_path(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml")) or "/" in ref or "\\" in ref


def available(kind: str) -> list[str]:
    """Names of the bundled specs of one kind ("hardware" or "models"); any other kind is an InputError."""
    if kind not in SPEC_KINDS:
        from .errors import InputError, shown
        raise InputError(f"kind must be one of {', '.join(SPEC_KINDS)}, got {shown(kind)}")
    return sorted(p.stem for p in data_dir(kind).glob("*.yaml"))


#: The folders of bundled specs `available` lists.
SPEC_KINDS = ("hardware", "models")


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
    if kind == "hardware":
        return data_dir(kind) / f"{resolve_gpu_name(ref, label)}.yaml"
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.4)
    raise UnknownNameError(label, ref, names, close[0] if close else None)


def _norm(text: str) -> str:
    """A GPU name reduced to what tells GPUs apart: 'NVIDIA H100-SXM5 80GB' -> 'h100sxm580gb'."""
    text = re.sub(r"\b(nvidia|geforce|amd|instinct|tesla)\b", "", text.lower())
    return re.sub(r"[^a-z0-9]", "", text)


#: The board forms a GPU name may state; a name stating one never resolves to a GPU of another (a PCIe card's
#: clocks, bandwidth and links differ from the SXM module's of the same chip).
_FORM_FACTORS = ("pcie", "sxm", "nvl")


def _form_factors(norm: str) -> frozenset[str]:
    """The board forms a normalised name states ('a10080gbpcie' -> {'pcie'}); none for a name that covers all."""
    return frozenset(f for f in _FORM_FACTORS if f in norm)


@dataclasses.dataclass(frozen=True)
class _GpuNames:
    """One bundled GPU's normalised names (file name, display name, aliases) and the board forms its own file and
    display name state (empty: a spec that covers every form, as a100-40gb does)."""

    spelled: tuple[str, ...]
    forms: frozenset[str]

    def takes(self, stated: frozenset[str]) -> bool:
        """Whether a name stating the board forms `stated` may mean this GPU."""
        return not stated or not self.forms or bool(stated & self.forms)


@lru_cache(maxsize=1)
def _gpu_names() -> dict[str, _GpuNames]:
    """Each bundled GPU's names, read from the YAML.

    An alias stating a board form its GPU's own file or display name contradicts ('NVIDIA A100 80GB PCIe' on
    a100-sxm-80gb) is a SpecError naming the file: it would send a PCIe card's name to the SXM part.
    """
    out = {}
    for name in available("hardware"):
        path = data_dir("hardware") / f"{name}.yaml"
        data = read_yaml(path)
        display, aliases = str(data.get("display_name", "")), [str(a) for a in data.get("aliases") or ()]
        forms = _form_factors(_norm(name)) | _form_factors(_norm(display))
        for alias in aliases:
            stated = _form_factors(_norm(alias))
            if forms and stated and not stated & forms:
                raise SpecError(str(path), "aliases", alias, f"names a {'/'.join(sorted(stated))} part; this GPU "
                                f"is {'/'.join(sorted(forms))}: give that card its own YAML")
        spelled = tuple(dict.fromkeys(_norm(x) for x in [name, display, *aliases] if _norm(x)))
        out[name] = _GpuNames(spelled, forms)
    return out


def _word_prefixes(norm: str) -> set[str]:
    """The prefixes of a normalised name that end between words ('h100sxm580gb': h, h100, h100sxm, h100sxm5,
    h100sxm580, ...), so 'h200' names h200-sxm but 'b20' or 'rtx40902' name nothing. A lone letter after a
    number is part of the model ('l40s', 'mi300x'): 'l40' does not name the L40S."""
    words = re.findall(r"[0-9]+[a-z](?![a-z])|[a-z]+|[0-9]+", norm)
    return {"".join(words[:i]) for i in range(1, len(words) + 1)}


def resolve_gpu_name(text: str, label: str = "GPU") -> str:
    """The bundled GPU a name means: its file name, display name or an alias (nvidia-smi's name, say), ignoring
    case, spaces, dashes and the vendor; or the one GPU whose names start with it, ending between words
    ('h200' -> h200-sxm; 'b20' names none).

    Several GPUs starting with it (`H100`: h100-sxm, h100-pcie) or none: UnknownNameError listing the
    candidates, suggesting only within the family the name starts with. A name stating a board form ('PCIe',
    'SXM', 'NVL') is matched only against GPUs whose file or display name states the same form or none
    ('A100 PCIe' is never the SXM4 part).
    """
    key = _norm(text)
    stated = _form_factors(key)
    table = {name: gpu.spelled for name, gpu in _gpu_names().items() if gpu.takes(stated)}
    exact = [name for name, spelled in table.items() if key in spelled]
    if len(exact) == 1:
        return exact[0]
    prefixed = [name for name, spelled in table.items() if key and any(key in _word_prefixes(s) for s in spelled)]
    if len(prefixed) == 1:
        return prefixed[0]
    if len(prefixed) > 1:
        raise UnknownNameError(label, text, prefixed, None, ambiguous=True)
    family = re.match(r"[a-z]+[0-9]+", key)
    same = [n for n, spelled in table.items() if family and any(s.startswith(family.group(0)) for s in spelled)]
    pool = same or list(table)
    close = difflib.get_close_matches(key, [s for n in pool for s in table[n]], n=1, cutoff=0.4)
    suggestion = next((n for n in pool if close and close[0] in table[n]), None)
    raise UnknownNameError(label, text, list(_gpu_names()), suggestion)


@lru_cache(maxsize=64)
def _load_gpu(path: Path, stamp: tuple[int, int]) -> GpuSpec:
    return _spec_from_file(GpuSpec, path)


#: How far a model YAML's published num_parameters may lie from the count its layers give (bundled models and
#: test specs: 0.999-1.09, a vision tower's or an untracked component's share) before the file contradicts itself
#: (num_parameters: 1 for Llama-3-8B's layers priced its weights at 2 bytes). Checked on files only: a
#: dataclasses.replace what-if on a loaded spec keeps the published count on purpose.
PUBLISHED_COUNT_FACTOR = 2.0


@lru_cache(maxsize=64)
def _load_model(path: Path, stamp: tuple[int, int]) -> ModelSpec:
    model = _spec_from_file(ModelSpec, path)
    if model.num_parameters is not None:
        derived = model.derived_parameters
        if not derived / PUBLISHED_COUNT_FACTOR <= model.num_parameters <= derived * PUBLISHED_COUNT_FACTOR:
            raise SpecError(str(path), "num_parameters", model.num_parameters,
                            f"disagrees by more than a factor {PUBLISHED_COUNT_FACTOR:g} with the {derived:,} "
                            f"parameters its layers hold (num_layers, hidden_size, heads, ffn_size, vocab_size, "
                            f"experts); the weights are priced from it")
    return model


def _stamp(path: Path) -> tuple[int, int]:
    """What the parsed-spec cache keys on beside the path: a file rewritten in the same session is read again."""
    try:
        st = path.stat()
    except OSError:
        return (0, 0)          # the reader names the problem
    return (st.st_mtime_ns, st.st_size)


def load_gpu(ref: str | os.PathLike) -> GpuSpec:
    """A GPU by bundled name (see `rooflab list gpus`) or by path to a YAML file."""
    path = spec_path("hardware", "GPU", ref).resolve()
    return _load_gpu(path, _stamp(path))


def _names_a_path(text: str) -> bool:
    """Whether a model reference is written as a path: it ends in .json / .yaml / .yml, holds a separator
    ('./qwen2.5-7b', 'configs/qwen'), starts with '~', or is an existing file. A bare word is a name."""
    return (text.endswith((".json", ".yaml", ".yml")) or "/" in text or os.sep in text
            or text.startswith("~") or Path(text).is_file())


def bundled_model(name: str) -> ModelSpec:
    """A bundled model by its exact file name (as `available("models")` lists it); never a local path."""
    path = (data_dir("models") / f"{name}.yaml").resolve()
    return _load_model(path, _stamp(path))


def load_model(ref: str | os.PathLike) -> ModelSpec:
    """A model by bundled name (see `rooflab list models`), by path to a YAML file, or from a Hugging Face
    config.json: a path ending in .json, a folder holding one, or an 'org/name' id in the local cache (rooflab.hf).

    A local file or folder is read only where the reference is written as a path (`./qwen2.5-7b`, a separator,
    a file suffix, an existing file) or a bare word names no bundled model but a folder here; a bare word that is
    both a bundled model and a local folder is an error naming both, so a download never shadows a bundled name.
    """
    text = os.fspath(ref) if isinstance(ref, (str, os.PathLike)) else ""
    if text and not _names_a_path(text) and Path(text).is_dir():
        if text.strip().lower() in available("models"):
            raise SpecError(text, None, None,
                            f"is both the bundled model '{text.strip().lower()}' and a folder here: write "
                            f"'./{text}' for the folder, or run from another folder for the bundled model")
        text = os.path.join(".", text)
    if text and (_names_a_path(text) or Path(text).is_dir() or "/" in text):
        from . import hf        # only for what may be a config.json: the CLI's start-up stays light

        if hf.is_hf_reference(text):
            return hf.load_hf_config(text)
    path = spec_path("models", "model", ref).resolve()
    return _load_model(path, _stamp(path))


def clear_cache() -> None:
    """Forget parsed specs (after `rooflab calibrate` rewrites a GPU file, say)."""
    _load_gpu.cache_clear()
    _load_model.cache_clear()


__all__ = ["bundled_model", "load_gpu", "load_model", "available", "data_dir", "read_yaml", "build",
           "clear_cache", "GpuSpec", "ModelSpec", "MeasuredCeilings"]

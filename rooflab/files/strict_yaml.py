"""Strict YAML: the reader of every spec and measurement-metadata file.

YAML 1.2's core schema for plain scalars (the YAML 1.1 forms that would read as another value are refused with how
to write them), no duplicate keys, no aliases, a mapping at the top; parsed by libyaml where the document is plain,
by PyYAML's Python parser otherwise, which names every problem with its line and column. Every problem is a
SpecError naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..errors import SpecError
from .read import MAX_SPEC_FILE_BYTES, read_text


#: The deepest a document nests (its top mapping at 0): a spec file is a few levels deep.
MAX_DEPTH = 64


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
    _depth = -1                               # the node being composed: 0 the document's top

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        """Refuse aliases (*name): a spec is a few plain values, and alias chains can expand without bound. Refuse
        nodes nested more than MAX_DEPTH deep as they are met: PyYAML's Python scanner took some 0.4 s to read ahead
        through 10,000 nested brackets before its composer overflowed Python's stack."""
        if self.check_event(yaml.events.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "an alias (*name); write the value out",
                                              self.peek_event().start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _too_deep(self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _too_deep(mark) -> yaml.composer.ComposerError:
    return yaml.composer.ComposerError(None, None, f"nested too deeply for a spec file (more than {MAX_DEPTH} levels)",
                                       mark)


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

def _plain_tree(node: yaml.Node) -> tuple[bool, yaml.Node | None]:
    """Whether a composed document has no alias (no node reached twice), and its first node (in document order)
    nested deeper than MAX_DEPTH, or None."""
    seen, stack, deep = set(), [(node, 0)], None
    while stack:
        current, depth = stack.pop()
        if id(current) in seen:
            return False, None
        seen.add(id(current))
        if depth > MAX_DEPTH:
            if deep is None or current.start_mark.index < deep.start_mark.index:
                deep = current
            continue                             # what it holds is deeper still
        if isinstance(current, yaml.SequenceNode):
            stack += [(child, depth + 1) for child in current.value]
        elif isinstance(current, yaml.MappingNode):
            stack += [(part, depth + 1) for pair in current.value for part in pair]
    return True, deep


def _fast_load(text: str) -> object:
    """The document as _SpecLoader reads it: through libyaml where the document is plain (no alias) and parses
    cleanly, else through _SpecLoader itself, which gives every refusal its precise message. A plain document nested
    too deeply is refused at the node _SpecLoader would refuse (the Python scanner is slow through deep nesting)."""
    if _CSpecLoader is not None:
        loader = _CSpecLoader(text)
        try:
            node = loader.get_single_node()
            plain, deep = _plain_tree(node) if node is not None else (False, None)
            if plain and deep is None:
                return loader.construct_document(node)
        except yaml.YAMLError:
            plain, deep = False, None            # the Python loader names the problem, with its position
        finally:
            loader.dispose()
        if plain:
            raise _too_deep(deep.start_mark)
    return yaml.load(text, Loader=_SpecLoader)  # noqa: S506 - a SafeLoader subclass


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


__all__ = ["parse_yaml", "read_yaml"]

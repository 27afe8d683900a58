"""What a name means: a bundled spec by name or a file by path, and a GPU by any of its names.

A GPU is found by its file name, display name or an alias (nvidia-smi's name), ignoring case, spaces, dashes and
the vendor, or by the start of one of them ending between words; a name stating a board form (PCIe, SXM, NVL)
never resolves to a GPU of another form.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from functools import lru_cache
from pathlib import Path

from ..errors import SpecError, UnknownNameError
from ..files import read_yaml
from . import bundled


def _looks_like_path(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml")) or "/" in ref or "\\" in ref


def spec_path(kind: str, label: str, ref: str | os.PathLike) -> Path:
    """The YAML file a reference names: a path as given (str or Path), or a bundled spec by name."""
    if isinstance(ref, os.PathLike):
        ref = os.fspath(ref)
    if not isinstance(ref, str):
        raise UnknownNameError(label, repr(ref), bundled.available(kind), None)
    if _looks_like_path(ref):
        path = Path(ref).expanduser()
        if not path.is_file():
            raise SpecError(str(path), None, None, "no such file")
        return path
    names = bundled.available(kind)
    key = ref.strip().lower()
    if key in names:
        return bundled.data_dir(kind) / f"{key}.yaml"
    if kind == "hardware":
        return bundled.data_dir(kind) / f"{resolve_gpu_name(ref, label)}.yaml"
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
    for name in bundled.available("hardware"):
        path = bundled.data_dir("hardware") / f"{name}.yaml"
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


__all__ = ["resolve_gpu_name", "spec_path"]

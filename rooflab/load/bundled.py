"""The bundled specs: where their folders are and what names they hold."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError, shown

_PACKAGE_DIR = Path(__file__).resolve().parents[1]

#: The folders of bundled specs `available` lists.
SPEC_KINDS = ("hardware", "models")


def data_dir(kind: str) -> Path:
    """Folder of bundled files of one kind ("hardware", "models", "measurements").

    In a wheel they live in rooflab/_data/<kind>; in a source checkout, at the top of the repo.
    """
    installed = _PACKAGE_DIR / "_data" / kind
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / kind


def available(kind: str) -> list[str]:
    """Names of the bundled specs of one kind ("hardware" or "models"); any other kind is an InputError."""
    if kind not in SPEC_KINDS:
        raise InputError(f"kind must be one of {', '.join(SPEC_KINDS)}, got {shown(kind)}")
    return sorted(p.stem for p in data_dir(kind).glob("*.yaml"))


__all__ = ["SPEC_KINDS", "available", "data_dir"]

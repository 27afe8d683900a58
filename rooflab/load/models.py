"""Models from any reference: a bundled name, a YAML file, or a Hugging Face config.json (the dispatch to rooflab.hf).

A config.json's model is read by rooflab.hf; here it gets the published parameter count of the bundled model with
the same architecture, where there is one, since the bundled YAMLs are what knows published counts.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from ..errors import SpecError
from ..specs import ModelSpec
from ..units import fmt_params
from .bundled import available
from .cache import bundled_model, yaml_model
from .names import spec_path


def _names_a_path(text: str) -> bool:
    """Whether a model reference is written as a path: it ends in .json / .yaml / .yml, holds a separator
    ('./qwen2.5-7b', 'configs/qwen'), starts with '~', or is an existing file. A bare word is a name."""
    return (text.endswith((".json", ".yaml", ".yml")) or "/" in text or os.sep in text
            or text.startswith("~") or Path(text).is_file())


def load_model(ref: str | os.PathLike) -> ModelSpec:
    """A model by bundled name (see `rooflab list models`), by path to a YAML file, or from a Hugging Face
    config.json: a path ending in .json, a folder holding one, or an 'org/name' id in the local cache (rooflab.hf).

    A local file or folder is read only where the reference is written as a path (`./qwen2.5-7b`, a separator,
    a file suffix, an existing file) or a bare word names no bundled model but a folder here; a bare word that is
    both a bundled model and a local folder is an error naming both, so a download never shadows a bundled name.
    """
    text = _hf_reference(ref)
    return yaml_model(ref) if text is None else load_hf_config(text)


def model_file(ref: str | os.PathLike) -> Path:
    """The file load_model(ref) reads (the config.json, the YAML, the bundled YAML), for a command that writes
    to keep its outputs off it."""
    text = _hf_reference(ref)
    if text is None:
        return spec_path("models", "model", ref).resolve()
    from ..hf import locate

    return locate(text).path.resolve()


def _hf_reference(ref: str | os.PathLike) -> "str | None":
    """The reference as rooflab.hf reads it where it names a config.json (a folder here gets './'), else None (a
    bundled name or a YAML file); a bare word naming both a bundled model and a folder here is a SpecError."""
    text = os.fspath(ref) if isinstance(ref, (str, os.PathLike)) else ""
    if text and not _names_a_path(text) and Path(text).is_dir():
        if text.strip().lower() in available("models"):
            raise SpecError(text, None, None,
                            f"is both the bundled model '{text.strip().lower()}' and a folder here: write "
                            f"'./{text}' for the folder, or run from another folder for the bundled model")
        text = os.path.join(".", text)
    if text and (_names_a_path(text) or Path(text).is_dir() or "/" in text):
        from ..hf import is_hf_reference   # only for what may be a config.json: the CLI's start-up stays light

        if is_hf_reference(text):
            return text
    return None


def load_hf_config(ref: str | os.PathLike) -> ModelSpec:
    """A model from a config.json path, a folder holding one, or an 'org/name' id in the local Hugging Face cache,
    with its derived parameter count in display_name, beside the published one where a bundled model has the same
    architecture (whose published count is then used)."""
    from ..hf import from_hf_config, locate, read_json  # lazily, as in load_model

    found = locate(ref)
    spec = from_hf_config(read_json(found.path), str(found.path), found.name)
    return with_published_count(spec, found.label)


def with_published_count(spec: ModelSpec, label: str) -> ModelSpec:
    """The spec with its derived parameter count in display_name, and, where a bundled model has the same
    architecture, that model's published count (and what it includes) beside it."""
    from ..hf import same_architecture

    derived = fmt_params(spec.derived_parameters)
    for bundled_name in available("models"):
        bundled = bundled_model(bundled_name)
        if bundled.num_parameters is not None and same_architecture(spec, bundled):
            shown = (f"{label} (config.json: {derived} parameters derived; published "
                     f"{fmt_params(bundled.num_parameters)} as bundled '{bundled_name}')")
            return dataclasses.replace(spec, display_name=shown, num_parameters=bundled.num_parameters,
                                       parameters_note=bundled.parameters_note)
    return dataclasses.replace(spec, display_name=f"{label} (config.json: {derived} parameters derived)")


__all__ = ["load_hf_config", "load_model", "model_file", "with_published_count"]

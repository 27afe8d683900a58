"""Hugging Face config.json files as model specs, and model specs as config.json files.

    read.py      find a config.json (a file, a folder, an id in the local cache) and parse it strictly
    families.py  one reader per architecture family, by the config's own rules (Llama ... Qwen3-Next)
    more_families.py  Phi-3/4, Cohere, Granite, OLMo 2, GLM-4.5, MiniMax-M2, DeepSeek-V3.2 (its indexer), and
                 the Mamba hybrids Jamba, Bamba, Granite 4.0-H (NemotronH and FalconH1 refused with the reason)
    vision.py    vision-language configs: the language model, and the vision tower counted as weights
    table.py     the dispatch table: architecture name -> reader, nesting, transformers' defaults
    common.py    what the families share: the layer stack, the MoE layout, dtype and weight formats
    export.py    export_hf_config: a spec as the config.json of an architecture that describes it
    writers.py   one config.json writer per architecture (hybrid_writers.py: Jamba, Bamba, Granite 4.0-H)

    from_hf_config(data, where)   a parsed config.json -> ModelSpec (errors name `where`, the field, the value)
    locate(ref), read_json(path)  a path, folder or cached 'org/name' id -> the config.json file, its mapping
    same_architecture(a, b)       whether two specs differ only in names, source and the published count
    export_hf_config(model)       ModelSpec -> a config.json mapping that from_hf_config reads back to the
                                  same spec (up to name, display_name, source and the published count)

rooflab.load.load_hf_config(ref) reads a config.json as a model with the published count of the bundled model of
the same architecture: the bundled specs live in rooflab.load, which imports rooflab.hf, never the other way.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from ..errors import SpecError
from ..specs import ModelSpec
from .common import FP16_NOT_SUPPORTED, mtp_layers
from .export import export_hf_config
from .families import EXCLUDED
from .quant import unquantized_parameters
from .read import Fields, is_hf_reference, locate, read_json
from .table import ARCHITECTURES




def architecture(data: dict, where: str) -> str:
    """The config's architecture (the first of `architectures`), which must be one rooflab reads."""
    listed = data.get("architectures")
    known = ", ".join(ARCHITECTURES)
    if not listed:
        raise SpecError(where, "architectures", listed, f"missing: rooflab reads {known}")
    if not isinstance(listed, list) or not all(isinstance(a, str) for a in listed):
        raise SpecError(where, "architectures", listed, "must be a list of architecture names")
    for arch in listed:
        if arch not in ARCHITECTURES:
            raise SpecError(where, "architectures", arch, f"unsupported architecture; rooflab reads {known}")
    families = {ARCHITECTURES[arch].read for arch in listed}
    if len(families) > 1:
        raise SpecError(where, "architectures", listed, "names architectures of different families")
    return listed[0]


def from_hf_config(data: dict, where: str, name: Optional[str] = None) -> ModelSpec:
    """A parsed config.json's text model as a ModelSpec; every problem a SpecError naming `where`, the field
    (as the file spells it: 'text_config.sliding_window') and the value."""
    if not isinstance(data, dict):
        raise SpecError(where, None, type(data).__name__, "expected a JSON object at the top level")
    arch = architecture(data, where)
    family = ARCHITECTURES[arch]
    text, prefix = data, ""
    if family.nested:
        text, prefix = data.get("text_config"), "text_config."
        if not isinstance(text, dict):
            raise SpecError(where, "text_config", text, f"missing: {arch} keeps its text model there")
    fields = family.read(Fields(text, where, prefix, data if family.nested else {}, family.defaults))
    fields.setdefault("fp16_supported", data.get("model_type") not in FP16_NOT_SUPPORTED)
    fields.setdefault("mtp_layers", mtp_layers(Fields(text, where, prefix, data if family.nested else {}, {}),
                                               data.get("model_type")))
    excluded = fields.pop(EXCLUDED, ())
    label = name or str(data.get("_name_or_path") or "").rstrip("/").split("/")[-1] or arch
    try:
        spec = ModelSpec(name=label, display_name=label, source=where, **fields)
        return _with_exclusions(spec, excluded) if excluded else spec
    except SpecError as exc:
        raise exc.at(where) from None


def _with_exclusions(spec: ModelSpec, excluded: tuple[str, ...]) -> ModelSpec:
    """The spec with the parameters its exclusion list keeps unquantized: a component kept whole leaves the
    formats (its layers stay in the dtype), one kept in part is counted in unquantized_parameters."""
    kept = unquantized_parameters(spec, excluded)
    counts = spec.parameters.by_component()
    whole = {c for c, n in kept.items() if n == counts[c]}
    formats = dict(spec.quantization)
    if whole and "linear" in formats:
        fmt = formats.pop("linear")
        formats.update({c: fmt for c in ("attention", "mlp", "experts", "shared_experts")})
    for component in whole:
        formats.pop({"dense_mlp": "mlp"}.get(component, component), None)
    if set(formats) == {"attention", "mlp", "experts", "shared_experts"} and len(set(formats.values())) == 1:
        formats = {"linear": formats["attention"]}
    partial = {c: n for c, n in kept.items() if c not in whole}
    return dataclasses.replace(spec, quantization=formats, unquantized_parameters=partial)


def same_architecture(model: ModelSpec, bundled: ModelSpec) -> bool:
    """Equal but for name, display_name, source and the published count; the dtype counts only where both
    name one (older bundled YAMLs leave it out, and gpt-oss's config.json gives none)."""
    both = model.weight_dtype is not None and bundled.weight_dtype is not None

    def key(m: ModelSpec) -> ModelSpec:
        dtype = m.weight_dtype if both else None
        return dataclasses.replace(m, name="-", display_name="-", source="-", num_parameters=None,
                                   parameters_note=None, weight_dtype=dtype)

    return key(model) == key(bundled)


#: Names that moved to rooflab.load (which holds the bundled models' published counts), kept here for one release.
_MOVED = {"load_hf_config": "rooflab.load.models", "with_published_count": "rooflab.load.models"}


def __getattr__(name: str):
    """rooflab.hf.load_hf_config and with_published_count, moved to rooflab.load, for one release (a warning says
    where). rooflab.load imports rooflab.hf, never the other way, so the old name is looked up only when used."""
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    import warnings

    warnings.warn(f"rooflab.hf.{name} moved to rooflab.load.{name}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(_MOVED[name]), name)


__all__ = ["ARCHITECTURES", "export_hf_config", "from_hf_config", "is_hf_reference", "locate", "read_json",
           "same_architecture"]

"""`rooflab fit`'s files: campaigns in, a GPU YAML with its `fitted:` list out."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional, Sequence

from ..cudnn_kernel import CUDNN_SHAPES_IMPL
from ..errors import InputError
from ..load import clear_cache, load_gpu, parse_yaml, spec_from_mapping
from ..output import write_atomic
from ..specs import FittedModel, GpuSpec
from .validate import Validation, fitted_models, read_campaigns, validate_rows


def fit_campaigns(files: Sequence[Path], gpu_ref: Optional[str] = None) -> tuple[Validation, tuple[FittedModel, ...], str]:
    """Fit every (kernel, impl) on the campaigns together (alternate rows fitted, the others held out).

    All files must be measured on one GPU spec (`gpu_ref` where given). Returns the validation, the models
    for the YAML and the spec's name.
    """
    if not files:
        raise InputError("give at least one measurement file to fit")
    meta, rows, spec = read_campaigns(files, gpu_ref)
    gpu = load_gpu(spec)
    validation = validate_rows(meta, rows, gpu)
    return validation, fitted_models(validation, [Path(p).name for p in files]), spec


#: An entry's note, written after it as a YAML comment: what its median and worst error are measured on, where that
#: is not its own `campaigns` (a kernel model: fitted on its runs, banded on the campaigns' rows:
#: rooflab.fit.cudnn_fit).
ENTRY_NOTES = {CUDNN_SHAPES_IMPL: "errors: this entry as stored (its c0) on the held-out torch_cudnn rows of its "
                                   "c0's campaigns (rooflab.fit.cudnn_fit.campaign_held_out)"}


def fitted_yaml(models: Sequence[FittedModel]) -> str:
    """The `fitted:` list, as the last section of a GPU YAML (one flow mapping per model, ENTRY_NOTES after it)."""
    lines = ["fitted:                                  # written by `rooflab fit`; do not edit by hand"]
    for m in models:
        bits = [f"kernel: {m.kernel.value}", f"impl: {m.impl}", f"overhead_s: {m.overhead_s:.4e}",
                f"efficiency: {m.efficiency:.4f}", f"exp_overlap: {m.exp_overlap:g}"]
        if m.units_per_sm is not None:
            bits.append(f"units_per_sm: {m.units_per_sm:g}")
        if m.unit_overhead_tiles is not None:
            bits.append(f"unit_overhead_tiles: {m.unit_overhead_tiles:g}")
        if m.memory_efficiency is not None:
            bits.append(f"memory_efficiency: {m.memory_efficiency:.4f}")
        if m.fp8_overhead_rows is not None:
            bits.append(f"fp8_overhead_rows: {m.fp8_overhead_rows:g}")
        if m.tile_s is not None:
            bits += [f"tile_s: {m.tile_s:.4e}", f"max_tokens: {m.max_tokens}"]
        bits += [f"rows: {m.rows}", f"held_out_rows: {m.held_out_rows}"]
        if m.median_error is not None:
            bits += [f"median_error: {m.median_error:.4f}", f"worst_error: {m.worst_error:.4f}"]
        bits.append("campaigns: [" + ", ".join(m.campaigns) + "]")
        note = f"  # {ENTRY_NOTES[m.impl]}" if m.impl in ENTRY_NOTES else ""
        lines.append("  - {" + ", ".join(bits) + "}" + note)
    return "\n".join(lines) + "\n"


def with_fitted(spec_text: str, models: Sequence[FittedModel]) -> str:
    """A GPU YAML's text with its `fitted:` section replaced (or added at the end); everything else kept."""
    kept = re.sub(r"(?ms)^fitted:.*?(?=^\S|\Z)", "", spec_text).rstrip("\n")
    return kept + "\n" + fitted_yaml(models)


def kept_models(source_text: str, where: str, models: Sequence[FittedModel]) -> tuple[FittedModel, ...]:
    """The source YAML's fitted models of (kernel, impl) pairs these campaigns did not refit (a GEMM or a
    collective fitted from other files): kept, so a refit of some kernels does not drop the others."""
    refitted = {m.key for m in models}
    old = spec_from_mapping(GpuSpec, parse_yaml(source_text, where), where).fitted
    return tuple(m for m in old if m.key not in refitted)


def write_fitted(source: Path, target: Path, models: Sequence[FittedModel], inputs: Sequence[Path] = ()) -> GpuSpec:
    """Write `source` with the fitted section into `target`, atomically; refuse a file rooflab could not read.

    The source's fits of (kernel, impl) pairs not among `models` stay (kept_models)."""
    source_text = Path(source).read_text()
    models = tuple(models) + kept_models(source_text, str(source), models)
    text = with_fitted(source_text, models)
    spec = spec_from_mapping(GpuSpec, parse_yaml(text, str(target)), str(target))
    write_atomic(target, text, inputs=list(inputs))
    clear_cache()
    return spec


__all__ = ["ENTRY_NOTES", "fit_campaigns", "fitted_yaml", "kept_models", "with_fitted", "write_fitted"]

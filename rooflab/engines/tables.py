"""Engine-faithful capacities and log explanations -> Tables (output.py renders them). No arithmetic beyond units.

This module was engines/frame.py; that path re-exports its names for one release."""

from __future__ import annotations

from ..output import Column, Table
from ..units import GiB, fmt_bytes
from .explain import LogExplanation
from .result import EngineCapacity, Role

_LABELS = {"cuda_visible_total": "CUDA-visible total", "margin": "margin", "weights": "weights",
           "activation_peak": "activation peak", "non_torch": "non-torch memory", "kv_cache": "KV cache",
           "in_use_before_start": "in use before start", "unattributed": "unattributed",
           "other_processes": "other processes", "mamba_state": "state pool", "lora_buffers": "LoRA buffers"}


def _term_lines(c: EngineCapacity) -> list[tuple[str, str]]:
    lines = []
    for t in c.terms:
        sign = {Role.total: "", Role.kv: "= ", Role.margin: "- ", Role.used: "- "}[t.role]
        lines.append((_LABELS.get(t.name, t.name), f"{sign}{_gib(t.bytes)}  {t.source}"))
    largest = c.largest_term
    lines.append(("largest term", f"{_LABELS.get(largest.name, largest.name)} ({_gib(largest.bytes)})"))
    unit = "block" if c.engine == "vllm" else "page"
    groups = f", {c.num_groups} groups of layers share the pool" if c.num_groups > 1 else ""
    lines.append((unit, f"{c.block_size} tokens, {fmt_bytes(c.block_bytes)}{groups}"))
    return lines


def _title(c: EngineCapacity) -> str:
    tp = f"{c.tensor_parallel} x " if c.tensor_parallel > 1 else ""
    tp = f"PP {c.pipeline_parallel} x TP {c.tensor_parallel} x " if c.pipeline_parallel > 1 else tp
    knob = "gpu_memory_utilization" if c.engine == "vllm" else "mem_fraction_static"
    return (f"{c.model} on {tp}{c.gpu}: {c.releases} accounting ({c.accounting}), {knob} {c.utilization:g}, "
            f"kv-cache-dtype {c.kv_cache_dtype}, max_model_len {c.max_model_len:,}; bytes per GPU"
            + (f" of the binding {c.binding_stage}" if c.binding_stage else ""))


def _csv_record(c: EngineCapacity) -> dict:
    record = {k: v for k, v in c.to_dict().items() if not isinstance(v, (list, dict))}
    record.update({f"{t.name}_bytes": t.bytes for t in c.terms})
    return record


def engine_table(c: EngineCapacity) -> Table:
    """An engine-faithful capacity as label / value lines: the terms, then the figures as the engine logs them."""
    lines = _term_lines(c) + [("engine prints", line) for line in c.lines]
    notes = (f"engine-faithful estimate: {c.releases}'s own accounting with its unlogged terms modelled; "
             "without --engine, `rooflab capacity` prints rooflab's bound instead",) + c.notes
    record = _csv_record(c)
    columns = tuple(Column(f"{i}", label, lambda _, text=text: text) for i, (label, text) in enumerate(lines))
    return Table(columns, (record,), doc=c.to_dict(), title=_title(c), notes=notes, vertical=True,
                 csv_keys=tuple(record))


def explanation_table(x: LogExplanation) -> Table:
    """A log explained: the terms with the lines they come from, the checks, rooflab's own estimate, a what-if."""
    r = x.reproduced
    lines = [("setting", line) for line in x.settings_taken] + _term_lines(r) + \
        [("rebuilt, as printed", line) for line in r.lines]
    for check in x.checks:
        lines.append((f"check {check.figure}", f"logged {_figure(check.figure, check.logged)}, rebuilt "
                                               f"{_figure(check.figure, check.reproduced)} ({check.rel_error:+.2%})"))
    m = x.modelled
    tokens = x.check("kv_cache_tokens")
    versus = f" ({m.kv_cache_tokens / tokens.logged - 1:+.1%} against the log)" if tokens and tokens.logged else ""
    lines.append(("modelled, nothing read", f"{m.kv_cache_tokens:,} tokens, {fmt_bytes(m.kv_cache_bytes)} of KV "
                                             f"cache{versus}"))
    if x.what_if is not None:
        w = x.what_if
        unit = "blocks" if w.engine == "vllm" else "pages"
        lines.append((f"what-if {', '.join(x.changes)}", f"{w.kv_cache_tokens:,} tokens ({w.num_blocks:,} {unit} of "
                                                          f"{fmt_bytes(w.block_bytes)}), concurrency "
                                                          f"{w.max_concurrency:.2f}x at {w.max_model_len:,} tokens"))
        lines += [("  " + _LABELS.get(t.name, t.name), f"{_gib(t.bytes)}  {t.source}")
                  for t in w.terms if t.role in (Role.used, Role.kv)]
        lines += [("  what-if prints", line) for line in w.lines]
    formats = ", ".join(x.formats)
    notes = [f"read: {formats}", *r.notes]
    if x.anchored:
        notes.append("the log prints its KV figure but not every term: the missing terms are modelled, and the "
                     "'unattributed' term is what the logged figure implies beyond them")
    record = _csv_record(r)
    columns = tuple(Column(f"{i}", label, lambda _, text=text: text) for i, (label, text) in enumerate(lines))
    title = f"{x.log}: {_title(r)}"
    return Table(columns, (record,), doc=x.to_dict(), title=title, notes=tuple(notes), vertical=True,
                 csv_keys=tuple(record))


def _gib(n: int) -> str:
    """Terms in GiB throughout (the engines print GiB), so they line up."""
    return f"{n / GiB:.3f} GiB"


def _figure(name: str, value: float) -> str:
    if name.endswith("bytes"):
        return f"{value / GiB:.3f} GiB"
    if name == "max_concurrency":
        return f"{value:.2f}x"
    return f"{int(value):,}"


#: The old names (they returned a text Table, not a pandas frame), kept for one release.
engine_frame = engine_table
explanation_frame = explanation_table

__all__ = ["engine_table", "explanation_table"]

"""A published rate for a report's --shape as time under its source's FLOP convention, set against the floor."""

from __future__ import annotations

import dataclasses

from ..cost.common import real_number
from ..errors import InputError
from ..shape import AttentionShape
from ..vocab import Phase, Variant
from .result import PublishedTime, Report


#: No published attention kernel reaches 100 PFLOP/s (rooflab.published.MAX_TFLOPS).
MAX_PUBLISHED_TFLOPS = 1e5


def with_published_rate(report: Report, shape: AttentionShape, tflops: float, convention: str = "fa") -> Report:
    """`report` (of `shape`: report --shape) with a published rate for that shape as time under `convention` (fa:
    the FlashAttention papers' 4 B H T^2 d, halved when causal; fa_no_half: FlashMLA's, never halved), set against
    the report's lowest floor and that row's prediction (PublishedTime). Decode: T_q = the report's q_len new tokens
    over T_kv = the context, never halved (every query sees the whole context)."""
    from ..published import Convention, convention_flops

    if not isinstance(report, Report) or not isinstance(shape, AttentionShape):
        raise InputError(f"with_published_rate takes a Report and an AttentionShape, got {type(report).__name__} and "
                         f"{type(shape).__name__}")
    tflops = real_number(tflops, "--published-tflops (TFLOP/s)", 0, MAX_PUBLISHED_TFLOPS, lo_open=True)
    chosen = Convention.of(convention, "--convention")
    if chosen is Convention.time:
        raise InputError("--convention time: a source that gives times has no rate to convert; give fa or fa_no_half")
    h = shape.heads
    prefill = report.phase is Phase.prefill
    seq_q, causal = (shape.seq_len, report.causal) if prefill else (report.q_len, False)
    flops = convention_flops(chosen, shape.batch, h.num_qo_heads, seq_q, shape.seq_len, h.head_dim, h.value_dim,
                             causal)
    floor = min((r for r in report.rows if r.variant != Variant.mixed.value), key=lambda r: r.t_floor_s)
    published = PublishedTime(float(tflops), chosen.value, flops, flops / (tflops * 1e12), floor.label or floor.variant,
                              float(floor.t_floor_s), floor.t_predicted_s, floor.predicted_impl)
    return dataclasses.replace(report, published=published)

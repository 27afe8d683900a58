"""Specs + workload -> Report: what `rooflab report` prints, computed here, rendered in render.py.

A Report is the JSON contract of `rooflab report`: top-level workload fields, `facts` (a typed,
frozen PrefillFacts or DecodeFacts) and `rows`, each with at least variant, flops, hbm_bytes,
intensity_flop_per_byte, t_compute_s, t_memory_s, t_floor_s and bound, all per layer in SI units.
The facts are computed by prefill_facts and decode_facts, which explain and the charts call too.

    result.py          Report, PrefillFacts, DecodeFacts, ModelTotal, PublishedTime (the typed results)
    prefill.py         prefill_report: naive and flash for each layer type
    decode.py          decode_report: paged and split-KV (and a mixed chunked-prefill row) for each layer type
    facts.py           prefill_facts, decode_facts
    common.py          what both share: workload checks, predictions beside the rows, the model's totals
    published_rate.py  with_published_rate: a published rate for a --shape, against the floor

Every name is importable from rooflab.report, as when this package was one module.
"""

from __future__ import annotations

from ..cost.layers import main_attention
from .common import decode_prediction, model_totals, once, prefill_prediction
from .decode import decode_report
from .facts import decode_facts, prefill_facts
from .prefill import prefill_report
from .published_rate import MAX_PUBLISHED_TFLOPS, with_published_rate
from .result import DecodeFacts, Facts, ModelTotal, PrefillFacts, PublishedTime, Report

#: The main softmax layer type, under its old name (explain imported it from here).
_main_attention = main_attention

__all__ = ["DecodeFacts", "Facts", "MAX_PUBLISHED_TFLOPS", "ModelTotal", "PrefillFacts", "PublishedTime", "Report",
           "decode_facts", "decode_prediction", "decode_report", "model_totals", "once", "prefill_facts",
           "prefill_prediction", "prefill_report", "with_published_rate"]

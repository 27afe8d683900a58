"""Numerics results -> text: the dtype limits and headroom of `rooflab numerics`, the state-precision table."""

from __future__ import annotations

import csv
import io
import json
from typing import Sequence

from .numerics import SoftmaxHeadroom, StateErrorRow
from .render import Format, table


def _headroom_records(h: SoftmaxHeadroom) -> list[tuple[str, str, float | int]]:
    """(key, label, value) for every figure shown; the same list feeds all four formats."""
    lim, fmt = h.limits, h.limits.format
    return [
        ("exponent_bits", "exponent bits", fmt.exponent_bits),
        ("mantissa_bits", "mantissa bits", fmt.mantissa_bits),
        ("bias", "exponent bias", fmt.bias),
        ("max_finite", "largest finite value", fmt.max_finite),
        ("min_normal", "smallest normal value", fmt.min_normal),
        ("min_subnormal", "smallest subnormal value", fmt.min_subnormal),
        ("overflow_logit", "exp(x) overflows above x =", lim.overflow_logit),
        ("max_finite_logit", "ln(largest finite)", lim.max_finite_logit),
        ("underflow_logit", "exp(x) rounds to 0 below x = (subnormals)", lim.underflow_logit),
        ("ftz_underflow_logit", "exp(x) flushed to 0 below x = (flush-to-zero)", lim.ftz_underflow_logit),
        ("seq_len", "logits in the row (N)", h.seq_len),
        ("logit_std", "logit std", h.logit_std),
        ("expected_max_logit_asymptotic", "expected max of N normal logits, asymptotic formula",
         h.expected_max_logit_asymptotic),
        ("expected_max_logit", "expected max of N normal logits, exact (quadrature)", h.expected_max_logit),
        ("headroom_logit", "headroom: overflow - expected max", h.headroom_logit),
        ("critical_logit_std", "logit std at which the expected max overflows", h.critical_logit_std),
    ]


def _number(x: float | int) -> str:
    if isinstance(x, int) or (x.is_integer() and abs(x) < 1e9):
        return f"{x:.0f}"
    return f"{x:.4f}" if 1e-3 <= abs(x) < 1e6 else f"{x:.6g}"


def render_headroom(h: SoftmaxHeadroom, fmt: Format = Format.table) -> str:
    """The exp range limits of a dtype and naive softmax's headroom, as a table, markdown, CSV or JSON."""
    records = _headroom_records(h)
    if fmt is Format.json:
        doc = {"dtype": h.limits.dtype.value, **{key: value for key, _, value in records}}
        return json.dumps(doc, indent=2) + "\n"
    if fmt is Format.csv:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["dtype"] + [key for key, _, _ in records])
        w.writerow([h.limits.dtype.value] + [value for _, _, value in records])
        return buf.getvalue()
    md = fmt is Format.markdown
    title = (f"{h.limits.format.name}: where exp(x) leaves the format (round to nearest even), "
             f"and naive softmax's headroom at N={h.seq_len}")
    rows = [[label, _number(value)] for _, label, value in records]
    note = ("logits assumed N(0, std^2); trained models have heavier tails, so the headroom is an "
            "upper bound. Safe and online softmax subtract the row max and never overflow.")
    parts = [f"## {title}" if md else title, "", table(["quantity", "value"], rows, markdown=md), "", note]
    return "\n".join(parts) + "\n"


def render_state_errors(rows: Sequence[StateErrorRow], fmt: Format = Format.table) -> str:
    """The state-precision error study: one line per (sequence length, precision)."""
    keys = ["seq_len", "precision", "max_rel_error", "median_rel_error", "storage_rel_error"]
    records = [{"seq_len": r.seq_len, "precision": r.precision.value, "max_rel_error": r.max_rel_error,
                "median_rel_error": r.median_rel_error, "storage_rel_error": r.storage_rel_error}
               for r in rows]
    if fmt is Format.json:
        return json.dumps(records, indent=2) + "\n"
    if fmt is Format.csv:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
        w.writeheader()
        w.writerows(records)
        return buf.getvalue()
    headers = ["N", "state", "max rel. error", "median rel. error", "storing o alone"]
    cells = [[f"{r.seq_len:,}", r.precision.value, f"{r.max_rel_error:.2e}", f"{r.median_rel_error:.2e}",
              f"{r.storage_rel_error:.2e}"] for r in rows]
    return table(headers, cells, markdown=fmt is Format.markdown) + "\n"

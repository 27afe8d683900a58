"""Numerics results -> text: the dtype limits and headroom of `rooflab numerics`, the state-precision table."""

from __future__ import annotations

from typing import Sequence

from .numerics import SoftmaxHeadroom, StateErrorRow
from .output import Column, Format, Table, csv_text, render


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


def headroom_table(h: SoftmaxHeadroom) -> Table:
    """The exp range limits of a dtype and naive softmax's headroom: quantity / value lines; CSV and JSON one record."""
    figures = _headroom_records(h)
    record = {"dtype": h.limits.dtype.value, **{key: value for key, _, value in figures}}
    title = (f"{h.limits.format.name}: where exp(x) leaves the format (round to nearest even), "
             f"and naive softmax's headroom at N={h.seq_len}")
    note = ("logits assumed N(0, std^2); trained models have heavier tails, so the headroom is an "
            "upper bound. Safe and online softmax subtract the row max and never overflow.")
    rows = tuple({"quantity": label, "value": _number(value)} for _, label, value in figures)
    return Table((Column("quantity", "quantity"), Column("value", "value")), rows, doc=record, title=title,
                 notes=(note,), csv_keys=tuple(record))


def render_headroom(h: SoftmaxHeadroom, fmt: Format = Format.table) -> str:
    """The exp range limits of a dtype and naive softmax's headroom, as a table, markdown, CSV or JSON."""
    shown = headroom_table(h)
    if Format(fmt) is Format.csv:   # CSV is the one record, not the displayed lines
        return csv_text([shown.doc], shown.csv_keys)
    return render(shown, fmt)


def state_error_table(rows: Sequence[StateErrorRow]) -> Table:
    """The state-precision error study: one record per (sequence length, precision)."""
    records = tuple({"seq_len": r.seq_len, "precision": r.precision.value, "max_rel_error": r.max_rel_error,
                     "median_rel_error": r.median_rel_error, "storage_rel_error": r.storage_rel_error}
                    for r in rows)
    columns = (Column("seq_len", "N", lambda r: f"{r['seq_len']:,}"), Column("precision", "state"),
               Column("max_rel_error", "max rel. error", lambda r: f"{r['max_rel_error']:.2e}"),
               Column("median_rel_error", "median rel. error", lambda r: f"{r['median_rel_error']:.2e}"),
               Column("storage_rel_error", "storing o alone", lambda r: f"{r['storage_rel_error']:.2e}"))
    return Table(columns, records)


def render_state_errors(rows: Sequence[StateErrorRow], fmt: Format = Format.table) -> str:
    """The state-precision error study: one line per (sequence length, precision)."""
    return render(state_error_table(rows), fmt)


#: The old names (they returned a text Table, not a pandas frame), kept for one release.
headroom_frame = headroom_table
state_error_frame = state_error_table

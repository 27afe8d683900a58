"""Validation and calibration results -> text (table, markdown, CSV, JSON)."""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING

from .render import Format, table
from .units import fmt_rate, fmt_seconds

if TYPE_CHECKING:
    from .bench.validate import Validation

_HEADERS = ["kernel", "impl", "rows", "floor/measured (datasheet)", "floor/measured (calibrated)",
            "achieved", "achieved", "fit: overhead", "fit: efficiency", "fit: units/SM",
            "held-out error median", "worst"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def render_validation(v: "Validation", fmt: Format = Format.table) -> str:
    if fmt is Format.json:
        return json.dumps(v.to_dict(), indent=2) + "\n"
    if fmt is Format.csv:
        buf = io.StringIO()
        fields = ["kernel", "impl", "rows", "fraction_of_floor_datasheet", "fraction_of_floor_calibrated",
                  "achieved_bytes_per_s", "achieved_flop_per_s", "overhead_s", "efficiency", "units_per_sm",
                  "held_out_rows", "median_error", "worst_error"]
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(fields)
        for g in v.groups:
            fit = g.fit
            w.writerow([g.kernel, g.impl, g.rows, g.fraction_of_floor_datasheet, g.fraction_of_floor_calibrated,
                        g.achieved_bytes_per_s, g.achieved_flop_per_s, fit.overhead_s if fit else "",
                        fit.efficiency if fit else "", (fit.units_per_sm or "") if fit else "", g.held_out_rows,
                        "" if g.median_error is None else g.median_error,
                        "" if g.worst_error is None else g.worst_error])
        return buf.getvalue()
    cells = []
    for g in v.groups:
        fit = g.fit
        cells.append([g.kernel, g.impl, str(g.rows), _pct(g.fraction_of_floor_datasheet),
                      _pct(g.fraction_of_floor_calibrated), fmt_rate(g.achieved_bytes_per_s, "B/s"),
                      fmt_rate(g.achieved_flop_per_s, "FLOP/s"),
                      fmt_seconds(fit.overhead_s) if fit else "-", _pct(fit.efficiency) if fit else "-",
                      f"{fit.units_per_sm:g}" if fit and fit.units_per_sm else "-",
                      _pct(g.median_error), _pct(g.worst_error)])
    md = fmt is Format.markdown
    meta = v.meta
    head = (f"measured on {meta.get('device_name', '?')} ({meta.get('date', '?')}, driver {meta.get('driver', '?')}, "
            f"CUDA {meta.get('cuda_runtime', '?')}, CuPy {meta.get('cupy', '?')}, torch {meta.get('torch', '?')}), "
            f"predicted with {v.gpu} {v.ceilings} ceilings")
    note = ("floor/measured: median over the kernel's rows of t_floor / t_measured (1.0 = on the roofline); "
            "achieved: median bytes/s and FLOP/s; fit on alternate rows, error |predicted - measured| / measured "
            "on the held-out rows only")
    return "\n".join([("## " if md else "") + head, "", table(_HEADERS, cells, markdown=md), "",
                      note]) + "\n"

"""Validation results -> a Frame: one record per (kernel, implementation), rendered by output.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import Column, Format, Frame, render
from .units import fmt_rate, fmt_seconds

if TYPE_CHECKING:
    from .bench.validate import GroupSummary, Validation

_CSV_KEYS = ("kernel", "impl", "rows", "fraction_of_floor_datasheet", "fraction_of_floor_calibrated",
             "achieved_bytes_per_s", "achieved_flop_per_s", "overhead_s", "efficiency", "units_per_sm",
             "exp_overlap", "unit_overhead_tiles", "fitted_rows", "held_out_rows", "median_error", "worst_error")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _record(g: "GroupSummary") -> dict[str, Any]:
    fit = g.fit
    return {"kernel": g.kernel, "impl": g.impl, "rows": g.rows,
            "fraction_of_floor_datasheet": g.fraction_of_floor_datasheet,
            "fraction_of_floor_calibrated": g.fraction_of_floor_calibrated,
            "achieved_bytes_per_s": g.achieved_bytes_per_s, "achieved_flop_per_s": g.achieved_flop_per_s,
            "overhead_s": fit.overhead_s if fit else None, "efficiency": fit.efficiency if fit else None,
            "units_per_sm": fit.units_per_sm if fit else None, "exp_overlap": fit.exp_overlap if fit else None,
            "unit_overhead_tiles": fit.unit_overhead_tiles if fit else None,
            "fitted_rows": g.fitted_rows, "held_out_rows": g.held_out_rows,
            "median_error": g.median_error, "worst_error": g.worst_error}


def validation_frame(v: "Validation") -> Frame:
    """Per kernel and implementation: floor fractions, achieved rates, the fit and its held-out error."""
    columns = (
        Column("kernel", "kernel"), Column("impl", "impl"), Column("rows", "rows"),
        Column("fraction_of_floor_datasheet", "floor/measured (datasheet)",
               lambda r: _pct(r["fraction_of_floor_datasheet"])),
        Column("fraction_of_floor_calibrated", "floor/measured (calibrated)",
               lambda r: _pct(r["fraction_of_floor_calibrated"])),
        Column("achieved_bytes_per_s", "achieved", lambda r: fmt_rate(r["achieved_bytes_per_s"], "B/s")),
        Column("achieved_flop_per_s", "achieved", lambda r: fmt_rate(r["achieved_flop_per_s"], "FLOP/s")),
        Column("overhead_s", "fit: overhead", lambda r: "-" if r["overhead_s"] is None else fmt_seconds(r["overhead_s"])),
        Column("efficiency", "fit: efficiency", lambda r: _pct(r["efficiency"])),
        Column("units_per_sm", "fit: units/SM", lambda r: f"{r['units_per_sm']:g}" if r["units_per_sm"] else "-"),
        Column("exp_overlap", "fit: exp serial", lambda r: "-" if r["exp_overlap"] is None else f"{r['exp_overlap']:g}"),
        Column("unit_overhead_tiles", "fit: tiles a unit",
               lambda r: "-" if r["unit_overhead_tiles"] is None else f"{r['unit_overhead_tiles']:g}"),
        Column("median_error", "held-out error median", lambda r: _pct(r["median_error"])),
        Column("worst_error", "worst", lambda r: _pct(r["worst_error"])),
    )
    meta = v.meta
    head = (f"measured on {meta.get('device_name', '?')} ({meta.get('date', '?')}, driver {meta.get('driver', '?')}, "
            f"CUDA {meta.get('cuda_runtime', '?')}, CuPy {meta.get('cupy', '?')}, torch {meta.get('torch', '?')}), "
            f"predicted with {v.gpu} {v.ceilings} ceilings")
    where = (f"fitted on {', '.join(v.fit_from)} (other campaigns), every row here held out" if v.fit_from
             else "fitted on alternate rows, error on the held-out rows only")
    note = ("floor/measured: median over the kernel's rows of t_floor / t_measured (1.0 = on the roofline); "
            f"achieved: median bytes/s and FLOP/s; model c0 + t_model / eta {where} (tiles a unit: the fixed "
            "cost of a flash query tile in key tiles, with whole tiles priced); "
            "error |predicted - measured| / measured")
    return Frame(columns, tuple(_record(g) for g in v.groups), doc=v.to_dict(), title=head, notes=(note,),
                 csv_keys=_CSV_KEYS)


def render_validation(v: "Validation", fmt: Format = Format.table) -> str:
    return render(validation_frame(v), fmt)

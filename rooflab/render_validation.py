"""Validation results -> a Table: one record per (kernel, implementation), rendered by output.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import Column, Format, Table, render
from .predict import MAX_AUTO_ERROR
from .units import fmt_rate, fmt_seconds

if TYPE_CHECKING:
    from .fit.validate import GroupSummary, Validation

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


def _name(kernel) -> str:
    return getattr(kernel, "value", kernel)


def _holds(r: dict[str, Any]) -> str:
    if r["median_error"] is None:
        return "-"
    return "yes" if r["median_error"] <= MAX_AUTO_ERROR else "NO"


def validation_table(v: "Validation", wide: bool = False) -> Table:
    """Per kernel and implementation: floor fractions, the fit and its held-out error (`wide`: achieved rates and
    every fitted constant too). The title names each fit that does not hold (held-out median error above
    predict.MAX_AUTO_ERROR, so never chosen automatically); a note explains an efficiency above 100%."""
    keys = (Column("kernel", "kernel"), Column("impl", "impl"), Column("rows", "rows"))
    floors = (Column("fraction_of_floor_datasheet", "floor/measured (datasheet)",
                     lambda r: _pct(r["fraction_of_floor_datasheet"])),
              Column("fraction_of_floor_calibrated", "floor/measured (calibrated)",
                     lambda r: _pct(r["fraction_of_floor_calibrated"])))
    achieved = (Column("achieved_bytes_per_s", "achieved", lambda r: fmt_rate(r["achieved_bytes_per_s"], "B/s")),
                Column("achieved_flop_per_s", "achieved", lambda r: fmt_rate(r["achieved_flop_per_s"], "FLOP/s")))
    overhead = Column("overhead_s", "fit: overhead",
                      lambda r: "-" if r["overhead_s"] is None else fmt_seconds(r["overhead_s"]))
    efficiency = Column("efficiency", "fit: efficiency", lambda r: _pct(r["efficiency"]))
    constants = (Column("units_per_sm", "fit: units/SM",
                        lambda r: f"{r['units_per_sm']:g}" if r["units_per_sm"] else "-"),
                 Column("exp_overlap", "fit: exp serial",
                        lambda r: "-" if r["exp_overlap"] is None else f"{r['exp_overlap']:g}"),
                 Column("unit_overhead_tiles", "fit: tiles a unit",
                        lambda r: "-" if r["unit_overhead_tiles"] is None else f"{r['unit_overhead_tiles']:g}"))
    errors = (Column("median_error", "held-out error median", lambda r: _pct(r["median_error"])),
              Column("worst_error", "worst", lambda r: _pct(r["worst_error"])),
              Column("holds", "holds", _holds))
    if wide:
        columns = (*keys, *floors, *achieved, overhead, efficiency, *constants, *errors)
    else:                                 # short headers, so that the default view fits 120 columns
        columns = (*keys, Column(floors[0].key, "floor/t datasheet", floors[0].shown),
                   Column(floors[1].key, "calibrated", floors[1].shown), Column("efficiency", "efficiency",
                                                                                 efficiency.shown),
                   Column("median_error", "held-out median", errors[0].shown), *errors[1:])
    meta = v.meta
    head = (f"measured on {meta.get('device_name', '?')} ({meta.get('date', '?')}, driver {meta.get('driver', '?')}, "
            f"CUDA {meta.get('cuda_runtime', '?')}, CuPy {meta.get('cupy', '?')}, torch {meta.get('torch', '?')}), "
            f"predicted with {v.gpu} {v.ceilings} ceilings")
    failing = [g for g in v.groups if g.median_error is not None and g.median_error > MAX_AUTO_ERROR]
    if failing:
        head += (f"; {len(failing)} fit{'s' if len(failing) > 1 else ''} do{'' if len(failing) > 1 else 'es'} not "
                 f"hold (held-out median error above {MAX_AUTO_ERROR:.0%}, never chosen automatically): "
                 + ", ".join(f"{_name(g.kernel)}/{g.impl} {g.median_error:.1%}" for g in failing))
    else:
        head += f"; every fit holds (held-out median error at most {MAX_AUTO_ERROR:.0%})"
    where = (f"fitted on {', '.join(v.fit_from)} (other campaigns), every row here held out" if v.fit_from
             else "fitted on alternate rows, error on the held-out rows only")
    note = ("floor/measured (floor/t): median over the kernel's rows of t_floor / t_measured (1.0 = on the "
            "roofline), against the datasheet and the calibrated ceilings; "
            f"model c0 + t_model / eta {where}; error |predicted - measured| / measured; holds: median error at "
            f"most {MAX_AUTO_ERROR:.0%}" + ("" if wide else "; --wide adds the achieved rates and every fitted "
                                            "constant (overhead, units/SM, exp serial, tiles a unit)"))
    notes = [note]
    above = [g for g in v.groups if g.fit is not None and g.fit.efficiency > 1]
    if above:
        notes.append("efficiency above 100% (" + ", ".join(f"{_name(g.kernel)}/{g.impl}" for g in above) + "): eta "
                     "is a fitted factor, not a share of the hardware. Above 1 the kernel ran faster than t_model "
                     "predicts at the calibrated ceilings: the model's terms (exps serial after the matrix work, "
                     "the parallelism model's idle SMs, whole tiles) over-price it, or it beats the calibrated "
                     "rates (one cuBLAS GEMM shape and one device copy, not the peak). Floors never use eta")
    notes += [f"predicted by a kernel model: {_name(g.kernel)}/{g.impl} by {g.model}, the model of the kernel it "
              f"launches (fitted on other runs, never on these rows; c0 from these rows' fit), as every command "
              f"predicts it; `rooflab fit` stores the campaigns' own fit (held-out median "
              f"{_pct(g.campaign_median_error)}, worst {_pct(g.campaign_worst_error)}), whose c0 the model takes"
              for g in v.groups if g.model]
    return Table(columns, tuple({**_record(g), "holds": None} for g in v.groups), doc=v.to_dict(), title=head,
                 notes=tuple(notes), csv_keys=_CSV_KEYS, key_columns=2)


def render_validation(v: "Validation", fmt: Format = Format.table, wide: bool = False) -> str:
    return render(validation_table(v, wide), fmt)


#: The old names (they returned a text Table, not a pandas frame), kept for one release.
validation_frame = validation_table

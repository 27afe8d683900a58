"""The predicted time in a derivation: the fitted model of one implementation, beside the physical floor.

    t_predicted = c0 + t_launch / eta

t_launch is the launches at the GPU's calibrated roofs with the fit's parallelism, exp and tile terms
(rooflab.predict.model_time, the one place that formula lives); c0 and eta are the fit's overhead and
efficiency from the GPU YAML's `fitted:` list. The step is checked against rooflab.predict.predict_time,
which the report uses, so explain and report cannot disagree.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..cost.common import Cost
from ..cost.flash import FlashCost
from ..predict import predict_time, prediction_fit, prediction_model_time, priced_cost
from ..specs import GpuSpec
from ..units import DType, fmt_seconds
from ..vocab import Kernel
from .derivation import Unit, _Derivation


def explain_prediction(d: _Derivation, gpu: GpuSpec, kernel: Kernel, price: Callable[[Optional[int], float], Cost],
                       dtype: DType, impl: Optional[str] = None) -> tuple[str, ...]:
    """A 'Predicted time' section for `kernel` on `gpu` (the report's choice of implementation, or `impl`), and a
    closing line; where the GPU has no fit, one line saying so and how to get one."""
    p = predict_time(gpu, kernel, price, dtype, impl, optional=True)
    if p is None:
        return (f"no fitted {kernel.value} model on {gpu.name}: only the floor (measure with `rooflab bench`, "
                f"fit with `rooflab fit`)",)
    fit = prediction_fit(gpu, kernel, p)
    k = fit.units_per_sm
    cost = priced_cost(fit, price, gpu)
    t_model, roofs, assumes = prediction_model_time(cost, fit, gpu, dtype, p.fitted_on)
    t_model = float(np.asarray(t_model))
    campaigns = ", ".join(fit.campaigns) if len(fit.campaigns) <= 2 else f"{len(fit.campaigns)} campaigns"
    where = "" if p.fitted_on is None else f", {p.provenance}"
    d.section(f"Predicted time ({p.impl}: a model fitted on {campaigns}{where}, not a bound)")
    parallel = f"{k:g} work units an SM" if k else "no parallelism term"
    if fit.unit_overhead_tiles is not None and isinstance(cost, FlashCost):
        tile = cost.tile
        d.given("w_tiles", float(np.asarray(cost.tile_work(fit.unit_overhead_tiles))),
                f"the work the kernel's {tile.block_q} x {tile.block_kv} tiles do over the visible pairs: whole "
                f"tiles, and {fit.unit_overhead_tiles:g} key tiles a query tile (fitted); F and E are priced x "
                "w_tiles (FlashCost.tile_work)")
    d.given("t_launch", t_model, f"the launches at {roofs.source.value} roofs ({parallel}, exp overlap "
                                f"{fit.exp_overlap:g}; rooflab.predict.model_time)"
                                + (f"; {assumes}" if assumes else ""))
    d.given("c0", fit.overhead_s, "fixed overhead a call (fitted)")
    d.given("eta", fit.efficiency, "efficiency against the model (fitted)")
    t = d.step("t_predicted", "c0 + t_launch / eta", p.t_predicted_s, Unit.seconds)
    held = f"; held-out median error {fit.median_error:.1%}" if fit.median_error is not None else ""
    return (f"predicted {fmt_seconds(t)} per layer for {p.impl} (fitted on {fit.rows} rows{held})",)


__all__ = ["explain_prediction"]

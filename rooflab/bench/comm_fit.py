"""Moved: the fits to rooflab.fit.comm_fit, `calibrate_collectives` (which runs the distributed bench) to
rooflab.measure.calibrate_comm. These names stay here for one release."""

from ..fit.comm_fit import *  # noqa: F401,F403
from ..fit.comm_fit import __all__ as _fit_names
from ..measure.calibrate_comm import calibrate_collectives

__all__ = [*_fit_names, "calibrate_collectives"]

"""Moved to rooflab.measure.calibrate; `rooflab.bench.calibrate` is the same module, kept for one release."""

import sys

from ..measure import calibrate as _moved

sys.modules[__name__] = _moved

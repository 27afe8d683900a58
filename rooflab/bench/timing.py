"""Moved to rooflab.measure.timing; `rooflab.bench.timing` is the same module, kept for one release."""

import sys

from ..measure import timing as _moved

sys.modules[__name__] = _moved

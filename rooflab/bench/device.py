"""Moved to rooflab.measure.device; `rooflab.bench.device` is the same module, kept for one release."""

import sys

from ..measure import device as _moved

sys.modules[__name__] = _moved

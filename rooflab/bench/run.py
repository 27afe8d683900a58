"""Moved to rooflab.measure.run; `rooflab.bench.run` is the same module, kept for one release."""

import sys

from ..measure import run as _moved

sys.modules[__name__] = _moved

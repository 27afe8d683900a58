"""Moved to rooflab.measure.ours; `rooflab.bench.ours` is the same module, kept for one release."""

import sys

from ..measure import ours as _moved

sys.modules[__name__] = _moved

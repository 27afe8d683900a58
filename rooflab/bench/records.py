"""Moved to rooflab.fit.records; `rooflab.bench.records` is the same module, kept for one release."""

import sys

from ..fit import records as _moved

sys.modules[__name__] = _moved

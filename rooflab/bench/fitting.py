"""Moved to rooflab.fit.fitting; `rooflab.bench.fitting` is the same module, kept for one release."""

import sys

from ..fit import fitting as _moved

sys.modules[__name__] = _moved

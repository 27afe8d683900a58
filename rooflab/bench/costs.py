"""Moved to rooflab.fit.costs; `rooflab.bench.costs` is the same module, kept for one release."""

import sys

from ..fit import costs as _moved

sys.modules[__name__] = _moved

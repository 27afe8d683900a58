"""Moved to rooflab.measure.cases; `rooflab.bench.cases` is the same module, kept for one release."""

import sys

from ..measure import cases as _moved

sys.modules[__name__] = _moved

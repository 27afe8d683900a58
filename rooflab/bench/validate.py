"""Moved to rooflab.fit.validate; `rooflab.bench.validate` is the same module, kept for one release."""

import sys

from ..fit import validate as _moved

sys.modules[__name__] = _moved

"""Moved to rooflab.fit.dist_validate; `rooflab.bench.dist_validate` is the same module, kept for one release."""

import sys

from ..fit import dist_validate as _moved

sys.modules[__name__] = _moved

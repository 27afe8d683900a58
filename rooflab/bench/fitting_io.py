"""Moved to rooflab.fit.fitting_io; `rooflab.bench.fitting_io` is the same module, kept for one release."""

import sys

from ..fit import fitting_io as _moved

sys.modules[__name__] = _moved

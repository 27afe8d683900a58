"""Moved to rooflab.fit.published_check; `rooflab.bench.published_check` is the same module, kept for one release."""

import sys

from ..fit import published_check as _moved

sys.modules[__name__] = _moved

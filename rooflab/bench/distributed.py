"""Moved to rooflab.measure.distributed.launch; `rooflab.bench.distributed` is the same module, kept for one
release."""

import sys

from ..measure.distributed import launch as _moved

sys.modules[__name__] = _moved

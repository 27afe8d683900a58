"""Moved to rooflab.measure.distributed.step; `rooflab.bench.step_bench` is the same module, kept for one release."""

import sys

from ..measure.distributed import step as _moved

sys.modules[__name__] = _moved

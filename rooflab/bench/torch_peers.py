"""Moved to rooflab.measure.torch_peers; `rooflab.bench.torch_peers` is the same module, kept for one release."""

import sys

from ..measure import torch_peers as _moved

sys.modules[__name__] = _moved

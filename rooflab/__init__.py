"""rooflab: an analytical roofline and memory calculator for LLM attention.

The data flow reads straight through:
YAML (hardware/, models/) -> specs (load.py, specs.py) -> cost (cost/) ->
prediction (roofline.py) -> rows (rows.py) -> report / plot / bench.
"""

from .errors import RooflabError, SpecError
from .load import available, load_gpu, load_model
from .specs import AttentionHeads, GpuSpec, ModelSpec
from .units import DType

__version__ = "0.1.0"

__all__ = ["AttentionHeads", "DType", "GpuSpec", "ModelSpec", "RooflabError", "SpecError",
           "available", "load_gpu", "load_model", "__version__"]

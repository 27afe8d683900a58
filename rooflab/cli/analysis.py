"""Old home of `rooflab report`, `capacity`, `numerics` and `list` (until session 8): the names kept importable here
for one release. The commands live in report.py, capacity.py, numerics.py and catalog.py."""

from .capacity import capacity
from .catalog import list_gpus, list_models
from .numerics import numerics
from .report import ShapeOpt, only_for_shape, report, shape_of

__all__ = ["ShapeOpt", "capacity", "list_gpus", "list_models", "numerics", "only_for_shape", "report", "shape_of"]

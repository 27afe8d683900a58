"""Moved: the rank context and timers to rooflab.measure.distributed.context, the check and collectives sections to
.collectives, the driver to .worker. These names stay here for one release, and
`python -m rooflab.bench.dist_worker` still runs one rank."""

import sys

from ..measure.distributed.collectives import COLLECTIVES, FULL_SIZES, TINY_SIZES, section_check, section_collectives
from ..measure.distributed.context import (Ctx, Times, as_cupy_cached, forget_views, free_memory, on_torch_stream,
                                           time_best, time_eager, time_graph)
from ..measure.distributed.worker import KERNELS, PG_TIMEOUT_S, SECTIONS, main, precompile, run

__all__ = ["COLLECTIVES", "Ctx", "FULL_SIZES", "KERNELS", "PG_TIMEOUT_S", "SECTIONS", "TINY_SIZES", "Times",
           "as_cupy_cached", "forget_views", "free_memory", "main", "on_torch_stream", "precompile", "run",
           "section_check", "section_collectives", "time_best", "time_eager", "time_graph"]

if __name__ == "__main__":
    sys.exit(main())

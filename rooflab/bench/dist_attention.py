"""Moved: the ops and the shape to rooflab.measure.distributed.ops, each section to its own module there (dcp, tp,
ring). These names stay here for one release."""

from ..measure.distributed.dcp import DCP_FULL, DCP_TINY, section_dcp
from ..measure.distributed.ops import (HEAD_DIM, HEADS, KV_HEADS, MIN_STREAM_BYTES, PAGE, GpuOps, TorchOps, ops_for,
                                       recommended_splits)
from ..measure.distributed.ring import RING_FULL, RING_TINY, section_ring
from ..measure.distributed.tp import HIDDEN, TP_FULL, TP_TINY, section_tp

__all__ = ["DCP_FULL", "DCP_TINY", "GpuOps", "HEAD_DIM", "HEADS", "HIDDEN", "KV_HEADS", "MIN_STREAM_BYTES", "PAGE",
           "RING_FULL", "RING_TINY", "TP_FULL", "TP_TINY", "TorchOps", "ops_for", "recommended_splits", "section_dcp",
           "section_ring", "section_tp"]

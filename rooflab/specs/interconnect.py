"""How a GPU talks to its peers: the `interconnect:` section of a GPU YAML (datasheet links, fitted collectives).

    interconnect:
      name: NVLink 4 (18 links) through NVSwitch
      link_bytes_per_s: 450e9            # per GPU, per direction: the floor of every collective
      gpus_per_node: 8                   # GPUs one NVLink domain joins all-to-all
      inter_node_bytes_per_s: 50e9       # per GPU, per direction, between nodes (one 400 Gb/s NIC a GPU)
      source: ...
      collectives:                       # written by `rooflab calibrate --collectives`; do not edit by hand
        - {collective: all_gather, world_size: 2, timing: graph, bands: [{up_to_bytes: .., alpha_s: .., bus_bytes_per_s: ..}, ..], ...}

A collective's fit is an alpha-beta model per band of message sizes (rooflab.comm): NCCL switches protocol
(LL, LL128, Simple) and channel count with the size, so one (alpha, beta) per band describes 64 KiB to 1 GiB
where a single line does not. Bands are chosen by the fit (bench/comm_fit.py), at most three.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import SpecError
from ..fields import spec_field, validate_fields
from ..vocab import Kernel

_GB = 1e9
TIMINGS = ("graph", "eager")


@dataclass(frozen=True)
class Band:
    """Messages up to `up_to_bytes` per rank (from the previous band's end): t = alpha_s + bus bytes / bus_bytes_per_s."""

    up_to_bytes: int = spec_field(1, 1 << 50, "bytes", "the largest message per rank this band describes")
    alpha_s: float = spec_field(0, 1.0, "s", "fixed time per call (launch, protocol latency)", lo_open=False)
    bus_bytes_per_s: float = spec_field(1e6, 1e14, "B/s", "bus bandwidth (NCCL's convention, rooflab.comm.bus_bytes)")

    def __post_init__(self) -> None:
        validate_fields(self)


@dataclass(frozen=True)
class CollectiveFit:
    """One collective's alpha-beta bands on `world_size` GPUs, timed eagerly or in CUDA graphs."""

    collective: Kernel = spec_field(doc="all_reduce, all_gather, reduce_scatter, all_to_all or send_recv")
    world_size: int = spec_field(2, 1 << 16, "GPUs")
    timing: str = spec_field(doc="graph (CUDA-graph replays, as engines run a step) or eager")
    bands: tuple[Band, ...] = spec_field(doc="ascending by up_to_bytes; the last covers every larger message",
                                         nonempty=True)
    rows: int = spec_field(1, 1_000_000, doc="measurements fitted", default=1)
    held_out_rows: int = spec_field(0, 1_000_000, default=0, lo_open=False)
    median_error: Optional[float] = spec_field(0, 100.0, doc="held-out relative error, median", lo_open=False,
                                               default=None)
    worst_error: Optional[float] = spec_field(0, 100.0, lo_open=False, default=None)
    campaign: Optional[str] = spec_field(doc="the measurement file fitted on", default=None)

    def __post_init__(self) -> None:
        validate_fields(self)
        if not self.collective.is_collective:
            raise SpecError("collective fit", "collective", self.collective.value,
                            "must be all_reduce, all_gather, reduce_scatter, all_to_all or send_recv")
        if self.timing not in TIMINGS:
            raise SpecError("collective fit", "timing", self.timing, f"must be one of {', '.join(TIMINGS)}")
        ends = [b.up_to_bytes for b in self.bands]
        if ends != sorted(set(ends)):
            raise SpecError("collective fit", "bands", ends, "must ascend strictly by up_to_bytes")
        if self.held_out_rows > self.rows:
            raise SpecError("collective fit", "held_out_rows", self.held_out_rows,
                            f"is more than rows ({self.rows}): the held-out rows are a share of the rows measured")

    @property
    def key(self) -> tuple[Kernel, int, str]:
        return (self.collective, self.world_size, self.timing)

    def band(self, bytes_per_rank: float) -> Band:
        """The band a message of `bytes_per_rank` falls in (the last one past every end)."""
        return next((b for b in self.bands if bytes_per_rank <= b.up_to_bytes), self.bands[-1])


@dataclass(frozen=True)
class InterconnectSpec:
    """A GPU's links to its peers: datasheet bandwidths (floors) and the collectives fitted on them (predictions)."""

    name: str = spec_field(doc="the link, as the datasheet names it")
    link_bytes_per_s: float = spec_field(1e6, 1e14, "B/s", "per GPU, per direction, within a node (datasheet)")
    gpus_per_node: int = spec_field(1, 1 << 12, "GPUs", "GPUs the intra-node links join all-to-all")
    source: str = spec_field(doc="where the figures come from")
    inter_node_bytes_per_s: Optional[float] = spec_field(1e6, 1e14, "B/s", "per GPU, per direction, between nodes",
                                                         default=None)
    collectives: tuple[CollectiveFit, ...] = spec_field(doc="fitted by `rooflab calibrate --collectives`", default=())
    measured: Optional[str] = spec_field(doc="when, where and with what command the collectives were measured",
                                         default=None)

    def __post_init__(self) -> None:
        validate_fields(self)
        keys = [c.key for c in self.collectives]
        twice = sorted({f"{k.value}/{n}/{t}" for k, n, t in keys if keys.count((k, n, t)) > 1})
        if twice:
            raise SpecError(self.name, "collectives", twice[0], "is fitted twice; keep one per collective, "
                                                               "GPU count and timing")

    def link_for(self, world_size: int) -> float:
        """The per-GPU bandwidth of the slowest hop a `world_size` group crosses (between nodes past gpus_per_node)."""
        if world_size <= self.gpus_per_node or self.inter_node_bytes_per_s is None:
            return self.link_bytes_per_s
        return self.inter_node_bytes_per_s

    def fit_for(self, collective: Kernel, world_size: int, timing: str = "graph") -> Optional[CollectiveFit]:
        """The fit of exactly this collective, GPU count and timing, or None."""
        return next((c for c in self.collectives if c.key == (collective, world_size, timing)), None)

    def nearest_fit(self, collective: Kernel, world_size: int, timing: str = "graph") -> Optional[CollectiveFit]:
        """The fit for this GPU count, else the one fitted on the most GPUs at or below it, else the fewest above."""
        fits = [c for c in self.collectives if c.collective is collective and c.timing == timing]
        if not fits:
            return None
        below = [c for c in fits if c.world_size <= world_size]
        if below:
            return max(below, key=lambda c: c.world_size)
        return min(fits, key=lambda c: c.world_size)


__all__ = ["Band", "CollectiveFit", "InterconnectSpec", "TIMINGS"]

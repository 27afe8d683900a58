"""The communication model: a floor and an alpha-beta prediction per collective, message size and GPU count.

What a message of S bytes per rank means, and the bytes each GPU's link carries ("bus bytes", NCCL's
bus-bandwidth convention, so one bandwidth describes every collective; nccl-tests' PERFORMANCE notes):

    collective      bytes_per_rank S                          bus bytes            ring steps
    all_reduce      the buffer each rank holds (in = out)     2 (N - 1) / N  S     2 (N - 1)
    all_gather      each rank's share (the output is N S)     (N - 1) S            N - 1
    reduce_scatter  each rank's output share (input N S)      (N - 1) S            N - 1
    all_to_all      each rank's send buffer (S / N a peer)    (N - 1) / N  S       N - 1
    send_recv       what each rank sends its ring neighbour   S                    1

    floor       t >= bus bytes / link            link: the datasheet per-direction bandwidth of one GPU
                                                 (between nodes past gpus_per_node); no latency term
    predicted   t = alpha + bus bytes / B_bus    (alpha, B_bus) of the band S falls in, fitted per
                                                 collective, GPU count and timing (graph or eager)

On N = 2 x H200 (NV18), NCCL all-gather reached 282 GB/s bus bandwidth at 1 GiB per rank and 139 at
16 MiB; the datasheet link is 450 GB/s (NVLink 4, 18 links x 25 GB/s per direction).

For a GPU count with no fit of its own the prediction takes the nearest fit (specs/interconnect.py) and
scales it, assumptions to be tested by measurements on that count: each extra ring step adds HOP_LATENCY_S
to the fitted alpha; the bus bandwidth stays the fitted one (NCCL's bus bandwidth is nearly flat in N on an
NVSwitch node), and past a node it is the fitted share of the inter-node link.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .cost.common import real_number, whole_number
from .errors import InputError, shown
from .limits import MAX_GPUS
from .specs import GpuSpec
from .specs.interconnect import TIMINGS, CollectiveFit, InterconnectSpec
from .vocab import Kernel

#: Latency one more ring step adds (NCCL's low-latency protocol over NVLink, about a microsecond a hop):
#: an assumption for GPU counts without a fit of their own, to be tested on 4 and 8 GPUs.
HOP_LATENCY_S = 1.0e-6

#: Largest message size taken (a guard against overflow, far past any GPU's memory: a whole-model step at
#: rooflab's largest batch and context still passes, to be refused by its memory check with a better message).
MAX_MESSAGE_BYTES = 1e30


def _check(kernel: Kernel, bytes_per_rank: float, world_size: int) -> tuple[Kernel, float, int]:
    """The arguments checked (a kernel by name too), or InputError naming the one at fault."""
    kernel = Kernel.of(kernel, "kernel")
    if not kernel.is_collective:
        raise InputError(f"{kernel.value} is not a collective")
    world_size = whole_number(world_size, "world_size (GPU count)", maximum=MAX_GPUS)
    bytes_per_rank = real_number(bytes_per_rank, "bytes_per_rank (message size)", 0, MAX_MESSAGE_BYTES)
    return kernel, bytes_per_rank, world_size


def bus_bytes(kernel: Kernel, bytes_per_rank: float, world_size: int) -> float:
    """Bytes one GPU's link carries for the collective (the module docstring's table); 0 on one GPU."""
    kernel, bytes_per_rank, world_size = _check(kernel, bytes_per_rank, world_size)
    n, s = world_size, float(bytes_per_rank)
    if n == 1:
        return 0.0
    return {Kernel.all_reduce: 2 * (n - 1) / n * s, Kernel.all_gather: (n - 1) * s,
            Kernel.reduce_scatter: (n - 1) * s, Kernel.all_to_all: (n - 1) / n * s,
            Kernel.send_recv: s}[kernel]


def ring_steps(kernel: Kernel, world_size: int) -> int:
    """Steps of the ring algorithm: each pays the per-hop latency once."""
    kernel = Kernel.of(kernel, "kernel")
    n = whole_number(world_size, "world_size (GPU count)", maximum=MAX_GPUS)
    if n <= 1:
        return 0
    return {Kernel.all_reduce: 2 * (n - 1), Kernel.send_recv: 1}.get(kernel, n - 1)


@dataclass(frozen=True)
class CommTime:
    """One collective: what moves, its floor and (where fitted) its predicted time."""

    collective: Kernel
    bytes_per_rank: float
    world_size: int
    bus_bytes: float
    link_bytes_per_s: float
    t_floor_s: float
    t_predicted_s: Optional[float]
    fitted_world_size: Optional[int] = None     # the GPU count of the fit used (scaled when it differs)
    timing: str = "graph"

    @property
    def scaled(self) -> bool:
        """The prediction comes from a fit on another GPU count."""
        return self.fitted_world_size is not None and self.fitted_world_size != self.world_size


def interconnect_of(gpu: GpuSpec) -> InterconnectSpec:
    if not isinstance(gpu, GpuSpec):
        raise InputError(f"gpu must be a GpuSpec (rooflab.load_gpu) or an InterconnectSpec, got {shown(gpu)}")
    link = getattr(gpu, "interconnect", None)
    if link is None:
        raise InputError(f"{gpu.name} has no interconnect: section; add the link's datasheet bandwidth to its "
                         f"YAML (see hardware/h200-sxm.yaml) to price communication")
    return link


def predict_band(fit: CollectiveFit, kernel: Kernel, bytes_per_rank: float, world_size: int) -> float:
    """The fitted bands' time at the fit's own GPU count."""
    band = fit.band(bytes_per_rank)
    return band.alpha_s + bus_bytes(kernel, bytes_per_rank, world_size) / band.bus_bytes_per_s


def collective_time(gpu: GpuSpec | InterconnectSpec, kernel: Kernel, bytes_per_rank: float, world_size: int,
                    timing: str = "graph") -> CommTime:
    """The floor and the predicted time of one collective of `bytes_per_rank` over `world_size` GPUs."""
    link = gpu if isinstance(gpu, InterconnectSpec) else interconnect_of(gpu)
    kernel, bytes_per_rank, world_size = _check(kernel, bytes_per_rank, world_size)
    if not isinstance(timing, str) or timing not in TIMINGS:
        raise InputError(f"timing must be one of {', '.join(TIMINGS)}, got {shown(timing)}")
    moved = bus_bytes(kernel, bytes_per_rank, world_size)
    bandwidth = link.link_for(world_size)
    if world_size == 1:
        return CommTime(kernel, bytes_per_rank, 1, 0.0, bandwidth, 0.0, 0.0, 1, timing)
    fit = link.nearest_fit(kernel, world_size, timing)
    predicted = None
    if fit is not None:
        band = fit.band(bytes_per_rank)
        extra_steps = ring_steps(kernel, world_size) - ring_steps(kernel, fit.world_size)
        alpha = band.alpha_s + extra_steps * HOP_LATENCY_S
        bus = band.bus_bytes_per_s
        fitted_link = link.link_for(fit.world_size)
        if bandwidth < fitted_link:                 # past the node: the fitted share of the slower link
            bus = bus * bandwidth / fitted_link
        # never faster than the floor: a band fitted between protocol steps can carry a bus bandwidth above the
        # link's with a large alpha (4 x H200 send/recv: 478 GB/s past 106 MB), which scaled past the node would
        # undercut the slower link's floor
        predicted = max(alpha + moved / bus, moved / bandwidth)
    return CommTime(kernel, bytes_per_rank, world_size, moved, bandwidth, moved / bandwidth, predicted,
                    fit.world_size if fit else None, timing)


__all__ = ["HOP_LATENCY_S", "CommTime", "bus_bytes", "collective_time", "interconnect_of", "predict_band",
           "ring_steps"]

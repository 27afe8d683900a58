"""A GPU's measured launch times: the small kernels of a layer and the host's issue time of an eager launch.

The GPU YAML's `measured.launch` section: seconds a call of the torch reference layer's small kernels (RMSNorm, the
residual add, SiLU x up, the q copy, the KV append, a MoE layer's grouped top-k routing: rooflab.step.routing, and
a block-fp8 GEMM's activation quantisation and a fused MoE layer's align: rooflab.step.small_ops) at a few batch sizes, inside a CUDA graph and issued eagerly, and the host issue time of one eager GEMM launch. A whole-model step (rooflab.step) prices those kernels at these
times, interpolated in log(batch); a GPU without the section takes another bundled GPU's (rooflab.step.small_ops
says which, and that it is a transfer).

    batches        the batch sizes (rows) every time was measured at, increasing: [1, 8, 64]
    graph_s        op -> seconds a call at each batch, the kernel alone in a CUDA graph (50 a graph)
    eager_s        op -> seconds a call at each batch, 200 issued back to back from Python, one synchronize
    eager_host_s   one eager GEMM launch's host issue time (torch.mm issued eagerly): eager launches are never
                   faster than this
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError
from ..fields import spec_field, validate_fields

#: The small kernels of rooflab's torch reference layer, a MoE layer's grouped top-k routing as eager torch ops
#: and compiled (rooflab.step.routing), and the block-fp8 layer's per-token-group activation quantisation and MoE
#: align (rooflab.step.small_ops.act_quant_time, moe_align_time), the keys of graph_s and eager_s.
SMALL_OP_NAMES = ("rms_norm", "residual_add", "silu_mul", "q_copy", "kv_append", "grouped_topk",
                  "grouped_topk_compiled", "act_quant", "moe_align")
#: The ones every GPU's section holds: the layer's kernels. The others (routing, the block-fp8 launches) are only
#: needed by the steps that run them; a GPU without one prices those steps with no prediction, recorded missing.
REQUIRED_OP_NAMES = SMALL_OP_NAMES[:5]


@dataclass(frozen=True)
class LaunchTimes:
    """Measured launch-bound times on one GPU (the module docstring); every op at every batch."""

    batches: tuple[int, ...] = spec_field(1, 1 << 20, "rows", "the batch sizes each time was measured at, "
                                          "increasing", nonempty=True)
    graph_s: dict[str, tuple[float, ...]] = spec_field(
        1e-9, 1.0, "s", "seconds a call at each batch, the kernel alone in a CUDA graph", keys=SMALL_OP_NAMES,
        nonempty=True)
    eager_s: dict[str, tuple[float, ...]] = spec_field(
        1e-9, 1.0, "s", "seconds a call at each batch, issued eagerly back to back (PyTorch's dispatch and the "
        "launch)", keys=SMALL_OP_NAMES, nonempty=True)
    eager_host_s: float = spec_field(1e-9, 1.0, "s", "host issue time of one eager GEMM launch (torch.mm)")
    source: str = spec_field(doc="the measurement files and the command that measured them")

    def __post_init__(self) -> None:
        validate_fields(self)
        where = "measured.launch"
        if list(self.batches) != sorted(set(self.batches)):
            raise SpecError(where, "batches", list(self.batches), "must be increasing, each batch once")
        for name in ("graph_s", "eager_s"):
            table = getattr(self, name)
            missing = [op for op in REQUIRED_OP_NAMES if op not in table]
            if missing:
                raise SpecError(where, f"{name}.{missing[0]}", None,
                                f"missing: every layer kernel ({', '.join(REQUIRED_OP_NAMES)}) needs its times")
            if set(self.graph_s) != set(self.eager_s):
                odd = sorted(set(self.graph_s) ^ set(self.eager_s))[0]
                raise SpecError(where, f"graph_s / eager_s.{odd}", None, "each op needs both its graph and its "
                                "eager times")
            for op, times in table.items():
                if len(times) != len(self.batches):
                    raise SpecError(where, f"{name}.{op}", list(times),
                                    f"holds {len(times)} time(s) for {len(self.batches)} batches "
                                    f"({list(self.batches)}): one a batch")


__all__ = ["REQUIRED_OP_NAMES", "SMALL_OP_NAMES", "LaunchTimes"]

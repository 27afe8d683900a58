"""A GPU's fitted kernel models: how long each implementation takes on it, as `rooflab fit` measured.

One entry per (kernel, implementation) in the GPU YAML's `fitted:` list:

    t_predicted = overhead_s + t_model / efficiency
    t_model     = sum over launches of max(t_memory, max(t_mat, t_exp) + exp_overlap x min(t_mat, t_exp)) / f

with calibrated ceilings, f the parallelism model's busy share with `units_per_sm` (cost/parallel.py;
1 without), and exp_overlap 0 when the exps hide under the matrix work, 1 when the two run one after
the other (rooflab.predict). A flash fit with `unit_overhead_tiles` prices FLOPs and exps at the work
its tiles do (whole tiles, and that many key tiles' worth a query tile: cost/flash.FlashCost.tile_work); an MLA
decode fit may have its own `memory_efficiency` (t_memory / memory_efficiency against t_compute / efficiency, the
larger over f) and `fp8_overhead_rows` (cost/mla.MlaDecodeCost.tile_work). `rows`, `campaigns` and the held-out errors say what the fit rests on.

A fused MoE fit (`tile_s` set: the Triton fused_moe kernel over block-fp8 experts, rooflab.fit.moe_fit.fit_fused) has
another form, priced by rooflab.predict.fused_moe_time alone (never by the form above, nor transferred):

    t_predicted = overhead_s + Q / (memory_efficiency x beta) + tiles x tile_s

Q the grouped GEMM's bytes, beta the calibrated copy bandwidth, tiles the launch's live programs
(cost/fused_moe.fused_tiles), valid up to `max_tokens` tokens a step (the largest measured); it has no compute term
(memory-bound launches only), so its `efficiency` is unused, stored as 1.0 (rooflab.fit.moe_fit
FUSED_UNUSED_EFFICIENCY): no compute share was measured; `memory_efficiency` is the one share it measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..fields import spec_field, validate_fields
from ..vocab import Kernel

#: The parallelism model's work units one SM runs at once (cost/parallel.py): the range of every field that holds
#: one, which a cost function given the value directly checks too. `rooflab validate` fits values from 0.5 to 8.
MIN_UNITS_PER_SM, MAX_UNITS_PER_SM = 0.01, 64


@dataclass(frozen=True)
class FittedModel:
    """One (kernel, implementation)'s time model on one GPU."""

    kernel: Kernel = spec_field(doc="what was timed (a Kernel of the measurement files)")
    impl: str = spec_field(doc="who implemented it: rooflab, rooflab_hopper, torch_cudnn, ...")
    overhead_s: float = spec_field(0, 1.0, "s", "fixed time per call", lo_open=False)
    efficiency: float = spec_field(0, 10.0, doc="the share of the calibrated roofs it reaches "
                                  "(a fused MoE fit: unused, 1.0)", lo_open=True)
    exp_overlap: float = spec_field(0, 1.0, doc="0: exps hidden under the matrix work; 1: run after it",
                                    lo_open=False, default=0.0)
    units_per_sm: Optional[float] = spec_field(MIN_UNITS_PER_SM, MAX_UNITS_PER_SM,
                                               doc="the parallelism model's units per SM", default=None)
    unit_overhead_tiles: Optional[float] = spec_field(0, 64.0, doc="flash kernels: FLOPs and exps at whole tiles "
                                                      "plus this fixed cost a query tile, in key tiles of work",
                                                      lo_open=False, default=None)
    memory_efficiency: Optional[float] = spec_field(0, 1.0, doc="MLA decode: the share of the calibrated copy bandwidth "
                                                    "the bytes reach, apart from `efficiency` (which then divides "
                                                    "the compute alone); None: one efficiency for both",
                                                    lo_open=True, default=None)
    fp8_overhead_rows: Optional[float] = spec_field(0, 64.0, doc="MLA decode: a unit's extra fixed cost a cached token "
                                                    "of an fp8 latent (its widening), in rows' worth of work",
                                                    lo_open=False, default=None)
    tile_s: Optional[float] = spec_field(0, 1e-5, "s", "fused MoE: each live program's fixed time over the whole "
                                         "chip (tiles x this adds to the time: rooflab.predict.fused_moe_time); "
                                         "None: no such term", lo_open=False, default=None)
    max_tokens: Optional[int] = spec_field(1, 10_000_000, doc="fused MoE: the largest step measured (tokens a step), "
                                           "the fit's range; None: no such bound", default=None)
    rows: int = spec_field(1, 1_000_000, doc="measurements fitted", default=1)
    held_out_rows: int = spec_field(0, 1_000_000, default=0, lo_open=False)
    median_error: Optional[float] = spec_field(0, 100.0, doc="held-out relative error, median", lo_open=False,
                                               default=None)
    worst_error: Optional[float] = spec_field(0, 100.0, lo_open=False, default=None)
    campaigns: tuple[str, ...] = spec_field(doc="the measurement files fitted on", default=())

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.held_out_rows > self.rows:
            from ..errors import SpecError

            raise SpecError(f"fitted {self.kernel.value}/{self.impl}", "held_out_rows", self.held_out_rows,
                            f"is more than rows ({self.rows}): the held-out rows are a share of the rows measured")
        if self.tile_s is not None and (self.memory_efficiency is None or self.max_tokens is None):
            from ..errors import SpecError

            raise SpecError(f"fitted {self.kernel.value}/{self.impl}", "tile_s", self.tile_s,
                            "is a fused MoE fit's term: give its memory_efficiency (the bytes' share of the copy "
                            "bandwidth) and max_tokens (its measured range) too")

    @property
    def memory_ratio(self) -> float:
        """memory_efficiency / efficiency: how much faster than `efficiency` alone the bytes stream (1: one
        efficiency for memory and compute)."""
        return 1.0 if self.memory_efficiency is None else self.memory_efficiency / self.efficiency

    @property
    def fused_moe(self) -> bool:
        """A fused MoE fit (`tile_s` set): priced by rooflab.predict.fused_moe_time alone, never by the general
        form (rooflab.predict.model_fits leaves it out) nor transferred to another GPU."""
        return self.tile_s is not None

    @property
    def key(self) -> tuple[Kernel, str]:
        return (self.kernel, self.impl)


__all__ = ["MAX_UNITS_PER_SM", "MIN_UNITS_PER_SM", "FittedModel"]

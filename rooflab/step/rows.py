"""A step's rows: one component of the step (all its layers) on one GPU, and the sums a step makes of them.

A StepRow is the report's row (rooflab.rows.Row: variant, flops, hbm_bytes, intensity, the three floors, the bound
and the prediction) with what a step row adds: launches, weight and link bytes, the part of the step it scales
with, where its prediction comes from. Its floors are the sum of its launches' floors (rooflab.floors.Floors), the
bound the one those floors give.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

from ..floors import Floors
from ..rows import Row

#: A row's bound when it is a collective on a link: its floor is the link's, not a roof's.
COMMUNICATION = "communication"


@dataclass(frozen=True)
class StepRow(Row):
    """One component of the step, for the whole step (all its layers), on one GPU: the row contract of
    `rooflab report` (rooflab.rows.Row). Communication rows carry bus bytes and null intensity. `part` says what
    the row scales with (rooflab.step_table): tokens (the rank's rows through the GEMMs), sequences (logit rows),
    decode (the decodes and their context), prefill (the prompt tokens). GEMM rows name their weight component, the
    arithmetic and m (`component`, `gemm_dtype`, `gemm_rows`; None elsewhere, and then left out of the JSON)."""

    calls: int = 0
    weight_bytes: float = 0.0
    comm_bytes: float = 0.0                      # bus bytes per GPU (communication rows)
    part: str = "tokens"
    source: str = ""                             # where the prediction comes from (rooflab explain)
    component: Optional[str] = None              # GEMM rows: the weight component (ModelSpec.weight_format's name:
                                                 # attention, dense_mlp, experts, shared_experts, lm_head)
    gemm_dtype: Optional[str] = None             # GEMM rows: the arithmetic the GEMMs run in (fp8_e4m3, bf16, ...)
    gemm_rows: Optional[int] = None              # GEMM rows: m, the rows through each GEMM (MoE: the router's)

    #: Written to JSON even when empty (null), beside Row's: the step's JSON has always carried them.
    ALWAYS = Row.ALWAYS + ("label", "layer_type", "num_layers", "predicted_from", "intensity_flop_per_byte")

    @property
    def is_communication(self) -> bool:
        return self.bound == COMMUNICATION


def floor_row(variant: str, label: str, floors: Floors, t_predicted_s: Optional[float], **fields) -> StepRow:
    """A row of launches from their summed floors: FLOPs, bytes, the three times and the bound as `floors` holds
    them (rooflab.floors.Floors.bound: the largest of memory, exp and compute)."""
    flops, nbytes = float(floors.flops), float(floors.hbm_bytes)
    return StepRow(variant=variant, label=label, flops=flops, hbm_bytes=nbytes,
                   intensity_flop_per_byte=flops / nbytes if nbytes else None,
                   t_compute_s=float(floors.t_compute_s), t_memory_s=float(floors.t_memory_s),
                   t_floor_s=float(floors.t_floor_s), bound=str(floors.bound), ridge_ratio=None,
                   t_exp_s=float(floors.t_exp_s), t_predicted_s=t_predicted_s, **fields)


def link_row(variant: str, label: str, t_floor_s: float, t_predicted_s: Optional[float], **fields) -> StepRow:
    """A collective's row: its floor is the link's (no FLOPs, no HBM bytes, no intensity)."""
    return StepRow(variant=variant, label=label, flops=0.0, hbm_bytes=0.0, intensity_flop_per_byte=None,
                   t_compute_s=0.0, t_memory_s=0.0, t_floor_s=t_floor_s, bound=COMMUNICATION, ridge_ratio=None,
                   t_predicted_s=t_predicted_s, **fields)


def overlapped_floor_s(rows) -> float:
    """Everything overlapped: the largest of the rows' summed compute, memory and communication floors."""
    compute = sum(max(r.t_compute_s, r.t_exp_s) for r in rows if not r.is_communication)
    memory = sum(r.t_memory_s for r in rows if not r.is_communication)
    comm = sum(r.t_floor_s for r in rows if r.is_communication)
    return max(compute, memory, comm)


def scaled(row: StepRow, share: float) -> StepRow:
    """A row for `share` of its layers (a pipeline stage; one layer of a draft head)."""
    if share == 1:
        return row
    return dataclasses.replace(
        row, flops=row.flops * share, hbm_bytes=row.hbm_bytes * share, t_compute_s=row.t_compute_s * share,
        t_memory_s=row.t_memory_s * share, t_floor_s=row.t_floor_s * share, t_exp_s=row.t_exp_s * share,
        t_predicted_s=None if row.t_predicted_s is None else row.t_predicted_s * share,
        calls=int(round(row.calls * share)), weight_bytes=row.weight_bytes * share,
        comm_bytes=row.comm_bytes * share,
        num_layers=None if row.num_layers is None else math.ceil(row.num_layers * share))


def summed(rows: list[StepRow], times: float, variant: str, label: str, **fields) -> StepRow:
    """One row for `rows` run `times` over (a draft's steps): their FLOPs, bytes, floors and predictions summed, the
    floor's bound of the sums (compute: each row's larger of matrix and exp time)."""
    compute = times * sum(max(r.t_compute_s, r.t_exp_s) for r in rows if not r.is_communication)
    memory = times * sum(r.t_memory_s for r in rows if not r.is_communication)
    flops, nbytes = times * sum(r.flops for r in rows), times * sum(r.hbm_bytes for r in rows)
    floors = Floors(flops, nbytes, compute, memory, times * sum(r.t_floor_s for r in rows), float("nan"))
    predicted = None if any(r.t_predicted_s is None for r in rows) else times * sum(r.t_predicted_s for r in rows)
    return floor_row(variant, label, floors, predicted, calls=int(times * sum(r.calls for r in rows)),
                     weight_bytes=times * sum(r.weight_bytes for r in rows), **fields)


__all__ = ["COMMUNICATION", "StepRow", "floor_row", "link_row", "overlapped_floor_s", "scaled", "summed"]

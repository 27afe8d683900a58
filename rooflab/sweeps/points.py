"""Specs + workload -> the roofline chart's numbers: each GPU's roofs and the attention kernels as points.

No matplotlib here, and no formula of its own: every point is a cost function's kernel placed by
floors.floor_kernel, one layer of the model's main softmax layer type priced through rooflab.cost.layers
as the report's rows are (a point's intensity is its row's). roofline_chart (plot/roofline.py) draws a
RooflineData.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..fit.validate import MeasuredPoint  # noqa: F401  (a chart input, defined beside the validation it comes from)
from ..cost.batch import DecodeBatch
from ..cost.common import KernelCost
from ..cost.layers import layer_decode, layer_heads, layer_prefill, main_attention
from ..cost.merge import merge_pair
from ..errors import InputError
from ..predict import model_time
from ..floors import Ceilings, floor, floor_kernel
from ..specs import GpuSpec, ModelSpec
from ..units import DType
from ..vocab import CeilingSource, Pipe

#: Tokens of the merge point on the roofline chart: two partial states of a 16k-token prefill.
MERGE_TOKENS = 16384


@dataclass(frozen=True)
class GpuRoofs:
    """One GPU's roofs for one dtype: the datasheet's, and the measured ones where the YAML has them."""

    name: str
    display_name: str
    datasheet: Ceilings
    measured: Optional[Ceilings] = None
    measured_date: Optional[str] = None


@dataclass(frozen=True)
class RooflinePoint:
    """A kernel (or a variant's total) at its intensity and the FLOP rate its time floor implies.

    `kind` picks the marker: naive, naive_kernel, naive_softmax, flash, flash_tiled, paged,
    paged_launched, merge. `pipe` says which roof its FLOPs sit under; `ridge_ratio` is I / I*
    against the tensor ridge (Floors.ridge_ratio).
    """

    label: str
    kind: str
    intensity_flop_per_byte: float
    flop_per_s: float
    pipe: Pipe = Pipe.tensor
    ridge_ratio: float = float("nan")


@dataclass(frozen=True)
class RooflineData:
    """What the roofline chart draws: the roofs of one or more GPUs and the points on the first."""

    model: str
    dtype: DType
    seq_len: int
    batch: int
    causal: bool
    decode_batch: int
    merge_tokens: int
    roofs: tuple[GpuRoofs, ...]
    points: tuple[RooflinePoint, ...]
    #: The first GPU's exp roof for this attention in FLOP/s: the exp roof (SFU + FMA emulation) times the
    #: flash cost's FLOPs an exp (4 d per visible pair at d_v = d); None where the spec gives no exp rate.
    exp_roof_flop_per_s: Optional[float] = None
    flop_per_exp: Optional[float] = None
    #: The same with the exp units alone (no FMA emulation): what a kernel that does not emulate reaches.
    exp_units_flop_per_s: Optional[float] = None

    def to_frame(self):
        """One row per point: model, gpu (the points' GPU, the first), label, kind, pipe (the roof its FLOPs sit
        under), intensity_flop_per_byte, flop_per_s (the rate its floor implies) and ridge_ratio (I / I*)."""
        import pandas as pd

        gpu = self.roofs[0].display_name
        return pd.DataFrame([dict(model=self.model, gpu=gpu, label=p.label, kind=p.kind, pipe=p.pipe.value,
                                  intensity_flop_per_byte=p.intensity_flop_per_byte, flop_per_s=p.flop_per_s,
                                  ridge_ratio=p.ridge_ratio) for p in self.points])

    def chart_frame(self, measured: Sequence[MeasuredPoint] = (), exp_roof: bool = False):
        """Everything roofline_chart(self, measured, exp_roof) draws, one row each (what `rooflab plot roofline
        --data` writes): the points (series 'point': to_frame()'s columns; estimate 'floor' at F / t_floor, or
        'prediction' for the launched decode point at the parallelism model's rate), each GPU's roofs (series
        'roof': roofs_frame()'s columns; estimate 'floor' for the datasheet's, 'measured' for the calibrated), the exp
        roofs where drawn (series 'exp_roof' with FMA emulation, 'exp_units' without) and the measured kernels
        (series 'measured', estimate 'measured')."""
        import pandas as pd

        points = self.to_frame()
        points.insert(0, "series", "point")
        points.insert(1, "estimate", np.where(points["kind"] == "paged_launched", "prediction", "floor"))
        roofs = self.roofs_frame()
        roofs.insert(0, "series", "roof")
        roofs.insert(1, "estimate", np.where(roofs["source"] == CeilingSource.calibrated.value, "measured",
                                             "floor"))
        parts = [points, roofs]
        if exp_roof and self.exp_roof_flop_per_s is not None:
            parts.append(pd.DataFrame([dict(series=series, estimate="floor", model=self.model,
                                            gpu=self.roofs[0].display_name, flop_per_s=rate,
                                            flop_per_exp=self.flop_per_exp)
                                       for series, rate in (("exp_roof", self.exp_roof_flop_per_s),
                                                            ("exp_units", self.exp_units_flop_per_s)) if rate]))
        if measured:
            parts.append(pd.DataFrame([dict(series="measured", estimate="measured", model=self.model,
                                            gpu=self.roofs[0].display_name, label=m.label, kind=m.kernel,
                                            impl=m.impl, intensity_flop_per_byte=m.intensity_flop_per_byte,
                                            flop_per_s=m.achieved_flop_per_s, row=m.row, measured_s=m.measured_s,
                                            floor_s=m.floor_s, beats_floor=m.beats_floor) for m in measured]))
        return pd.concat(parts, ignore_index=True)

    def roofs_frame(self):
        """One row per GPU and ceiling source (datasheet, and calibrated where measured): bandwidth_bytes_per_s,
        matmul_flop_per_s (the dtype's tensor rate), vector_flop_per_s (fp32) and ridge_flop_per_byte."""
        import pandas as pd

        return pd.DataFrame([dict(gpu=r.display_name, source=c.source.value,
                                  bandwidth_bytes_per_s=c.bandwidth_bytes_per_s, matmul_flop_per_s=c.matmul_flop_per_s,
                                  vector_flop_per_s=c.vector_flop_per_s, ridge_flop_per_byte=c.ridge_flop_per_byte)
                             for r in self.roofs for c in (r.datasheet, r.measured) if c is not None])


def floor_beaters(measured: Sequence[MeasuredPoint]) -> tuple[MeasuredPoint, ...]:
    """The measured rows faster than their physical floor (MeasuredPoint.beats_floor), each to be named: a spec
    defect (roofs too low) or a measurement defect (an overclocked card, a timing bug), never averaged away."""
    return tuple(m for m in measured if m.beats_floor)


def beaten_text(m: MeasuredPoint) -> str:
    """'flash/rooflab 32/8x128 fp16 T=4096 b=1: 80.0 us, its floor 96.0 us (1.20x faster than possible)'."""
    from ..units import fmt_seconds

    return (f"{m.row or m.label}: {fmt_seconds(m.measured_s)}, its floor {fmt_seconds(m.floor_s)} "
            f"({m.floor_s / m.measured_s:.2f}x faster than the floor allows)")


def gpu_roofs(gpu: GpuSpec, dtype: DType) -> GpuRoofs:
    """Datasheet ceilings for `dtype`, and the calibrated ones when the spec has a measured: section."""
    measured = Ceilings.of(gpu, dtype, CeilingSource.calibrated) if gpu.measured is not None else None
    return GpuRoofs(gpu.name, gpu.display_name, Ceilings.of(gpu, dtype), measured,
                    gpu.measured.date if gpu.measured is not None else None)


def _point(label: str, kind: str, kernel: KernelCost, roofs: Ceilings) -> RooflinePoint:
    p = floor_kernel(kernel, roofs)
    return RooflinePoint(label, kind, float(p.intensity_flop_per_byte), float(p.achieved_flop_per_s), kernel.pipe,
                         float(p.ridge_ratio))


def roofline_data(model: ModelSpec, gpus: Sequence[GpuSpec], seq_len: int = 8192, dtype: DType = DType.fp16,
                  batch: int = 1, causal: bool = True, decode_batch: int = 1,
                  merge_tokens: int = MERGE_TOKENS, flash_tiled: bool = False) -> RooflineData:
    """Roofs of every GPU in `gpus`; the points are placed against the first GPU's datasheet roofs.

    Points (one layer of the main softmax layer type, main_attention): naive attention (whole, and its QK^T,
    softmax and PV kernels), flash (compulsory bytes;
    with `flash_tiled` also the tiled upper bound on bytes, which lands next to the naive kernels),
    paged decode of `decode_batch` sequences of `seq_len` tokens (on an ideal launch, and as
    launched with the parallelism model when that cannot fill the GPU), and the LSE merge of two
    partial states of `merge_tokens` tokens. Each sits at F / t_floor, the FLOP rate at its floor; the
    launched decode point at F / t_model, the parallelism model's rate (a model, marked so).
    """
    if not gpus:
        raise InputError("give at least one GPU")
    gpu = gpus[0]
    roofs = Ceilings.of(gpu, dtype)
    main = main_attention(model)
    naive = layer_prefill(model, main, seq_len, batch, dtype, causal, naive=True)
    flash = layer_prefill(model, main, seq_len, batch, dtype, causal, gpu=gpu)
    lens = DecodeBatch.uniform(seq_len, decode_batch)
    decode = layer_decode(model, main, lens, dtype=dtype)
    launched = layer_decode(model, main, lens, dtype=dtype, num_sms=gpu.num_sms, units_per_sm=gpu.units_per_sm)
    heads = layer_heads(model, model.layer_types[main])
    merge = merge_pair(merge_tokens, heads.num_qo_heads, heads.value_dim, dtype)
    whole = floor(naive, roofs)
    tiled = KernelCost("flash_tiled", flash.flops, flash.hbm_bytes_tiled, exp_ops=flash.kernel.exp_ops)
    fraction = float(launched.parallel_fraction)
    points = (
        RooflinePoint("naive attention (3 kernels)", "naive", float(whole.intensity_flop_per_byte),
                      float(whole.achieved_flop_per_s), Pipe.tensor, float(whole.ridge_ratio)),
        _point("naive QK\u1d40 kernel", "naive_kernel", naive.qk, roofs),
        _point("naive PV kernel", "naive_kernel", naive.pv, roofs),
        _point("naive softmax kernel (fp32 vector FLOPs)", "naive_softmax", naive.softmax, roofs),
        _point("flash attention (compulsory bytes)", "flash", flash.kernel, roofs),
        _point(f"flash, tiled bytes (K, V re-read per {flash.tile.block_q}-row query tile)", "flash_tiled",
               tiled, roofs),
        _point(f"paged decode, batch {decode_batch}, context {seq_len:,}", "paged", decode.attention, roofs),
        RooflinePoint(f"paged decode as launched (model): {fraction:.0%} of bandwidth "
                      f"({int(launched.work_units)} work units, {gpu.num_sms} SMs)", "paged_launched",
                      float(launched.attention.intensity_flop_per_byte),
                      float(launched.flops / model_time(launched, roofs)), Pipe.tensor,
                      float(launched.attention.intensity_flop_per_byte / roofs.ridge_flop_per_byte)),
        _point(f"LSE merge of two states ({merge_tokens:,} tokens, fp32 vector FLOPs)", "merge",
               merge.kernel, roofs),
    )
    if fraction >= 1:
        points = tuple(p for p in points if p.kind != "paged_launched")
    if not flash_tiled:
        points = tuple(p for p in points if p.kind != "flash_tiled")
    exps = float(flash.kernel.exp_ops)
    per_exp = float(flash.flops) / exps if exps else None
    exp_roof = roofs.exp_roof_per_s * per_exp if roofs.exp_roof_per_s and per_exp else None
    exp_units = roofs.exp_per_s * per_exp if roofs.exp_per_s and per_exp else None
    return RooflineData(model.display_name, dtype, int(seq_len), int(batch), causal, int(decode_batch),
                        int(merge_tokens), tuple(gpu_roofs(g, dtype) for g in gpus), points, exp_roof, per_exp,
                        exp_units)

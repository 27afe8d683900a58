"""Specs + workload -> Report: what `rooflab report` prints, computed here, rendered in render.py.

A Report is the JSON contract of `rooflab report`: top-level workload fields, `facts` (a typed,
frozen PrefillFacts or DecodeFacts) and `rows`, each with at least variant, flops, hbm_bytes,
intensity_flop_per_byte, t_compute_s, t_memory_s, t_floor_s and bound, all per layer in SI units.
The facts are computed by prefill_facts and decode_facts, which explain and the charts call too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from .cost.flash import flash_prefill
from .cost.model import decode_step
from .cost.naive import naive_ceiling, naive_prefill
from .cost.paged import DecodeBatch, check_splits, decode_batch, default_splits, paged_decode, recommend_splits
from .limits import MAX_RAGGED
from .roofline import Ceilings
from .rows import Row, make_row
from .specs import GpuSpec, ModelSpec
from .units import DType
from .vocab import CeilingSource, Phase


@dataclass(frozen=True)
class PrefillFacts:
    """Whether naive prefill fits, and what materialising S costs in intensity (one layer)."""

    weights_bytes: int
    hbm_capacity_bytes: int
    naive_working_set_bytes: float
    naive_max_seq_len: int
    naive_fits: bool
    flash_over_naive_intensity: float    # flash's intensity over naive's: the factor S through HBM costs

    #: Output keys under their old spelling, kept readable: old -> new. (The old name said "naive over
    #: flash" of a number that is flash over naive.)
    RENAMED = {"naive_over_flash_intensity": "flash_over_naive_intensity"}

    def to_dict(self) -> dict:
        return _with_old_names(self)


@dataclass(frozen=True)
class DecodeFacts:
    """What a decode report adds to its rows: the split recommendation, the launch's work units, the whole step."""

    recommended_splits: int
    decode_intensity_flop_per_byte: float   # 2h / (b_kv h_kv): F over the KV bytes, fixed by the heads
    work_units_unsplit: int                 # sequences x KV heads
    num_sms: int
    units_per_sm: float
    attention_flop_share: float
    flops_per_token: float
    weight_bytes_per_step: float
    kv_bytes_per_step: float

    RENAMED = {"decode_units_per_sm": "units_per_sm"}

    def to_dict(self) -> dict:
        return _with_old_names(self)


def _with_old_names(facts: Union[PrefillFacts, DecodeFacts]) -> dict:
    out = dataclasses.asdict(facts)
    for old, new in facts.RENAMED.items():
        out[old] = out[new]
    return out


Facts = Union[PrefillFacts, DecodeFacts]


@dataclass(frozen=True)
class Report:
    """Everything `rooflab report` prints: the workload, the ceilings, one row per variant and the facts."""

    model: str
    gpu: str
    phase: Phase
    seq_len: Optional[int]
    batch: int
    dtype: str
    causal: bool
    num_layers: int
    ceilings: str
    ridge_flop_per_byte: float
    bandwidth_bytes_per_s: float
    matmul_flop_per_s: float
    rows: tuple[Row, ...]
    facts: Facts
    model_display_name: str = ""
    gpu_display_name: str = ""
    context_lens: Optional[tuple[int, ...]] = None            # each sequence's, up to MAX_RAGGED sequences
    context_len_counts: Optional[tuple[tuple[int, int], ...]] = None   # (length, sequences): every batch
    kv_dtype: Optional[str] = None
    page_size: Optional[int] = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("rows", "notes", "facts") and getattr(self, f.name) is not None}
        out["phase"] = self.phase.value
        if self.context_lens is not None:
            out["context_lens"] = list(self.context_lens)
        if self.context_len_counts is not None:
            out["context_len_counts"] = [list(p) for p in self.context_len_counts]
        out["facts"] = self.facts.to_dict()
        out["notes"] = list(self.notes)
        out["rows"] = [r.to_dict() for r in self.rows]
        return out

    def to_frame(self, breakdown: bool = False):
        """The rows as a pandas DataFrame indexed by variant label; `breakdown` gives one row per launch.

        Columns are the Row (or KernelRow) fields that some row fills, in SI units, per layer.
        """
        import pandas as pd  # pandas is slow to import and only notebooks need it

        if breakdown:
            records = [dict(variant=r.label or r.variant, **dataclasses.asdict(k)) for r in self.rows for k in r.kernels]
            return pd.DataFrame(records).set_index(["variant", "kernel"])
        records = []
        for r in self.rows:
            record = r.to_dict()
            record.pop("kernels", None)
            if "tile" in record:
                record["tile"] = "{block_q}x{block_kv}".format(**record["tile"])
            record["variant"] = r.label or r.variant
            records.append(record)
        return pd.DataFrame(records).drop(columns="label", errors="ignore").set_index("variant")


def prefill_facts(model: ModelSpec, gpu: GpuSpec, seq_len: int = 8192, batch: int = 1,
                  dtype: DType = DType.fp16, causal: bool = False) -> PrefillFacts:
    """Whether naive prefill of `seq_len` tokens fits beside the weights, and flash's intensity over naive's."""
    ceiling = naive_ceiling(model, gpu, batch, dtype)
    naive = naive_prefill(model, seq_len, batch, dtype, causal)
    flash = flash_prefill(model, seq_len, batch, dtype, causal, gpu=gpu)
    ratio = (flash.flops / flash.hbm_bytes) / (naive.flops / naive.hbm_bytes)
    return PrefillFacts(
        weights_bytes=ceiling.weights_bytes, hbm_capacity_bytes=ceiling.capacity_bytes,
        naive_working_set_bytes=float(naive.working_set_bytes), naive_max_seq_len=ceiling.max_seq_len,
        naive_fits=ceiling.fits(seq_len), flash_over_naive_intensity=float(ratio),
    )


def prefill_report(model: ModelSpec, gpu: GpuSpec, seq_len: int = 8192, batch: int = 1,
                   dtype: DType = DType.fp16, causal: bool = False,
                   ceilings: CeilingSource = CeilingSource.datasheet) -> Report:
    """Naive and flash attention side by side for one layer of `model` prefilling `seq_len` tokens."""
    roofs = Ceilings.of(gpu, dtype, ceilings)
    naive = naive_prefill(model, seq_len, batch, dtype, causal)
    flash = flash_prefill(model, seq_len, batch, dtype, causal, gpu=gpu)
    rows = (
        make_row(naive, roofs, breakdown=True, s_bytes=naive.s_bytes, p_bytes=naive.p_bytes,
                 peak_extra_bytes=naive.peak_extra_bytes,
                 intensity_compulsory_flop_per_byte=naive.intensity_compulsory),
        make_row(flash, roofs, hbm_bytes_tiled=flash.hbm_bytes_tiled,
                 intensity_tiled_flop_per_byte=flash.intensity_tiled,
                 tile=(flash.tile.block_q, flash.tile.block_kv), rescale_overhead=flash.rescale_overhead),
    )
    return Report(
        model=model.name, gpu=gpu.name, phase=Phase.prefill, seq_len=int(seq_len), batch=int(batch),
        dtype=dtype.value, causal=causal, num_layers=model.num_layers, ceilings=roofs.source.value,
        ridge_flop_per_byte=roofs.ridge_flop_per_byte,
        bandwidth_bytes_per_s=roofs.bandwidth_bytes_per_s, matmul_flop_per_s=roofs.matmul_flop_per_s,
        rows=rows, facts=prefill_facts(model, gpu, seq_len, batch, dtype, causal),
        model_display_name=model.display_name, gpu_display_name=gpu.display_name,
    )


def decode_facts(model: ModelSpec, gpu: GpuSpec, context_lens: Sequence[int] | DecodeBatch, page_size: int = 16,
                 dtype: DType = DType.fp16, kv_dtype: DType | None = None) -> DecodeFacts:
    """The split recommendation, decode intensity and whole-step figures for one decode step."""
    kv_dtype = kv_dtype or dtype
    lens = decode_batch(context_lens)
    k = gpu.units_per_sm
    unsplit = paged_decode(model, lens, page_size, dtype, kv_dtype, 1, gpu.num_sms, k)
    step = decode_step(model, int(round(lens.mean_len)), lens.size, dtype, kv_dtype)
    return DecodeFacts(
        recommended_splits=recommend_splits(model, lens, gpu.num_sms, page_size, dtype, kv_dtype, k),
        decode_intensity_flop_per_byte=float(unsplit.intensity_kv),
        work_units_unsplit=int(unsplit.work_units), num_sms=gpu.num_sms, units_per_sm=k,
        attention_flop_share=step.attention_flop_share, flops_per_token=step.flops_per_token,
        weight_bytes_per_step=step.weight_bytes_per_step, kv_bytes_per_step=step.kv_bytes_per_step,
    )


def decode_report(model: ModelSpec, gpu: GpuSpec, context_lens: Sequence[int] | DecodeBatch, page_size: int = 16,
                  dtype: DType = DType.fp16, kv_dtype: DType | None = None, splits: int | None = None,
                  ceilings: CeilingSource = CeilingSource.datasheet) -> Report:
    """One decode step per layer: paged decode in one launch, and split-KV with the S-way merge.

    `context_lens` is one length per sequence (a ragged batch, kept in the given order in the report),
    or a DecodeBatch (DecodeBatch.uniform(8192, 64) for 64 sequences of 8192 tokens, priced in closed
    form whatever the batch). `splits` defaults to default_splits (the recommended count, at least 2,
    so the row shows split-KV).
    """
    kv_dtype = kv_dtype or dtype
    roofs = Ceilings.of(gpu, dtype, ceilings)
    lens = decode_batch(context_lens)
    listed = tuple(int(x) for x in context_lens) if not isinstance(context_lens, DecodeBatch) else \
        (lens.expanded() if lens.size <= MAX_RAGGED else None)
    k = gpu.units_per_sm
    facts = decode_facts(model, gpu, lens, page_size, dtype, kv_dtype)
    chosen = check_splits(splits) if splits is not None else \
        default_splits(model, lens, gpu.num_sms, page_size, dtype, kv_dtype, k)
    rows = []
    for s in (1, chosen):
        cost = paged_decode(model, lens, page_size, dtype, kv_dtype, s, gpu.num_sms, k)
        label = "paged" if s == 1 else f"split_kv ({s} splits)"
        rows.append(make_row(cost, roofs, breakdown=s > 1, label=label, kv_bytes=cost.kv_bytes, splits=s,
                             parallel_fraction=cost.parallel_fraction))
    notes = []
    if facts.recommended_splits == 1 and splits is None:
        notes.append("split-KV does not pay here: the unsplit launch already fills the GPU; "
                     "the split_kv row shows the cost of 2 splits for comparison")
    return Report(
        model=model.name, gpu=gpu.name, phase=Phase.decode, seq_len=None, batch=lens.size, dtype=dtype.value,
        causal=True, num_layers=model.num_layers, ceilings=roofs.source.value,
        ridge_flop_per_byte=roofs.ridge_flop_per_byte, bandwidth_bytes_per_s=roofs.bandwidth_bytes_per_s,
        matmul_flop_per_s=roofs.matmul_flop_per_s, rows=tuple(rows), facts=facts,
        model_display_name=model.display_name, gpu_display_name=gpu.display_name,
        context_lens=listed, context_len_counts=tuple((int(n), int(c)) for n, c in zip(lens.lengths, lens.counts)),
        kv_dtype=kv_dtype.value, page_size=page_size, notes=tuple(notes),
    )


__all__ = ["DecodeFacts", "PrefillFacts", "Report", "decode_facts", "decode_report", "prefill_facts",
           "prefill_report"]

"""A report's typed results: Report (the JSON contract of `rooflab report`), its facts, totals and a published rate."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Union

from ..kvcache import BatchMemory
from ..rows import Row
from ..vocab import Phase


@dataclass(frozen=True)
class PrefillFacts:
    """Whether naive prefill fits, and what materialising S costs in intensity (one layer)."""

    weights_bytes: int
    hbm_capacity_bytes: int
    naive_working_set_bytes: float
    naive_max_seq_len: int
    naive_fits: bool
    flash_over_naive_intensity: float    # flash's intensity over naive's: the factor S through HBM costs

    #: Output keys under their old spelling, kept readable: old -> new. (None now: the old
    #: "naive_over_flash_intensity" held flash over naive, the inverse of its name, and is gone.)
    RENAMED = {}  # type: ignore[var-annotated]

    def to_dict(self) -> dict:
        return _with_old_names(self)


@dataclass(frozen=True)
class DecodeFacts:
    """What a decode report adds to its rows: the split recommendation, the launch's work units, the whole step."""

    recommended_splits: int
    decode_intensity_flop_per_byte: float   # F over the KV bytes, fixed by the heads (2h / (b_kv h_kv) for GQA)
    work_units_unsplit: int                 # the unsplit launch's work units (sequences x KV heads for GQA)
    num_sms: int
    units_per_sm: float
    attention_flop_share: float
    flops_per_token: float
    weight_bytes_per_step: float
    kv_bytes_per_step: float
    layer_kind: str = "full"                # the kind of the main layer type these facts describe

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
class ModelTotal:
    """One attention variant over the whole model: every layer, each priced by its own layer type's row."""

    variant: str
    num_layers: int
    flops: float
    hbm_bytes: float
    t_floor_s: float
    #: The rows' predicted times over the model (a fitted model, not a bound); None unless every row has one.
    t_predicted_s: Optional[float] = None


@dataclass(frozen=True)
class PublishedTime:
    """A published rate for a report's --shape, as time under its source's FLOP convention, beside the floor.

    t_published_s = flops / (tflops 10^12), flops the convention's count (rooflab.published.convention_flops:
    2 B H T_q T_kv (d + d_v), halved when causal under `fa`, never under `fa_no_half`), not rooflab's own (which
    counts the T(T + 1) / 2 pairs a causal mask keeps). `floor_row` is the report's row with the lowest floor (the
    fused kernel's: flash in prefill, paged in decode), no run's time can be below its t_floor_s."""

    tflops: float
    convention: str
    flops: float
    t_published_s: float
    floor_row: str
    t_floor_s: float
    t_predicted_s: Optional[float] = None
    predicted_impl: Optional[str] = None

    @property
    def beats_floor(self) -> bool:
        """Faster than the physical floor: a spec defect or a measurement defect, never a result."""
        return self.t_published_s < self.t_floor_s

    @property
    def floor_over_published(self) -> float:
        """t_floor / t_published: the share of the floor the published run reached (above 1: it beat it)."""
        return self.t_floor_s / self.t_published_s

    def to_dict(self) -> dict:
        return dict(dataclasses.asdict(self), beats_floor=self.beats_floor,
                    floor_over_published=self.floor_over_published)


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
    totals: tuple[ModelTotal, ...] = ()
    q_len: int = 1
    memory: Optional[BatchMemory] = None       # decode: weights + the batch's KV against the GPU's memory
    published: Optional[PublishedTime] = None  # --shape with --published-tflops: that rate as time, against the floor
    bare_shape: bool = False                   # a --shape (rooflab.shape.BareAttention): one layer, no model
    exp_per_s: Optional[float] = None          # the exp roof (rooflab.floors.Ceilings.exp_roof_per_s); None: the spec
                                               # gives no exp rate, and the floors leave that roof out

    @property
    def fits(self) -> Optional[bool]:
        """Decode: whether the weights and the batch's KV cache fit in the GPU's memory (None for prefill)."""
        return None if self.memory is None else self.memory.fits

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("rows", "notes", "facts", "totals", "memory", "published")
               and getattr(self, f.name) is not None}
        if self.published is not None:
            out["published"] = self.published.to_dict()
        if self.memory is not None:
            out["fits"] = self.memory.fits
            out["memory"] = self.memory.to_dict()
        out["totals"] = [dataclasses.asdict(t) for t in self.totals]
        out["phase"] = self.phase.value
        if self.context_lens is not None:
            out["context_lens"] = list(self.context_lens)
        if self.context_len_counts is not None:
            out["context_len_counts"] = [list(p) for p in self.context_len_counts]
        out["facts"] = self.facts.to_dict()
        out["notes"] = list(self.notes)
        out["rows"] = [r.to_dict() for r in self.rows]
        out["exp_per_s"] = self.exp_per_s
        for row in out["rows"]:
            self._exp_unknown(row, *row.get("kernels", ()))
        return out

    def _exp_unknown(self, *items: dict) -> None:
        """No exp rate in the spec: the exp roof's time is unknown, not zero (t_exp_s None in each row or kernel
        dict), in the JSON and the frames alike."""
        if self.exp_per_s is None:
            for item in items:
                item["t_exp_s"] = None

    def to_frame(self, breakdown: bool = False):
        """The rows as a pandas DataFrame indexed by variant label; `breakdown` gives one row per launch.

        Columns are the Row (or KernelRow) fields that some row fills, in SI units, per layer.
        """
        import pandas as pd  # pandas is slow to import and only notebooks need it

        if breakdown:
            records = [dict(variant=r.label or r.variant, **dataclasses.asdict(k)) for r in self.rows for k in r.kernels]
            self._exp_unknown(*records)
            return pd.DataFrame(records).set_index(["variant", "kernel"])
        records = []
        for r in self.rows:
            record = r.to_dict()
            record.pop("kernels", None)
            if "tile" in record:
                record["tile"] = "{block_q}x{block_kv}".format(**record["tile"])
            record["variant"] = r.label or r.variant
            self._exp_unknown(record)
            records.append(record)
        return pd.DataFrame(records).drop(columns="label", errors="ignore").set_index("variant")

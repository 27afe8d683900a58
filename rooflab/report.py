"""Specs + workload -> Report: what `rooflab report` prints, computed here, rendered in render.py.

A Report is the JSON contract of `rooflab report`: top-level workload fields, `facts` (a typed,
frozen PrefillFacts or DecodeFacts) and `rows`, each with at least variant, flops, hbm_bytes,
intensity_flop_per_byte, t_compute_s, t_memory_s, t_floor_s and bound, all per layer in SI units.
The facts are computed by prefill_facts and decode_facts, which explain and the charts call too.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

import numpy as np

from .cost.model import DecodeStep, decode_step
from .cost.naive import naive_ceiling
from .cost.batch import DecodeBatch, decode_batch
from .cost.common import Cost, LaunchCost, check_dtypes, check_flag, check_spec, fused, real_number, whole_number
from .cost.layers import layer_decode, layer_prefill, layer_splits, layer_walk, main_attention, model_decode, model_total
from .cost.paged import MAX_Q_LEN, check_page_size, check_splits
from .errors import InputError, shown
from .limits import MAX_BATCH, MAX_RAGGED, MAX_TOKENS
from .kvcache import BatchMemory, batch_memory
from .floors import Ceilings
from .rows import Row, make_row
from .specs import GpuSpec, LayerType, ModelSpec
from .units import DType
from .predict import PredictedTime, decode_kernel, no_prediction_reason, predict_time, prefill_kernel
from .shape import AttentionShape, BareAttention
from .vocab import CeilingSource, Phase, Variant


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
                  dtype: DType = DType.fp16, causal: bool = True) -> PrefillFacts:
    """Whether naive prefill of `seq_len` tokens fits beside the weights, and flash's intensity over naive's (one
    layer of the model's main softmax layer type, priced by rooflab.cost.layers as the report's rows are)."""
    seq_len, batch, dtype = _prefill_workload(seq_len, batch, dtype)
    causal = check_flag(causal, "causal")
    main = main_attention(model)
    return _prefill_facts(model, gpu, seq_len, batch, dtype,
                          layer_prefill(model, main, seq_len, batch, dtype, causal, naive=True),
                          layer_prefill(model, main, seq_len, batch, dtype, causal, gpu=gpu))


def _prefill_facts(model: ModelSpec, gpu: GpuSpec, seq_len: int, batch: int, dtype: DType, naive: Cost,
                   flash: Cost) -> PrefillFacts:
    """The facts from the main layer type's naive and flash costs, already built."""
    ceiling = naive_ceiling(model, gpu, batch, dtype)
    ratio = (flash.flops / flash.hbm_bytes) / (naive.flops / naive.hbm_bytes)
    return PrefillFacts(
        weights_bytes=ceiling.weights_bytes, hbm_capacity_bytes=ceiling.capacity_bytes,
        naive_working_set_bytes=float(naive.working_set_bytes), naive_max_seq_len=ceiling.max_seq_len,
        naive_fits=ceiling.fits(seq_len), flash_over_naive_intensity=float(ratio),
    )


def once(price: Callable[..., Cost]) -> Callable[..., Cost]:
    """`price` remembering what it built: a report prices each distinct cost once (per layer type, shape and
    launch), its rows, facts, split search and predictions sharing them."""
    return functools.lru_cache(maxsize=None)(price)


def prefill_prediction(gpu: GpuSpec, layer: LayerType, price: Callable[[Optional[int], float], Cost], dtype: DType,
                       impl: Optional[str] = None, naive: bool = False) -> Optional[PredictedTime]:
    """The predicted time of one layer's prefill (rooflab.predict.predict_time for this layer type's kernel), or
    None where the GPU has no fit: what a prefill report's row and the time chart's predicted line show."""
    return predict_time(gpu, prefill_kernel(layer, naive=naive), price, dtype, impl, optional=True)


def decode_prediction(gpu: GpuSpec, layer: LayerType, price: Callable[[Optional[int], float], Cost], dtype: DType,
                      splits: int = 1, q_len: int = 1, impl: Optional[str] = None) -> Optional[PredictedTime]:
    """The predicted time of one layer's decode step with `splits` splits, or None where the GPU has no fit: what a
    decode report's row and the decode chart's predicted line show."""
    return predict_time(gpu, decode_kernel(layer, splits, q_len), price, dtype, impl, optional=True)


#: A prefill of more query rows (T x B x query heads) than this gets no t_predicted: the parallelism model
#: (cost/flash.py _unit_work) lists every (head, query tile) unit.
_MAX_SCHEDULED_ROWS = 2 ** 34


def _with_prediction(row: Row, prediction: Optional[PredictedTime], gpu: GpuSpec, kernel, impl: Optional[str]) -> Row:
    """`row` with its prediction, or with the reason it has none (a blank t_predicted never goes without a note)."""
    if prediction is not None:
        return row.predicted(prediction)
    return dataclasses.replace(row, predicted_note=no_prediction_reason(gpu, kernel, impl))


def prefill_report(model: ModelSpec, gpu: GpuSpec, seq_len: int = 8192, batch: int = 1,
                   dtype: DType = DType.fp16, causal: bool = True,
                   ceilings: CeilingSource = CeilingSource.datasheet, impl: str | None = None) -> Report:
    """Naive and flash attention side by side for one layer of each of `model`'s layer types prefilling
    `seq_len` tokens (a linear layer type gets its recurrent row), with the whole-model totals.

    Each row carries the predicted time of `impl` (or of the fastest implementation fitted on the GPU)
    where the GPU YAML has a fitted model for that kernel (rooflab.predict), beside its physical floor.
    Each distinct cost is built once (rows, facts and predictions share them).
    """
    model, gpu = check_spec(model, ModelSpec, "model"), check_spec(gpu, GpuSpec, "gpu")
    seq_len, batch, dtype = _prefill_workload(seq_len, batch, dtype)
    causal = check_flag(causal, "causal")
    roofs = Ceilings.of(gpu, dtype, ceilings)

    @once
    def build(name: str, naive: bool, num_sms: Optional[int], units_per_sm: float) -> Cost:
        launch = {} if naive else dict(gpu=gpu, num_sms=num_sms, units_per_sm=units_per_sm)
        return layer_prefill(model, name, seq_len, batch, dtype, causal, naive=naive, **launch)

    def price(name: str, naive: bool, num_sms: Optional[int] = None, units_per_sm: float = 1.0) -> Cost:
        return build(name, naive, None, 1.0) if naive else build(name, naive, num_sms, float(units_per_sm))

    rows = []
    for name, layer, count in layer_walk(model):
        tag = _tag(model, name)
        where = dict(layer_type=name, num_layers=count)
        if not layer.is_attention:
            rows.append(make_row(price(name, False), roofs, label=f"recurrent{tag}", **where))
            continue
        naive, flash = price(name, True), price(name, False)
        rows += [
            make_row(naive, roofs, breakdown=True, s_bytes=naive.s_bytes, p_bytes=naive.p_bytes,
                     peak_extra_bytes=naive.peak_extra_bytes, label=f"naive{tag}" if tag else None,
                     intensity_compulsory_flop_per_byte=naive.intensity_compulsory, **where),
            make_row(flash, roofs, hbm_bytes_tiled=flash.hbm_bytes_tiled,
                     intensity_tiled_flop_per_byte=flash.intensity_tiled, label=f"flash{tag}" if tag else None,
                     tile=(flash.tile.block_q, flash.tile.block_kv), rescale_overhead=flash.rescale_overhead,
                     **where),
        ]
        if seq_len * batch * (layer.num_qo_heads or model.num_qo_heads) > _MAX_SCHEDULED_ROWS:     # the launch schedule is walked unit by unit
            why = (f"the parallelism model walks its {seq_len * batch * (layer.num_qo_heads or model.num_qo_heads):.2e} query rows' tiles one "
                   f"by one; above {_MAX_SCHEDULED_ROWS:.0e} no prediction is made")
            rows[-2:] = [dataclasses.replace(r, predicted_note=why) for r in rows[-2:]]
            continue
        rows[-2] = _with_prediction(rows[-2], prefill_prediction(gpu, layer, lambda n, k, name=name: price(name, True),
                                                                 dtype, impl, naive=True),
                                    gpu, prefill_kernel(layer, naive=True), impl)
        rows[-1] = _with_prediction(rows[-1], prefill_prediction(gpu, layer, lambda n, k, name=name: price(name, False,
                                                                                                            n, k),
                                                                 dtype, impl), gpu, prefill_kernel(layer), impl)
    main = main_attention(model)
    return Report(
        model=model.name, gpu=gpu.name, phase=Phase.prefill, seq_len=int(seq_len), batch=int(batch),
        dtype=dtype.value, causal=causal, num_layers=model.num_layers, ceilings=roofs.source.value,
        ridge_flop_per_byte=roofs.ridge_flop_per_byte,
        bandwidth_bytes_per_s=roofs.bandwidth_bytes_per_s, matmul_flop_per_s=roofs.matmul_flop_per_s,
        rows=tuple(rows), facts=_prefill_facts(model, gpu, seq_len, batch, dtype, price(main, True),
                                               price(main, False)),
        model_display_name=model.display_name, gpu_display_name=gpu.display_name,
        totals=model_totals(rows, (Variant.naive, Variant.flash)), bare_shape=isinstance(model, BareAttention),
    )


def _prefill_workload(seq_len: object, batch: object, dtype: object) -> tuple[int, int, DType]:
    """A prefill report's workload, checked where it enters: one sequence length and one batch size (whole numbers;
    a sweep over lengths is cost.layers.model_prefill's), and the dtype as a DType."""
    return (whole_number(seq_len, "seq_len", maximum=MAX_TOKENS), whole_number(batch, "batch", maximum=MAX_BATCH),
            DType.of(dtype))


def _decode_batch(context_lens: object) -> DecodeBatch:
    """A decode report's batch: a DecodeBatch as is, or a list (tuple, array) of context lengths, one per sequence.
    A bare number or a string is refused: which of length and batch size it means is not for rooflab to guess."""
    if isinstance(context_lens, DecodeBatch):
        return context_lens
    if isinstance(context_lens, (str, bytes)) or not isinstance(context_lens, (list, tuple, range, np.ndarray)) \
            or np.ndim(context_lens) != 1:
        raise InputError(f"context_lens must be a list of context lengths, one per sequence, or "
                         f"DecodeBatch.uniform(length, batch); got {shown(context_lens)}")
    return decode_batch(context_lens)


def _tag(model: ModelSpec, name: str) -> str:
    """' [local]': the layer type a row prices, in hybrid models only (a uniform model's rows read as before)."""
    return f" [{name}]" if model.is_hybrid else ""


def model_totals(rows: Sequence[Row], variants: Sequence[Variant]) -> tuple[ModelTotal, ...]:
    """For each attention variant, the whole model: its rows (one per layer type) and the recurrent rows,
    each times its layer count. A variant's row stands for every softmax layer of its type."""
    out = []
    for variant in variants:
        chosen = [r for r in rows if r.variant in (variant.value, Variant.recurrent.value)]
        if not any(r.variant == variant.value for r in chosen):
            continue
        predicted = None if any(r.t_predicted_s is None for r in chosen) else \
            sum(r.t_predicted_s * (r.num_layers or 1) for r in chosen)
        out.append(ModelTotal(variant.value, sum(r.num_layers for r in chosen),
                              sum(r.flops * r.num_layers for r in chosen),
                              sum(r.hbm_bytes * r.num_layers for r in chosen),
                              sum(r.model_t_floor_s for r in chosen), predicted))
    return tuple(out)


def _mixed_row(model: ModelSpec, name: str, decode: Cost, chunk: int, dtype: DType, roofs: Ceilings, tag: str,
               where: dict) -> Row:
    """The decode batch (its unsplit cost) and a `chunk`-token prefill chunk in one launch (chunked prefill): one
    row."""
    prefill = layer_prefill(model, name, chunk, 1, dtype, causal=True)
    cost = LaunchCost(fused("mixed_step", (decode.attention, prefill.kernel)), Variant.mixed)
    return make_row(cost, roofs, breakdown=False, label=f"mixed (+{chunk:,}-token chunk){tag}",
                    kv_bytes=decode.kv_bytes, **where)


#: The main softmax layer type, under its old name (explain imported it from here).
_main_attention = main_attention


def decode_facts(model: ModelSpec, gpu: GpuSpec, context_lens: Sequence[int] | DecodeBatch, page_size: int = 16,
                 dtype: DType = DType.fp16, kv_dtype: DType | None = None, q_len: int = 1) -> DecodeFacts:
    """The split recommendation, decode intensity and whole-step figures for one decode step (the split and
    intensity of the model's main attention layer type)."""
    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    lens = _decode_batch(context_lens)
    main, k = main_attention(model), gpu.units_per_sm
    price = once(lambda s: layer_decode(model, main, lens, page_size, dtype, kv_dtype, s, q_len, gpu.num_sms, k))
    best = layer_splits(model, main, lens, gpu.num_sms, page_size, dtype, kv_dtype, k, q_len=q_len, price=price)
    return _decode_facts(model, gpu, lens, kv_dtype, price(1), best)


def _decode_facts(model: ModelSpec, gpu: GpuSpec, lens: DecodeBatch, kv_dtype: DType, unsplit: Cost,
                  recommended: int) -> DecodeFacts:
    """The facts from the main layer type's unsplit cost and recommended split count, already found."""
    step = _attention_step(model, int(round(lens.mean_len)), lens.size, kv_dtype) if isinstance(model, BareAttention) \
        else decode_step(model, int(round(lens.mean_len)), lens.size, None, kv_dtype)
    return DecodeFacts(
        recommended_splits=recommended,
        decode_intensity_flop_per_byte=float(unsplit.intensity_kv),
        work_units_unsplit=int(unsplit.work_units), num_sms=gpu.num_sms, units_per_sm=gpu.units_per_sm,
        attention_flop_share=step.attention_flop_share, flops_per_token=step.flops_per_token,
        weight_bytes_per_step=step.weight_bytes_per_step, kv_bytes_per_step=step.kv_bytes_per_step,
        layer_kind=model.layer_types[main_attention(model)].kind.value,
    )


def _attention_step(shape: BareAttention, context_len: int, batch: int, kv_dtype: DType) -> DecodeStep:
    """A --shape's decode step as decode_step counts a model's, with no weights: its attention FLOPs a token and KV
    bytes a step (the layer through cost.layers' walk, as decode_step prices each layer type), no linear layers."""
    attn_dtype = kv_dtype if kv_dtype.bytes >= 2 else DType.bf16          # decode_step's choice
    layers = model_decode(shape, DecodeBatch.uniform(context_len, 1), dtype=attn_dtype, kv_dtype=kv_dtype)
    return DecodeStep(batch, context_len, 0.0, float(model_total(layers, lambda cost: cost.flops)), 0.0,
                      batch * float(model_total(layers, lambda cost: cost.kv_bytes)))


def decode_report(model: ModelSpec, gpu: GpuSpec, context_lens: Sequence[int] | DecodeBatch, page_size: int = 16,
                  dtype: DType = DType.fp16, kv_dtype: DType | None = None, splits: int | None = None,
                  ceilings: CeilingSource = CeilingSource.datasheet, q_len: int = 1,
                  prefill_chunk: int | None = None, impl: str | None = None) -> Report:
    """One decode step per layer of each layer type: paged decode in one launch, and split-KV with the S-way merge
    (a linear layer type: its state update), with the whole-model totals.

    `context_lens` is one length per sequence (a ragged batch, kept in the given order in the report),
    or a DecodeBatch (DecodeBatch.uniform(8192, 64) for 64 sequences of 8192 tokens, priced in closed
    form whatever the batch). `q_len` new tokens per sequence (speculative verification). `splits`
    defaults, per layer type, to the fastest count, at least 2 so the row shows split-KV. With
    `prefill_chunk` C each layer type gains a `mixed` row: the unsplit decode batch and a C-token
    prefill chunk (a new sequence's first chunk, causal) in one launch, its floor that of the summed
    FLOPs and bytes, not the sum of two floors. Each distinct cost is built once: the split search runs once
    per layer type, and the rows, facts and predictions share its costs.
    """
    model, gpu = check_spec(model, ModelSpec, "model"), check_spec(gpu, GpuSpec, "gpu")
    dtype, kv_dtype = check_dtypes(dtype, kv_dtype)
    lens = _decode_batch(context_lens)
    page_size = check_page_size(page_size)
    q_len = whole_number(q_len, "q_len (new tokens per sequence)", maximum=MAX_Q_LEN)
    if prefill_chunk:
        prefill_chunk = whole_number(prefill_chunk, "prefill_chunk", maximum=MAX_TOKENS)
    if splits is not None:
        splits = check_splits(splits)
    roofs = Ceilings.of(gpu, dtype, ceilings)
    listed = tuple(int(x) for x in context_lens) if not isinstance(context_lens, DecodeBatch) else \
        (lens.expanded() if lens.size <= MAX_RAGGED else None)
    k, main = gpu.units_per_sm, main_attention(model)

    @once
    def build(name: str, s: int, num_sms: Optional[int], units_per_sm: float) -> Cost:
        return layer_decode(model, name, lens, page_size, dtype, kv_dtype, s, q_len, num_sms, units_per_sm)

    def price(name: str, s: int, num_sms: Optional[int] = gpu.num_sms, units_per_sm: float = k) -> Cost:
        return build(name, s, num_sms, float(units_per_sm))

    rows, recommended = [], {}
    for name, layer, count in layer_walk(model):
        tag, where = _tag(model, name), dict(layer_type=name, num_layers=count)
        if not layer.is_attention:
            rows.append(make_row(price(name, 1, None, 1.0), roofs, label=f"recurrent{tag}", **where))
            continue
        if splits is None or name == main:
            recommended[name] = layer_splits(model, name, lens, gpu.num_sms, page_size, dtype, kv_dtype, k,
                                             q_len=q_len, price=lambda s, name=name: price(name, s))
        chosen = splits if splits is not None else max(2, recommended[name])
        for s in (1, chosen):
            cost = price(name, s)
            label = ("paged" if s == 1 else f"split_kv ({s} splits)") + tag
            row = make_row(cost, roofs, breakdown=s > 1, label=label, kv_bytes=cost.kv_bytes, splits=s,
                           parallel_fraction=cost.parallel_fraction, **where)
            rows.append(_with_prediction(row, decode_prediction(gpu, layer, lambda n, u, name=name, s=s: price(name, s, n,
                                                                                                           u),
                                                                dtype, s, q_len, impl),
                                         gpu, decode_kernel(layer, s, q_len), impl))
        if prefill_chunk:
            rows.append(_mixed_row(model, name, price(name, 1), prefill_chunk, dtype, roofs, tag, where))
    facts = _decode_facts(model, gpu, lens, kv_dtype, price(main, 1), recommended[main])
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
        kv_dtype=kv_dtype.value, page_size=page_size, notes=tuple(notes), q_len=q_len,
        totals=model_totals(rows, (Variant.paged, Variant.split_kv)),
        memory=batch_memory(model, gpu, lens, kv_dtype, page_size, q_len), bare_shape=isinstance(model, BareAttention),
    )


#: No published attention kernel reaches 100 PFLOP/s (rooflab.published.MAX_TFLOPS).
MAX_PUBLISHED_TFLOPS = 1e5


def with_published_rate(report: Report, shape: AttentionShape, tflops: float, convention: str = "fa") -> Report:
    """`report` (of `shape`: report --shape) with a published rate for that shape as time under `convention` (fa:
    the FlashAttention papers' 4 B H T^2 d, halved when causal; fa_no_half: FlashMLA's, never halved), set against
    the report's lowest floor and that row's prediction (PublishedTime). Decode: T_q = the report's q_len new tokens
    over T_kv = the context, never halved (every query sees the whole context)."""
    from .published import Convention, convention_flops

    if not isinstance(report, Report) or not isinstance(shape, AttentionShape):
        raise InputError(f"with_published_rate takes a Report and an AttentionShape, got {type(report).__name__} and "
                         f"{type(shape).__name__}")
    tflops = real_number(tflops, "--published-tflops (TFLOP/s)", 0, MAX_PUBLISHED_TFLOPS, lo_open=True)
    chosen = Convention.of(convention, "--convention")
    if chosen is Convention.time:
        raise InputError("--convention time: a source that gives times has no rate to convert; give fa or fa_no_half")
    h = shape.heads
    prefill = report.phase is Phase.prefill
    seq_q, causal = (shape.seq_len, report.causal) if prefill else (report.q_len, False)
    flops = convention_flops(chosen, shape.batch, h.num_qo_heads, seq_q, shape.seq_len, h.head_dim, h.value_dim,
                             causal)
    floor = min((r for r in report.rows if r.variant != Variant.mixed.value), key=lambda r: r.t_floor_s)
    published = PublishedTime(float(tflops), chosen.value, flops, flops / (tflops * 1e12), floor.label or floor.variant,
                              float(floor.t_floor_s), floor.t_predicted_s, floor.predicted_impl)
    return dataclasses.replace(report, published=published)


__all__ = ["DecodeFacts", "MAX_PUBLISHED_TFLOPS", "ModelTotal", "PrefillFacts", "PublishedTime", "Report", "decode_facts", "decode_prediction", "decode_report",
           "model_totals", "prefill_facts", "prefill_prediction", "prefill_report", "with_published_rate"]

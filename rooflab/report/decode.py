"""`rooflab report --phase decode`: paged decode and split-KV (and a mixed chunked-prefill row) for one layer of each
layer type, with the model's totals."""

from __future__ import annotations

from typing import Optional, Sequence

from ..cost.batch import DecodeBatch
from ..cost.common import Cost, LaunchCost, check_dtypes, check_spec, fused, whole_number
from ..cost.layers import layer_decode, layer_prefill, layer_splits, layer_walk, main_attention
from ..cost.paged import MAX_Q_LEN, check_page_size, check_splits
from ..floors import Ceilings
from ..kvcache import batch_memory
from ..limits import MAX_RAGGED, MAX_TOKENS
from ..predict import decode_kernel
from ..rows import Row, make_row
from ..shape import BareAttention
from ..specs import GpuSpec, ModelSpec
from ..units import DType
from ..vocab import CeilingSource, Phase, Variant
from .common import _decode_batch, _tag, _with_prediction, decode_prediction, model_totals, once
from .facts import _decode_facts
from .result import Report


def _mixed_row(model: ModelSpec, name: str, decode: Cost, chunk: int, dtype: DType, roofs: Ceilings, tag: str,
               where: dict) -> Row:
    """The decode batch (its unsplit cost) and a `chunk`-token prefill chunk in one launch (chunked prefill): one
    row."""
    prefill = layer_prefill(model, name, chunk, 1, dtype, causal=True)
    cost = LaunchCost(fused("mixed_step", (decode.attention, prefill.kernel)), Variant.mixed)
    return make_row(cost, roofs, breakdown=False, label=f"mixed (+{chunk:,}-token chunk){tag}",
                    kv_bytes=decode.kv_bytes, **where)


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
        matmul_flop_per_s=roofs.matmul_flop_per_s, exp_per_s=roofs.exp_roof_per_s, rows=tuple(rows), facts=facts,
        model_display_name=model.display_name, gpu_display_name=gpu.display_name,
        context_lens=listed, context_len_counts=tuple((int(n), int(c)) for n, c in zip(lens.lengths, lens.counts)),
        kv_dtype=kv_dtype.value, page_size=page_size, notes=tuple(notes), q_len=q_len,
        totals=model_totals(rows, (Variant.paged, Variant.split_kv)),
        memory=batch_memory(model, gpu, lens, kv_dtype, page_size, q_len), bare_shape=isinstance(model, BareAttention),
    )

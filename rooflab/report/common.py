"""What the prefill and decode reports share: the workload checks, the predictions beside the rows, the whole-model
totals and the layer-type tag."""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional, Sequence

import numpy as np

from ..cost.batch import DecodeBatch, decode_batch
from ..cost.common import Cost, whole_number
from ..errors import InputError, shown
from ..limits import MAX_BATCH, MAX_TOKENS
from ..predict import PredictedTime, decode_kernel, no_prediction_reason, predict_time, prefill_kernel
from ..rows import Row
from ..specs import GpuSpec, LayerType, ModelSpec
from ..units import DType
from ..vocab import Variant
from .result import ModelTotal


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
#: (cost/parallel.py schedule_fraction) may simulate every (head, query tile) unit where its states never come round.
_MAX_SCHEDULED_ROWS = 2 ** 34


def _with_prediction(row: Row, prediction: Optional[PredictedTime], gpu: GpuSpec, kernel, impl: Optional[str]) -> Row:
    """`row` with its prediction, or with the reason it has none (a blank t_predicted never goes without a note)."""
    if prediction is not None:
        return row.predicted(prediction)
    return dataclasses.replace(row, predicted_note=no_prediction_reason(gpu, kernel, impl))


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

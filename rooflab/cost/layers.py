"""Cost per layer type: the one place that maps a model's layer types to the cost functions that price them.

    full, sliding, chunked   flash_prefill / paged_decode with the type's Visibility and sinks
    mla                      flash_prefill with the un-absorbed heads / mla_decode (absorbed, latent cache)
    linear                   linear_prefill / linear_decode (a fixed state per sequence)

Under tensor parallelism each GPU computes its share of the heads (AttentionHeads.shard; MLA heads
divide, the latent is replicated; linear heads divide). A model's total for a phase is the sum over
its layer types of (layers of that type) x (that type's cost per layer): model_prefill and
model_decode return the pieces, so a report can show each type beside the total, and model_total
sums any per-layer figure of them (a floor, a modelled time) over the model.

This is the only code that walks a model's layer types (layer_walk): the reports, the charts'
series, explain and the notebooks go through it, so they cannot price a model two ways. The kernel
cost functions (flash_prefill, paged_decode, ...) take one layer's AttentionHeads and refuse a
ModelSpec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from ..specs import LayerType, ModelSpec
from ..units import DType
from .batch import DecodeBatch, decode_batch
from .common import ArrayLike, Cost, Visibility, check_layer, check_spec
from .flash import flash_prefill
from .linear import linear_decode, linear_prefill
from .mla import mla_decode
from .naive import naive_prefill
from .paged import MAX_SPLITS, best_splits, fastest_splits, paged_decode


@dataclass(frozen=True)
class LayerCost:
    """One layer type's cost per layer, and how many layers of the model have that type."""

    name: str
    layer: LayerType
    num_layers: int
    cost: Any          # a Cost: FlashCost, NaiveCost, DecodeCost, MlaDecodeCost or LinearCost


def layer_walk(model: ModelSpec) -> tuple[tuple[str, LayerType, int], ...]:
    """(name, layer type, layers of that type) for each of the model's layer types, in the model's order: the one
    walk over a model's layers."""
    check_spec(model, ModelSpec, "model")
    return model.layer_walk()


def main_attention(model: ModelSpec) -> str:
    """The softmax layer type most of the model's layers have (the first of a tie): the one a report's facts, the
    roofline chart's points and explain's default describe."""
    softmax = {name: count for name, layer, count in layer_walk(model) if layer.is_attention}
    if not softmax:
        raise InputError(f"{model.name} has no softmax attention layer type (only {', '.join(model.layer_types)})")
    return max(softmax, key=softmax.get)


def layer_heads(model: ModelSpec, layer: LayerType, tensor_parallel: int = 1):
    """The heads one GPU computes for `layer`: the type's own or the model's, split tensor_parallel ways."""
    check_layer(layer)
    heads = layer.heads(model.heads)
    return heads.shard(tensor_parallel) if tensor_parallel > 1 else heads


def layer_prefill(model: ModelSpec, name: str, seq_len: ArrayLike, batch: ArrayLike = 1,
                  dtype: DType = DType.fp16, causal: bool = False, naive: bool = False, **flash: Any) -> Cost:
    """One layer of type `name` prefilling `seq_len` tokens: flash (or naive) attention, or the linear scan.

    `flash` passes on to flash_prefill (gpu, tile, num_sms, units_per_sm, write_lse, tensor_parallel).
    """
    layer = _layer(model, name)
    tp = flash.pop("tensor_parallel", 1)
    if not layer.is_attention:
        return linear_prefill(layer, seq_len, batch, dtype)
    heads = layer_heads(model, layer, tp)
    visibility = Visibility.of(layer)
    if naive:
        return naive_prefill(heads, seq_len, batch, dtype, causal, visibility=visibility)
    return flash_prefill(heads, seq_len, batch, dtype, causal, visibility=visibility, sinks=layer.sinks, **flash)


def layer_decode(model: ModelSpec, name: str, context_lens: ArrayLike | DecodeBatch, page_size: int = 16,
                 dtype: DType = DType.fp16, kv_dtype: DType | None = None, num_splits: int = 1, q_len: int = 1,
                 num_sms: int | None = None, units_per_sm: float = 1.0, tensor_parallel: int = 1,
                 mla_sparse_fp8: bool = False) -> Cost:
    """One decode step of one layer of type `name` over the batch."""
    layer = _layer(model, name)
    if not layer.is_attention:
        size = context_lens.size if isinstance(context_lens, DecodeBatch) else len(context_lens)
        return linear_decode(layer, size, q_len, dtype, kv_dtype)
    heads = layer_heads(model, layer, tensor_parallel)
    if layer.is_latent:
        return mla_decode(layer, heads.num_qo_heads, context_lens, page_size, dtype, kv_dtype, num_splits, q_len,
                          num_sms, units_per_sm, mla_sparse_fp8)
    return paged_decode(heads, context_lens, page_size, dtype, kv_dtype, num_splits, num_sms, units_per_sm, q_len,
                        Visibility.of(layer), layer.sinks)


def split_limit(model: ModelSpec, name: str, context_lens: ArrayLike | DecodeBatch, page_size: int = 16,
                q_len: int = 1) -> int:
    """The most splits worth trying for a layer type's decode: one a page of the keys the longest sequence reads,
    at most MAX_SPLITS (1 for a linear layer: no KV to split)."""
    layer = _layer(model, name)
    if not layer.is_attention:
        return 1
    read = float(Visibility.of(layer).read_tokens(decode_batch(context_lens).max_len, q_len))
    return int(min(MAX_SPLITS, np.ceil(read / page_size)))


def layer_splits(model: ModelSpec, name: str, context_lens: ArrayLike | DecodeBatch, num_sms: int | None,
                 page_size: int = 16, dtype: DType = DType.fp16, kv_dtype: DType | None = None,
                 units_per_sm: float = 1.0, recommended: bool = True, tensor_parallel: int = 1,
                 q_len: int = 1, price: Callable[[int], Cost] | None = None, mla_sparse_fp8: bool = False) -> int:
    """The split count for a layer type's decode: the one with the fastest step (best_splits over the keys the
    type reads), or that count but at least 2 when `recommended` is False (a report's split-KV row).
    Linear layers: 1 (no KV to split); no SM count: 1 (splitting only pays against idle SMs).

    `price(S)` prices the step with S splits where the caller keeps the costs it builds (a report prices each
    once); by default layer_decode with this layer type's arguments (`mla_sparse_fp8`: layer_decode's).
    """
    layer = _layer(model, name)
    if not layer.is_attention or num_sms is None:
        return 1 if recommended or not layer.is_attention else 2
    batch = decode_batch(context_lens)
    limit = split_limit(model, name, batch, page_size, q_len)
    if price is None and not layer.is_latent:                 # paged decode: every split count priced at once
        best = fastest_splits(layer_heads(model, layer, tensor_parallel), batch, limit, num_sms, page_size, dtype,
                              kv_dtype, units_per_sm, q_len, Visibility.of(layer))
        return best if recommended else max(2, best)
    if price is None:
        def price(s: int) -> Cost:
            return layer_decode(model, name, batch, page_size, dtype, kv_dtype, s, q_len, num_sms, units_per_sm,
                                tensor_parallel, mla_sparse_fp8)
    best = best_splits(price, limit)
    return best if recommended else max(2, best)


def model_prefill(model: ModelSpec, seq_len: ArrayLike, batch: ArrayLike = 1, dtype: DType = DType.fp16,
                  causal: bool = False, naive: bool = False, **flash: Any) -> tuple[LayerCost, ...]:
    """Every layer type's prefill cost per layer, with its layer count."""
    return tuple(LayerCost(name, layer, count,
                           layer_prefill(model, name, seq_len, batch, dtype, causal, naive, **dict(flash)))
                 for name, layer, count in layer_walk(model))


def model_decode(model: ModelSpec, context_lens: ArrayLike | DecodeBatch, page_size: int = 16,
                 dtype: DType = DType.fp16, kv_dtype: DType | None = None, num_splits: int = 1, q_len: int = 1,
                 **launch: Any) -> tuple[LayerCost, ...]:
    """Every layer type's decode-step cost per layer, with its layer count."""
    return tuple(LayerCost(name, layer, count,
                           layer_decode(model, name, context_lens, page_size, dtype, kv_dtype, num_splits, q_len,
                                        **launch))
                 for name, layer, count in layer_walk(model))


def model_total(layers: Sequence[LayerCost], per_layer: Callable[[Cost], Any]) -> np.ndarray:
    """A whole-model figure: the sum over layer types of (layers of that type) x per_layer(that type's cost), e.g.
    per_layer = lambda c: floor(c, ceilings).t_floor_s for the model's floor (arrays broadcast)."""
    return sum(item.num_layers * np.asarray(per_layer(item.cost), dtype=np.float64) for item in layers)


def _layer(model: ModelSpec, name: str) -> LayerType:
    try:
        return model.layer_types[name]
    except KeyError:
        raise InputError(f"{model.name} has no layer type '{name}'; it has {', '.join(model.layer_types)}") from None


__all__ = ["LayerCost", "layer_decode", "layer_heads", "layer_prefill", "layer_splits", "layer_walk", "main_attention",
           "model_decode", "model_prefill", "model_total", "split_limit"]

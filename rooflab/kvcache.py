"""What one sequence keeps in the KV cache, layer type by layer type: pages, bytes, fixed states.

For a sequence of L tokens in pages of P tokens, per layer (bytes on one GPU):

    full, mla   ceil(L / P) pages                       every token stays
    sliding W   min(ceil(L / P), ceil(W / P) + 1)       the pages that intersect the last W tokens
    chunked C   min(ceil(L / P), ceil(C / P) + e)       the current chunk's pages (e = 1 where a chunk
                                                        can start inside a page, 0 when P divides C)
    linear      no pages: a state of fixed size per sequence (LayerType.state_bytes_per_sequence)

A page holds P tokens x the type's bytes per token (K and V of the GPU's KV heads; MLA's latent,
the same on every rank). The windowed rows are what an engine with a hybrid allocator keeps (vLLM's
hybrid KV cache manager frees pages behind the window); `WindowAllocation.full` gives windowed layers
a full-length page table instead, as engines without one do (and as vLLM's logged "GPU KV cache size"
counts every layer). Gemma-3-27B at 65,536 tokens, 16-token pages, bf16: 31.00 GiB per sequence at
full length, 5.41 GiB with its windows (52 sliding layers keep 65 pages each).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cost.batch import DecodeBatch, decode_batch
from .cost.common import check_flag, real_number, whole_number
from .errors import InputError, shown
from .limits import MAX_GPUS, MAX_PAGE_SIZE, MAX_TOKENS
from .specs import GpuSpec, LayerType, ModelSpec
from .units import DType
from .vocab import LayerKind, WindowAllocation


@dataclass(frozen=True)
class LayerKv:
    """One layer type's share of a sequence's cache, per layer and for all its layers."""

    name: str
    kind: LayerKind
    num_layers: int
    bytes_per_token: int          # one layer, one GPU
    pages_per_sequence: int       # one layer
    state_bytes: int              # one layer, one sequence (linear layers)
    page_size: int

    @property
    def bytes_per_sequence(self) -> int:
        """All layers of this type: num_layers x (pages x page x bytes per token + state)."""
        return self.num_layers * (self.pages_per_sequence * self.page_size * self.bytes_per_token + self.state_bytes)


@dataclass(frozen=True)
class KvLayout:
    """A sequence of `context_len` tokens in the cache of one GPU: each layer type's share."""

    context_len: int
    page_size: int
    layers: tuple[LayerKv, ...]

    @property
    def bytes_per_sequence(self) -> int:
        return sum(layer.bytes_per_sequence for layer in self.layers)

    @property
    def bytes_per_token_full(self) -> int:
        """Bytes one token adds across all layers if every layer kept it (no windows, no states)."""
        return sum(layer.num_layers * layer.bytes_per_token for layer in self.layers)


def pages_kept(layer: LayerType, context_len: int, page_size: int,
               allocation: WindowAllocation = WindowAllocation.hybrid) -> int:
    """Pages one layer of this type keeps for a `context_len`-token sequence (the table in the module docstring)."""
    if not isinstance(layer, LayerType):
        raise InputError(f"layer must be a LayerType, got {shown(layer)}")
    context_len = whole_number(context_len, "context length", minimum=0, maximum=MAX_TOKENS)
    page_size = whole_number(page_size, "page size", maximum=MAX_PAGE_SIZE)
    allocation = WindowAllocation.of(allocation, "allocation")
    return int(pages_array(layer, np.asarray(context_len, dtype=np.int64), page_size, allocation))


def pages_array(layer: LayerType, context_lens: np.ndarray, page_size: int,
                allocation: WindowAllocation = WindowAllocation.hybrid) -> np.ndarray:
    """pages_kept at each of `context_lens` (int64 tokens, checked by the caller): LayerType.pages_kept."""
    return layer.pages_kept(context_lens, page_size, allocation)


def sequence_bytes(layout: "KvLayout", model: ModelSpec, context_lens: np.ndarray,
                   allocation: WindowAllocation = WindowAllocation.hybrid, position_split: int = 1) -> np.ndarray:
    """KvLayout.bytes_per_sequence at each of `context_lens` in closed form: `layout`'s bytes per token and states
    (they do not depend on the length), each length's pages (pages_array), a 1 / position_split share of the
    pages of every layer that has pages (decode context or KV parallelism: ceil(pages / split) on the fullest
    GPU). int64 bytes, one GPU."""
    lens = np.asarray(context_lens, dtype=np.int64)
    total = np.zeros(lens.shape, dtype=np.int64)
    for k in layout.layers:
        pages = pages_array(model.layer_types[k.name], lens, layout.page_size, allocation)
        if position_split > 1 and model.layer_types[k.name].splits_by_position:
            pages = -(-pages // position_split)
        total += k.num_layers * (pages * layout.page_size * k.bytes_per_token + k.state_bytes)
    return total


def kv_layout(model: ModelSpec, context_len: int, kv_dtype: DType, page_size: int = 16, tensor_parallel: int = 1,
              allocation: WindowAllocation = WindowAllocation.hybrid, mla_sparse_fp8: bool = False,
              dp_attention: bool = False) -> KvLayout:
    """Each layer type's pages and bytes for one sequence of `context_len` tokens, on one GPU.

    Under tensor parallelism a GPU keeps its share of the KV heads (replicated past h_kv) and the
    whole MLA latent; with `dp_attention` every GPU runs attention for its own sequences with all
    heads (data-parallel attention), so nothing is sharded.
    """
    context_len = whole_number(context_len, "context length", maximum=MAX_TOKENS)
    page_size = whole_number(page_size, "page size", maximum=MAX_PAGE_SIZE)
    kv_dtype = DType.of(kv_dtype, "kv_dtype")
    allocation = WindowAllocation.of(allocation, "allocation")
    mla_sparse_fp8, dp_attention = check_flag(mla_sparse_fp8, "mla_sparse_fp8"), check_flag(dp_attention, "dp_attention")
    if mla_sparse_fp8 and not any(t.is_latent for t in model.layer_types.values()):
        raise InputError(f"mla_sparse_fp8 (--kv-cache-dtype fp8_ds_mla) is DeepSeek's sparse MLA cache layout; "
                         f"{model.name} has no MLA layer")
    tp = 1 if dp_attention else whole_number(tensor_parallel, "tensor parallel size (--tp)", maximum=MAX_GPUS)
    layers = []
    for name, t, count in model.layer_walk():
        per_token = t.kv_bytes_per_token(t.cached_heads(model.heads, tp), kv_dtype, mla_sparse_fp8)
        state = t.state_bytes_per_sequence(kv_dtype, tp)        # linear heads divide like attention heads
        layers.append(LayerKv(name, t.kind, count, per_token, pages_kept(t, context_len, page_size, allocation),
                              state, page_size))
    return KvLayout(context_len, page_size, tuple(layers))


def longest_context(model: ModelSpec, budget_bytes: int, kv_dtype: DType, page_size: int = 16,
                    tensor_parallel: int = 1, allocation: WindowAllocation = WindowAllocation.hybrid,
                    mla_sparse_fp8: bool = False, dp_attention: bool = False, limit: int = MAX_TOKENS) -> int:
    """The longest single sequence whose cache fits `budget_bytes` (whole pages; at most `limit` tokens).

    Bytes per sequence never shrink as the context grows, so the answer is found by bisection.
    """
    budget_bytes = real_number(budget_bytes, "budget_bytes", 0, 2.0**100)
    limit = whole_number(limit, "limit (tokens)", maximum=MAX_TOKENS)

    def fits(n: int) -> bool:
        return kv_layout(model, n, kv_dtype, page_size, tensor_parallel, allocation, mla_sparse_fp8,
                         dp_attention).bytes_per_sequence <= budget_bytes

    if not fits(1):
        return 0
    lo, hi = 1, limit
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


@dataclass(frozen=True)
class BatchMemory:
    """What a decode batch holds on one GPU: the weights as the checkpoint ships them and every sequence's pages.

    A bound, like `rooflab capacity` without --engine: no activations, CUDA graphs or allocator slack, so a
    batch that does not fit here fits nowhere, and one that fits may still need an engine's headroom.
    """

    weights_bytes: int
    kv_bytes: int
    hbm_bytes: int

    @property
    def needed_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes

    @property
    def fits(self) -> bool:
        return self.needed_bytes <= self.hbm_bytes

    def to_dict(self) -> dict:
        return {"weights_bytes": self.weights_bytes, "kv_bytes": self.kv_bytes, "needed_bytes": self.needed_bytes,
                "hbm_bytes": self.hbm_bytes, "fits": self.fits}


def batch_memory(model: ModelSpec, gpu: GpuSpec, batch: DecodeBatch, kv_dtype: DType, page_size: int = 16,
                 q_len: int = 1, allocation: WindowAllocation = WindowAllocation.hybrid) -> BatchMemory:
    """Weights plus the pages of every sequence of `batch` once this step's `q_len` tokens are written."""
    batch = decode_batch(batch)
    q_len = whole_number(q_len, "q_len", maximum=MAX_TOKENS)
    kv = 0
    for length, count in zip(batch.lengths, batch.counts):
        tokens = min(int(length) + q_len, MAX_TOKENS)
        kv += int(count) * kv_layout(model, tokens, kv_dtype, page_size, allocation=allocation).bytes_per_sequence
    return BatchMemory(model.weight_bytes(None), kv, gpu.hbm_capacity_bytes)


__all__ = ["BatchMemory", "KvLayout", "LayerKv", "batch_memory", "kv_layout", "longest_context", "pages_kept"]

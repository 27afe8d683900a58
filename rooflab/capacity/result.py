"""A capacity plan's typed results: CapacityPlan (what `rooflab capacity` prints) and each layer type's share."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class LayerCapacity:
    """One layer type's share of a sequence's cache on one GPU (kvcache.LayerKv, as plain numbers)."""

    layer_type: str
    kind: str
    num_layers: int
    bytes_per_token: int
    pages_per_sequence: int
    state_bytes: int
    bytes_per_sequence: int


@dataclass(frozen=True)
class CapacityPlan:
    """The answers `rooflab capacity` prints; bytes in SI units (bytes), counts as integers."""

    model: str
    gpu: str
    weight_dtype: str
    kv_dtype: str
    gpu_memory_utilization: float
    activation_reserve_bytes: int
    page_size: int
    context_len: int
    max_model_len: int
    usable_bytes: int
    weights_bytes: int
    kv_bytes_per_token: int
    kv_budget_bytes: int
    block_bytes: int
    num_blocks: int
    blocks_per_sequence: int
    max_sequences_paged: int
    max_sequences_contiguous: int
    max_context_len: int
    naive_prefill_max_seq_len: int
    tensor_parallel: int = 1
    kv_heads_per_gpu: int = 0
    hbm_bytes: int = 0
    shared_prefix_len: int = 0
    max_sequences_shared_prefix: int = 0
    reason: Optional[str] = None
    expert_parallel: int = 1
    dp_attention: bool = False
    window_allocation: str = "hybrid"
    kv_bytes_per_sequence: int = 0
    layers: tuple[LayerCapacity, ...] = ()
    decode_context_parallel: int = 1      # DCP: each sequence's KV split by position inside the TP group
    kv_parallel: int = 1                  # KVP (Helix): the same split over extra groups of TP GPUs
    num_gpus: int = 1                     # GPUs the plan spans: TP x KVP x PP (DCP reuses the TP group's)
    pipeline_parallel: int = 1            # PP: the figures are the binding stage's (capacity/stages.py)
    stage_notes: tuple[str, ...] = ()     # under PP: each stage's weights, budget and sequences, and which binds

    @property
    def paging_gain(self) -> float:
        """Concurrent sequences with paging over those with contiguous reservation."""
        if self.max_sequences_contiguous == 0:
            return float("inf") if self.max_sequences_paged else 1.0
        return self.max_sequences_paged / self.max_sequences_contiguous

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_frame(self, layers: bool = False):
        """The plan as a pandas DataFrame: one row, or with `layers` one row per layer type.

        One row: every field of the plan except `layers` (bytes in bytes, lengths in tokens, counts as
        integers; weight_dtype and kv_dtype as the names the plan prints), and paging_gain (paged over
        contiguous sequences). With `layers`: model, gpu, context_len, then LayerCapacity's fields:
        layer_type, kind (full, sliding, chunked, mla, linear), num_layers, bytes_per_token (one layer, one
        GPU), pages_per_sequence (one layer), state_bytes (one layer, one sequence: linear layers) and
        bytes_per_sequence (all of that type's layers, one sequence of context_len tokens), indexed by
        layer_type.
        """
        import pandas as pd  # pandas is slow to import and only notebooks need it

        if layers:
            records = [dict(model=self.model, gpu=self.gpu, context_len=self.context_len, **dataclasses.asdict(k))
                       for k in self.layers]
            return pd.DataFrame(records).set_index("layer_type")
        record = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "layers"}
        record["paging_gain"] = self.paging_gain
        return pd.DataFrame([record])

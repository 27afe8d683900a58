"""The head layout one attention layer computes with: query heads, KV heads, and the head dims."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import InputError, SpecError, shown
from ..fields import spec_field, validate_fields
from ..units import DType

#: Most query (or KV) heads of one attention layer, and the widest head: past any real model.
MAX_HEADS = 1 << 16
MAX_HEAD_DIM = 1 << 16


@dataclass(frozen=True)
class AttentionHeads:
    """Query heads, KV heads and head dims of one attention layer (MHA, GQA, MQA).

    `head_dim` is the width of q and k; `v_head_dim` that of v and o, when it differs (MLA's
    un-absorbed prefill: q.k over 192 = 128 + 64 rope, values of 128).
    """

    num_qo_heads: int = spec_field(1, MAX_HEADS, "heads")
    num_kv_heads: int = spec_field(1, MAX_HEADS, "heads")
    head_dim: int = spec_field(1, MAX_HEAD_DIM)
    v_head_dim: Optional[int] = spec_field(1, MAX_HEAD_DIM, default=None)

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.num_qo_heads % self.num_kv_heads:
            raise SpecError("attention heads", "num_kv_heads", self.num_kv_heads,
                            f"num_qo_heads ({self.num_qo_heads}) must be a multiple of num_kv_heads")

    @property
    def group_size(self) -> int:
        """Query heads served by one KV head (GQA); 1 for multi-head attention."""
        return self.num_qo_heads // self.num_kv_heads

    @property
    def value_dim(self) -> int:
        """The width of v and o: v_head_dim where given, else head_dim."""
        return self.v_head_dim or self.head_dim

    def kv_bytes_per_token(self, kv_dtype: DType) -> int:
        """K and V of one token in one layer: h_kv (d + d_v) b (2 h_kv d b when d_v = d)."""
        return self.num_kv_heads * (self.head_dim + self.value_dim) * DType.of(kv_dtype, "kv_dtype").bytes

    def _shard_problem(self, tp: int) -> str | None:
        """Why `tp` cannot split these heads, or None."""
        if self.num_qo_heads % tp:
            return f"does not divide the {self.num_qo_heads} query heads"
        if tp <= self.num_kv_heads and self.num_kv_heads % tp:
            return f"does not divide the {self.num_kv_heads} KV heads"
        if tp > self.num_kv_heads and tp % self.num_kv_heads:
            return f"is not a multiple of the {self.num_kv_heads} KV heads, so they cannot be replicated evenly"
        return None

    def tensor_parallel_sizes(self) -> list[int]:
        """Every tensor-parallel size that splits these heads (1 .. h)."""
        return [tp for tp in range(1, self.num_qo_heads + 1) if self._shard_problem(tp) is None]

    def shard(self, tensor_parallel: int) -> AttentionHeads:
        """The heads one GPU holds when the layer is split `tensor_parallel` ways by head.

        Query heads divide evenly: h / tp each. KV heads divide too while tp <= h_kv; past
        that every GPU keeps one whole KV head, so each KV head is replicated tp / h_kv times
        (the Megatron / vLLM rule, which needs tp to be a multiple of h_kv there).
        """
        tp = tensor_parallel
        if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
            raise InputError(f"tensor parallel size (--tp) must be a whole number >= 1, got {shown(tp)}")
        problem = self._shard_problem(tp)
        if problem:
            sizes = ", ".join(str(n) for n in self.tensor_parallel_sizes())
            raise InputError(f"tensor parallel size --tp {tp} {problem}; sizes that split these heads: {sizes}")
        return AttentionHeads(self.num_qo_heads // tp, max(1, self.num_kv_heads // tp), self.head_dim,
                              self.v_head_dim)

"""A whole decode step, so attention can be seen in proportion to the rest of the model.

Source: ../shared/seeds/naive-attention-and-online-softmax.txt, "Keep this in
proportion": attention is about 7% of decode FLOPs for Llama-3-8B at a 2.5k
context, while it is a large share of the latency. Per generated token:

    linear FLOPs      2 x active parameters           (every weight one multiply-add)
    attention FLOPs   4 L h d context                 (QK^T and PV over the cached tokens: paged decode's count)
    weight bytes      active parameters x b_w per step, shared by the whole batch
    KV bytes          2 L h_kv d b_kv context per sequence

A mixture of experts reads only the experts its batch routes to: with k of E experts per
token and B tokens, a layer touches E (1 - (1 - k/E)^B) experts on average (uniform routing).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..specs import ModelSpec
from ..units import DType
from .paged import paged_decode_uniform


@dataclass(frozen=True)
class DecodeStep:
    """One decode step of the whole model for `batch` sequences of `context_len` tokens."""

    batch: int
    context_len: int
    linear_flops_per_token: float
    attention_flops_per_token: float
    weight_bytes_per_step: float
    kv_bytes_per_step: float

    @property
    def flops_per_token(self) -> float:
        return self.linear_flops_per_token + self.attention_flops_per_token

    @property
    def attention_flop_share(self) -> float:
        """Attention's share of a token's FLOPs."""
        return self.attention_flops_per_token / self.flops_per_token

    @property
    def kv_byte_share(self) -> float:
        """KV cache's share of the bytes a step reads (weights plus KV)."""
        return self.kv_bytes_per_step / (self.kv_bytes_per_step + self.weight_bytes_per_step)


def experts_touched(model: ModelSpec, batch: int) -> float:
    """Expected distinct experts per layer that `batch` tokens route to (uniform routing)."""
    e, k = model.num_experts, model.num_experts_per_token
    if e == 1:
        return 1.0
    return e * (1 - (1 - k / e) ** batch)


def decode_step(model: ModelSpec, context_len: int, batch: int = 1, weight_dtype: DType = DType.fp16,
                kv_dtype: DType | None = None) -> DecodeStep:
    """FLOPs per token and bytes per step of a whole-model decode step."""
    if context_len < 1 or batch < 1:
        raise InputError(f"context length and batch must be >= 1, got {context_len} and {batch}")
    kv_dtype = kv_dtype or weight_dtype
    mlp = model.expert_parameters
    dense = model.total_parameters - model.num_layers * model.num_experts * mlp * (model.num_experts > 1)
    if model.num_experts > 1:
        weights_read = dense + model.num_layers * experts_touched(model, batch) * mlp
    else:
        weights_read = model.total_parameters
    attention = model.num_layers * paged_decode_uniform(model, context_len, 1, dtype=weight_dtype).flops
    return DecodeStep(
        batch=batch,
        context_len=context_len,
        linear_flops_per_token=2.0 * model.active_parameters,
        attention_flops_per_token=float(attention),
        weight_bytes_per_step=float(weights_read * weight_dtype.bytes),
        kv_bytes_per_step=float(batch * context_len * model.kv_bytes_per_token(kv_dtype)),
    )

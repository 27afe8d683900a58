"""A whole model's decode work, so attention can be seen in proportion to the rest of the model: DecodeTotals.

Not a timed step: the FLOPs a generated token takes and the bytes a step reads, for the model alone (no
deployment, no GPU). The timed step of a deployment on a GPU is rooflab.step.step_report(step="decode").

Source: the chapter "Naive attention and the online softmax", "Keep this in
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

from ..limits import MAX_BATCH, MAX_TOKENS
from ..specs import ModelSpec
from ..specs.weights import bytes_read_per_step
from ..units import DType, WeightFormat
from .batch import DecodeBatch
from .common import whole_number
from .layers import model_decode, model_total


@dataclass(frozen=True)
class DecodeTotals:
    """A whole-model decode's FLOPs per token and bytes per step for `batch` sequences of `context_len` tokens (no
    deployment, no times: rooflab.step.step_report prices the timed step)."""

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
    batch = whole_number(batch, "batch (tokens)", maximum=MAX_BATCH * MAX_TOKENS)
    e, k = model.num_experts, model.num_experts_per_token
    if e == 1:
        return 1.0
    return e * (1 - (1 - k / e) ** batch)


def decode_totals(model: ModelSpec, context_len: int, batch: int = 1,
                  weight_dtype: DType | WeightFormat | None = None, kv_dtype: DType | None = None) -> DecodeTotals:
    """FLOPs per token and bytes per step of a whole-model decode, every layer type priced as itself.

    `weight_dtype` None: the weights as the checkpoint ships them (ModelSpec.weight_format), bf16 for a spec
    that names no format. Attention FLOPs and KV bytes sum each layer type's decode cost (a window reads its
    window, MLA its latent, a linear layer its state) times its layer count.
    """
    context_len = whole_number(context_len, "context length", maximum=MAX_TOKENS)
    batch = whole_number(batch, "batch", maximum=MAX_BATCH)
    kv_dtype = DType.of(kv_dtype, "kv_dtype") if kv_dtype is not None else \
        (weight_dtype if isinstance(weight_dtype, DType) else (model.weight_dtype or DType.fp16))
    attn_dtype = kv_dtype if kv_dtype.bytes >= 2 else DType.bf16
    one = DecodeBatch.uniform(context_len, 1)
    layers = model_decode(model, one, dtype=attn_dtype, kv_dtype=kv_dtype)
    attention = float(model_total(layers, lambda cost: cost.flops))
    kv = float(model_total(layers, lambda cost: cost.kv_bytes if hasattr(cost, "kv_bytes") else cost.state_bytes))
    return DecodeTotals(
        batch=batch,
        context_len=context_len,
        linear_flops_per_token=2.0 * model.active_parameters,
        attention_flops_per_token=attention,
        weight_bytes_per_step=float(weights_read(model, batch, weight_dtype)),
        kv_bytes_per_step=batch * kv,
    )


def weights_read(model: ModelSpec, batch: int, weight_dtype: DType | WeightFormat | None = None) -> float:
    """Bytes of weights one decode step of `batch` tokens reads: everything but the routed experts, and the
    experts the batch routes to (experts_touched), each component in its format (specs.weights, which prices
    what a GPU holds with the same loop)."""
    batch = whole_number(batch, "batch", maximum=MAX_BATCH)
    touched = experts_touched(model, batch) / model.num_experts if model.is_moe else 1.0
    return bytes_read_per_step(model, touched, weight_dtype)


#: The old names, kept one release: a "decode step" here was the model's totals, not the timed step of rooflab.step.
DecodeStep = DecodeTotals
decode_step = decode_totals

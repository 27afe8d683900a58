"""A report's facts: whether naive prefill fits and what S costs in intensity; the decode step's split, work units
and whole-step figures. explain and the charts call these too."""

from __future__ import annotations

from typing import Sequence

from ..cost.batch import DecodeBatch
from ..cost.common import Cost, check_dtypes, check_flag
from ..cost.layers import layer_decode, layer_prefill, layer_splits, main_attention, model_decode, model_total
from ..cost.model import DecodeStep, decode_step
from ..cost.naive import naive_ceiling
from ..shape import BareAttention
from ..specs import GpuSpec, ModelSpec
from ..units import DType
from .common import _decode_batch, _prefill_workload, once
from .result import DecodeFacts, PrefillFacts


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

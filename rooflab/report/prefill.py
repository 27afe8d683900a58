"""`rooflab report` (prefill): naive and flash attention for one layer of each layer type, with the model's totals."""

from __future__ import annotations

import dataclasses
from typing import Optional

from ..cost.common import Cost, check_flag, check_spec
from ..cost.layers import layer_prefill, layer_walk, main_attention
from ..floors import Ceilings
from ..predict import prefill_kernel
from ..rows import make_row
from ..shape import BareAttention
from ..specs import GpuSpec, ModelSpec
from ..units import DType
from ..vocab import CeilingSource, Phase, Variant
from .common import (_MAX_SCHEDULED_ROWS, _prefill_workload, _tag, _with_prediction, model_totals, once,
                     prefill_prediction)
from .facts import _prefill_facts
from .result import Report


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
        bandwidth_bytes_per_s=roofs.bandwidth_bytes_per_s, matmul_flop_per_s=roofs.matmul_flop_per_s, exp_per_s=roofs.exp_roof_per_s,
        rows=tuple(rows), facts=_prefill_facts(model, gpu, seq_len, batch, dtype, price(main, True),
                                               price(main, False)),
        model_display_name=model.display_name, gpu_display_name=gpu.display_name,
        totals=model_totals(rows, (Variant.naive, Variant.flash)), bare_shape=isinstance(model, BareAttention),
    )

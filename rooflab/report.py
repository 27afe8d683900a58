"""Specs + workload -> Report: the rows `rooflab report` prints, computed here, rendered elsewhere."""

from __future__ import annotations

from .cost.flash import flash_prefill
from .cost.naive import naive_max_seq_len, naive_prefill
from .rows import Report, make_row
from .roofline import CeilingSource, Ceilings
from .specs import GpuSpec, ModelSpec
from .units import DType


def prefill_report(model: ModelSpec, gpu: GpuSpec, seq_len: int = 8192, batch: int = 1,
                   dtype: DType = DType.fp16, causal: bool = False,
                   ceilings: CeilingSource = CeilingSource.datasheet) -> Report:
    """Naive and flash attention side by side for one layer of `model` prefilling `seq_len` tokens."""
    roofs = Ceilings.of(gpu, dtype, ceilings)
    naive = naive_prefill(model, seq_len, batch, dtype, causal)
    flash = flash_prefill(model, seq_len, batch, dtype, causal, gpu=gpu)
    rows = (
        make_row(naive, roofs, breakdown=True, s_bytes=naive.s_bytes, p_bytes=naive.p_bytes,
                 peak_extra_bytes=naive.peak_extra_bytes,
                 intensity_compulsory_flop_per_byte=naive.flops / naive.qkvo_bytes),
        make_row(flash, roofs, hbm_bytes_tiled=flash.hbm_bytes_tiled,
                 intensity_tiled_flop_per_byte=flash.intensity_tiled,
                 tile=(flash.tile.block_q, flash.tile.block_kv), rescale_overhead=flash.rescale_overhead),
    )
    weights_bytes = model.total_parameters * dtype.bytes
    max_t = naive_max_seq_len(model, gpu, batch, dtype)
    facts = {
        "weights_bytes": weights_bytes,
        "naive_max_seq_len": max_t,
        "naive_fits": bool(seq_len <= max_t),
        "naive_working_set_bytes": float(naive.working_set_bytes),
        "hbm_capacity_bytes": gpu.hbm_capacity_bytes,
        "naive_over_flash_intensity": float(flash.flops / flash.hbm_bytes / (naive.flops / naive.hbm_bytes)),
    }
    return Report(
        model=model.name, gpu=gpu.name, phase="prefill", seq_len=int(seq_len), batch=int(batch),
        dtype=dtype.value, causal=causal, num_layers=model.num_layers, ceilings=roofs.source.value,
        ridge_flop_per_byte=roofs.ridge_flop_per_byte,
        bandwidth_bytes_per_s=roofs.bandwidth_bytes_per_s, matmul_flop_per_s=roofs.matmul_flop_per_s,
        rows=rows, model_display_name=model.display_name, gpu_display_name=gpu.display_name, facts=facts,
    )

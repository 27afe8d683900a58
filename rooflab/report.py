"""Specs + workload -> Report: the rows `rooflab report` prints, computed here, rendered elsewhere."""

from __future__ import annotations

from typing import Sequence

from .cost.flash import flash_prefill
from .cost.model import decode_step
from .cost.naive import naive_max_seq_len, naive_prefill
from .cost.paged import check_splits, context_lengths, paged_decode, recommend_splits
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
    weights_bytes = model.weight_bytes(dtype)
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


def decode_report(model: ModelSpec, gpu: GpuSpec, context_lens: Sequence[int], page_size: int = 16,
                  dtype: DType = DType.fp16, kv_dtype: DType | None = None, splits: int | None = None,
                  ceilings: CeilingSource = CeilingSource.datasheet) -> Report:
    """One decode step per layer: paged decode in one launch, and split-KV with the S-way merge.

    `splits` defaults to the count recommend_splits picks (at least 2, so the row shows split-KV).
    """
    kv_dtype = kv_dtype or dtype
    roofs = Ceilings.of(gpu, dtype, ceilings)
    lens = context_lengths(context_lens)
    slots = gpu.decode_slots_per_sm
    recommended = recommend_splits(model, lens, gpu.num_sms, page_size, dtype, kv_dtype, slots)
    chosen = check_splits(splits) if splits is not None else max(2, recommended)
    rows, costs = [], []
    for s in (1, chosen):
        cost = paged_decode(model, lens, page_size, dtype, kv_dtype, s, gpu.num_sms, slots)
        costs.append(cost)
        label = "paged" if s == 1 else f"split_kv ({s} splits)"
        rows.append(make_row(cost, roofs, breakdown=s > 1, label=label, kv_bytes=cost.kv_bytes, splits=s,
                             parallel_fraction=cost.parallel_fraction))
    step = decode_step(model, int(round(lens.mean())), lens.size, dtype, kv_dtype)
    facts = {
        "recommended_splits": recommended,
        "decode_intensity_flop_per_byte": float(costs[0].flops / costs[0].kv_bytes),   # 2h / (b h_kv)
        "work_units_unsplit": int(lens.size * model.num_kv_heads),
        "num_sms": gpu.num_sms,
        "decode_units_per_sm": slots,
        "attention_flop_share": step.attention_flop_share,
        "flops_per_token": step.flops_per_token,
        "weight_bytes_per_step": step.weight_bytes_per_step,
        "kv_bytes_per_step": step.kv_bytes_per_step,
    }
    notes = []
    if recommended == 1 and splits is None:
        notes.append("split-KV does not pay here: the unsplit launch already fills the GPU; "
                     "the split_kv row shows the cost of 2 splits for comparison")
    return Report(
        model=model.name, gpu=gpu.name, phase="decode", seq_len=None, batch=int(lens.size), dtype=dtype.value,
        causal=True, num_layers=model.num_layers, ceilings=roofs.source.value,
        ridge_flop_per_byte=roofs.ridge_flop_per_byte, bandwidth_bytes_per_s=roofs.bandwidth_bytes_per_s,
        matmul_flop_per_s=roofs.matmul_flop_per_s, rows=tuple(rows), model_display_name=model.display_name,
        gpu_display_name=gpu.display_name, context_lens=tuple(int(x) for x in lens), kv_dtype=kv_dtype.value,
        page_size=page_size, notes=tuple(notes), facts=facts,
    )

"""`rooflab validate` for the distributed bench's rows: collectives, the GEMM family, DCP, TP, ring and whole steps.

    collectives    the alpha-beta bands (bench/comm_fit.py) fitted on alternate message sizes per
                   (collective, GPU count, timing), held out on the others; floor: bus bytes at the link's
                   datasheet bandwidth
    gemm           c0 + t_model / eta (rooflab.predict), fitted on alternate rows, held out on the others
    dcp_decode     composed, nothing fitted on these rows (every row held out): cost/dcp.dcp_time from the
    tp_attention   GPU's fitted kernels and collectives; TP: the q, kv and o GEMMs, paged decode over the
    ring_prefill   rank's heads and the all-reduce; ring: cost/ring.ring_time with rooflab's flash kernel;
    decode_step    step: rooflab.step.step_report of the file's model (its `# model:` line)

Results are the lead's Validation types (bench/validate.py), so one table shows every kernel.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from ..comm import bus_bytes, collective_time
from ..context_parallel import dcp_time, ring_time
from ..cost.gemm import gemm
from ..cost.paged import paged_decode_uniform, recommend_splits
from ..cost.batch import DecodeBatch
from ..cost.ring import ring_prefill
from ..predict import predict_time
from ..floors import Ceilings, floor_kernel
from ..specs import AttentionHeads, GpuSpec
from ..units import DType
from ..vocab import Kernel, KernelFamily
from .comm_fit import held_out
from .fitting import Fit, fit_overhead_efficiency
from .gemm_fit import model_times as gemm_model_times
from .records import Measurement
from .validate import GroupSummary, RowResult

#: Kernels this module validates (the rest go to bench/validate.py).
KERNELS = tuple(k for k in Kernel if k.family in (KernelFamily.collective, KernelFamily.distributed, KernelFamily.gemm))


def is_distributed(m: Measurement) -> bool:
    return m.kernel in KERNELS


def _summary(kernel: str, impl: str, results: list[RowResult], fit: Optional[Fit], fitted_rows: int,
             link_floor: bool = False) -> GroupSummary:
    measured = np.array([r.measured_s for r in results])
    floors = np.array([r.floor_datasheet_s for r in results])
    cal = np.array([r.floor_calibrated_s for r in results])
    errors = np.array([r.error for r in results if r.held_out and r.error is not None])
    return GroupSummary(kernel=kernel, impl=impl, rows=len(results),
                        fraction_of_floor_datasheet=float(np.median(floors / measured)),
                        fraction_of_floor_calibrated=float(np.median(cal / measured)),
                        achieved_bytes_per_s=float(np.median([r.hbm_bytes / r.measured_s for r in results])),
                        achieved_flop_per_s=float(np.median([r.flops / r.measured_s for r in results])),
                        fit=fit, held_out_rows=int(errors.size),
                        median_error=float(np.median(errors)) if errors.size else None,
                        worst_error=float(np.max(errors)) if errors.size else None, fitted_rows=fitted_rows)


def _collectives(rows: Sequence[Measurement], gpu: GpuSpec) -> tuple[list[GroupSummary], list[RowResult]]:
    link = gpu.interconnect
    summaries, results = [], []
    for h in held_out(rows):
        members = sorted([m for m in rows if m.kernel is h.kernel and m.world_size == h.world_size
                          and (m.timing or "eager") == h.timing], key=lambda m: m.bytes_per_rank)
        test = {id(m): p for m, p in zip(h.held_out, h.predicted_s)}
        train_pred = {}
        if h.fit is not None:
            train_pred = dict(zip([id(m) for m in members], h.fit.predict(h.kernel, [m.bytes_per_rank for m in members],
                                                                         h.world_size)))
        group = []
        for m in members:
            moved = bus_bytes(m.kernel, m.bytes_per_rank, m.world_size)
            floor = moved / link.link_for(m.world_size) if link else math.nan
            held = id(m) in test
            group.append(RowResult(f"{m.kernel.value}/{m.impl} {m.timing} {m.bytes_per_rank:,} B x {m.world_size}",
                                   m.kernel, f"{m.impl} ({h.timing})", m.time_s, 0.0, moved, floor, floor, held,
                                   test.get(id(m), train_pred.get(id(m))), f"{m.bytes_per_rank} B/rank", m))
        fit = None
        if h.fit is not None and link is not None:
            fit = Fit(h.fit.bands[0].alpha_s, h.fit.bands[-1].bus_bytes_per_s / link.link_for(h.world_size))
        summaries.append(_summary(h.kernel, f"{members[0].impl} ({h.timing}, {h.world_size} GPUs)", group, fit,
                                  len(members) - len(h.held_out)))
        results += group
    return summaries, results


def _gemm(rows: Sequence[Measurement], gpu: GpuSpec) -> tuple[list[GroupSummary], list[RowResult]]:
    if len(rows) < 4:
        return [], []
    t = gemm_model_times(rows, gpu)
    y = np.array([m.time_s for m in rows])
    held = np.arange(len(rows)) % 2 == 1
    fit = fit_overhead_efficiency(t[~held], y[~held])
    results = []
    for i, m in enumerate(rows):
        cost = gemm(m.m, m.n, m.k, DType(m.dtype))
        ds = floor_kernel(cost.kernel, Ceilings.of(gpu, DType(m.dtype)))
        cal = floor_kernel(cost.kernel, Ceilings.of(gpu, DType(m.dtype), _source(gpu)))
        results.append(RowResult(f"gemm/{m.impl} {m.dtype} {m.m}x{m.n}x{m.k}", m.kernel, m.impl, m.time_s,
                                 float(cost.flops), float(cost.hbm_bytes), float(ds.t_floor_s), float(cal.t_floor_s),
                                 bool(held[i]), float(fit(t[i])), f"{m.m}x{m.n}x{m.k}", m))
    return [_summary(Kernel.gemm, rows[0].impl, results, fit, int((~held).sum()))], results


def _source(gpu: GpuSpec):
    from ..vocab import CeilingSource

    return CeilingSource.calibrated if gpu.measured is not None else CeilingSource.datasheet


def _composed(m: Measurement, gpu: GpuSpec, meta: dict) -> tuple[Optional[float], float, float]:
    """(predicted, floor, bytes) of a composed row (nothing fitted on it)."""
    dtype = DType(m.dtype)
    heads = AttentionHeads(m.num_qo_heads, m.num_kv_heads, m.head_dim)
    if m.kernel is Kernel.dcp_decode:
        length, batch = map(int, m.context_lens.split("x"))
        t = dcp_time(gpu, heads, length, batch, m.world_size, m.page_size, dtype)
        return t.t_predicted_s, t.t_floor_s, float(t.cost.hbm_bytes)
    if m.kernel is Kernel.ring_prefill:
        t = ring_time(gpu, ring_prefill(heads, m.seq_len, m.world_size, m.batch, dtype, m.causal, gpu), dtype,
                      "rooflab_hopper")
        return t.t_predicted_s, t.t_floor_s, 0.0
    if m.kernel is Kernel.tp_attention:
        return _tp_layer(m, gpu, heads, dtype)
    from ..load import load_model
    from ..step import step_report

    length, batch = map(int, m.context_lens.split("x"))
    r = step_report(load_model(meta.get("model", "llama-3-8b")), gpu, batch, length, "decode", dtype=dtype,
                    page_size=m.page_size, check_memory=False)
    return r.t_predicted_s, r.t_floor_s, float(sum(row.hbm_bytes for row in r.rows))


def _tp_layer(m: Measurement, gpu: GpuSpec, heads: AttentionHeads, dtype: DType):
    """One TP rank's attention layer as the bench runs it: q, kv and o GEMMs, paged decode, the all-reduce."""
    n, hidden = m.world_size, 4096
    shard = heads.shard(n) if n > 1 else heads
    length, batch = map(int, m.context_lens.split("x"))
    d = heads.head_dim
    gemms = [gemm(batch, shard.num_qo_heads * d, hidden, dtype), gemm(batch, 2 * shard.num_kv_heads * d, hidden, dtype),
             gemm(batch, hidden, shard.num_qo_heads * d, dtype)]
    total, floor = 0.0, 0.0
    roofs = Ceilings.of(gpu, dtype)
    for c in gemms:
        p = predict_time(gpu, Kernel.gemm, lambda a, b, c=c: c, dtype, optional=True)
        if p is None:
            return None, math.nan, 0.0
        total += p.t_predicted_s
        floor += float(floor_kernel(c.kernel, roofs).t_floor_s)
    splits = recommend_splits(shard, DecodeBatch.uniform(length, batch), gpu.num_sms, m.page_size, dtype,
                              units_per_sm=gpu.units_per_sm)
    price = (lambda s_, u: paged_decode_uniform(shard, length, batch, m.page_size, dtype, dtype, splits, s_, u))
    p = predict_time(gpu, Kernel.paged if splits == 1 else Kernel.split_kv, price, dtype, "rooflab", optional=True)
    if p is None:
        return None, math.nan, 0.0
    total += p.t_predicted_s
    floor += sum(float(floor_kernel(k, roofs).t_floor_s) for k in price(None, 1.0).kernels)
    if n > 1:
        comm = collective_time(gpu, Kernel.all_reduce, batch * hidden * dtype.bytes, n, "graph")
        if comm.t_predicted_s is None:
            return None, floor, 0.0
        total += comm.t_predicted_s
        floor += comm.t_floor_s
    return total, floor, 0.0


def validate_distributed(meta: dict, rows: Sequence[Measurement], gpu: GpuSpec
                         ) -> tuple[list[GroupSummary], list[RowResult]]:
    """Summaries and per-row results of every collective, GEMM and composed row (module docstring)."""
    summaries, results = [], []
    coll = [m for m in rows if m.kernel.is_collective]
    if coll:
        s, r = _collectives(coll, gpu)
        summaries += s
        results += r
    gemms = [m for m in rows if m.kernel is Kernel.gemm]
    if gemms:
        s, r = _gemm(gemms, gpu)
        summaries += s
        results += r
    composed = [m for m in rows if m.kernel.family is KernelFamily.distributed]
    keys = sorted({(m.kernel.value, m.impl, m.world_size) for m in composed})
    for kernel, impl, world in keys:
        group = []
        for m in (x for x in composed if (x.kernel.value, x.impl, x.world_size) == (kernel, impl, world)):
            predicted, floor, nbytes = _composed(m, gpu, meta)
            group.append(RowResult(f"{kernel}/{impl} x{world} {m.context_lens or m.seq_len}", m.kernel, impl,
                                   m.time_s, 0.0, nbytes, floor, floor, True, predicted,
                                   m.context_lens or f"T={m.seq_len}", m))
        summaries.append(_summary(Kernel(kernel), f"{impl} ({world} GPU{'s' if world > 1 else ''}, composed)", group,
                                  None, 0))
        results += group
    return summaries, results




def validate_any(path, gpu_ref: Optional[str] = None, fit_from: Sequence = ()):
    """bench/validate.validate for any measurement file: rows of the distributed bench (collectives, GEMMs,
    DCP, TP, ring, steps) are validated here, the others there, and shown together in one Validation."""
    from pathlib import Path

    from ..errors import InputError
    from ..load import load_gpu
    from .records import read_measurements
    from .validate import Validation, check_gpu, validate, validate_rows

    meta, rows = read_measurements(Path(path))
    mine = [m for m in rows if is_distributed(m)]
    if not mine:
        return validate(Path(path), gpu_ref, fit_from=tuple(fit_from))
    if fit_from:
        raise InputError(f"{path}: --fit-from does not apply to collective, GEMM or distributed rows (their models "
                         "are fitted on alternate rows of the file, or composed from the GPU's fits)")
    gpu = load_gpu(check_gpu(meta, gpu_ref, str(path)))
    others = [m for m in rows if not is_distributed(m)]
    base = validate_rows(meta, others, gpu) if others else None
    groups, results = validate_distributed(meta, mine, gpu)
    source = "calibrated" if gpu.measured is not None else "datasheet"
    return Validation(gpu.name, base.ceilings if base else source, meta,
                      (base.groups if base else ()) + tuple(groups), (base.rows if base else ()) + tuple(results))




def distributed_floor(m: Measurement, gpu: GpuSpec, meta: Optional[dict] = None) -> float:
    """The physical floor of a distributed-bench row at datasheet roofs and links (what no measurement may beat)."""
    if m.kernel.is_collective:
        return bus_bytes(m.kernel, m.bytes_per_rank, m.world_size) / gpu.interconnect.link_for(m.world_size)
    if m.kernel is Kernel.gemm:
        return float(floor_kernel(gemm(m.m, m.n, m.k, DType(m.dtype)).kernel, Ceilings.of(gpu, DType(m.dtype))
                                    ).t_floor_s)
    return _composed(m, gpu, meta or {})[1]


__all__ = ["KERNELS", "distributed_floor", "is_distributed", "validate_any", "validate_distributed"]

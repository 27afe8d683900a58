"""Models fitted on our own H200 runs at the published kernel rows' shapes (measurements/shapes/), for issue 27.

The published benchmarks (the FlashAttention papers' sweep: batch x T = 16k tokens, hidden 2048, d 64 / 128 / 256,
causal or not, fp16) were run again on one H200 (benchmarks/h200_published_shapes.py); these runs are ours, so
fitting on them is allowed; the published rows (measurements/published/) are fitted on by nothing. Two models:

- **cuDNN** (`CUDNN_SHAPES_IMPL`): the flash model of predict.py (t = c0 + t_model / eta, tile term, exp overlap)
  priced as the kernel cuDNN 9.19 launches on the H200 (measurements/shapes/h200-cudnn-kernels.csv, the profiler's
  names: `..._sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x{64,128,192,256}_4x1x1_...`): 64 query rows by 128 keys
  at every head dim (`cudnn_tile`; the spec's shared-memory rule gives the model 128 x 128 up to d 128), the head
  dim padded to the kernel's 64, 128, 192 or 256 (`cudnn_head_dim`: d 96 runs the 128 kernel), one work unit an SM,
  and a fixed cost a call of at most `MAX_CALL_OVERHEAD_S` (a launch and its memset: with batch x T fixed, a cost a
  query tile and one a call are confounded, and a free fit puts 35 us a call, which the campaigns' 15 us launches
  refute). Fitted on every sdpa_cudnn row of the two shapes files (144: d 32 to 256, 16k and 32k tokens). Held out
  across shapes (tests/fit/test_shapes_fit.py) it beats the model's own tile on every split: by head dim 7.6% /
  27.1% (34.6% worst with the model's tile), by T 4.2% / 19.6%, by token count 7.2% / 24.0%, by file 3.7% / 19.6%;
  on the campaigns' torch_cudnn rows (B 1, GQA, launches of 11-400 us) 10.1% / 51.5%. It does not replace the
  campaigns' fit (hardware/h200-sxm.yaml) that `rooflab report` uses.
- **The FlashAttention benchmark's attention_pytorch** (`FA_BENCH_IMPL`, benchmarks/benchmark_flash_attention.py):
  baddbmm writing S (the scale folded in), when causal an fp32 triu mask built, cast and added (read S, write S),
  softmax (read S, write P), einsum with V: 4 passes over S, 6 causal. Each launch priced from its own H200 rows
  (`part_*`): the two GEMMs and the mask add as fitted efficiencies of their bytes and FLOPs against the roofs
  (fit_overhead_efficiency); the softmax at its measured time an element at each row length T (log-interpolated),
  since it is SM-bound (transfer.SM_BOUND_LAUNCHES): on another GPU that time x the SMs x clock ratio, never under
  its bytes at the target's bandwidth.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..cost.common import KernelCost
from ..cost.flash import FlashTile, flash_prefill
from ..cost.naive import naive_prefill
from ..errors import InputError
from ..floors import Ceilings
from ..load import load_gpu
from ..predict import model_time
from ..specs import AttentionHeads, FittedModel, GpuSpec
from ..units import DType
from ..vocab import Kernel, Pipe
from .fitting import EXP_OVERLAP_GRID, Fit, fit_overhead_efficiency

ROOT = Path(__file__).resolve().parents[2]
SHAPES_CSV = ROOT / "measurements" / "shapes" / "h200-published-shapes.csv"
#: More sdpa_cudnn rows (benchmarks/h200_cudnn_shapes.py): d 32 to 256, 16k and 32k tokens.
CUDNN_CSV = ROOT / "measurements" / "shapes" / "h200-cudnn-shapes.csv"
#: The GPU the shapes were run on.
SHAPES_GPU = "h200-sxm"
_COLUMNS = ("impl", "d", "h", "t", "b", "causal", "time_s")

#: The impl ids of the two models (PredictedTime.impl; transfer.IMPL_PATH and CROSS_GPU_ERROR keys).
CUDNN_SHAPES_IMPL = "torch_cudnn_shapes"
FA_BENCH_IMPL = "attention_pytorch"
#: cuDNN's tile on the H200, query rows x keys (its kernel names' 64x128xD).
CUDNN_TILE = FlashTile(64, 128)
#: The head dims cuDNN's kernels are built for: a row's head dim runs on the next one up.
CUDNN_HEAD_DIMS = (64, 128, 192, 256)
#: The cuDNN fit's units per SM: one.
CUDNN_UNITS_PER_SM = 1.0
#: The most fixed cost a call the cuDNN fit may have (see the module docstring).
MAX_CALL_OVERHEAD_S = 10e-6
#: Key tiles' worth of fixed cost a query tile tried by the cuDNN fit.
CUDNN_OVERHEAD_TILES = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)


@dataclass(frozen=True)
class ShapeRow:
    impl: str
    head_dim: int
    heads: int
    seq_len: int
    batch: int
    causal: bool
    time_s: float


def read_shapes(path: Path = SHAPES_CSV) -> tuple[ShapeRow, ...]:
    """Every row of the shapes file, checked (a missing column or a bad number names the file and line)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(line for line in f if not line.startswith("#"))    # '# key: value' metadata
            missing = set(_COLUMNS) - set(reader.fieldnames or ())
            if missing:
                raise InputError(f"{path}: missing columns {', '.join(sorted(missing))}")
            out = []
            for r in reader:
                line = reader.line_num
                try:
                    row = ShapeRow(r["impl"], int(r["d"]), int(r["h"]), int(r["t"]), int(r["b"]),
                                   bool(int(r["causal"])), float(r["time_s"]))
                except (TypeError, ValueError):
                    raise InputError(f"{path} line {line}: a field is not a number: {dict(r)}") from None
                if min(row.head_dim, row.heads, row.seq_len, row.batch) < 1 or not 0 < row.time_s < 10:
                    raise InputError(f"{path} line {line}: a size under 1 or a time outside (0, 10) s: {dict(r)}")
                out.append(row)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    return tuple(out)


def cudnn_tile(head_dim: int) -> FlashTile:
    """cuDNN's tile on the H200: 64 query rows by 128 keys at every head dim (its kernel names)."""
    return CUDNN_TILE


def cudnn_head_dim(head_dim: int) -> int:
    """The head dim of the cuDNN kernel a row runs on (the next of CUDNN_HEAD_DIMS up); above 256, its own."""
    return next((d for d in CUDNN_HEAD_DIMS if d >= head_dim), head_dim)


def cudnn_cost(heads: AttentionHeads, seq_len: int, batch: int, dtype: DType, causal: bool, gpu: GpuSpec):
    """The flash cost of one cuDNN launch on `gpu`: cuDNN's tile, its padded head dim, one unit an SM."""
    d = cudnn_head_dim(heads.head_dim)
    padded = AttentionHeads(heads.num_qo_heads, heads.num_kv_heads, d, None if heads.v_head_dim is None else d)
    return flash_prefill(padded, seq_len, batch, dtype, causal, tile=cudnn_tile(d), gpu=gpu, num_sms=gpu.num_sms,
                         units_per_sm=CUDNN_UNITS_PER_SM)


def _heads(r: ShapeRow) -> AttentionHeads:
    return AttentionHeads(r.heads, r.heads, r.head_dim)


def _bounded_fit(t: np.ndarray, y: np.ndarray) -> Fit:
    """fit_overhead_efficiency with c0 <= MAX_CALL_OVERHEAD_S (at the bound, eta alone by least squares)."""
    fit = fit_overhead_efficiency(t, y)
    if fit.overhead_s <= MAX_CALL_OVERHEAD_S:
        return fit
    x, r = t / y, 1 - MAX_CALL_OVERHEAD_S / y
    return Fit(MAX_CALL_OVERHEAD_S, float(np.sum(x * x) / np.sum(x * r)))


def _cudnn_fit_on(rows, gpu: GpuSpec) -> FittedModel:
    """The (exp overlap, tile term) of the grid with the least squared relative error, c0 and eta by least squares."""
    roofs = Ceilings.of(gpu, DType.fp16, _calibrated())
    costs = [_row_cost(r, gpu) for r in rows]
    y = np.array([r.time_s for r in rows])
    best = None
    for n in CUDNN_OVERHEAD_TILES:
        for a in EXP_OVERLAP_GRID:
            t = np.array([float(model_time(c, roofs, a, n)) for c in costs])
            fit = _bounded_fit(t, y)
            loss = float(np.sum((fit(t) / y - 1) ** 2))
            if best is None or loss < best[0] * (1 - 1e-12):
                best = (loss, fit, a, n)
    _, fit, a, n = best
    return FittedModel(Kernel.flash, CUDNN_SHAPES_IMPL, fit.overhead_s, fit.efficiency, a, CUDNN_UNITS_PER_SM, n,
                       rows=len(rows), campaigns=tuple(str(p.relative_to(ROOT)) for p in (SHAPES_CSV, CUDNN_CSV)))


def _calibrated():
    from ..vocab import CeilingSource

    return CeilingSource.calibrated


_ROW_COSTS: dict = {}


def _row_cost(r: ShapeRow, gpu: GpuSpec):
    """cudnn_cost of a shapes row, priced once a process (the held-out folds refit on the same rows)."""
    key = (r.heads, r.head_dim, r.seq_len, r.batch, r.causal, gpu.name, gpu.num_sms)
    if key not in _ROW_COSTS:
        _ROW_COSTS[key] = cudnn_cost(_heads(r), r.seq_len, r.batch, DType.fp16, r.causal, gpu)
    return _ROW_COSTS[key]


def cudnn_time(fit: FittedModel, r: ShapeRow, gpu: GpuSpec, roofs: Ceilings) -> float:
    c = _row_cost(r, gpu)
    return fit.overhead_s + float(model_time(c, roofs, fit.exp_overlap, fit.unit_overhead_tiles)) / fit.efficiency


def cudnn_rows(paths=(SHAPES_CSV, CUDNN_CSV)) -> tuple[tuple[str, ShapeRow], ...]:
    """(file name, row) of every sdpa_cudnn row of the shapes files."""
    return tuple((p.name, r) for p in paths for r in read_shapes(p) if r.impl == "sdpa_cudnn")


def cudnn_held_out(key) -> np.ndarray:
    """|error| of each sdpa_cudnn row predicted by a fit on the rows of the other values of `key(file, row)`
    (leave-shapes-out)."""
    rows, gpu = cudnn_rows(), load_gpu(SHAPES_GPU)
    roofs = Ceilings.of(gpu, DType.fp16, _calibrated())
    errs = []
    for v in sorted({key(f, r) for f, r in rows}, key=str):
        fit = _cudnn_fit_on([r for f, r in rows if key(f, r) != v], gpu)
        errs += [abs(cudnn_time(fit, r, gpu, roofs) / r.time_s - 1) for f, r in rows if key(f, r) == v]
    return np.array(errs)


@functools.lru_cache(maxsize=1)
def cudnn_shapes_fit() -> FittedModel:
    """The cuDNN model fitted on every sdpa_cudnn row of the shapes files, with its error held out by cuDNN kernel
    (head dim 64, 128, 192, 256) as its held-out median and worst."""
    rows = [r for _, r in cudnn_rows()]
    fit = _cudnn_fit_on(rows, load_gpu(SHAPES_GPU))
    held = cudnn_held_out(lambda f, r: cudnn_head_dim(r.head_dim))
    return FittedModel(fit.kernel, fit.impl, fit.overhead_s, fit.efficiency, fit.exp_overlap, fit.units_per_sm,
                       fit.unit_overhead_tiles, rows=len(rows), held_out_rows=len(held),
                       median_error=float(np.median(held)), worst_error=float(held.max()), campaigns=fit.campaigns)


# --- the FlashAttention benchmark's attention_pytorch ------------------------------------------------------------

#: Its launches, by the shapes file's impl ids of their one-at-a-time runs.
FA_BENCH_PARTS = {"baddbmm": "part_baddbmm", "softmax": "part_softmax", "einsum": "part_einsum_pv",
                  "mask_build": "part_mask_build", "mask_add": "part_mask_add"}
_FP32 = 4
#: The shapes file's impl id of attention_pytorch timed whole.
FA_BENCH_WHOLE = "fa_bench_eager"


def fa_bench_launches(heads: AttentionHeads, seq_len: int, batch: int, dtype: DType, causal: bool
                      ) -> dict[str, KernelCost]:
    """attention_pytorch's launches for one shape: the bytes and FLOPs each moves (the softmax as naive_prefill's;
    the mask, T x T, built in fp32 by full and triu and cast, then added to S broadcast over batch and heads; the
    rearranges of the packed qkv that copy, q to (b h) t d and k to (b h) d s, each read and written once: their
    part_* rows were timed on contiguous copies, einsum's on the strided v it is given)."""
    naive = naive_prefill(heads, seq_len, batch, dtype, False)
    qk, pv = naive.kernels[0], naive.kernels[2]      # every pair, causal or not: baddbmm and einsum know no mask
    out = {"baddbmm": KernelCost("baddbmm", qk.flops, qk.hbm_bytes),
           "softmax": naive.kernels[1], "einsum": KernelCost("einsum", pv.flops, pv.hbm_bytes)}
    if causal:
        t2 = float(seq_len) ** 2
        s = float(naive.s_bytes)
        out["mask_build"] = KernelCost("mask_build", np.float64(0.0), np.float64(t2 * (_FP32 + _FP32 + _FP32 + dtype.bytes)),
                                       pipe=Pipe.vector)
        out["mask_add"] = KernelCost("mask_add", np.float64(0.0), np.float64(2 * s + t2 * dtype.bytes), pipe=Pipe.vector)
    q_bytes = float(batch) * heads.num_qo_heads * seq_len * heads.head_dim * dtype.bytes
    out["rearrange"] = KernelCost("rearrange", np.float64(0.0), np.float64(4 * q_bytes), pipe=Pipe.vector)
    return out


def _launch_time(k: KernelCost, roofs: Ceilings) -> float:
    rate = roofs.matmul_flop_per_s if k.pipe is Pipe.tensor else roofs.vector_flop_per_s
    return max(float(k.hbm_bytes) / roofs.bandwidth_bytes_per_s, float(k.flops) / rate)


@dataclass(frozen=True)
class FaBenchModel:
    """Each launch's (overhead s, efficiency) against the roofs, but the softmax's: its time an element at each
    measured T (`softmax_s_per_element`, sorted by T)."""

    launches: dict
    softmax_t: tuple[int, ...]
    softmax_s_per_element: tuple[float, ...]
    rows: int

    def softmax_per_element(self, seq_len: int) -> float:
        x = np.log(np.array(self.softmax_t, float))
        return float(np.exp(np.interp(np.log(seq_len), x, np.log(self.softmax_s_per_element))))

    def launch_times(self, heads: AttentionHeads, seq_len: int, batch: int, dtype: DType, causal: bool,
                     roofs: Ceilings, sm_ratio: float = 1.0) -> dict[str, float]:
        """Each launch's predicted time against `roofs` (the softmax at its H200 time x `sm_ratio`, never under its
        bytes at `roofs`' bandwidth)."""
        out = {}
        for name, k in fa_bench_launches(heads, seq_len, batch, dtype, causal).items():
            if name == "softmax":
                elements = float(k.exp_ops)
                out[name] = max(elements * self.softmax_per_element(seq_len) * sm_ratio,
                                float(k.hbm_bytes) / roofs.bandwidth_bytes_per_s)
            else:
                c0, eta = self.launches[name]
                out[name] = c0 + _launch_time(k, roofs) / eta
        return out


@functools.lru_cache(maxsize=1)
def fa_bench_model(path: Path = SHAPES_CSV) -> FaBenchModel:
    """FaBenchModel fitted on the shapes file's part_* rows at the H200's calibrated roofs."""
    rows = read_shapes(path)
    gpu = load_gpu(SHAPES_GPU)
    roofs = Ceilings.of(gpu, DType.fp16, _calibrated())
    launches, n = {}, 0
    for name, impl in FA_BENCH_PARTS.items():
        part = [r for r in rows if r.impl == impl]
        if not part:
            raise InputError(f"{path}: no {impl} rows (attention_pytorch's {name} launch)")
        n += len(part)
        ks = [fa_bench_launches(_heads(r), r.seq_len, r.batch, DType.fp16, True)[name] for r in part]
        y = np.array([r.time_s for r in part])
        if name == "softmax":
            per = {}
            for r, k in zip(part, ks):
                per.setdefault(r.seq_len, []).append(r.time_s / float(k.exp_ops))
            t_sorted = tuple(sorted(per))
            soft = (t_sorted, tuple(float(np.median(per[t])) for t in t_sorted))
            continue
        fit = fit_overhead_efficiency(np.array([_launch_time(k, roofs) for k in ks]), y)
        launches[name] = (fit.overhead_s, fit.efficiency)
    model = FaBenchModel({**launches, "rearrange": (0.0, 1.0)}, soft[0], soft[1], n)
    # the rearranges' efficiency: least squares on the relative error of the whole function's rows, c0 = 0
    whole = [r for r in rows if r.impl == FA_BENCH_WHOLE]
    if not whole:
        raise InputError(f"{path}: no {FA_BENCH_WHOLE} rows (attention_pytorch timed whole)")
    y = np.array([r.time_s for r in whole])
    parts, x = [], []
    for r in whole:
        times = model.launch_times(_heads(r), r.seq_len, r.batch, DType.fp16, r.causal, roofs)
        x.append(times.pop("rearrange"))
        parts.append(sum(times.values()))
    parts, x = np.array(parts), np.array(x)
    a = max(float(np.sum((y - parts) * x / y ** 2) / np.sum(x * x / y ** 2)), 1e-6)
    return FaBenchModel({**launches, "rearrange": (0.0, 1.0 / a)}, soft[0], soft[1], n + len(whole))


def fa_bench_time(heads: AttentionHeads, seq_len: int, batch: int, dtype: DType, causal: bool, roofs: Ceilings,
                  sm_ratio: float = 1.0) -> float:
    """attention_pytorch's predicted time: its launches one after another."""
    return sum(fa_bench_model().launch_times(heads, seq_len, batch, dtype, causal, roofs, sm_ratio).values())


__all__ = ["CUDNN_CSV", "CUDNN_HEAD_DIMS", "CUDNN_OVERHEAD_TILES", "CUDNN_SHAPES_IMPL", "CUDNN_TILE", "CUDNN_UNITS_PER_SM",
           "MAX_CALL_OVERHEAD_S", "cudnn_head_dim", "cudnn_time", "FA_BENCH_IMPL", "FA_BENCH_PARTS",
           "FaBenchModel", "SHAPES_CSV", "SHAPES_GPU", "ShapeRow", "cudnn_cost", "cudnn_held_out", "cudnn_rows",
           "cudnn_shapes_fit", "cudnn_tile", "fa_bench_launches", "fa_bench_model", "fa_bench_time", "read_shapes"]

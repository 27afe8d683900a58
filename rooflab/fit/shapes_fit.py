"""Models fitted on our own H200 runs at the published kernel rows' shapes (measurements/shapes/), for issue 27.

The published benchmarks (the FlashAttention papers' sweep: batch x T = 16k tokens, hidden 2048, d 64 / 128 / 256,
causal or not, fp16) were run again on one H200 (benchmarks/h200_published_shapes.py); these runs are ours, so
fitting on them is allowed; the published rows (measurements/published/) are fitted on by nothing. This module reads
the shapes files; two models are fitted on them:

- **cuDNN**: rooflab/fit/cudnn_fit.py (it reads its rows here).
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

import numpy as np

from ..cost.common import KernelCost
from ..cost.naive import naive_prefill
from ..errors import InputError
from ..floors import Ceilings
from ..load import load_gpu
from ..load.bundled import data_dir
from ..specs import AttentionHeads
from ..units import DType
from ..vocab import Pipe
from .fitting import fit_overhead_efficiency

ROOT = Path(__file__).resolve().parents[2]         # a source checkout's top (benchmarks and tests name files from it)
#: The bundled measurements: measurements/ in a checkout, rooflab/_data/measurements in an installed wheel.
MEASUREMENTS = data_dir("measurements")
SHAPES_CSV = MEASUREMENTS / "shapes" / "h200-published-shapes.csv"
#: The GPU the shapes were run on.
SHAPES_GPU = "h200-sxm"
_COLUMNS = ("impl", "d", "h", "t", "b", "causal", "time_s")

#: The impl id of the attention_pytorch model (PredictedTime.impl; transfer.IMPL_PATH and CROSS_GPU_ERROR keys).
FA_BENCH_IMPL = "attention_pytorch"


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


def _heads(r: ShapeRow) -> AttentionHeads:
    return AttentionHeads(r.heads, r.heads, r.head_dim)


def _calibrated():
    from ..vocab import CeilingSource

    return CeilingSource.calibrated


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
        # full writes fp32; triu reads and writes it; .to(dtype) reads fp32 and writes dtype: 18 bytes an element
        build = _FP32 + (_FP32 + _FP32) + (_FP32 + dtype.bytes)
        out["mask_build"] = KernelCost("mask_build", np.float64(0.0), np.float64(t2 * build), pipe=Pipe.vector)
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


__all__ = ["FA_BENCH_IMPL", "FA_BENCH_PARTS", "FA_BENCH_WHOLE", "FaBenchModel", "MEASUREMENTS", "ROOT", "SHAPES_CSV", "SHAPES_GPU",
           "ShapeRow", "fa_bench_launches", "fa_bench_model", "fa_bench_time", "read_shapes"]

"""Published kernel measurements against rooflab's floors and predictions (`rooflab validate --published`).

Every row of measurements/published/kernels/ (rooflab.published) becomes a time by its source's FLOP convention and
is held against two things:

- its floor (published.kernel_floor_s, the GPU's floor roofs): a row faster than its floor is named, never averaged
  away; a sound row may not beat it, a row whose note starts 'defect:' may (the note says why);
- for the implementation families rooflab predicts, fixed in advance (FAMILY_FIT), the prediction of that family's
  PyTorch peer, measured on the row's GPU or transferred to it, through rooflab.predict.predict_time, the path
  `rooflab report --impl` takes (so a report at a row's shape gives the row's t_predicted): cuDNN rows take the
  model of the kernel cuDNN launches (rooflab.cudnn_kernel, fitted by rooflab.fit.cudnn_fit on our own H200 runs,
  stored in hardware/h200-sxm.yaml), which predicts torch_cudnn everywhere; eager rows of the FlashAttention
  benchmark's code (FA_BENCH_SOURCES) take rooflab.fit.shapes_fit's model of that code, a different implementation
  from rooflab's eager peer, named attention_pytorch (`shapes=False`: torch_eager's fit for them too).
  Nothing is fitted on these rows. Other implementations (FA3, FlashMLA, FlashInfer, ThunderKittens, Triton, ...)
  get floors only.

Errors are reported per source, GPU and family (median and worst of |predicted / published - 1|).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..cost.common import Cost, Visibility
from ..cost.flash import flash_prefill
from ..cost.naive import naive_prefill
from ..load import load_gpu
from ..predict import PredictedTime, predict_time
from ..published import Implementation, KernelRow, Published, kernel_floor_s, load_published
from ..specs import GpuSpec
from ..transfer import CROSS_GPU_ERROR, TensorPath, calibrated_ceilings, transfer_source, transferred_ceilings, why_not
from ..vocab import Kernel, Phase, _Named


class Family(_Named):
    """The implementation families rooflab predicts (issue 27 item 3, fixed before any published row was read)."""

    fa2 = "fa2-class"          # FlashAttention 2.x and PyTorch's flash back end
    cudnn = "cudnn"            # cuDNN's fused attention and SDPA's cuDNN back end
    eager = "eager"            # three-kernel eager PyTorch: QK^T, softmax, PV
    rooflab = "rooflab"        # rooflab's own kernels


#: A published implementation -> its family; absent: floors only.
FAMILY_OF: dict[Implementation, Family] = {
    Implementation.fa2: Family.fa2, Implementation.torch_sdpa_flash: Family.fa2,
    Implementation.cudnn: Family.cudnn, Implementation.torch_sdpa_cudnn: Family.cudnn,
    Implementation.torch_eager: Family.eager,
}

#: The fitted (kernel, implementation) that predicts each family: the H200 campaigns' PyTorch peers
#: (bench/torch_peers.py: torch_flash is SDPA's flash back end, FlashAttention 2; torch_cudnn its cuDNN back end;
#: naive/torch_eager three eager launches).
FAMILY_FIT: dict[Family, tuple[Kernel, str]] = {
    Family.fa2: (Kernel.flash, "torch_flash"), Family.cudnn: (Kernel.flash, "torch_cudnn"),
    Family.eager: (Kernel.naive, "torch_eager"),
}


#: Published eager rows whose code is known: the FlashAttention benchmark's attention_pytorch
#: (benchmarks/benchmark_flash_attention.py; rooflab.fit.shapes_fit prices it launch by launch). Issue 1589 prints
#: that script's output. The FA3 README's figure names no script; at its commit, 7ef24848, every standard (PyTorch)
#: attention in the repository's benchmarks/ is this form (benchmark_flash_attention.py and benchmark_causal.py
#: define the same attention_pytorch; benchmark_alibi.py's adds a bias).
FA_BENCH_SOURCES = frozenset({"fa2-issue-1589-b200", "fa3-readme-h100-fwd"})


@dataclass(frozen=True)
class CheckedRow:
    """One published row beside rooflab's floor and (for a predicted family) its prediction."""

    row: KernelRow
    published_s: float
    floor_s: float
    family: Optional[Family]
    prediction: Optional[PredictedTime] = None
    why_none: str = ""                          # a predicted family's row without a prediction: why

    @property
    def beats_floor(self) -> bool:
        return self.published_s < self.floor_s

    @property
    def floor_verdict(self) -> str:
        """'' for a row at or above its floor; else 'defect: ...' (recorded) or 'BEATS FLOOR' (a spec defect)."""
        if not self.beats_floor:
            return ""
        return f"defect: {self.row.defect}" if self.row.defect is not None else "BEATS FLOOR (no defect recorded)"

    @property
    def error(self) -> Optional[float]:
        """predicted / published - 1 (negative: predicted fast)."""
        return None if self.prediction is None else self.prediction.t_predicted_s / self.published_s - 1

    @property
    def label(self) -> str:
        r = self.row
        return (f"{r.source} {r.gpu} {r.implementation.value} {r.phase.value} {r.dtype.value} B{r.batch} H{r.num_qo_heads}"
                f"/{r.num_kv_heads} T{r.seq_len_q}x{r.seq_len_kv} d{r.head_dim}{' causal' if r.causal else ''}")


def _price(row: KernelRow, gpu: GpuSpec, kernel: Kernel):
    """The cost function of the row's shape for `kernel`'s fit: (num_sms, units_per_sm) -> Cost."""
    visibility = Visibility(row.window or None)
    if kernel is Kernel.naive:
        return lambda n, k: naive_prefill(row.heads, row.seq_len_q, row.batch, row.dtype, row.causal)
    return lambda n, k: flash_prefill(row.heads, row.seq_len_q, row.batch, row.dtype, row.causal, gpu=gpu,
                                      num_sms=n, units_per_sm=k, visibility=visibility)


def predict_row(row: KernelRow, gpu: GpuSpec, family: Family, shapes: bool = True
                ) -> tuple[Optional[PredictedTime], str]:
    """The family's prediction for the row on its GPU (measured there, else transferred; predict_time, as `rooflab
    report --impl`), or None and why. With `shapes` (the default), eager rows of a known code (FA_BENCH_SOURCES) take
    the model of that code fitted on our H200 runs at the published shapes (shapes_prediction); without, torch_eager's
    (FAMILY_FIT)."""
    if shapes and row.phase is Phase.prefill and row.seq_len_q == row.seq_len_kv and not row.window:
        shaped = shapes_prediction(row, gpu, family)
        if shaped is not None:
            return shaped, ""
    if family not in FAMILY_FIT:
        return None, f"no fitted model of {family.value} kernels is bundled"
    kernel, impl = FAMILY_FIT[family]
    if row.phase is not Phase.prefill or row.seq_len_q != row.seq_len_kv:
        return None, f"{impl} was fitted on prefills (T_q = T_kv) only"
    if kernel is Kernel.flash and row.window:
        kernel = Kernel.flash_window
    fit = gpu.fitted_model(kernel, impl)
    source = None
    if fit is None:
        source, _ = transfer_source(gpu, kernel, keep_refused=True)
        fit = source.fitted_model(kernel, impl) if source is not None else None
        if fit is None:
            return None, f"no bundled GPU has a fitted {kernel.value}/{impl} model"
        reason = why_not(source, gpu, fit)
        if reason is not None:
            return None, reason
    return predict_time(gpu, kernel, _price(row, gpu, kernel), row.dtype, impl), ""


def shapes_prediction(row: KernelRow, gpu: GpuSpec, family: Family) -> Optional[PredictedTime]:
    """attention_pytorch (shapes_fit.fa_bench_model) on the row's GPU, transferred from the H200
    (transfer.transferred_ceilings) unless it is the H200; None for another family, an eager row of unknown code, or
    a GPU the fit does not transfer to. (cuDNN rows take predict_time's torch_cudnn, which is cudnn_kernel's model.)"""
    from . import shapes_fit

    if family is not Family.eager or row.source not in FA_BENCH_SOURCES:
        return None
    h200 = load_gpu(shapes_fit.SHAPES_GPU)
    source = None if gpu.name == h200.name else h200
    model = shapes_fit.fa_bench_model()
    if source is None:
        roofs, assumes, ratio = calibrated_ceilings(gpu, row.dtype)[0], "", 1.0
        provenance = "measured on this GPU"
    else:
        if (gpu.vendor or "").lower() != "nvidia":
            return None
        moved = transferred_ceilings(source, gpu, row.dtype, TensorPath.native, "torch_eager")
        roofs, assumes, ratio, provenance = moved.ceilings, moved.assumes, moved.sm_ratio, f"transferred from {source.name}"
    t = sum(model.launch_times(row.heads, row.seq_len_q, row.batch, row.dtype, row.causal, roofs, ratio).values())
    cross = CROSS_GPU_ERROR.get((shapes_fit.FA_BENCH_IMPL, (gpu.architecture or "").lower()))
    note = (f"cross-GPU median {cross[0]:.1%}, worst {cross[1]:.1%} over {cross[2]} published {gpu.architecture} rows"
            if cross else "no published rows checked")
    return PredictedTime(t, shapes_fit.FA_BENCH_IMPL, None, Kernel.naive, provenance,
                         "; ".join(x for x in (assumes, "attention_pytorch's launches one by one, each fitted on its "
                                               "H200 runs (rooflab.fit.shapes_fit)") if x),
                         cross[0] if cross else None, note, None, source)


def check_rows(published: Optional[Published] = None, shapes: bool = True) -> tuple[CheckedRow, ...]:
    """Every published kernel row checked (the module docstring); `shapes` as predict_row."""
    published = load_published() if published is None else published
    gpus: dict[str, GpuSpec] = {}
    out = []
    for row in published.kernels:
        gpu = gpus.setdefault(row.gpu, load_gpu(row.gpu))
        family = FAMILY_OF.get(row.implementation)
        prediction, why = predict_row(row, gpu, family, shapes) if family is not None else (None, "")
        out.append(CheckedRow(row, published.time_s(row), kernel_floor_s(row, gpu), family, prediction, why))
    return tuple(out)


@dataclass(frozen=True)
class ErrorSummary:
    """Median and worst |error| of one group of predicted rows, and the row at the worst."""

    group: str
    rows: int
    predicted: int
    median: Optional[float]
    worst: Optional[float]
    worst_row: str = ""
    mean_signed: Optional[float] = None


def summarise(checked: Sequence[CheckedRow], key) -> tuple[ErrorSummary, ...]:
    """ErrorSummary per group of the family rows, `key(CheckedRow) -> str` naming the group."""
    groups: dict[str, list[CheckedRow]] = {}
    for c in checked:
        if c.family is not None:
            groups.setdefault(key(c), []).append(c)
    out = []
    for name, members in sorted(groups.items()):
        hit = [c for c in members if c.error is not None]
        errs = np.array([abs(c.error) for c in hit])
        worst = max(hit, key=lambda c: abs(c.error)) if hit else None
        out.append(ErrorSummary(name, len(members), len(hit), float(np.median(errs)) if hit else None,
                                float(errs.max()) if hit else None, worst.label if worst else "",
                                float(np.mean([c.error for c in hit])) if hit else None))
    return tuple(out)


def by_family(c: CheckedRow) -> str:
    return c.family.value


def by_source_gpu_family(c: CheckedRow) -> str:
    return f"{c.row.source} / {c.row.gpu} / {c.family.value}"


def render_check(checked: Sequence[CheckedRow], off_gpu: Optional[str] = "h200-sxm") -> str:
    """The text `rooflab validate --published` prints: floors beaten (each named), then the errors per source, GPU
    and family, then per family over the rows off `off_gpu` (the done-when figures)."""
    lines = [f"{len(checked)} published kernel rows over {len({c.row.gpu for c in checked})} GPUs "
             f"({', '.join(sorted({c.row.gpu for c in checked}))}); fitted on by nothing", ""]
    beaten = [c for c in checked if c.beats_floor]
    lines.append(f"floors beaten: {len(beaten)}" + ("" if beaten else " (every row at or above its floor)"))
    for c in beaten:
        lines.append(f"  {c.label}: {c.published_s * 1e6:.1f} us < floor {c.floor_s * 1e6:.1f} us "
                     f"({c.floor_s / c.published_s:.0%} of the floor's rate); {c.floor_verdict}")
    none = [c for c in checked if c.family is not None and c.prediction is None]
    lines += ["", f"predicted-family rows without a prediction: {len(none)}"]
    lines += [f"  {c.label}: {c.why_none}" for c in none]
    lines += ["", "prediction error |predicted / published - 1| per source / GPU / family "
                  "(mean signed: + predicted slow)"]
    lines += _table(summarise(checked, by_source_gpu_family))
    off = [c for c in checked if off_gpu is None or c.row.gpu != off_gpu]
    lines += ["", f"per family, rows off {off_gpu} (target: median <= 12%, worst <= 30%)"]
    lines += _table(summarise(off, by_family), verdict=True)
    return "\n".join(lines)


def _table(summaries: Sequence[ErrorSummary], verdict: bool = False) -> list[str]:
    out = [f"  {'group':58s} {'rows':>5s} {'pred':>5s} {'median':>7s} {'worst':>7s} {'signed':>7s}"]
    for s in summaries:
        figures = (f"{s.median:7.1%} {s.worst:7.1%} {s.mean_signed:+7.1%}" if s.median is not None else
                   f"{'-':>7s} {'-':>7s} {'-':>7s}")
        met = ""
        if verdict and s.median is not None:
            met = "  met" if s.median <= 0.12 and s.worst <= 0.30 and s.predicted == s.rows else "  MISSED"
        out.append(f"  {s.group:58s} {s.rows:5d} {s.predicted:5d} {figures}{met}")
        if verdict and s.worst_row:
            out.append(f"    worst: {s.worst_row}")
    return out


__all__ = ["CheckedRow", "ErrorSummary", "FAMILY_FIT", "FAMILY_OF", "FA_BENCH_SOURCES", "Family", "shapes_prediction", "by_family", "by_source_gpu_family", "published_text",
           "check_rows", "predict_row", "render_check", "summarise"]


def published_text(fmt=None) -> str:
    """`rooflab validate --published`'s output: render_check's text, or (json) every checked row as a JSON list."""
    from ..output import Format

    checked = check_rows()
    if fmt is None or Format(fmt) in (Format.table, Format.markdown):
        return render_check(checked) + "\n"
    import csv
    import io
    import json

    records = [{"source": c.row.source, "gpu": c.row.gpu, "implementation": c.row.implementation.value,
                "family": c.family.value if c.family else None, "shape": c.label, "published_s": c.published_s,
                "floor_s": c.floor_s, "beats_floor": c.beats_floor, "floor_verdict": c.floor_verdict,
                "t_predicted_s": c.prediction.t_predicted_s if c.prediction else None,
                "provenance": c.prediction.provenance if c.prediction else None,
                "error": c.error, "why_none": c.why_none} for c in checked]
    if Format(fmt) is Format.json:
        return json.dumps(records, indent=1, allow_nan=False) + "\n"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(records[0]))
    writer.writeheader()
    writer.writerows(records)
    return buf.getvalue()

"""Published measurements (measurements/published/): other people's numbers, held against rooflab's floors and
predictions and fitted on by nothing.

    sources.yaml        source id -> Source (title, URL or paper, section, date, GPUs, FLOP convention, ...)
    kernels/*.csv       KernelRow: one attention launch of an exact shape, a rate or a time
    steps/*.csv         StepRow: a whole-model fixed-batch engine run
    serving/*.csv       ServingRow: an engine run under a load (concurrency or request rate)

The format is measurements/published/README.md. Every problem is a SpecError naming the file, the line, the
column and the value; a row naming a source the registry lacks, or a GPU rooflab does not bundle, is one.

A kernel row's rate becomes a time through its source's FLOP convention (`Convention`), never through
rooflab's own FLOP count, which differs (rooflab counts the T(T + 1) / 2 pairs a causal mask keeps).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, Optional

from .cost.common import Visibility
from .cost.flash import flash_prefill
from .cost.mla import mla_decode
from .cost.paged import paged_decode_uniform
from .errors import InputError, SpecError
from .limits import MAX_BATCH, MAX_GPUS, MAX_PAGE_SIZE, MAX_TOKENS
from .load import available, data_dir, read_text, read_yaml
from .roofline import Ceilings, predict
from .specs import GpuSpec, LayerType
from .specs.heads import MAX_HEAD_DIM, MAX_HEADS, AttentionHeads
from .units import DType
from .vocab import CeilingSource, LayerKind, Phase, _Named

#: A row whose note starts with this is a measurement defect (an overclocked card, a wrong FLOP count, a timing
#: bug); the rest of the note says why. Only such a row may beat its floor.
DEFECT_PREFIX = "defect:"
#: A published CSV larger than this is refused (the largest bundled one is a few KiB).
MAX_CSV_BYTES = 4 << 20
#: MLA's per-head non-rope q.k width (DeepSeek-V3's 128): a LayerType needs it; the absorbed decode never reads it.
_MLA_NOPE_DIM = 128
#: No published kernel reaches 100 PFLOP/s, and none takes an hour.
MAX_TFLOPS = 1e5
MAX_SECONDS = 3600.0 * 24


class Convention(_Named):
    """How a source's published rate relates to time: FLOP = 2 B H T_q T_kv (d + d_v), or the source gives times.

    fa          halved when causal. The FlashAttention papers' count: FlashAttention-2 (arXiv 2307.08691) section
                4.1 and FlashAttention-3 (arXiv 2407.08608) section 4.1 give 4 B H T^2 d for the forward pass
                (d_v = d), halved under a causal mask; their benchmark scripts (flash-attention's
                benchmarks/benchmark_flash_attention.py, `flops`) and tritonbench's flash_attention operator
                count the same.
    fa_no_half  never halved: FlashMLA's count 2 h_q s_q s_k (d_k + d_v) (its deep-dive post of 2025-04-22,
                docs/20250422-new-kernel-deep-dive.md, and tests' `FLOPs = s_q * total_seqlens * h_q * (d + dv) * 2`).
    time        the source gives times; rows carry metric time_s.
    """

    fa = "fa"
    fa_no_half = "fa_no_half"
    time = "time"


class KernelMetric(_Named):
    tflops = "tflops"      # 10^12 FLOP/s under the source's convention
    time_s = "time_s"


class StepMetric(_Named):
    tpot_s = "tpot_s"
    step_s = "step_s"
    batch1_latency_s = "batch1_latency_s"
    output_tokens_per_s = "output_tokens_per_s"
    output_tokens_per_s_per_gpu = "output_tokens_per_s_per_gpu"
    total_tokens_per_s = "total_tokens_per_s"


class ServingMetric(_Named):
    ttft_s = "ttft_s"
    tpot_s = "tpot_s"
    itl_s = "itl_s"
    e2e_s = "e2e_s"
    output_tokens_per_s = "output_tokens_per_s"
    output_tokens_per_s_per_gpu = "output_tokens_per_s_per_gpu"
    output_tokens_per_s_per_user = "output_tokens_per_s_per_user"


class Statistic(_Named):
    mean = "mean"
    median = "median"
    p90 = "p90"
    p99 = "p99"


class Implementation(_Named):
    """What a kernel row timed. rooflab predicts the FA2 class (fa2, torch_sdpa_flash), cuDNN (cudnn,
    torch_sdpa_cudnn) and eager PyTorch (torch_eager: QK^T, softmax, PV as separate launches); the rest get floors."""

    fa2 = "fa2"                            # FlashAttention 2.x
    fa3 = "fa3"
    fa4 = "fa4"
    cudnn = "cudnn"
    torch_eager = "torch_eager"            # 'standard attention' / 'Pytorch' in the FlashAttention figures
    torch_sdpa_flash = "torch_sdpa_flash"
    torch_sdpa_cudnn = "torch_sdpa_cudnn"
    triton = "triton"                      # the Triton tutorial's fused attention
    flashinfer = "flashinfer"
    flashinfer_fp16_qk = "flashinfer_fp16_qk"   # allow_fp16_qk_reduction: q.k accumulated in fp16
    flashmla = "flashmla"
    thunderkittens = "thunderkittens"
    xformers = "xformers"


#: The closed sets a step or serving row's formats name.
WEIGHT_FORMATS = ("fp16", "bf16", "fp8", "nvfp4", "mxfp4", "int8", "int4", "awq", "gptq")
KV_CACHE_DTYPES = ("fp16", "bf16", "fp8_e4m3", "fp8_e5m2")


# --- cells --------------------------------------------------------------------------------------------------

class _Bad(ValueError):
    """A cell that cannot be read; the message says what it must be."""


def _whole(lo: int, hi: int) -> Callable[[str], int]:
    def read(text: str) -> int:
        if not re.fullmatch(r"[0-9]+", text) or not lo <= int(text) <= hi:
            raise _Bad(f"must be a whole number in [{lo:,}, {hi:,}]")
        return int(text)
    return read


def _positive_number(hi: float, inf: bool = False) -> Callable[[str], float]:
    def read(text: str) -> float:
        if inf and text == "inf":
            return math.inf
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 < value <= hi) or not re.fullmatch(r"[0-9.eE+-]+", text):
            raise _Bad(f"must be a number in (0, {hi:g}]" + (" or inf" if inf else ""))
        return value
    return read


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1"):
        return True
    if text.lower() in ("false", "0"):
        return False
    raise _Bad("must be true or false")


def _one_of(choices) -> Callable[[str], object]:
    names = [getattr(c, "value", c) for c in choices]

    def read(text: str) -> object:
        if text not in names:
            raise _Bad(f"must be one of {', '.join(names)}")
        return choices[names.index(text)] if not isinstance(choices, type) else choices(text)
    return read


def _text(text: str) -> str:
    return text


def _model(text: str) -> str:
    if text in available("models") or re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", text):
        return text
    raise _Bad("must be a bundled model (`rooflab list models`) or a Hugging Face id (org/name)")


def _gpu(text: str) -> str:
    if text not in available("hardware"):
        raise _Bad("is not a bundled GPU (`rooflab list gpus`; add its YAML to hardware/ first)")
    return text


_KERNEL_PHASES = (Phase.prefill, Phase.decode)
_HEADS, _DIM, _TOKENS = _whole(1, MAX_HEADS), _whole(1, MAX_HEAD_DIM), _whole(1, MAX_TOKENS)


# --- rows ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """One entry of sources.yaml: where a set of rows comes from and how to read them."""

    id: str
    title: str
    section: str
    date: str
    gpus: tuple[str, ...]
    implementation: str
    timing: str
    read_by: str
    url: str = ""
    paper: str = ""
    clock: str = ""
    version: str = ""
    convention: Optional[Convention] = None
    note: str = ""


def convention_flops(convention: Convention, batch: int, num_qo_heads: int, seq_len_q: int, seq_len_kv: int,
                     head_dim: int, value_dim: int, causal: bool) -> float:
    """The FLOPs a published rate of `convention` counts for one attention launch: 2 B H T_q T_kv (d + d_v), halved
    when causal under `fa` (Convention's docstring cites each). `time` gives no count (InputError)."""
    convention = Convention.of(convention, "convention")
    if convention is Convention.time:
        raise InputError("convention 'time' gives times, not a FLOP count: a rate needs fa or fa_no_half")
    matmul_flops = 2.0 * batch * num_qo_heads * seq_len_q * seq_len_kv * (head_dim + value_dim)   # QK^T, PV
    return matmul_flops / 2 if (causal and convention is Convention.fa) else matmul_flops


@dataclass(frozen=True)
class KernelRow:
    """One published attention launch: its exact shape, what timed it, and the number as published.

    Shapes at the field: batch B, num_qo_heads H, num_kv_heads H_kv, seq_len_q T_q (query tokens a sequence),
    seq_len_kv T_kv (keys a sequence sees, the context in decode), head_dim d (q and k), head_dim_v d_v
    (v and o; 0 where it equals d), window W (0: full attention), page_size (0: not paged).
    """

    source: str
    gpu: str
    implementation: Implementation
    phase: Phase
    dtype: DType
    batch: int
    num_qo_heads: int
    num_kv_heads: int
    seq_len_q: int
    seq_len_kv: int
    head_dim: int
    head_dim_v: int
    causal: bool
    window: int
    page_size: int
    metric: KernelMetric
    value: float
    note: str
    where: str = ""           # 'file: line n', for messages

    @property
    def value_dim(self) -> int:
        return self.head_dim_v or self.head_dim

    @property
    def heads(self) -> AttentionHeads:
        return AttentionHeads(self.num_qo_heads, self.num_kv_heads, self.head_dim, self.head_dim_v or None)

    @property
    def is_mla_latent(self) -> bool:
        """An absorbed-MLA decode: one KV head whose d = d_c + d_R latent serves as K and its first d_v = d_c
        columns as V (FlashMLA's d 576, d_v 512), so K and V are one tensor, read once."""
        return (self.phase is Phase.decode and self.num_kv_heads == 1 and 0 < self.head_dim_v < self.head_dim)

    @property
    def defect(self) -> str | None:
        """Why the row is a measurement defect (the note after 'defect:'), or None for a sound row."""
        return self.note[len(DEFECT_PREFIX):].strip() if self.note.startswith(DEFECT_PREFIX) else None

    def flops(self, convention: Convention) -> float:
        """The FLOPs the source's rate counts: 2 B H T_q T_kv (d + d_v), halved when causal under `fa`.

        (4 B H T^2 d of the FlashAttention papers when d_v = d and T_q = T_kv; Convention's docstring cites each.)
        """
        if convention is Convention.time:
            raise SpecError(self.where, "metric", self.metric.value, "the source's convention is 'time': "
                                                                     "it gives no FLOP count")
        return convention_flops(convention, self.batch, self.num_qo_heads, self.seq_len_q, self.seq_len_kv,
                                self.head_dim, self.value_dim, self.causal)

    def time_s(self, convention: Convention) -> float:
        """The launch's time in seconds: the value itself, or the convention's FLOPs over the rate."""
        if self.metric is KernelMetric.time_s:
            return self.value
        return self.flops(convention) / (self.value * 1e12)


@dataclass(frozen=True)
class EngineRun:
    """What every engine run states: its source, the deployment and the workload (the columns steps/ and serving/
    share)."""

    source: str
    gpu: str
    num_gpus: int
    engine: str
    engine_version: str
    model: str
    weight_format: str
    kv_cache_dtype: str
    tp: int
    pp: int
    dp: int
    ep: int
    dp_attention: bool
    speculative: str
    batch: int
    input_len: int
    output_len: int


@dataclass(frozen=True)
class StepRow(EngineRun):
    """A whole-model engine run at a fixed batch: tokens per step and what the source measured."""

    metric: StepMetric
    value: float
    note: str
    where: str = ""


@dataclass(frozen=True)
class ServingRow(EngineRun):
    """An engine run under a load: exactly one of concurrency and request_rate (inf: every request at once)."""

    concurrency: int
    request_rate: float
    metric: ServingMetric
    value: float
    statistic: Optional[Statistic]
    note: str
    where: str = ""


# Each column's reader, and the value an empty optional cell reads as (REQUIRED: it may not be empty).
REQUIRED = object()
_ENGINE_RUN: dict[str, tuple[Callable, object]] = {
    "source": (_text, REQUIRED), "gpu": (_gpu, REQUIRED), "num_gpus": (_whole(1, MAX_GPUS), REQUIRED),
    "engine": (_text, REQUIRED), "engine_version": (_text, ""), "model": (_model, REQUIRED),
    "weight_format": (_one_of(WEIGHT_FORMATS), REQUIRED), "kv_cache_dtype": (_one_of(KV_CACHE_DTYPES), REQUIRED),
    "tp": (_whole(1, MAX_GPUS), 1), "pp": (_whole(1, MAX_GPUS), 1), "dp": (_whole(1, MAX_GPUS), 1),
    "ep": (_whole(1, MAX_GPUS), 1), "dp_attention": (_bool, False), "speculative": (_text, ""),
    "batch": (_whole(1, MAX_BATCH), 0), "input_len": (_TOKENS, REQUIRED), "output_len": (_TOKENS, REQUIRED),
}
COLUMNS: dict[type, dict[str, tuple[Callable, object]]] = {
    KernelRow: {
        "source": (_text, REQUIRED), "gpu": (_gpu, REQUIRED), "implementation": (_one_of(Implementation), REQUIRED),
        "phase": (_one_of(_KERNEL_PHASES), REQUIRED), "dtype": (_one_of(DType), REQUIRED),
        "batch": (_whole(1, MAX_BATCH), REQUIRED), "num_qo_heads": (_HEADS, REQUIRED),
        "num_kv_heads": (_HEADS, REQUIRED), "seq_len_q": (_TOKENS, REQUIRED), "seq_len_kv": (_TOKENS, REQUIRED),
        "head_dim": (_DIM, REQUIRED), "head_dim_v": (_DIM, 0), "causal": (_bool, REQUIRED),
        "window": (_TOKENS, 0), "page_size": (_whole(1, MAX_PAGE_SIZE), 0),
        "metric": (_one_of(KernelMetric), REQUIRED), "value": (_positive_number(1e12), REQUIRED),
        "note": (_text, ""),
    },
    StepRow: {**_ENGINE_RUN, "metric": (_one_of(StepMetric), REQUIRED),
              "value": (_positive_number(1e12), REQUIRED), "note": (_text, "")},
    ServingRow: {**_ENGINE_RUN, "concurrency": (_whole(1, MAX_BATCH), 0),
                 "request_rate": (_positive_number(1e9, inf=True), 0.0), "metric": (_one_of(ServingMetric), REQUIRED),
                 "value": (_positive_number(1e12), REQUIRED), "statistic": (_one_of(Statistic), None),
                 "note": (_text, "")},
}
#: Which row each folder holds.
FOLDERS: dict[str, type] = {"kernels": KernelRow, "steps": StepRow, "serving": ServingRow}


# --- reading ------------------------------------------------------------------------------------------------

def published_dir() -> Path:
    """measurements/published in a checkout; rooflab/_data/measurements/published in a wheel."""
    return data_dir("measurements") / "published"


_SOURCE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_DATE = re.compile(r"[0-9]{4}-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12][0-9]|3[01]))?")
_SOURCE_TEXT = ("title", "section", "implementation", "timing", "read_by", "url", "paper", "clock", "version",
                "note")


def read_sources(path: Path | None = None) -> dict[str, Source]:
    """sources.yaml -> {id: Source}; every problem is a SpecError naming the file, the source and the field."""
    path = Path(path) if path is not None else published_dir() / "sources.yaml"
    where = str(path)
    data = read_yaml(path)
    if set(data) != {"sources"} or not isinstance(data["sources"], dict):
        raise SpecError(where, None, sorted(map(str, data)), "expected one top-level key 'sources:' holding a "
                                                             "mapping of source id -> entry")
    return {str(key): _source(str(key), entry, where) for key, entry in data["sources"].items()}


def _source(key: str, entry: object, where: str) -> Source:
    at = f"sources.{key}"
    if not _SOURCE_ID.fullmatch(key):
        raise SpecError(where, at, key, "a source id is lower-case letters and digits joined by '-'")
    if not isinstance(entry, dict):
        raise SpecError(where, at, entry, "must be a mapping of field: value")
    known = {f.name for f in fields(Source)} - {"id"}
    unknown = sorted(str(k) for k in entry if k not in known)
    if unknown:
        raise SpecError(where, f"{at}.{unknown[0]}", entry[unknown[0]], f"unknown field; known: {', '.join(sorted(known))}")
    values: dict[str, object] = {"id": key}
    for name in _SOURCE_TEXT:
        value = entry.get(name, "")
        if not isinstance(value, str) or (name in ("title", "section", "implementation", "timing", "read_by")
                                          and not value.strip()):
            raise SpecError(where, f"{at}.{name}", value, "must be text" + (", and is required" if not value else ""))
        values[name] = value.strip()
    if not (values["url"] or values["paper"]):
        raise SpecError(where, f"{at}.url", None, "a source needs a url or a paper")
    date = entry.get("date")
    if not isinstance(date, str) or not _DATE.fullmatch(date):
        raise SpecError(where, f"{at}.date", date, "must be a date YYYY-MM-DD (or YYYY-MM), quoted")
    gpus = entry.get("gpus")
    if not isinstance(gpus, list) or not gpus or not all(isinstance(g, str) for g in gpus):
        raise SpecError(where, f"{at}.gpus", gpus, "must be a list of bundled GPU names")
    for gpu in gpus:
        try:
            _gpu(gpu)
        except _Bad as exc:
            raise SpecError(where, f"{at}.gpus", gpu, str(exc)) from None
    convention = entry.get("convention")
    if convention is not None and convention not in Convention._value2member_map_:
        raise SpecError(where, f"{at}.convention", convention,
                        f"must be one of {', '.join(c.value for c in Convention)}")
    return Source(**values, date=date, gpus=tuple(gpus),
                  convention=Convention(convention) if convention is not None else None)


def read_rows(path: Path, kind: type, sources: dict[str, Source]) -> tuple:
    """One CSV of `kind` rows (KernelRow, StepRow or ServingRow). Lines starting with '#' are comments; the
    header is exactly the format's columns in order; every cell is checked (SpecError: file, line, column, value)."""
    where = str(path)
    text = read_text(Path(path), MAX_CSV_BYTES, "a published CSV")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    columns = list(COLUMNS[kind])
    if not lines:
        raise SpecError(where, None, None, f"no header; the columns are {','.join(columns)}")
    header = next(csv.reader([lines[0][1]]))
    if header != columns:
        raise SpecError(f"{where}: line {lines[0][0]}", None, ",".join(header)[:200],
                        f"the header must be exactly {','.join(columns)}")
    rows = []
    for (number, line), cells in zip(lines[1:], csv.reader(line for _, line in lines[1:])):
        at = f"{where}: line {number}"
        if len(cells) != len(columns):
            raise SpecError(at, None, len(cells), f"a row has {len(columns)} cells; this one has {len(cells)}")
        rows.append(_row(kind, dict(zip(columns, cells)), at, sources))
    if not rows:
        raise SpecError(where, None, None, "a header but no rows")
    return tuple(rows)


def _row(kind: type, cells: dict[str, str], at: str, sources: dict[str, Source]):
    values: dict[str, object] = {"where": at}
    for name, (read, default) in COLUMNS[kind].items():
        text = cells[name].strip()
        if not text:
            if default is REQUIRED:
                raise SpecError(at, name, text, "empty; this column is required")
            values[name] = default
            continue
        try:
            values[name] = read(text)
        except _Bad as exc:
            raise SpecError(at, name, text, str(exc)) from None
    source = sources.get(values["source"])
    if source is None:
        raise SpecError(at, "source", values["source"], "names no entry of sources.yaml")
    if values["gpu"] not in source.gpus:
        raise SpecError(at, "gpu", values["gpu"], f"is not among source '{source.id}''s gpus "
                                                  f"({', '.join(source.gpus)})")
    row = kind(**values)
    _CHECKS[kind](row, source)
    return row


def _check_kernel(row: KernelRow, source: Source) -> None:
    at = row.where
    if row.num_qo_heads % row.num_kv_heads:
        raise SpecError(at, "num_kv_heads", row.num_kv_heads,
                        f"must divide num_qo_heads ({row.num_qo_heads})")
    if row.seq_len_q > row.seq_len_kv and row.causal:
        raise SpecError(at, "seq_len_q", row.seq_len_q, f"a causal row's queries are the last of its "
                                                        f"{row.seq_len_kv} keys: at most seq_len_kv")
    if row.phase is Phase.decode and not row.page_size and row.implementation is Implementation.flashmla:
        raise SpecError(at, "page_size", "", "FlashMLA reads a paged cache: give its page size")
    if row.metric is KernelMetric.tflops:
        if source.convention not in (Convention.fa, Convention.fa_no_half):
            raise SpecError(at, "metric", row.metric.value, f"a rate needs a FLOP convention; source "
                                                            f"'{source.id}' has {source.convention}")
        if row.window:
            raise SpecError(at, "window", row.window, "no source's FLOP convention counts a window; give time_s")
        if row.value > MAX_TFLOPS:
            raise SpecError(at, "value", row.value, f"above {MAX_TFLOPS:g} TFLOP/s, more than any GPU")
    elif row.value > MAX_SECONDS:
        raise SpecError(at, "value", row.value, f"longer than {MAX_SECONDS:g} s")


def _check_engine_run(row: EngineRun, source: Source) -> None:
    if row.tp * row.pp > row.num_gpus:
        raise SpecError(row.where, "num_gpus", row.num_gpus, f"fewer than tp x pp = {row.tp * row.pp}")


def _check_serving(row: ServingRow, source: Source) -> None:
    _check_engine_run(row, source)
    if bool(row.concurrency) == bool(row.request_rate):
        raise SpecError(row.where, "concurrency", row.concurrency or "",
                        "give exactly one of concurrency and request_rate")
    throughput = row.metric.value.startswith("output_tokens_per_s")
    if throughput != (row.statistic is None):
        raise SpecError(row.where, "statistic", row.statistic.value if row.statistic else "",
                        "a throughput has no statistic; a latency needs one" if throughput or row.statistic
                        else "a latency needs a statistic (mean, median, p90, p99)")


_CHECKS = {KernelRow: _check_kernel, StepRow: _check_engine_run, ServingRow: _check_serving}


@dataclass(frozen=True)
class Published:
    """Everything under measurements/published/."""

    sources: dict[str, Source]
    kernels: tuple[KernelRow, ...]
    steps: tuple[StepRow, ...]
    serving: tuple[ServingRow, ...]

    def convention(self, row: KernelRow) -> Convention:
        return self.sources[row.source].convention or Convention.time

    def time_s(self, row: KernelRow) -> float:
        """A kernel row's time in seconds under its source's convention."""
        return row.time_s(self.convention(row))


def load_published(root: Path | None = None) -> Published:
    """sources.yaml and every CSV of kernels/, steps/ and serving/ under `root` (default: the bundled folder)."""
    root = Path(root) if root is not None else published_dir()
    sources = read_sources(root / "sources.yaml")
    found: dict[str, tuple] = {}
    for folder, kind in FOLDERS.items():
        rows: list = []
        for path in sorted((root / folder).glob("*.csv")):
            if path.stem not in sources:
                raise SpecError(str(path), None, path.stem, "a published CSV is named <source-id>.csv, and "
                                                            "sources.yaml has no such source")
            file_rows = read_rows(path, kind, sources)
            stray = next((r for r in file_rows if r.source != path.stem), None)
            if stray is not None:
                raise SpecError(stray.where, "source", stray.source, f"a row of {path.name} names its source "
                                                                     f"'{path.stem}'")
            rows += file_rows
        found[folder] = tuple(rows)
    return Published(sources, found["kernels"], found["steps"], found["serving"])


def kernel_floor_s(row: KernelRow, gpu: GpuSpec, ceilings: CeilingSource | None = None) -> float:
    """rooflab's physical floor for the row's shape on `gpu`, in seconds: the roofline of the cost rooflab
    prices the shape with (roofline.predict), as `rooflab report` floors a layer.

    An absorbed-MLA decode (is_mla_latent) is cost/mla.py's mla_decode over a latent of d = d_c + d_R, read once.
    A prefill of T_q = T_kv is a FlashAttention forward (cost/flash.py flash_prefill, a window as a Visibility);
    a decode, or a prefill of fewer queries than keys (an append), is a paged decode of T_q new tokens a sequence
    over T_kv keys (cost/paged.py paged_decode, one page a token where the row is not paged, no KV split).
    No parallelism model: a floor assumes every SM busy. `ceilings` None: the roofs Ceilings.of takes by default
    (the GPU's floor roofs).
    """
    visibility = Visibility(row.window or None)
    if row.is_mla_latent:
        layer = LayerType(kind=LayerKind.mla, kv_lora_rank=row.head_dim_v, qk_rope_head_dim=row.head_dim - row.head_dim_v,
                          qk_nope_head_dim=_MLA_NOPE_DIM)
        cost = mla_decode(layer, row.num_qo_heads, [row.seq_len_kv] * row.batch, row.page_size or 64, row.dtype,
                          q_len=row.seq_len_q)
    elif row.phase is Phase.prefill and row.seq_len_q == row.seq_len_kv:
        cost = flash_prefill(row.heads, row.seq_len_q, row.batch, row.dtype, row.causal, gpu=gpu,
                             visibility=visibility)
    else:
        cost = paged_decode_uniform(row.heads, row.seq_len_kv, row.batch, row.page_size or 1, row.dtype,
                                    q_len=row.seq_len_q, visibility=visibility)
    roofs = Ceilings.of(gpu, row.dtype) if ceilings is None else Ceilings.of(gpu, row.dtype, ceilings)
    return float(predict(cost, roofs).t_floor_s)


__all__ = ["Convention", "convention_flops", "DEFECT_PREFIX", "Implementation", "KernelMetric", "KernelRow", "Published", "ServingMetric",
           "EngineRun", "ServingRow", "Source", "Statistic", "StepMetric", "StepRow", "kernel_floor_s", "load_published", "published_dir",
           "read_rows", "read_sources"]

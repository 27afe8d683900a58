"""The measurement file: one row per (configuration, implementation), metadata in `# key: value` lines.

    # rooflab measurements v1
    # gpu_spec: h200-sxm
    # device_name: NVIDIA H200
    # ...
    kernel,impl,dtype,kv_dtype,batch,num_qo_heads,num_kv_heads,head_dim,seq_len,context_lens,causal,...

`kernel` names what was timed (a rooflab.vocab.Kernel); `impl` who implemented it: "rooflab",
"rooflab_hopper" (the wgmma flash kernel on sm_90; files measured before bench named it,
such as h200-flash-hopper.csv's first version, call it "rooflab"), or a PyTorch backend
such as "torch_flash". `context_lens` is "8192x128" for 128 sequences of
8192 tokens, or "100;5000;17" for a ragged batch. Times are seconds.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import InputError
from ..output import write_atomic
from ..vocab import Kernel

FORMAT_LINE = "rooflab measurements v1"



@dataclass(frozen=True)
class Measurement:
    """One timed configuration of one implementation."""

    kernel: Kernel
    impl: str
    dtype: str
    time_s: float
    kv_dtype: str = ""
    batch: int = 1
    num_qo_heads: int = 0
    num_kv_heads: int = 0
    head_dim: int = 0
    seq_len: int = 0
    context_lens: str = ""
    causal: bool = False
    page_size: int = 0
    splits: int = 1
    tokens: int = 0
    time_p10_s: float = math.nan
    time_p90_s: float = math.nan
    repeats: int = 0
    max_rel_err: float = math.nan

    def lengths(self) -> list[int]:
        """Decode context lengths, expanded from "LxB" or "L1;L2;...")."""
        return parse_context_lens(self.context_lens)

    def shape(self) -> str:
        """The workload without the kernel and implementation: rows of peers on one shape share it."""
        if self.kernel.is_decode:
            lens = self.context_lens if len(self.context_lens) <= 24 else \
                f"ragged {len(self.lengths())} seqs, {sum(self.lengths()):,} tokens"
            shape = f"ctx {lens} page {self.page_size} splits {self.splits}"
        elif self.kernel is Kernel.merge:
            shape = f"{self.tokens} tokens"
        else:
            shape = f"T={self.seq_len} b={self.batch}" + (" causal" if self.causal else "")
        kv = f" kv {self.kv_dtype}" if self.kv_dtype and self.kv_dtype != self.dtype else ""
        return f"{self.num_qo_heads}/{self.num_kv_heads}x{self.head_dim} {self.dtype}{kv} {shape}"

    def describe(self) -> str:
        return f"{self.kernel}/{self.impl} {self.shape()}"


FIELDS = [f.name for f in dataclasses.fields(Measurement)]
REQUIRED = ("kernel", "impl", "dtype", "time_s")
_TYPES = {f.name: f.type for f in dataclasses.fields(Measurement)}


def format_context_lens(lens: Iterable[int]) -> str:
    lens = [int(x) for x in lens]
    if len(set(lens)) == 1:
        return f"{lens[0]}x{len(lens)}"
    return ";".join(map(str, lens))


def parse_context_lens(text: str) -> list[int]:
    text = text.strip()
    if not text:
        return []
    if "x" in text:
        length, count = text.split("x", 1)
        return [int(length)] * int(count)
    return [int(x) for x in text.split(";")]


def write_measurements(path: Path, rows: Iterable[Measurement], meta: dict[str, str]) -> None:
    """Write the metadata header and the rows atomically (a temp file, then a rename)."""
    buf = io.StringIO()
    buf.write(f"# {FORMAT_LINE}\n")
    for key, value in meta.items():
        buf.write(f"# {key}: {value}\n")
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in dataclasses.asdict(row).items()})
    write_atomic(path, buf.getvalue())


def _cell(value: object) -> object:
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, bool):
        return int(value)
    return value


def read_measurements(path: Path) -> tuple[dict[str, str], list[Measurement]]:
    """Parse a measurement file; every problem is an InputError naming the file, row and column."""
    where = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"{where}: cannot read file ({exc.strerror or exc})") from None
    meta: dict[str, str] = {}
    body = []
    for line in text.splitlines():
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            if value:
                meta[key.strip()] = value.strip()
        elif line.strip():
            body.append(line)
    if not body:
        raise InputError(f"{where}: no header row and no measurements")
    reader = csv.DictReader(io.StringIO("\n".join(body)))
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{where}: missing column(s) {', '.join(missing)}; a measurement file needs at least "
                         f"{', '.join(REQUIRED)}")
    unknown = [c for c in reader.fieldnames or [] if c not in FIELDS]
    if unknown:
        raise InputError(f"{where}: unknown column(s) {', '.join(unknown)}")
    rows = [_parse_row(where, i, raw) for i, raw in enumerate(reader, start=1)]
    if not rows:
        raise InputError(f"{where}: the file holds a header but no measurements")
    return meta, rows


def _parse_row(where: str, index: int, raw: dict) -> Measurement:
    values = {}
    for name, text in raw.items():
        kind = _TYPES[name]
        text = (text or "").strip()
        try:
            if kind in ("str", "Kernel"):
                values[name] = text
            elif not text:
                if name in REQUIRED:
                    raise ValueError("empty")
                continue
            elif kind == "bool":
                values[name] = text.lower() in ("1", "true", "yes")
            elif kind == "int":
                values[name] = int(float(text))
            else:
                values[name] = float(text)
        except ValueError:
            raise InputError(f"{where}: row {index}, column '{name}': cannot read '{text}' as a {kind}") from None
    try:
        values["kernel"] = Kernel(values["kernel"])
    except ValueError:
        raise InputError(f"{where}: row {index}, column 'kernel': unknown kernel '{values['kernel']}'; "
                         f"known: {', '.join(k.value for k in Kernel)}") from None
    row = Measurement(**values)
    if not math.isfinite(row.time_s) or row.time_s <= 0:
        raise InputError(f"{where}: row {index}, column 'time_s': timing must be a positive number, got {row.time_s}")
    return row


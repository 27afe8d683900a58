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
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import InputError, UnknownNameError
from ..limits import MAX_BATCH, MAX_TOKENS
from ..files import read_text
from ..load import resolve_gpu_name
from ..specs.heads import MAX_HEAD_DIM, MAX_HEADS
from ..units import DType
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
    # columns after these are optional in a file (added after the first campaigns); a file that lacks
    # one reads it as its default
    v_head_dim: int = 0            # value width where it differs from head_dim (MLA: 512 of 576)
    q_len: int = 1                 # new tokens per sequence in decode
    window: int = 0                # sliding window (0: none)
    chunk: int = 0                 # chunked attention (0: none)
    sinks: bool = False            # learned sink logits
    m: int = 0                     # gemm: rows (tokens), n (out features), k (in features)
    n: int = 0
    k: int = 0
    bytes_per_rank: int = 0        # collectives: message bytes on each rank
    world_size: int = 1            # GPUs taking part
    timing: str = ""               # 'graph' (CUDA graph replay) or 'eager'

    def lengths(self) -> list[int]:
        """Decode context lengths, expanded from "LxB" or "L1;L2;...")."""
        return parse_context_lens(self.context_lens)

    def shape(self) -> str:
        """The workload without the kernel and implementation: rows of peers on one shape share it."""
        if self.kernel.is_decode:
            lens = self.context_lens if len(self.context_lens) <= 24 else \
                f"ragged {len(self.lengths())} seqs, {sum(self.lengths()):,} tokens"
            shape = f"ctx {lens} page {self.page_size} splits {self.splits}"
            shape += f" q_len {self.q_len}" if self.q_len != 1 else ""
        elif self.kernel is Kernel.merge:
            shape = f"{self.tokens} tokens"
        else:
            shape = f"T={self.seq_len} b={self.batch}" + (" causal" if self.causal else "")
        shape += self._visibility()
        kv = f" kv {self.kv_dtype}" if self.kv_dtype and self.kv_dtype != self.dtype else ""
        value = f"/{self.v_head_dim}" if self.v_head_dim and self.v_head_dim != self.head_dim else ""
        return f"{self.num_qo_heads}/{self.num_kv_heads}x{self.head_dim}{value} {self.dtype}{kv} {shape}"

    def _visibility(self) -> str:
        """' window 4096', ' chunk 8192', ' sinks' where the row has them (nothing for full attention)."""
        return ((f" window {self.window}" if self.window else "") + (f" chunk {self.chunk}" if self.chunk else "")
                + (" sinks" if self.sinks else ""))

    def describe(self) -> str:
        return f"{self.kernel}/{self.impl} {self.shape()}"


FIELDS = [f.name for f in dataclasses.fields(Measurement)]
#: The columns every v1 file has (the first campaigns'); the later ones may be absent.
V1_FIELDS = FIELDS[:FIELDS.index("max_rel_err") + 1]
REQUIRED = ("kernel", "impl", "dtype", "time_s")
_TYPES = {f.name: f.type for f in dataclasses.fields(Measurement)}


def format_context_lens(lens: Iterable[int]) -> str:
    lens = [int(x) for x in lens]
    if len(set(lens)) == 1:
        return f"{lens[0]}x{len(lens)}"
    return ";".join(map(str, lens))


def parse_context_lens(text: str) -> list[int]:
    """'8192x128' -> 128 lengths of 8192; '100;5000;17' -> three lengths. ValueError for anything else."""
    text = text.strip()
    if not text:
        return []
    if re.fullmatch(r"[0-9]+x[0-9]+", text):
        length, count = text.split("x", 1)
        if int(count) > MAX_BATCH:
            raise ValueError(f"more than {MAX_BATCH} sequences")
        return [int(length)] * int(count)
    if not re.fullmatch(r"[0-9]+(;[0-9]+)*", text):
        raise ValueError(f"cannot read context lengths {text[:40]!r}")
    return [int(x) for x in text.split(";")]


def write_measurements(path: Path, rows: Iterable[Measurement], meta: dict[str, str], checkpoint: bool = False) -> None:
    """Write the metadata header and the rows atomically (a temp file, then a rename). A `checkpoint` (a campaign
    saving what it has measured so far, then measuring on) keeps Ctrl-C live; a final write ends its hold on the
    command in the console script's process (output.write_atomic)."""
    buf = io.StringIO()
    buf.write(f"# {FORMAT_LINE}\n")
    for key, value in meta.items():
        buf.write(f"# {key}: {value}\n")
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in dataclasses.asdict(row).items()})
    write_atomic(path, buf.getvalue(), checkpoint=checkpoint)


def _cell(value: object) -> object:
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, bool):
        return int(value)
    return value


#: Measurement files larger than this are refused (the bundled sweep is ~40 KiB).
MAX_FILE_BYTES = 64 << 20
#: A timing longer than this is not a kernel launch.
MAX_TIME_S = 3600.0
#: No kernel launch, graph replay or collective finishes sooner (the fastest bundled row takes 8.8 us).
MIN_TIME_S = 1e-7
#: The columns every row needs a value in, per kernel (besides kernel, impl, dtype, time_s).
_PREFILL = ("num_qo_heads", "num_kv_heads", "head_dim", "seq_len", "batch")
_DECODE = ("num_qo_heads", "num_kv_heads", "head_dim", "context_lens", "page_size", "splits")
NEEDS: dict[Kernel, tuple[str, ...]] = {
    Kernel.naive: _PREFILL, Kernel.naive_softmax: _PREFILL, Kernel.flash: _PREFILL,
    Kernel.flash_window: _PREFILL, Kernel.ring_prefill: _PREFILL + ("world_size",),
    Kernel.paged: _DECODE, Kernel.split_kv: _DECODE, Kernel.paged_window: _DECODE,
    Kernel.paged_multi: _DECODE + ("q_len",),
    Kernel.mla_decode: ("num_qo_heads", "head_dim", "v_head_dim", "context_lens", "page_size", "splits", "q_len"),
    Kernel.dcp_decode: _DECODE + ("world_size",), Kernel.tp_attention: _DECODE + ("world_size",),
    Kernel.merge: ("num_qo_heads", "head_dim", "tokens"),
    Kernel.gemm: ("m", "n", "k"),
    Kernel.all_reduce: ("bytes_per_rank", "world_size", "timing"),
    Kernel.all_gather: ("bytes_per_rank", "world_size", "timing"),
    Kernel.reduce_scatter: ("bytes_per_rank", "world_size", "timing"),
    Kernel.all_to_all: ("bytes_per_rank", "world_size", "timing"),
    Kernel.send_recv: ("bytes_per_rank", "world_size", "timing"),
    Kernel.decode_step: ("context_lens", "world_size", "timing"),
}
#: Columns of which a row needs at least one, per kernel: a windowed kernel's window or chunk.
NEEDS_ONE_OF: dict[Kernel, tuple[str, ...]] = {
    Kernel.flash_window: ("window", "chunk"), Kernel.paged_window: ("window", "chunk"),
}


def read_measurements(path: Path) -> tuple[dict[str, str], list[Measurement]]:
    """Parse a measurement file strictly; every problem is an InputError naming the file, row and column.

    The first line must be the format line; `# key: value` metadata lines follow; then a header that
    holds every column of the format (more, unknown columns are refused) and rows with exactly one
    cell per column. A row's cells are typed (whole numbers, 0/1 or true/false, finite numbers), and
    the cells its kernel needs are filled. Metadata must agree with itself (gpu_spec with device_name).
    """
    where = str(path)
    text = _read_text(Path(path), where)
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise InputError(f"{where}: the file is empty; a measurement file starts with '# {FORMAT_LINE}'")
    if lines[first].strip() != f"# {FORMAT_LINE}":
        raise InputError(f"{where}: line {first + 1} is {lines[first].strip()[:60]!r}, not the format line "
                         f"'# {FORMAT_LINE}'")
    meta: dict[str, str] = {}
    body: list[tuple[int, str]] = []
    for number, line in enumerate(lines[first + 1:], start=first + 2):
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            if value.strip():
                meta[key.strip()] = value.strip()
        elif line.strip():
            body.append((number, line))
    _check_meta(meta, where)
    if not body:
        raise InputError(f"{where}: no header row and no measurements")
    header = next(csv.reader([body[0][1]]))
    _check_header(header, where, body[0][0])
    rows = []
    for (number, line), cells in zip(body[1:], csv.reader(line for _, line in body[1:])):
        if len(cells) != len(header):
            raise InputError(f"{where}: line {number} has {len(cells)} cells; the header has {len(header)}")
        rows.append(_parse_row(where, number, dict(zip(header, cells))))
    if not rows:
        raise InputError(f"{where}: the file holds a header but no measurements")
    return meta, rows


def _read_text(path: Path, where: str) -> str:
    return read_text(path, MAX_FILE_BYTES, "a measurement file", lambda problem: InputError(f"{where}: {problem}"),
                     too_large="not a measurement file")


def spec_for_device(name: str) -> str | None:
    """The bundled spec that describes a device CUDA names `name` (the GPU YAMLs' aliases), or None."""
    try:
        return resolve_gpu_name(name)
    except UnknownNameError:
        return None


def _check_meta(meta: dict[str, str], where: str) -> None:
    device, spec = meta.get("device_name"), meta.get("gpu_spec")
    if not (device and spec):
        return
    expected = spec_for_device(device)
    named = spec if not spec.endswith((".yaml", ".yml")) else _bundled_kind(spec, where)
    if expected is not None and named is not None and expected != named:
        raise InputError(f"{where}: metadata says device_name '{device}' (spec {expected}) but gpu_spec "
                         f"'{spec}' (a {named}); one of them is wrong")


def _bundled_kind(path: str, where: str) -> str | None:
    """The bundled GPU a GPU YAML describes (by its name, display name or aliases), or None for a GPU rooflab
    does not bundle. A relative path is read beside the measurement file."""
    from ..load import read_yaml

    p = Path(path)
    if not p.is_absolute():
        p = Path(where).parent / p
    try:
        data = read_yaml(p)
    except Exception:
        return None            # unreadable: loading the spec names the problem
    for name in (data.get("name"), data.get("display_name"), *(data.get("aliases") or ())):
        found = spec_for_device(str(name)) if name else None
        if found is not None:
            return found
    return None


def _check_header(header: list[str], where: str, line: int) -> None:
    unknown = [c for c in header if c not in FIELDS]
    if unknown:
        raise InputError(f"{where}: line {line}: unknown column(s) {', '.join(map(repr, unknown))}")
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        raise InputError(f"{where}: line {line}: column(s) {', '.join(twice)} appear twice")
    missing = [c for c in V1_FIELDS if c not in header]
    if missing:
        raise InputError(f"{where}: line {line}: missing column(s) {', '.join(missing)}; a v1 file has all of "
                         f"{', '.join(V1_FIELDS)}")


def _cell_value(name: str, kind: str, text: str) -> object:
    """One cell as its column's type; ValueError with the reason."""
    if kind in ("str", "Kernel"):
        return text
    if kind == "bool":
        if text.lower() in ("1", "true"):
            return True
        if text.lower() in ("0", "false"):
            return False
        raise ValueError("expected 0, 1, true or false")
    if kind == "int":
        if not re.fullmatch(r"[0-9]+", text):
            raise ValueError("expected a whole number >= 0")
        value = int(text)
        if value > 1 << 62:
            raise ValueError("too large")
        return value
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError("expected a finite number >= 0")
    return value


def _check_shape(row: Measurement, at: str) -> None:
    """A row's shape must be one rooflab can price: heads and head dims in range, KV heads that divide the
    query heads, lengths and batches within rooflab's limits (the same limits the CLI takes)."""
    qo, kv = row.num_qo_heads, row.num_kv_heads
    for name, value, hi in (("num_qo_heads", qo, MAX_HEADS), ("num_kv_heads", kv, MAX_HEADS),
                            ("head_dim", row.head_dim, MAX_HEAD_DIM), ("v_head_dim", row.v_head_dim, MAX_HEAD_DIM),
                            ("seq_len", row.seq_len, MAX_TOKENS), ("batch", row.batch, MAX_BATCH),
                            ("tokens", row.tokens, MAX_TOKENS)):
        if value and not 0 < value <= hi:
            raise InputError(f"{at}, column '{name}': {value!r} is outside [1, {hi:,}]")
    if qo and kv and (kv > qo or qo % kv):
        raise InputError(f"{at}, columns 'num_qo_heads', 'num_kv_heads': {qo} query heads over {kv} KV heads; "
                         "the KV heads must divide the query heads")


def _parse_row(where: str, line: int, raw: dict) -> Measurement:
    at = f"{where}: line {line}"
    values: dict[str, object] = {}
    for name, text in raw.items():
        text = (text or "").strip()
        if not text:
            if name in REQUIRED:
                raise InputError(f"{at}, column '{name}': empty; every row needs {', '.join(REQUIRED)}")
            continue
        try:
            values[name] = _cell_value(name, _TYPES[name], text)
        except ValueError as exc:
            raise InputError(f"{at}, column '{name}': cannot read {text[:40]!r} ({exc})") from None
    try:
        values["kernel"] = Kernel(values["kernel"])
    except ValueError:
        raise InputError(f"{at}, column 'kernel': unknown kernel {values['kernel']!r}; "
                         f"known: {', '.join(k.value for k in Kernel)}") from None
    for name in ("dtype", "kv_dtype"):
        if values.get(name):
            try:
                DType(values[name])
            except ValueError:
                raise InputError(f"{at}, column '{name}': unknown dtype {values[name]!r}") from None
    empty = [c for c in NEEDS[values["kernel"]] if not values.get(c)]
    if empty:
        raise InputError(f"{at}: a {values['kernel'].value} row needs {', '.join(empty)} (empty or 0)")
    either = NEEDS_ONE_OF.get(values["kernel"], ())
    if either and not any(values.get(c) for c in either):
        raise InputError(f"{at}: a {values['kernel'].value} row needs {' or '.join(either)} (all empty or 0)")
    row = Measurement(**values)
    if not MIN_TIME_S <= row.time_s <= MAX_TIME_S:
        raise InputError(f"{at}, column 'time_s': {row.time_s!r} is not a kernel time in "
                         f"[{MIN_TIME_S:g}, {MAX_TIME_S:g}] s")
    _check_shape(row, at)
    if row.context_lens:
        try:
            lens = row.lengths()
        except ValueError:
            raise InputError(f"{at}, column 'context_lens': cannot read {row.context_lens[:40]!r}; write "
                             "'8192x128' (128 sequences of 8192) or '100;5000;17'") from None
        if not lens or min(lens) < 1 or max(lens) > MAX_TOKENS or len(lens) > MAX_BATCH:
            raise InputError(f"{at}, column 'context_lens': lengths must be in [1, {MAX_TOKENS:,}], "
                             f"at most {MAX_BATCH:,} of them")
    return row

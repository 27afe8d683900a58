"""Data types, byte sizes and unit formatting.

The only module where 2**30 and 1e9 appear: everything inside rooflab is in SI
base units (bytes, seconds, FLOP, FLOP/s, bytes/s) and converts only for display.
GiB (2**30 bytes) and GB (1e9 bytes) are different units; each formatter says which.
"""

from __future__ import annotations

import enum
import math

KiB = 2**10
MiB = 2**20
GiB = 2**30
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12


class DType(str, enum.Enum):
    """Element types of tensors and of the arithmetic done on them."""

    fp32 = "fp32"
    tf32 = "tf32"
    fp16 = "fp16"
    bf16 = "bf16"
    fp8_e4m3 = "fp8_e4m3"
    fp8_e5m2 = "fp8_e5m2"

    @property
    def bytes(self) -> int:
        """Storage size of one element (tf32 is stored as fp32)."""
        return _DTYPE_BYTES[self]

    @property
    def rate_key(self) -> str:
        """The key of this type's dense tensor-core rate in a GPU spec (both fp8 formats share one)."""
        return "fp8" if self in (DType.fp8_e4m3, DType.fp8_e5m2) else self.value

    def __str__(self) -> str:
        return self.value


_DTYPE_BYTES = {
    DType.fp32: 4,
    DType.tf32: 4,
    DType.fp16: 2,
    DType.bf16: 2,
    DType.fp8_e4m3: 1,
    DType.fp8_e5m2: 1,
}

#: The keys a GPU spec may use for dense tensor-core rates.
RATE_KEYS = ("fp32", "tf32", "fp16", "bf16", "fp8")

#: Bytes of one fp32 scalar: LSEs and split-KV partial outputs are always fp32.
FP32_BYTES = DType.fp32.bytes
#: Bytes of one int32 block-table entry.
INT32_BYTES = 4


def fmt_bytes(n: float, binary: bool = True) -> str:
    """Format a byte count: binary units (KiB, MiB, GiB) by default, decimal (KB, MB, GB) on request."""
    if not math.isfinite(n):
        return str(n)
    steps = [("TiB", 2**40), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)] if binary else [
        ("TB", TB), ("GB", GB), ("MB", MB), ("KB", KB)]
    for name, size in steps:
        if abs(n) >= size:
            return f"{n / size:.3f} {name}"
    return f"{n:.0f} B"


def fmt_seconds(t_s: float) -> str:
    """Format a duration in the largest unit that keeps the figure >= 1 (s, ms, us, ns)."""
    if not math.isfinite(t_s):
        return str(t_s)
    for name, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(t_s) >= scale:
            return f"{t_s / scale:.3f} {name}"
    return f"{t_s / 1e-9:.1f} ns"


def fmt_flops(f: float) -> str:
    """Format a FLOP count with an SI prefix (GFLOP, TFLOP, ...)."""
    return _si(f, "FLOP")


def fmt_rate(r: float, unit: str) -> str:
    """Format a rate with an SI prefix: fmt_rate(3.35e12, 'B/s') -> '3.350 TB/s'."""
    return _si(r, unit)


def _si(x: float, unit: str) -> str:
    if not math.isfinite(x):
        return f"{x} {unit}"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3f} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def fmt_params(n: float) -> str:
    """A parameter count in billions: 8030261248 -> '8.03 B'."""
    return f"{n / 1e9:.2f} B"


def to_gib(n: float) -> float:
    return n / GiB


def to_gb(n: float) -> float:
    return n / GB

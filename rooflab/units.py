"""Byte sizes and unit formatting; sizes and counts as people write them.

The only module where 2**30 and 1e9 appear: everything inside rooflab is in SI
base units (bytes, seconds, FLOP, FLOP/s, bytes/s) and converts only for display.
GiB (2**30 bytes) and GB (1e9 bytes) are different units; each formatter says which.

Data types and weight formats (DType, WeightFormat, FloatFormat, loaded_dtype, ...) live in dtypes.py; they are
importable from here too, as before the split (`from rooflab.units import DType` keeps working).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from .dtypes import (ACCUMULATE_MODES, BF16_MIN_COMPUTE_CAPABILITY, DTYPE_ALIASES, FP16_MIN_COMPUTE_CAPABILITY,
                     FP32_BYTES, INT32_BYTES, RATE_KEYS, DType, FloatFormat, WeightFormat, loaded_dtype)

KiB = 2**10
MiB = 2**20
GiB = 2**30
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12


def ridge_text(ratio: float) -> str:
    """'22.1x right' of the ridge, or '4.7x left' of it (an intensity over the ridge's)."""
    return f"{ratio:.1f}x right" if ratio >= 1 else f"{1 / ratio:.1f}x left"


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


# --- reading human-written counts and sizes -------------------------------------------------------

_DECIMAL_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_COUNT = re.compile(r"(-?[0-9]+(?:_[0-9]+)*(?:\.[0-9]+)?)([kmgtKMGT]i?)?")
_SIZE = re.compile(r"([0-9]+(?:_[0-9]+)*(?:\.[0-9]+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB|Ki|Mi|Gi|Ti|K|M|G|T)?",
                   re.IGNORECASE)
#: Longest number text read: anything longer is far past every limit rooflab has (and costly to convert).
_MAX_NUMBER_CHARS = 40
_SIZE_UNITS = {"b": 1, "kb": KB, "mb": MB, "gb": GB, "tb": TB, "kib": KiB, "mib": MiB, "gib": GiB, "tib": 2**40,
               "ki": KiB, "mi": MiB, "gi": GiB, "ti": 2**40}


def parse_count(text: str) -> int:
    """A whole number as people write it, with vLLM's suffixes: '8192', '8_192', '32k' (32,000), '25.6k'
    (25,600), '32K' or '32Ki' (32,768), '1M' (1,048,576), '1m' (1,000,000).

    Lowercase suffixes are decimal and allow a fraction; uppercase (and Ki, Mi, ...) are binary and
    need a whole number. ValueError with the reason for anything else.
    """
    text = str(text).strip()
    match = _COUNT.fullmatch(text) if len(text) <= _MAX_NUMBER_CHARS else None
    if not match:
        too_long = len(text) > _MAX_NUMBER_CHARS
        quoted = text[:20] + "..." if too_long else text
        raise ValueError(f"'{quoted}' is not a whole number (e.g. 8192, 32k, 128K)"
                         + (f": longer than {_MAX_NUMBER_CHARS} characters" if too_long else ""))
    number, suffix = match.group(1).replace("_", ""), match.group(2) or ""
    if suffix in _DECIMAL_SUFFIX:
        value = Decimal(number) * _DECIMAL_SUFFIX[suffix]
        if value != value.to_integral_value():
            raise ValueError(f"'{text}' is not a whole number")
        return int(value)
    if "." in number:
        raise ValueError(f"'{text}': a fraction needs a decimal suffix (k, m, g, t), e.g. {number}k")
    return int(number) * _BINARY_SUFFIX.get(suffix, 1)


def parse_bytes(text: str) -> int:
    """A size in bytes as people write it, the unit required: '80GiB', '192GB', '512 MiB', '7B', and SGLang's IEC
    spellings '80Gi', '512Mi' (python/sglang/srt/server_args.py, human_readable_int); '0' needs none.

    GB is 10^9 and GiB 2^30, as everywhere in rooflab. A bare number is refused (read as bytes, '80' was a
    CUDA-visible total of 80 bytes), and so is a one-letter K, M, G or T: vLLM reads '80G' as 80 GiB and '80g' as
    80 GB (vllm/engine/arg_utils.py, human_readable_int), SGLang '80G' as 80 GB (its human_readable_int, SI
    letters and IEC Ki, Mi, Gi, Ti), so the error asks which. ValueError with
    the reason for anything else; '1e9' is refused.
    """
    text = str(text).strip()
    match = _SIZE.fullmatch(text) if len(text) <= _MAX_NUMBER_CHARS else None
    if not match:
        quoted = text[:20] + "..." if len(text) > _MAX_NUMBER_CHARS else text
        raise ValueError(f"'{quoted}' is not a size (e.g. 80GiB, 192GB, 512MiB)")
    number, unit = match.group(1).replace("_", ""), (match.group(2) or "").lower()
    if unit in ("k", "m", "g", "t"):
        u = unit.upper()
        raise ValueError(f"'{text}': a one-letter unit reads two ways (vLLM: {u} = {u}iB, {unit} = {u}B; SGLang: "
                         f"{u} = {u}B); write {number}{u}iB or {number}{u}B")
    if not unit:
        if Decimal(number) == 0:
            return 0
        raise ValueError(f"'{text}' has no unit: write {number}GiB, {number}GB, {number}MiB, ... ({number}B for "
                         "bytes)")
    value = Decimal(number) * int(_SIZE_UNITS[unit])
    whole = value.to_integral_value()
    if value != whole and (_SIZE_UNITS[unit] == 1 or whole == 0):
        raise ValueError(f"'{text}' is not a whole number of bytes")    # '0.5B' was read as 0 bytes
    # a larger unit with decimals is a rounded display ('23.55GiB' in an engine's log): the nearest byte
    return int(whole)


__all__ = ["ACCUMULATE_MODES", "BF16_MIN_COMPUTE_CAPABILITY", "DTYPE_ALIASES", "FP16_MIN_COMPUTE_CAPABILITY",
           "FP32_BYTES", "GB", "GiB", "INT32_BYTES", "KB", "KiB", "MB", "MiB", "RATE_KEYS", "TB", "DType", "FloatFormat",
           "WeightFormat", "fmt_bytes", "fmt_flops", "fmt_params", "fmt_rate", "fmt_seconds", "loaded_dtype",
           "parse_bytes", "parse_count", "ridge_text", "to_gb", "to_gib"]

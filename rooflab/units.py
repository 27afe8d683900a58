"""Data types, byte sizes and unit formatting.

The only module where 2**30 and 1e9 appear: everything inside rooflab is in SI
base units (bytes, seconds, FLOP, FLOP/s, bytes/s) and converts only for display.
GiB (2**30 bytes) and GB (1e9 bytes) are different units; each formatter says which.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from decimal import Decimal

from .errors import InputError, shown

KiB = 2**10
MiB = 2**20
GiB = 2**30
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: sign, `exponent_bits`, `mantissa_bits` (stored fraction bits), `bias`.

    Normal values are 1.f x 2**(e - bias); subnormals 0.f x 2**(1 - bias). `max_finite`
    is a parameter because the formats disagree about the top exponent: IEEE-like formats
    reserve it for inf and NaN, e4m3fn keeps it for numbers and reserves only mantissa 111
    for NaN. `has_inf` says whether overflow rounds to inf (True) or NaN (e4m3fn).
    Sources: IEEE 754-2019 (binary16, binary32, binary64); bfloat16 as fp32's top 16 bits;
    Micikevicius et al., "FP8 Formats for Deep Learning", arXiv:2209.05433.
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    max_finite: float
    has_inf: bool

    def __post_init__(self) -> None:
        steps = self.max_finite / self.ulp_at_max
        if not (steps.is_integer() and 2**self.mantissa_bits <= steps < 2 ** (self.mantissa_bits + 1)):
            raise ValueError(f"{self.name}: max_finite {self.max_finite} is not a normal value of the format")
        if self.max_exponent + self.bias > 2**self.exponent_bits - 1:
            raise ValueError(f"{self.name}: max_finite {self.max_finite} needs more exponent bits")

    @property
    def max_exponent(self) -> int:
        """Unbiased exponent of max_finite: max_finite = 1.f x 2**max_exponent."""
        return math.frexp(self.max_finite)[1] - 1

    @property
    def min_normal(self) -> float:
        """Smallest positive normal value, 2**(1 - bias)."""
        return math.ldexp(1.0, 1 - self.bias)

    @property
    def min_subnormal(self) -> float:
        """Smallest positive subnormal value, 2**(1 - bias - mantissa_bits)."""
        return math.ldexp(1.0, 1 - self.bias - self.mantissa_bits)

    @property
    def ulp_at_max(self) -> float:
        """Spacing of the values in max_finite's binade, 2**(max_exponent - mantissa_bits)."""
        return math.ldexp(1.0, self.max_exponent - self.mantissa_bits)

    @property
    def overflow_threshold(self) -> float:
        """max_finite + ulp/2: round-to-nearest-even sends anything larger past max_finite.

        At exactly the midpoint the tie goes to the even neighbour: past max_finite for the
        IEEE-like formats (whose max has an odd, all-ones mantissa), to max_finite for e4m3fn
        (max mantissa 110). exp(x) of a nonzero real x never lands on it exactly.
        """
        return self.max_finite + self.ulp_at_max / 2


class DType(str, enum.Enum):
    """Element types of tensors and of the arithmetic done on them; every fact about a type is a property here."""

    fp64 = "fp64"
    fp32 = "fp32"
    tf32 = "tf32"
    fp16 = "fp16"
    bf16 = "bf16"
    fp8_e4m3 = "fp8_e4m3"
    fp8_e5m2 = "fp8_e5m2"

    @property
    def bytes(self) -> int:
        """Storage size of one element (tf32 is stored as fp32)."""
        return _FACTS[self][0]

    @property
    def bits(self) -> int:
        return 8 * self.bytes

    @property
    def is_fp8(self) -> bool:
        return self in (DType.fp8_e4m3, DType.fp8_e5m2)

    @property
    def rate_key(self) -> str:
        """The key of this type's dense tensor-core rate in a GPU spec (both fp8 formats share one)."""
        return "fp8" if self.is_fp8 else self.value

    @property
    def array_name(self) -> str | None:
        """The NumPy / CuPy / PyTorch dtype name of an array of this type; None where none exists
        (tf32 is an input mode, fp8 caches travel as uint8 codes)."""
        return _FACTS[self][1]

    @property
    def float_format(self) -> FloatFormat | None:
        """The format's parameters (exponent and mantissa bits, bias, largest finite value);
        None for tf32, which is a tensor-core input mode stored as fp32."""
        return _FACTS[self][2]

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of(cls, value: object, what: str = "dtype") -> "DType":
        """`value` as a DType: a DType as is, or its name ('fp16'); anything else is an InputError naming `what`
        (the argument it was given as). Every public cost function takes its dtypes through here."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value in cls._value2member_map_:
            return cls(value)
        raise InputError(f"{what} must be one of {', '.join(d.value for d in cls)}, got {shown(value)}")


# max_finite written as (2 - 2**-k) * 2**e so the bits show: all-ones mantissa (k = mantissa_bits)
# under the top usable exponent; e4m3fn loses one mantissa code (k = mantissa_bits - 1) to NaN.
_FACTS: dict[DType, tuple[int, str | None, FloatFormat | None]] = {
    DType.fp64: (8, "float64", FloatFormat("fp64", 11, 52, 1023, (2 - 2.0**-52) * 2.0**1023, has_inf=True)),
    DType.fp32: (4, "float32", FloatFormat("fp32", 8, 23, 127, (2 - 2.0**-23) * 2.0**127, has_inf=True)),
    DType.tf32: (4, None, None),
    DType.fp16: (2, "float16", FloatFormat("fp16", 5, 10, 15, (2 - 2.0**-10) * 2.0**15, has_inf=True)),
    DType.bf16: (2, "bfloat16", FloatFormat("bf16", 8, 7, 127, (2 - 2.0**-7) * 2.0**127, has_inf=True)),
    DType.fp8_e4m3: (1, None, FloatFormat("fp8_e4m3 (e4m3fn)", 4, 3, 7, (2 - 2.0**-2) * 2.0**8, has_inf=False)),
    DType.fp8_e5m2: (1, None, FloatFormat("fp8_e5m2", 5, 2, 15, (2 - 2.0**-2) * 2.0**15, has_inf=True)),
}

class WeightFormat(str, enum.Enum):
    """How a checkpoint stores a weight matrix: the element type plus any block scales, in bits per weight.

    fp8_block is DeepSeek-V3's fp8 e4m3 with one fp32 scale per 128 x 128 block; mxfp4 the OCP
    microscaling format gpt-oss ships its experts in (4-bit e2m1 values, one 8-bit scale per 32);
    nvfp4 NVIDIA's (4-bit values, one 8-bit scale per 16, plus a per-tensor fp32 scale).
    Sources: the OCP Microscaling Formats (MX) v1.0 specification; DeepSeek-V3 technical report,
    section 3.3 (fine-grained quantization).
    """

    fp64 = "fp64"
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"              # e4m3, one scale per tensor
    fp8_block = "fp8_block"  # e4m3, an fp32 scale per 128 x 128 block
    mxfp4 = "mxfp4"
    nvfp4 = "nvfp4"

    @property
    def bits_per_weight(self) -> float:
        return _WEIGHT_BITS[self]

    @classmethod
    def of(cls, dtype: "DType | WeightFormat | str", what: str = "weight_dtype") -> "WeightFormat":
        """The weight format that stores plain `dtype` elements (fp8_e4m3 -> fp8; tf32, a tensor-core mode, is
        stored as fp32), or a WeightFormat as is; anything else is an InputError naming `what`."""
        if isinstance(dtype, WeightFormat):
            return dtype
        if isinstance(dtype, DType):
            value = dtype.value
        elif isinstance(dtype, str) and (dtype in DType._value2member_map_ or dtype in cls._value2member_map_):
            value = dtype
        else:
            raise InputError(f"{what} must be one of {', '.join(f.value for f in cls)} (or a dtype: "
                             f"{', '.join(d.value for d in DType)}), got {shown(dtype)}")
        return cls(_STORED_AS.get(value, value))

    def __str__(self) -> str:
        return self.value


_STORED_AS = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "tf32": "fp32"}

_WEIGHT_BITS = {
    WeightFormat.fp64: 64.0, WeightFormat.fp32: 32.0, WeightFormat.bf16: 16.0, WeightFormat.fp16: 16.0, WeightFormat.fp8: 8.0,
    WeightFormat.fp8_block: 8.0 + 32.0 / (128 * 128), WeightFormat.mxfp4: 4.0 + 8.0 / 32,
    WeightFormat.nvfp4: 4.0 + 8.0 / 16,
}

#: The keys a GPU spec may use for dense tensor-core rates: an operand type accumulating in fp32 (fp4: the block-scaled
#: 4-bit formats, NVFP4 and MXFP4), or `<type>_acc16`, the same operands accumulating in fp16, which GeForce and some
#: workstation parts run at twice their fp32-accumulate rate (NVIDIA Ada Lovelace architecture whitepaper, appendix A).
RATE_KEYS = ("fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "fp16_acc16", "fp8_acc16")
#: The operand type of each accumulate mode (the rate key of the dtype it multiplies); a plain key is its own.
ACCUMULATE_MODES = {"fp16_acc16": "fp16", "fp8_acc16": "fp8"}

#: Bytes of one fp32 scalar: LSEs and split-KV partial outputs are always fp32.
FP32_BYTES = DType.fp32.bytes
#: Bytes of one int32 block-table entry.
INT32_BYTES = 4


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
_SIZE = re.compile(r"([0-9]+(?:_[0-9]+)*(?:\.[0-9]+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?", re.IGNORECASE)
#: Longest number text read: anything longer is far past every limit rooflab has (and costly to convert).
_MAX_NUMBER_CHARS = 40
_SIZE_UNITS = {"b": 1, "kb": KB, "mb": MB, "gb": GB, "tb": TB, "kib": KiB, "mib": MiB, "gib": GiB, "tib": 2**40}


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
    """A size in bytes as people write it: '80GiB', '192GB', '512 MiB', '1e9' is refused, '4096' is bytes."""
    text = str(text).strip()
    match = _SIZE.fullmatch(text) if len(text) <= _MAX_NUMBER_CHARS else None
    if not match:
        quoted = text[:20] + "..." if len(text) > _MAX_NUMBER_CHARS else text
        raise ValueError(f"'{quoted}' is not a size (e.g. 80GiB, 192GB, 512MiB)")
    value = Decimal(match.group(1).replace("_", "")) * int(_SIZE_UNITS[(match.group(2) or "b").lower()])
    if value != value.to_integral_value():      # '0.5B' rounded to 0 bytes; '1.5KB' = 1,500 is whole
        raise ValueError(f"'{text}' is not a whole number of bytes")
    return int(value)

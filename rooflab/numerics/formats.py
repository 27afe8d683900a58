"""Binary floating-point formats from their parameters, and rounding to them emulated in fp64.

NumPy has float16, float32 and float64 but no bfloat16 and no fp8, so the narrow
formats are emulated: a value "in bf16" is a float64 (or float32) that bf16 can
represent exactly, produced by round-to-nearest-even. Sources: IEEE 754-2019
(binary16, binary32); bfloat16 as fp32's top 16 bits; Micikevicius et al.,
"FP8 Formats for Deep Learning", arXiv:2209.05433 (E4M3 without infinities, E5M2).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from ..units import DType
from ._checks import NumericsError


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: sign, `exponent_bits`, `mantissa_bits` (stored fraction bits), `bias`.

    Normal values are 1.f x 2**(e - bias); subnormals 0.f x 2**(1 - bias). `max_finite`
    is a parameter because the formats disagree about the top exponent: IEEE-like formats
    reserve it for inf and NaN, e4m3fn keeps it for numbers and reserves only mantissa 111
    for NaN. `has_inf` says whether overflow rounds to inf (True) or NaN (e4m3fn).
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


# max_finite written as (2 - 2**-k) * 2**e so the bits show: all-ones mantissa (k = mantissa_bits)
# under the top usable exponent; e4m3fn loses one mantissa code (k = mantissa_bits - 1) to NaN.
_FORMATS = {
    DType.fp32: FloatFormat("fp32", 8, 23, 127, (2 - 2.0**-23) * 2.0**127, has_inf=True),
    DType.fp16: FloatFormat("fp16", 5, 10, 15, (2 - 2.0**-10) * 2.0**15, has_inf=True),
    DType.bf16: FloatFormat("bf16", 8, 7, 127, (2 - 2.0**-7) * 2.0**127, has_inf=True),
    DType.fp8_e4m3: FloatFormat("fp8_e4m3 (e4m3fn)", 4, 3, 7, (2 - 2.0**-2) * 2.0**8, has_inf=False),
    DType.fp8_e5m2: FloatFormat("fp8_e5m2", 5, 2, 15, (2 - 2.0**-2) * 2.0**15, has_inf=True),
}


def float_format(dtype: DType) -> FloatFormat:
    """The format parameters of a storage dtype; tf32 is refused (it is a tensor-core input mode)."""
    dtype = DType(dtype)
    if dtype is DType.tf32:
        raise NumericsError(
            "tf32 is a tensor-core input mode, not a type softmax values are stored in; "
            "it has fp32's exponent range, so use fp32")
    return _FORMATS[dtype]


def round_to_format(x: object, fmt: FloatFormat) -> np.ndarray:
    """Round float64 values to the nearest value of `fmt` (ties to even); returns float64.

    Formula: quantum q = 2**(max(E, 1 - bias) - mantissa_bits) with E = floor(log2|x|), so
    subnormals share the smallest normal exponent's quantum; result rint(x / q) * q, both
    steps exact in float64 (q is a power of two). Results past max_finite become +-inf,
    or NaN for a format without inf (e4m3fn, non-saturating conversion). One rounding,
    no double rounding through fp32.
    """
    x = np.asarray(x, dtype=np.float64)
    finite = np.isfinite(x)
    xf = np.where(finite, x, 0.0)
    binade = np.frexp(xf)[1] - 1                       # E: |x| in [2**E, 2**(E + 1))
    exponent = np.maximum(binade, 1 - fmt.bias)
    quantum = np.ldexp(1.0, exponent - fmt.mantissa_bits)
    rounded = np.rint(xf / quantum) * quantum
    too_big = np.abs(rounded) > fmt.max_finite
    past = np.copysign(np.inf, x) if fmt.has_inf else np.full_like(x, np.nan)
    out = np.where(too_big, past, rounded)
    if not fmt.has_inf:                                # inf has no encoding: NaN
        return np.where(finite, out, np.nan)
    return np.where(finite, out, x)


def round_bf16(x: object) -> np.ndarray:
    """Round to bfloat16 the way a GPU converts fp32 (__float2bfloat16_rn); returns float32.

    Formula: keep the top 16 bits of the fp32 pattern, rounding to nearest even:
    bits + 0x7FFF + (bit 16 of bits), then clear the low 16 bits. A carry out of the
    mantissa bumps the exponent, so overflow gives inf as it should; NaN stays NaN.
    Input is first converted to fp32, so float64 input is rounded twice (as a kernel
    holding fp32 registers does); use round_to_format(x, float_format(DType.bf16))
    for a single rounding from float64.
    """
    with np.errstate(over="ignore"):
        x32 = np.asarray(x, dtype=np.float32)
    bits = x32.view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    kept = ((bits + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32)
    out = kept.view(np.float32)
    return np.where(np.isnan(x32), np.float32(np.nan), out).astype(np.float32)


class Precision(str, enum.Enum):
    """Where the online-softmax state (m, l, unnormalised output) is kept."""

    fp64 = "fp64"
    fp32 = "fp32"
    fp16 = "fp16"
    bf16 = "bf16"

    def __str__(self) -> str:
        return self.value


def round_to_precision(x: object, precision: Precision) -> np.ndarray:
    """Round float64 values to `precision` and return them as float64.

    fp32 and fp16 use NumPy's correctly rounded casts (nearest even, overflow to inf);
    bf16 goes through fp32 and round_bf16, like a kernel converting its fp32 registers;
    that double rounding moves bf16's overflow edge by < 2**-24 relative and its underflow
    edge (where fp32 is itself subnormal) by < 2**-15 relative.
    """
    x = np.asarray(x, dtype=np.float64)
    precision = Precision(precision)
    if precision is Precision.fp64:
        return x
    with np.errstate(over="ignore"):
        if precision is Precision.fp32:
            return x.astype(np.float32).astype(np.float64)
        if precision is Precision.fp16:
            return x.astype(np.float16).astype(np.float64)
        return round_bf16(x).astype(np.float64)

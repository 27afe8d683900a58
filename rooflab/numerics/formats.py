"""Binary floating-point formats from their parameters, and rounding to them emulated in fp64.

NumPy has float16, float32 and float64 but no bfloat16 and no fp8, so the narrow
formats are emulated: a value "in bf16" is a float64 (or float32) that bf16 can
represent exactly, produced by round-to-nearest-even. Sources: IEEE 754-2019
(binary16, binary32); bfloat16 as fp32's top 16 bits; Micikevicius et al.,
"FP8 Formats for Deep Learning", arXiv:2209.05433 (E4M3 without infinities, E5M2).
"""

from __future__ import annotations

import numpy as np

from ..units import DType, FloatFormat
from ._checks import NumericsError


def float_format(dtype: DType) -> FloatFormat:
    """The format parameters of a storage dtype; tf32 is refused (it is a tensor-core input mode)."""
    dtype = DType(dtype)
    fmt = dtype.float_format
    if fmt is None:
        raise NumericsError(
            "tf32 is a tensor-core input mode, not a type softmax values are stored in; "
            "it has fp32's exponent range, so use fp32")
    return fmt


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


#: The types the online-softmax state (m, l, unnormalised output) may be kept in.
STATE_DTYPES = (DType.fp64, DType.fp32, DType.fp16, DType.bf16)


def round_to_precision(x: object, precision: DType) -> np.ndarray:
    """Round float64 values to `precision` and return them as float64.

    fp32 and fp16 use NumPy's correctly rounded casts (nearest even, overflow to inf);
    bf16 goes through fp32 and round_bf16, like a kernel converting its fp32 registers;
    that double rounding moves bf16's overflow edge by < 2**-24 relative and its underflow
    edge (where fp32 is itself subnormal) by < 2**-15 relative.
    """
    x = np.asarray(x, dtype=np.float64)
    precision = state_dtype(precision)
    if precision is DType.fp64:
        return x
    with np.errstate(over="ignore"):
        if precision is DType.fp32:
            return x.astype(np.float32).astype(np.float64)
        if precision is DType.fp16:
            return x.astype(np.float16).astype(np.float64)
        return round_bf16(x).astype(np.float64)


def state_dtype(precision: object) -> DType:
    """`precision` as one of STATE_DTYPES, or NumericsError naming the allowed ones."""
    try:
        dtype = DType(precision)
    except ValueError:
        dtype = None
    if dtype not in STATE_DTYPES:
        raise NumericsError(f"a softmax state is kept in one of {', '.join(d.value for d in STATE_DTYPES)}, "
                            f"not {precision!r}")
    return dtype

"""How far a dtype's exp reaches: the overflow and underflow logits, and naive softmax's headroom.

Source: the chapter "Naive attention and the online softmax", sections (1) "Naive softmax, and why it is
unusable" (overflow at 11.1 in fp16, the expected maximum of N normal logits) and (2) "Safe
softmax" (fp16 exp rounds to zero below log(2**-25) = -17.33 with subnormals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..cost.common import real_number, whole_number
from ..errors import InputError, shown
from ..limits import MAX_LOGIT_STD, MAX_TOKENS
from ..units import DType, FloatFormat
from ._checks import NumericsError, check_index
from .formats import float_format


@dataclass(frozen=True)
class DTypeLimits:
    """The logits x at which exp(x), rounded to a dtype (nearest even), stops being finite or nonzero."""

    dtype: DType
    format: FloatFormat

    @property
    def overflow_logit(self) -> float:
        """ln(max_finite + ulp/2): above it exp(x) rounds to inf (NaN in e4m3fn). fp16: ln 65520 = 11.0901.

        Taken as ln(max_finite) + ln(1 + ulp / (2 max_finite)): fp64's max_finite + ulp/2 is itself past fp64.
        """
        fmt = self.format
        return math.log(fmt.max_finite) + math.log1p(fmt.ulp_at_max / 2 / fmt.max_finite)

    @property
    def max_finite_logit(self) -> float:
        """ln(max_finite): the largest x whose exact exp(x) does not exceed max_finite. fp16: ln 65504 = 11.0899."""
        return math.log(self.format.max_finite)

    @property
    def underflow_logit(self) -> float:
        """ln(min_subnormal / 2): at or below it exp(x) rounds to zero (ties to even). fp16: ln 2**-25 = -17.33.

        Taken as (-bias - mantissa_bits) ln 2, min_subnormal / 2 = 2**(-bias - mantissa_bits) being below
        fp64's own smallest value for fp64.
        """
        return (-self.format.bias - self.format.mantissa_bits) * math.log(2)

    @property
    def ftz_underflow_logit(self) -> float:
        """ln(min_normal): below it a flush-to-zero unit returns 0. fp16: ln 2**-14 = -9.70.

        Assumes tininess is detected before rounding; hardware that detects it after
        rounding keeps results within half an ulp below min_normal (they round up to it),
        which lowers this threshold by -ln(1 - 2**-(mantissa_bits + 1)) (4.9e-4 for fp16).
        """
        return math.log(self.format.min_normal)


def dtype_limits(dtype: DType) -> DTypeLimits:
    """The exp range limits of a storage dtype (fp32, fp16, bf16, fp8_e4m3, fp8_e5m2), from its format bits."""
    try:
        dtype = DType.of(dtype)
    except InputError as exc:
        raise NumericsError(str(exc)) from None
    return DTypeLimits(dtype, float_format(dtype))


#: The most samples the expected maximum is asked for: the quadrature's tails are bounded up to 10**12
#: (expected_max_normal_exact); a larger n overflowed a float.
MAX_SAMPLES = 10**12


def _check_samples(n: int) -> int:
    n = check_index(n, "n")
    if n < 2:
        raise NumericsError(f"the expected maximum needs n >= 2 samples, got {n}")
    if n > MAX_SAMPLES:
        raise NumericsError(f"n (samples) must be at most {MAX_SAMPLES:,} (the quadrature's bound), got {shown(n)}")
    return n


def expected_max_normal(n: int) -> float:
    """Expected maximum of n independent standard-normal samples, the chapter's asymptotic form; n >= 2.

    Formula: sqrt(2 ln n) - (ln ln n + ln 4 pi) / (2 sqrt(2 ln n)), from extreme-value
    asymptotics: 3.69 at n = 8192. It runs low at practical n (the true value at 8192 is
    3.80, see expected_max_normal_exact). Source: the chapter "Naive attention and the online softmax",
    section (1).
    """
    n = _check_samples(n)
    root = math.sqrt(2 * math.log(n))
    return root - (math.log(math.log(n)) + math.log(4 * math.pi)) / (2 * root)


_erfc = np.frompyfunc(math.erfc, 1, 1)


def expected_max_normal_exact(n: int) -> float:
    """Expected maximum of n independent standard-normal samples by quadrature; n >= 2.

    Formula: E[max] = int_0^inf (1 - Phi(x)^n) dx - int_-inf^0 Phi(x)^n dx, Phi^n formed as
    exp(n log Phi) so large n stays accurate; trapezoid rule on [-10, 0] and [0, 16]
    (the tails beyond are below 1e-20 for n up to 10**12). Good to ~1e-9: n = 2 gives
    1/sqrt(pi), n = 3 gives 3/(2 sqrt(pi)). 3.80 at n = 8192.
    """
    n = _check_samples(n)
    points = 2**17 + 1
    x_pos = np.linspace(0.0, 16.0, points)
    tail = _erfc(x_pos / math.sqrt(2)).astype(np.float64) / 2          # 1 - Phi(x)
    above = -np.expm1(n * np.log1p(-tail))                             # 1 - Phi(x)^n
    x_neg = np.linspace(-10.0, 0.0, points)
    below = np.exp(n * np.log(_erfc(-x_neg / math.sqrt(2)).astype(np.float64) / 2))   # Phi(x)^n
    return _trapezoid(above, x_pos) - _trapezoid(below, x_neg)


def _trapezoid(f: np.ndarray, x: np.ndarray) -> float:
    """Trapezoid rule on a uniform grid (np.trapezoid is NumPy 2 only)."""
    return float((x[1] - x[0]) * (f.sum() - (f[0] + f[-1]) / 2))


@dataclass(frozen=True)
class SoftmaxHeadroom:
    """How close the largest of seq_len logits (normal, std logit_std) comes to exp overflow."""

    limits: DTypeLimits
    seq_len: int
    logit_std: float

    @property
    def expected_max_logit_asymptotic(self) -> float:
        """logit_std x the chapter's asymptotic E[max of seq_len standard normals] (3.69 at 8192)."""
        return self.logit_std * expected_max_normal(self.seq_len)

    @property
    def expected_max_logit(self) -> float:
        """logit_std x E[max of seq_len standard normals], by quadrature (3.80 at 8192)."""
        return self.logit_std * expected_max_normal_exact(self.seq_len)

    @property
    def headroom_logit(self) -> float:
        """overflow_logit - expected_max_logit: how far the typical row maximum is from overflow."""
        return self.limits.overflow_logit - self.expected_max_logit

    @property
    def critical_logit_std(self) -> float:
        """The logit std at which the expected row maximum reaches overflow_logit."""
        return self.limits.overflow_logit / expected_max_normal_exact(self.seq_len)


#: The smallest logit std the headroom takes: below it every logit is the same number (and 5e-324 is no std).
MIN_LOGIT_STD = 1 / MAX_LOGIT_STD


def softmax_headroom(dtype: DType, seq_len: int, logit_std: float = 1.0) -> SoftmaxHeadroom:
    """Naive softmax's headroom in `dtype` for a row of `seq_len` normal logits of std `logit_std`.

    Assumes independent N(0, logit_std**2) logits, as scaled q.k of unit-variance vectors
    are (logit_std = 1). Trained models have heavier tails: the headroom is an upper bound.
    """
    try:
        seq_len = whole_number(seq_len, "seq_len", minimum=2, maximum=MAX_TOKENS)
        logit_std = real_number(logit_std, "logit_std (--logit-std)", MIN_LOGIT_STD, MAX_LOGIT_STD)
    except InputError as exc:
        raise NumericsError(str(exc)) from None
    return SoftmaxHeadroom(dtype_limits(dtype), seq_len, logit_std)

"""Data types and weight formats: every fact about a dtype in one place (bytes, bits, float format, rate key,
the engines' spellings), and the format a checkpoint's weights load in.

FloatFormat describes a binary float (exponent and mantissa bits, bias, the largest finite value); DType is the
closed set of element types and WeightFormat that of stored weight formats (integer formats with group scales
parsed by name). Sizes and their units are rooflab.units' (which re-exports these names).
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass

from .errors import InputError, shown


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
        """`value` as a DType: a DType as is, or a name in the one vocabulary every option and argument takes
        (rooflab's 'fp16', the engines' 'float16' / 'half' / 'bfloat16' / 'float32' / 'float', and 'fp8' as
        vLLM means it, e4m3); any case, surrounding blanks ignored. Anything else, 'auto' included (use
        `or_auto` where the checkpoint's dtype is a choice), is an InputError naming `what` (the argument or
        option it was given as). Every public cost function takes its dtypes through here."""
        if isinstance(value, cls):
            return value
        key = value.strip().lower() if isinstance(value, str) else None
        if key in cls._value2member_map_:
            return cls(key)
        if key in DTYPE_ALIASES:
            return DTYPE_ALIASES[key]
        names = ", ".join([d.value for d in cls] + list(DTYPE_ALIASES))
        hint = " ('auto' is the default: leave the option out)" if key == "auto" else ""
        raise InputError(f"{what} must be one of {names}, got {shown(value)}{hint}")

    @classmethod
    def or_auto(cls, value: object, what: str = "dtype") -> "DType | None":
        """`value` as a DType, or None for 'auto' (and None): the checkpoint's dtype as the engine loads it
        (`loaded_dtype`). The parser of every option whose default is the engines' `auto`."""
        if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
            return None
        return cls.of(value, what)


#: The engines' spellings of rooflab's dtypes (vLLM's --dtype: vllm/config/model.py _STR_DTYPE_TO_TORCH_DTYPE,
#: 'half', 'float16', 'float', 'float32', 'bfloat16'; --kv-cache-dtype: vllm/config/cache.py CacheDType, 'fp8'
#: = 'fp8_e4m3'). On ROCm vLLM stores 'fp8' as e4m3fnuz (bias 8, largest 240) on MI300-class GPUs: one byte as
#: on CUDA, so memory and rates are the same; rooflab's numerics model e4m3fn only.
DTYPE_ALIASES: dict[str, DType] = {
    "float64": DType.fp64, "double": DType.fp64, "float32": DType.fp32, "float": DType.fp32,
    "float16": DType.fp16, "half": DType.fp16, "bfloat16": DType.bf16, "fp8": DType.fp8_e4m3,
}

#: Compute capability from which an NVIDIA GPU runs bf16 (Ampere, 8.0); vLLM's CUDA platform lists
#: [bf16, fp16, fp32] from 8.0, [fp16, fp32] from 6.0, [fp32] below (vllm/platforms/cuda.py,
#: CudaPlatformBase.supported_dtypes, vLLM main at commit 002db49).
BF16_MIN_COMPUTE_CAPABILITY = (8, 0)
FP16_MIN_COMPUTE_CAPABILITY = (6, 0)


def loaded_dtype(checkpoint: DType | None, compute_capability: tuple[int, int] | None,
                 fp16_supported: bool = True) -> DType:
    """The dtype vLLM's `--dtype auto` loads a checkpoint in (vllm/config/model.py, `_resolve_auto_dtype`,
    vLLM main at commit 0052a5b):

        supported   [bf16, fp16, fp32] on compute capability >= 8.0; [fp16, fp32] from 6.0; else [fp32];
                    fp16 struck out for models that must not run in it (`_FLOAT16_NOT_SUPPORTED_MODELS`:
                    gemma2, gemma3, gemma3_text, plamo2, glm4), so Gemma 2 on a T4 runs in fp32
        preferred   the first supported
        fp32        checkpoints are cast to the preferred type (Gemma-2-2B's float32 -> bf16 on an A100)
        otherwise   the checkpoint's type where supported, else the preferred (bf16 on a T4 -> fp16)

    `checkpoint` None (a spec naming no dtype) is taken as bf16, the dtype nearly every checkpoint ships in;
    `compute_capability` None (a GPU spec without one) as a GPU of 8.0 or newer. SGLang's own rule is not
    modelled apart from vLLM's.
    """
    checkpoint = DType.bf16 if checkpoint is None else DType.of(checkpoint, "checkpoint dtype")
    cc = BF16_MIN_COMPUTE_CAPABILITY if compute_capability is None else tuple(compute_capability)
    if cc >= BF16_MIN_COMPUTE_CAPABILITY:
        supported = [DType.bf16, DType.fp16, DType.fp32]
    elif cc >= FP16_MIN_COMPUTE_CAPABILITY:
        supported = [DType.fp16, DType.fp32]
    else:
        supported = [DType.fp32]
    if not fp16_supported:
        supported = [d for d in supported if d is not DType.fp16]
    preferred = supported[0]
    if checkpoint is DType.fp32:
        return preferred
    return checkpoint if checkpoint in supported else preferred


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

    The named formats: fp8 is e4m3 with one scale per tensor (or per output channel: under 0.1% of the
    bits, not counted); fp8_block DeepSeek-V3's e4m3 with one fp32 scale per 128 x 128 block; mxfp4 the
    OCP microscaling format gpt-oss ships its experts in (4-bit e2m1 values, one 8-bit scale per 32);
    nvfp4 NVIDIA's (4-bit values, one fp8 scale per 16, plus a per-tensor fp32 scale).

    Integer and bitsandbytes formats are spelled by their parameters and made on first use (`parse`):

        int<b>_g<G>[_zp]   b-bit integers, one 16-bit scale per G weights along the input dimension, and
                           with _zp a b-bit zero point per group (GPTQ and AWQ always store one; compressed-
                           tensors only when asymmetric): b + 16/G (+ b/G) bits
        int<b>_ch[_zp]     one scale (and zero point) per output channel: b bits (per-row terms under 0.1%)
        nf4, fp4           bitsandbytes 4-bit: one fp32 absmax per block of 64: 4 + 32/64 = 4.5 bits
        nf4_dq, fp4_dq     with double quantisation: an 8-bit absmax per 64, one fp32 per 256 blocks:
                           4 + 8/64 + 32/(64 x 256) bits

    Sources: the OCP Microscaling Formats (MX) v1.0 specification; DeepSeek-V3 technical report, section
    3.3; Frantar et al., "GPTQ" (arXiv:2210.17323) and AutoGPTQ's packed qweight/qzeros/scales layout;
    Lin et al., "AWQ" (arXiv:2306.00978); Dettmers et al., "QLoRA" (arXiv:2305.14314), section 3 (NF4,
    block size 64, double quantisation with 8-bit constants and block size 256).
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
        named = _WEIGHT_BITS.get(self)
        return named if named is not None else _parametric_bits(self.value)

    @property
    def is_quantized(self) -> bool:
        """True for every format but the plain float types a checkpoint's own dtype can be."""
        return self not in (WeightFormat.fp64, WeightFormat.fp32, WeightFormat.bf16, WeightFormat.fp16)

    @classmethod
    def _missing_(cls, value: object) -> "WeightFormat | None":
        """A parametric format (int4_g128_zp, nf4_dq, ...) as a member made on first use."""
        if not isinstance(value, str) or _parametric_bits(value) is None:
            return None
        member = str.__new__(cls, value)
        member._name_, member._value_ = value, value
        return cls._value2member_map_.setdefault(value, member)

    @classmethod
    def integer(cls, bits: int, group_size: int | None, zero_point: bool) -> "WeightFormat":
        """int<bits>_g<group_size>[_zp] (group_size None: per output channel)."""
        group = "ch" if group_size is None else f"g{group_size}"
        return cls(f"int{bits}_{group}{'_zp' if zero_point else ''}")

    @classmethod
    def of(cls, dtype: "DType | WeightFormat | str", what: str = "weight_dtype") -> "WeightFormat":
        """The weight format that stores plain `dtype` elements (fp8_e4m3 -> fp8; tf32, a tensor-core mode, is
        stored as fp32; the engines' names bfloat16, float16, half, float32 as their dtypes), or a format by
        name (int4_g128_zp, nf4, ...), or a WeightFormat as is; anything else is an InputError naming `what`."""
        if isinstance(dtype, WeightFormat):
            return dtype
        if isinstance(dtype, DType):
            return cls(_STORED_AS.get(dtype.value, dtype.value))
        key = dtype.strip().lower() if isinstance(dtype, str) else None
        if key is not None and len(key) <= 40:
            if key in DType._value2member_map_ or key in DTYPE_ALIASES:
                return cls.of(DType.of(key, what), what)
            try:
                return cls(key)
            except ValueError:
                pass
        raise InputError(f"{what} must be one of {', '.join(f.value for f in cls)}, {PARAMETRIC_FORMATS} (or a "
                         f"dtype: {', '.join([d.value for d in DType] + list(DTYPE_ALIASES))}), got {shown(dtype)}")

    def __str__(self) -> str:
        return self.value


#: The parametric formats' names, as a list to show (WeightFormat's docstring).
PARAMETRIC_FORMATS = "int<b>_g<group>[_zp], int<b>_ch[_zp], nf4[_dq], fp4[_dq]"

_STORED_AS = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "tf32": "fp32"}

#: fp8_block's block edge: a float32 scale per FP8_BLOCK x FP8_BLOCK weights (DeepSeek-V3's weight_block_size), and the
#: 1 x FP8_BLOCK group the engines quantise its GEMMs' activations in.
FP8_BLOCK = 128

_WEIGHT_BITS = {
    WeightFormat.fp64: 64.0, WeightFormat.fp32: 32.0, WeightFormat.bf16: 16.0, WeightFormat.fp16: 16.0, WeightFormat.fp8: 8.0,
    WeightFormat.fp8_block: 8.0 + 32.0 / (FP8_BLOCK * FP8_BLOCK), WeightFormat.mxfp4: 4.0 + 8.0 / 32,
    WeightFormat.nvfp4: 4.0 + 8.0 / 16,
}

_INTEGER_FORMAT = re.compile(r"int(2|3|4|8)_(?:g(\d{1,6})|ch)(_zp)?")
#: Group sizes a parametric integer format may have: powers of two a real checkpoint uses.
_GROUP_SIZES = tuple(2**k for k in range(3, 15))
#: bitsandbytes 4-bit: absmax block of 64 (fp32), and with double quantisation 8-bit absmax, fp32 per 256 blocks.
_BNB_BITS = {"nf4": 4.0 + 32.0 / 64, "fp4": 4.0 + 32.0 / 64,
             "nf4_dq": 4.0 + 8.0 / 64 + 32.0 / (64 * 256), "fp4_dq": 4.0 + 8.0 / 64 + 32.0 / (64 * 256)}
#: Bits of one group scale of an integer format (fp16 or bf16 scales, as GPTQ, AWQ and compressed-tensors store).
_INT_SCALE_BITS = 16


def _parametric_bits(name: str) -> float | None:
    """Bits per weight of a parametric format's name (WeightFormat's docstring), None for any other text."""
    if name in _BNB_BITS:
        return _BNB_BITS[name]
    match = _INTEGER_FORMAT.fullmatch(name)
    if not match:
        return None
    bits, group, zero = int(match.group(1)), match.group(2), bool(match.group(3))
    if group is None:
        return float(bits)
    if int(group) not in _GROUP_SIZES:
        return None
    return bits + (_INT_SCALE_BITS + (bits if zero else 0)) / int(group)


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

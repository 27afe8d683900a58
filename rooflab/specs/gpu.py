"""A GPU: datasheet roofs, on-chip sizes and, where `rooflab calibrate` ran, measured ceilings.

Specs are data: every figure comes from a YAML file (see load.py), with a `source`. Derived
values are properties. Every field is checked on construction (fields.py); the cross-field
rules live in `check()` and raise SpecError naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from ..errors import SpecError
from ..fields import spec_field, validate_fields
from ..units import RATE_KEYS, DType
from ..vocab import Kernel
from .fitted import MAX_UNITS_PER_SM, MIN_UNITS_PER_SM, FittedModel
from .interconnect import InterconnectSpec


_GB = 1e9
_T = 1e12
#: Most SMs (compute units) a GPU may have: num_sms's range, checked too where a cost function takes num_sms.
MAX_SMS = 100_000


@dataclass(frozen=True)
class MeasuredCeilings:
    """Ceilings measured on a real device by `rooflab calibrate` (the Empirical Roofline Toolkit's way).

    copy_bytes_per_s counts bytes read plus bytes written of a large device-to-device copy;
    stream_bytes_per_s the bytes read per second when only n SMs stream (n = 1, 2, 4, ... and all).
    gemm_flop_per_s holds dense GEMM rates on random data, keyed like dense_tensor_flop_per_s.
    """

    copy_bytes_per_s: float = spec_field(1 * _GB, 100 * _T, "B/s", "device-to-device copy, bytes read + written")
    gemm_flop_per_s: dict[str, float] = spec_field(0.1 * _T, 1e5 * _T, "FLOP/s", "dense GEMM rate on random data",
                                                   keys=RATE_KEYS, nonempty=True)
    date: str = spec_field(doc="when it was measured")
    device_name: str = spec_field(doc="the device's own name (nvidia-smi)")
    exp_per_s: Optional[float] = spec_field(1e9, 1e17, "exp/s", "measured exp throughput", default=None)
    stream_bytes_per_s: Optional[dict[str, float]] = spec_field(
        1e8, 100 * _T, "B/s", "read bandwidth with n SMs streaming, keyed by n (the per-unit rate of the "
        "parallelism model)", default=None)
    driver: Optional[str] = spec_field(default=None)
    cuda: Optional[str] = spec_field(default=None)
    cupy: Optional[str] = spec_field(default=None)
    command: Optional[str] = spec_field(default=None)

    def __post_init__(self) -> None:
        validate_fields(self)


@dataclass(frozen=True)
class GpuSpec:
    """One GPU: datasheet ceilings (dense, never the sparsity figures) and on-chip sizes.

    `units_per_sm` is the parallelism model's work units one SM runs at once for rooflab's decode
    kernels (cost/parallel.py): the value `rooflab validate` fitted to the paged and split-KV kernels
    on this GPU where the YAML records one, else 1 (one thread block an SM streams at beta / num_sms).
    Every field is checked on construction (fields.py): type, and a range no real GPU falls outside.
    """

    # Required: what a roofline needs (the two roofs, the vector roof of softmax and merge, and memory).
    name: str = spec_field(doc="short name, as `--gpu` takes it")
    hbm_capacity_bytes: int = spec_field(100e6, 100e12, "bytes", "device memory (HBM), total as nvidia-smi reports it")
    hbm_bandwidth_bytes_per_s: float = spec_field(1 * _GB, 100 * _T, "B/s", "datasheet HBM bandwidth")
    dense_tensor_flop_per_s: dict[str, float] = spec_field(0.1 * _T, 1e5 * _T, "FLOP/s",
                                                           "dense (not 2:4 sparse) matrix rates", keys=RATE_KEYS,
                                                           nonempty=True)
    vector_fp32_flop_per_s: float = spec_field(0.01 * _T, 1e4 * _T, "FLOP/s", "plain fp32 FMA rate (non-tensor)")
    # Optional: each says what rooflab does without it.
    display_name: Optional[str] = spec_field(doc="the name people know it by (default: name)", default=None)
    vendor: Optional[str] = spec_field(doc="who makes it (listings only)", default=None)
    architecture: Optional[str] = spec_field(doc="the chip generation (listings only)", default=None)
    source: Optional[str] = spec_field(doc="where the figures come from (bundled YAMLs always give one)",
                                       default=None)
    num_sms: Optional[int] = spec_field(1, MAX_SMS, "SMs", "streaming multiprocessors (compute units); without it "
                                        "launches are taken to fill the GPU (no parallelism model, split-KV "
                                        "recommends 1)", default=None)
    smem_per_sm_bytes: Optional[int] = spec_field(1024, 1 << 30, "bytes", "shared memory per SM; without it flash's "
                                                  "tile is the largest, 128 x 128", default=None)
    l2_bytes: Optional[int] = spec_field(1024, 1 << 36, "bytes", "last-level (L2) cache; without it `rooflab bench` "
                                         "asks the device how much to flush", default=None)
    register_file_per_sm_bytes: Optional[int] = spec_field(1024, 1 << 30, "bytes", "register file per SM "
                                                           "(listings only)", default=None)
    boost_clock_hz: Optional[float] = spec_field(10e6, 100e9, "Hz", "boost clock (listings only)", default=None)
    exp_per_s: Optional[float] = spec_field(1e9, 1e17, "exp/s", "special-function (exp) rate", default=None)
    interconnect_bytes_per_s: Optional[float] = spec_field(1e6, 100 * _T, "B/s", default=None)
    compute_capability: Optional[str] = spec_field(default=None)
    cuda_visible_bytes: Optional[int] = spec_field(100e6, 100e12, "bytes", "the total CUDA reports "
                                                   "(cudaMemGetInfo): engines multiply it by their memory utilisation",
                                                   default=None)
    units_per_sm: float = spec_field(MIN_UNITS_PER_SM, MAX_UNITS_PER_SM, "", "decode work units one SM runs at "
                                     "once (fitted)", default=1.0)
    measured: Optional[MeasuredCeilings] = None
    fitted: tuple[FittedModel, ...] = spec_field(doc="kernel models `rooflab fit` fitted on this GPU", default=())
    aliases: tuple[str, ...] = spec_field(doc="other names people and nvidia-smi give it (`--gpu` takes them)",
                                          default=())
    interconnect: Optional[InterconnectSpec] = None   # links to peer GPUs: datasheet floors, fitted collectives

    #: YAML keys read under their old spelling: old -> new.
    RENAMED: ClassVar[dict[str, str]] = {"decode_units_per_sm": "units_per_sm"}

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.display_name is None:
            object.__setattr__(self, "display_name", self.name)
        self.check()

    def check(self) -> None:
        """Cross-field rules the annotations cannot express."""
        if "fp16" not in self.dense_tensor_flop_per_s:
            raise SpecError(self.name, "dense_tensor_flop_per_s", self.dense_tensor_flop_per_s,
                            "must give at least the fp16 rate")
        keys = [f.key for f in self.fitted]
        twice = sorted({f"{k.value}/{i}" for k, i in keys if keys.count((k, i)) > 1})
        if twice:
            raise SpecError(self.name, "fitted", twice[0], "is fitted twice; keep one model per kernel and impl")

    @property
    def sms_text(self) -> str:
        """'132 SMs', or what rooflab assumes when the YAML does not say."""
        return f"{self.num_sms} SMs" if self.num_sms is not None else "a GPU whose SM count is not given (taken as filled)"

    def fitted_model(self, kernel: Kernel, impl: str) -> FittedModel | None:
        """The fitted model of `impl`'s `kernel` on this GPU, or None."""
        return next((f for f in self.fitted if f.key == (kernel, impl)), None)

    def fitted_for(self, kernel: Kernel) -> tuple[FittedModel, ...]:
        """Every implementation of `kernel` fitted on this GPU."""
        return tuple(f for f in self.fitted if f.kernel is kernel)

    def has_rate(self, dtype: DType) -> bool:
        dtype = DType.of(dtype)
        return dtype.rate_key in self.dense_tensor_flop_per_s or dtype is DType.fp32

    def matmul_flop_per_s(self, dtype: DType) -> float:
        """Datasheet rate for matrix products with operands in `dtype`.

        fp32 operands fall back to the non-tensor fp32 rate when the chip has no fp32 matrix rate.
        """
        dtype = DType.of(dtype)
        rate = self.dense_tensor_flop_per_s.get(dtype.rate_key)
        if rate is not None:
            return rate
        if dtype is DType.fp32:
            return self.vector_fp32_flop_per_s
        raise SpecError(self.name, "dense_tensor_flop_per_s", sorted(self.dense_tensor_flop_per_s),
                        f"this GPU has no {dtype.value} tensor-core rate")

    def ridge_flop_per_byte(self, dtype: DType) -> float:
        """Intensity at which the compute roof meets the memory roof: pi / beta."""
        return self.matmul_flop_per_s(dtype) / self.hbm_bandwidth_bytes_per_s

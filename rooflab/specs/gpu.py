"""A GPU: datasheet roofs, on-chip sizes and, where `rooflab calibrate` ran, measured ceilings.

Specs are data: every figure comes from a YAML file (see load/), with a `source`. Derived
values are properties. Every field is checked on construction (fields.py); the cross-field
rules live in `check()` and raise SpecError naming the field.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import ClassVar, Optional

from ..errors import SpecError
from ..fields import spec_field, validate_fields
from ..units import ACCUMULATE_MODES, RATE_KEYS, DType, fmt_bytes
from ..vocab import CeilingSource, Kernel, PeerTransport
from .fitted import MAX_UNITS_PER_SM, MIN_UNITS_PER_SM, FittedModel
from .interconnect import InterconnectSpec
from .launch import LaunchTimes


_GB = 1e9
#: compute_capability's text, and the range a real GPU falls in (Kepler's 3.0 to well past Blackwell's 12.x).
_COMPUTE_CAPABILITY = re.compile(r"([0-9]{1,2})\.([0-9])")
MIN_COMPUTE_CAPABILITY = (3, 0)
MAX_COMPUTE_CAPABILITY = (19, 9)
_T = 1e12
#: Most SMs (compute units) a GPU may have: num_sms's range, checked too where a cost function takes num_sms.
MAX_SMS = 100_000
#: How far below a rated figure the physical roof may come out from rounding alone: datasheets print 989.4 for
#: 132 x 4096 x 1.83e9 = 989.39e12, and a part whose rated clock is its maximum gives the rated figure back.
RATED_ROUNDING = 0.005


@dataclass(frozen=True)
class MeasuredCeilings:
    """Ceilings measured on a real device by `rooflab calibrate` (the Empirical Roofline Toolkit's way).

    copy_bytes_per_s counts bytes read plus bytes written of a large device-to-device copy;
    stream_bytes_per_s the bytes read per second when only n SMs stream (n = 1, 2, 4, ... and all).
    gemm_flop_per_s holds dense GEMM rates on random data, keyed like dense_tensor_flop_per_s (cuBLAS, fp16 / bf16).
    fp8_gemm_flop_per_s and fp8_attention_flop_per_s are the fp8 (e4m3) rates `rooflab calibrate` measures where
    PyTorch offers them (torch._scaled_mm; an fp8 scaled_dot_product_attention): kept apart from gemm_flop_per_s
    so that recording them changes no price; a caller pricing fp8 reads them from here.
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
    fp8_gemm_flop_per_s: Optional[float] = spec_field(
        0.1 * _T, 1e5 * _T, "FLOP/s", "dense fp8 (e4m3 x e4m3, per-tensor scales, bf16 out) GEMM rate on random data "
        "(torch._scaled_mm); read by nothing in pricing yet", default=None)
    fp8_attention_flop_per_s: Optional[float] = spec_field(
        0.1 * _T, 1e5 * _T, "FLOP/s", "fp8 (e4m3) attention forward rate on random data (4 B H T^2 d FLOPs, "
        "non-causal), where the device offers an fp8 attention kernel; read by nothing in pricing yet", default=None)
    fp8_provenance: Optional[str] = spec_field(doc="when, where and how the fp8 rates were measured (and why one "
                                               "was not)", default=None)
    driver: Optional[str] = spec_field(default=None)
    cuda: Optional[str] = spec_field(default=None)
    cupy: Optional[str] = spec_field(default=None)
    command: Optional[str] = spec_field(default=None)
    launch: Optional[LaunchTimes] = spec_field(doc="the small kernels' and an eager launch's measured times "
                                               "(specs/launch.py; read by rooflab.step)", default=None)

    def __post_init__(self) -> None:
        validate_fields(self)


#: How far above its datasheet (or physical) roof a measured ceiling may come: clocks above the quoted boost and
#: rounding give a few percent (the H200's cuDNN flash fit reaches 1.15x the calibrated GEMM rate); a figure 10x
#: or 1000x above is a unit slip (GB/s written as B/s) or another GPU's measurement, and would price everything
#: from it that far off.
MAX_MEASURED_OVER_ROOF = 1.5
#: How far a stream_bytes_per_s entry for fewer SMs may beat the entry for the most SMs (measurement noise near
#: saturation); more means the table is not one device's (one SM cannot read faster than all of them).
MAX_STREAM_OVER_ALL = 1.25


def _check_measured(gpu: "GpuSpec", m: MeasuredCeilings) -> None:
    """Measured ceilings agree with the spec's datasheet figures: none far above its roof, stream_bytes_per_s
    keyed by SM counts the GPU has, and no entry for fewer SMs faster than the one for the most."""
    roofs = gpu.physical_tensor_flop_per_s
    checks = [("measured.copy_bytes_per_s", m.copy_bytes_per_s, "hbm_bandwidth_bytes_per_s",
               gpu.hbm_bandwidth_bytes_per_s)]
    checks += [(f"measured.gemm_flop_per_s.{k}", v, f"dense_tensor_flop_per_s.{k}", roofs[k])
               for k, v in m.gemm_flop_per_s.items() if k in roofs]
    if m.exp_per_s is not None and gpu.exp_per_s is not None:
        checks.append(("measured.exp_per_s", m.exp_per_s, "exp_per_s", gpu.exp_per_s * gpu.clock_headroom))
    stream = {}
    for key, rate in (m.stream_bytes_per_s or {}).items():
        try:
            n = int(str(key))
        except ValueError:
            n = 0
        if n < 1 or (gpu.num_sms is not None and n > gpu.num_sms):
            raise SpecError(gpu.name, f"measured.stream_bytes_per_s.{key}", rate,
                            f"is keyed by {key!r} SMs; keys are SM counts from 1 to num_sms ({gpu.num_sms})")
        stream[n] = rate
        checks.append((f"measured.stream_bytes_per_s.{key}", rate, "hbm_bandwidth_bytes_per_s",
                       gpu.hbm_bandwidth_bytes_per_s))
    for field, value, roof_field, roof in checks:
        if value > roof * MAX_MEASURED_OVER_ROOF:
            raise SpecError(gpu.name, field, value,
                            f"is {value / roof:.3g}x {roof_field} ({roof:.4g}); a measured ceiling above "
                            f"{MAX_MEASURED_OVER_ROOF:g}x its datasheet roof is a unit slip or another GPU's")
    if len(stream) > 1:
        most = max(stream)
        for n, rate in stream.items():
            if rate > stream[most] * MAX_STREAM_OVER_ALL:
                raise SpecError(gpu.name, f"measured.stream_bytes_per_s.{n}", rate,
                                f"{n} SM(s) faster than {most} SMs ({stream[most]:.4g} B/s): fewer SMs cannot "
                                f"read faster than more")


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
    boost_clock_hz: Optional[float] = spec_field(10e6, 100e9, "Hz", "boost clock: the clock the vector and exp "
                                                 "rates are quoted at", default=None)
    max_sm_clock_hz: Optional[float] = spec_field(10e6, 100e9, "Hz", "the driver's maximum SM clock (nvidia-smi -q, "
                                                  "Max Clocks / SM) or the vendor's maximum boost, cited in source: "
                                                  "the physical roofs' clock; at least boost_clock_hz", default=None)
    tensor_flop_per_clock_per_sm: Optional[dict[str, float]] = spec_field(
        1, 1e6, "FLOP/clock/SM", "dense tensor FLOPs one SM completes a clock, per mode (keys as "
        "dense_tensor_flop_per_s; *_acc16 accumulate in fp16); x num_sms x max_sm_clock_hz gives the physical roofs; "
        "needs both", keys=RATE_KEYS, nonempty=True, default=None)
    rated_beaten_by: Optional[str] = spec_field(doc="a published run faster than the rated figures, cited: floors on "
                                                "this GPU then default to the physical roofs (needs "
                                                "tensor_flop_per_clock_per_sm)", default=None)
    exp_per_s: Optional[float] = spec_field(1e9, 1e17, "exp/s", "special-function (exp) rate", default=None)
    interconnect_bytes_per_s: Optional[float] = spec_field(1e6, 100 * _T, "B/s", default=None)
    compute_capability: Optional[str] = spec_field(doc="'major.minor' as torch.cuda.get_device_capability reports "
                                                   "it (NVIDIA's CUDA GPUs list; ROCm: the gfx9xx target's digits, "
                                                   "gfx942 -> 9.4), cited in source: engines' --dtype auto picks "
                                                   "bf16 from 8.0 (without it: taken as 8.0 or newer)",
                                               default=None)
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
    peer_transport: Optional[PeerTransport] = spec_field(
        doc="how NCCL reaches another GPU of the same host (vocab.PeerTransport): device_link (NVLink, NVSwitch, "
            "a bridge), pcie_p2p (PCIe only, peer access allowed) or host (peer access disabled by the driver: "
            "GeForce), cited in source; engines' default memory in use under TP counts NCCL's GPU-resident buffers "
            "by it (engines/memory.py); without it: device_link", default=None)

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
        self._check_modes()
        self._check_physical()
        if self.compute_capability is not None:
            self._check_compute_capability()
        problem = self.cuda_visible_problem(self.cuda_visible_bytes)
        if problem:
            raise SpecError(self.name, "cuda_visible_bytes", self.cuda_visible_bytes, problem)
        if self.measured is not None:
            _check_measured(self, self.measured)
        keys = [f.key for f in self.fitted]
        twice = sorted({f"{k.value}/{i}" for k, i in keys if keys.count((k, i)) > 1})
        if twice:
            raise SpecError(self.name, "fitted", twice[0], "is fitted twice; keep one model per kernel and impl")

    def cuda_visible_problem(self, visible_bytes: Optional[int]) -> Optional[str]:
        """Why `visible_bytes` cannot be the total CUDA reports on this GPU (None: it can, or is not given); the
        YAML's cuda_visible_bytes and an engine's --cuda-visible-memory are held to it (and to the field's range:
        '--cuda-visible-memory 0' was taken, then blamed on --memory-in-use)."""
        if visible_bytes is None:
            return None
        out_of_range = _CUDA_VISIBLE_RANGE.problem(visible_bytes)
        if out_of_range:
            return out_of_range
        if visible_bytes > self.hbm_capacity_bytes:
            return (f"exceeds hbm_capacity_bytes ({self.hbm_capacity_bytes:,} = {fmt_bytes(self.hbm_capacity_bytes)}): "
                    "CUDA sees part of the device's memory, never more")
        return None

    def _check_modes(self) -> None:
        """An accumulate mode (`fp16_acc16`) is a second rate for operands the spec already rates."""
        for table in ("dense_tensor_flop_per_s", "tensor_flop_per_clock_per_sm"):
            rates = getattr(self, table) or {}
            for mode, operand in ACCUMULATE_MODES.items():
                if mode in rates and operand not in rates:
                    raise SpecError(self.name, f"{table}.{mode}", rates[mode],
                                    f"is an accumulate mode of {operand}; give the {operand} (fp32-accumulate) "
                                    f"rate too")

    def _check_compute_capability(self) -> None:
        text = self.compute_capability
        match = _COMPUTE_CAPABILITY.fullmatch(text)
        if not match:
            raise SpecError(self.name, "compute_capability", text,
                            "must be 'major.minor' (whole numbers, e.g. '8.0', '9.0', '10.0'), quoted in YAML")
        if not MIN_COMPUTE_CAPABILITY <= self.compute_capability_version <= MAX_COMPUTE_CAPABILITY:
            raise SpecError(self.name, "compute_capability", text,
                            f"must be between {'.'.join(map(str, MIN_COMPUTE_CAPABILITY))} and "
                            f"{'.'.join(map(str, MAX_COMPUTE_CAPABILITY))} (Kepler to well past Blackwell)")

    @property
    def compute_capability_version(self) -> Optional[tuple[int, int]]:
        """compute_capability as (major, minor), None where the spec gives none."""
        if self.compute_capability is None:
            return None
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    def _check_physical(self) -> None:
        """The maximum clock is at least the boost clock; the physical roofs need their clock and SMs and are
        never below the rated figures (a spec defect: a wrong per-clock rate, clock or SM count)."""
        clock, boost = self.max_sm_clock_hz, self.boost_clock_hz
        if clock is not None and boost is not None and clock < boost:
            raise SpecError(self.name, "max_sm_clock_hz", clock,
                            f"is below boost_clock_hz ({boost:g} Hz): the maximum SM clock is the highest the "
                            f"part runs, never below its boost clock")
        per_clock = self.tensor_flop_per_clock_per_sm
        if per_clock is not None and (clock is None or self.num_sms is None):
            missing = " and ".join(n for n in ("max_sm_clock_hz", "num_sms") if getattr(self, n) is None)
            raise SpecError(self.name, "tensor_flop_per_clock_per_sm", dict(per_clock),
                            f"needs {missing}: a physical roof is the per-clock rate x SMs x the maximum clock")
        for key, rate in (per_clock or {}).items():
            rated = self.dense_tensor_flop_per_s.get(key)
            physical = rate * self.num_sms * clock
            if rated is not None and physical < rated * (1 - RATED_ROUNDING):
                raise SpecError(self.name, f"tensor_flop_per_clock_per_sm.{key}", rate,
                                f"x {self.num_sms} SMs x {clock:g} Hz = {physical:.4g} FLOP/s, below the rated "
                                f"{rated:.4g}: a physical roof is never below the datasheet's")
        if self.rated_beaten_by is not None and per_clock is None:
            raise SpecError(self.name, "rated_beaten_by", self.rated_beaten_by,
                            "makes the physical roofs this GPU's floor; give tensor_flop_per_clock_per_sm and "
                            "max_sm_clock_hz")

    @property
    def floor_source(self) -> CeilingSource:
        """The roofs this GPU's floors use by default: physical where a published run beat the rated figures
        (`rated_beaten_by`), else the datasheet's (so the chapters' figures stand; CHANGELOG.md says why)."""
        return CeilingSource.physical if self.rated_beaten_by is not None else CeilingSource.datasheet

    @property
    def clock_headroom(self) -> float:
        """max_sm_clock_hz / boost_clock_hz: how much faster than its quoted vector and exp rates the part runs
        (1 where either clock is not given)."""
        if self.max_sm_clock_hz is None or self.boost_clock_hz is None:
            return 1.0
        return self.max_sm_clock_hz / self.boost_clock_hz

    @property
    def physical_tensor_flop_per_s(self) -> dict[str, float]:
        """Each mode's dense tensor roof at the maximum clock: per-clock rate x SMs x max_sm_clock_hz, or the
        rated figure where the spec gives no per-clock rate; never below the rated figure."""
        out = dict(self.dense_tensor_flop_per_s)
        for key, rate in (self.tensor_flop_per_clock_per_sm or {}).items():
            out[key] = max(out.get(key, 0.0), rate * self.num_sms * self.max_sm_clock_hz)
        return out

    def physical_matmul_flop_per_s(self, dtype: DType) -> tuple[float, str]:
        """The fastest rate any accumulate mode gives `dtype` operands at the maximum clock, and that mode's key.

        fp32 operands without an fp32 matrix rate take the vector roof at the maximum clock.
        """
        dtype = DType.of(dtype)
        operand = dtype.rate_key
        rates = {k: r for k, r in self.physical_tensor_flop_per_s.items() if ACCUMULATE_MODES.get(k, k) == operand}
        if rates:
            key = max(rates, key=rates.__getitem__)
            return rates[key], key
        self.matmul_flop_per_s(dtype)           # raises, naming the rates the spec has
        return self.vector_fp32_flop_per_s * self.clock_headroom, "fp32 vector"

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


#: cuda_visible_bytes' plausible range (its spec_field), which an engine's --cuda-visible-memory is held to as well.
_CUDA_VISIBLE_RANGE = next(f.metadata["range"] for f in dataclasses.fields(GpuSpec)
                           if f.name == "cuda_visible_bytes")

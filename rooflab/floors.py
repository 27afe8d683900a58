"""Cost x ceilings -> Floors: three roofs, the bound, and where a kernel sits against the ridge.

For one kernel launch with F FLOP on a pipe of rate pi, E exponentials and Q bytes at bandwidth beta:

    t_compute = F / pi              the matrix (tensor) or fp32 vector roof
    t_exp     = E / eps             eps = eps_sfu + pi_fma / c: the exp units at the boost clock, plus what
                                    the FMA units add emulating exp2 (FlashAttention-4 on Blackwell) at
                                    c = EMULATED_EXP_FLOP FLOP an exp
    t_memory  = Q / beta
    t_floor   = max(t_compute, t_exp, t_memory)     for a tensor-pipe kernel (the FMA units are free to emulate);
                max(t_vec+exp, t_memory)            for a vector-pipe kernel, whose own FLOPs share the FMA units
                                                    with emulated exps (the best split of its exps, below)
    bound     = the roof with the largest time (compute, exp or memory)
    intensity I = F / Q,  ridge I* = pi / beta

A floor is physical: a bound no implementation can beat, from the GPU's floor roofs with ideal overlap and
every SM busy. The roofs come in three sources (CeilingSource): the datasheet's rated figures (the chapters'),
the physical ones (the driver's maximum SM clock x the per-clock tensor rate, in the fastest accumulate mode the
operands have), and calibrated (measured, a model). A GPU's floors default to the datasheet's, or to the physical
roofs where a published run beat the rated figures (GpuSpec.floor_source; CHANGELOG.md says why). How a real kernel falls short of it (launch parallelism, exp work that does not
overlap the matrix work, efficiency, overhead) is a prediction (predict.py), never folded into a floor.
A variant made of several launches (naive attention) runs them one after another, so its floor is the
sum of the kernels' floors, never less than either total.
"""

from __future__ import annotations

import bisect
import functools
import math
from dataclasses import dataclass

import numpy as np

from .cost.common import Cost, KernelCost, check_cost, check_spec, real_number
from .errors import InputError, shown
from .specs import GpuSpec
from .units import DType
from .vocab import Bound, CeilingSource, Pipe


#: FP32 FLOPs the FMA units spend on one emulated exp2: Cody-Waite range reduction to 2^n x 2^f and a
#: cubic for 2^f (FlashAttention-4's scheme): at least a rounding add and three FMAs, 4 operations = 8 FLOP
#: counted as FMA pipe work (the exponent insertion runs on the integer units). A floor wants the least
#: cost, so the most exps the FMA units could add.
EMULATED_EXP_FLOP = 8.0


#: The largest roof a Ceilings may hold (bytes or operations a second): 10^21, far past any GPU's 10^15-10^16.
MAX_ROOF = 1e21


@dataclass(frozen=True)
class Ceilings:
    """The roofs one prediction or floor is made against."""

    source: CeilingSource
    bandwidth_bytes_per_s: float
    matmul_flop_per_s: float
    vector_flop_per_s: float
    exp_per_s: float | None                 # the exp (special-function) units alone
    #: Calibrated only: read bandwidth with n SMs streaming, (n, bytes/s) ascending, the last n = all SMs
    #: (`rooflab calibrate`); the parallelism model's per-SM rate where measured (busy_share).
    stream: tuple[tuple[int, float], ...] = ()
    #: The tensor mode the matrix roof is ('fp16', 'fp16_acc16': fp16 operands accumulating in fp16, 'fp32 vector').
    matmul_mode: str = ""

    def __post_init__(self) -> None:      # zero roofs divided by zero in every floor and the ridge point
        if not isinstance(self.source, CeilingSource):
            raise InputError(f"Ceilings source must be a CeilingSource, got {shown(self.source)}")
        for name in ("bandwidth_bytes_per_s", "matmul_flop_per_s", "vector_flop_per_s", "exp_per_s"):
            value = getattr(self, name)
            if value is not None or name != "exp_per_s":
                object.__setattr__(self, name, real_number(value, f"Ceilings {name}", 0.0, MAX_ROOF, lo_open=True))

    @classmethod
    def of(cls, gpu: GpuSpec, dtype: DType, source: CeilingSource = CeilingSource.floor) -> Ceilings:
        """Ceilings for `dtype` operands; calibrated ones fall back to the datasheet for what was not measured.

        `dtype` and `source` may be given as their values ('fp16', 'calibrated'); anything else is an InputError.
        `floor` (the default) is the GPU's own choice, gpu.floor_source, and the result names the one taken.
        Measured ceilings are models, not bounds (reads alone outrun the measured copy rate): floors use the
        datasheet's or the physical ones.
        """
        gpu = check_spec(gpu, GpuSpec, "gpu")
        dtype = DType.of(dtype)
        try:
            source = CeilingSource(source)
        except ValueError:
            raise InputError(f"source must be one of {', '.join(s.value for s in CeilingSource)}, got "
                             f"{shown(source)}") from None
        if source is CeilingSource.floor:
            source = gpu.floor_source
        if source is CeilingSource.physical:
            return cls._physical(gpu, dtype)
        bandwidth = gpu.hbm_bandwidth_bytes_per_s
        matmul = gpu.matmul_flop_per_s(dtype)
        exp = gpu.exp_per_s
        if source is CeilingSource.calibrated:
            m = gpu.measured
            if m is None:
                raise InputError(f"{gpu.name} has no measured: section; run `rooflab calibrate` on that GPU "
                                 f"or use datasheet ceilings")
            bandwidth = m.copy_bytes_per_s
            matmul = m.gemm_flop_per_s.get(dtype.rate_key, matmul)
            exp = m.exp_per_s or exp
            stream = tuple(sorted((int(n), float(b)) for n, b in (m.stream_bytes_per_s or {}).items()))
            if stream and gpu.num_sms is not None and stream[-1][0] == gpu.num_sms:
                return cls(source, bandwidth, matmul, gpu.vector_fp32_flop_per_s, exp, stream, dtype.rate_key)
        return cls(source, bandwidth, matmul, gpu.vector_fp32_flop_per_s, exp, matmul_mode=dtype.rate_key)

    @classmethod
    def _physical(cls, gpu: GpuSpec, dtype: DType) -> Ceilings:
        """The highest rates the part runs: the fastest accumulate mode of `dtype` at the maximum SM clock; the
        vector and exp rates, quoted at the boost clock, scaled to it; the datasheet's bandwidth (a memory clock
        the part does not exceed)."""
        matmul, mode = gpu.physical_matmul_flop_per_s(dtype)
        headroom = gpu.clock_headroom
        exp = gpu.exp_per_s * headroom if gpu.exp_per_s else gpu.exp_per_s
        return cls(CeilingSource.physical, gpu.hbm_bandwidth_bytes_per_s, matmul,
                   gpu.vector_fp32_flop_per_s * headroom, exp, matmul_mode=mode)

    def busy_share(self, fraction: np.ndarray | float) -> np.ndarray:
        """The share of the GPU's bandwidth a launch draws when the parallelism model keeps `fraction` of it busy.

        Without a measured streaming curve, the fraction itself (each SM streams at beta / SMs). With one,
        the bandwidth `fraction x SMs` SMs reached streaming alone over the whole GPU's: a few SMs draw more
        than their share (an H200's single SM reads far more than 1/132 of the total), so partial launches
        run faster than the linear model says. Interpolated log-log between the measured counts, linear in
        the SM count below the first. A model, for predictions only; floors never use it.
        """
        f = np.asarray(fraction, dtype=np.float64)
        if not self.stream:
            return f
        if f.ndim == 0:                 # one launch's share, as the fit asks 10^5-10^6 times: the same sum in floats
            return np.float64(self._busy_share_one(float(f)))
        sms = np.array([n for n, _ in self.stream], dtype=np.float64)
        rate = np.array([b for _, b in self.stream], dtype=np.float64)
        active = np.clip(f * sms[-1], 1e-9, sms[-1])
        below = active < sms[0]
        logged = np.exp(np.interp(np.log(np.maximum(active, sms[0])), np.log(sms), np.log(rate)))
        reached = np.where(below, rate[0] * active / sms[0], logged)
        return np.where(f >= 1.0, 1.0, np.minimum(1.0, np.maximum(f, reached / rate[-1])))

    def _busy_share_one(self, f: float) -> float:
        """busy_share for one fraction: the same interpolation (np.interp on the logs) with Python floats."""
        if f >= 1.0:
            return 1.0
        sms, rate = self._stream_logs
        top_sms, top_rate = self.stream[-1]
        active = min(max(f * top_sms, 1e-9), top_sms)
        if active < self.stream[0][0]:
            reached = self.stream[0][1] * active / self.stream[0][0]
        else:
            x = math.log(active)
            i = bisect.bisect_right(sms, x) - 1
            if i >= len(sms) - 1:
                y = rate[-1]
            else:
                y = rate[i] + (x - sms[i]) * (rate[i + 1] - rate[i]) / (sms[i + 1] - sms[i])
            reached = math.exp(y)
        return min(1.0, max(f, reached / top_rate))

    @functools.cached_property
    def _stream_logs(self) -> tuple[list[float], list[float]]:
        """log SMs and log bytes/s of the streaming curve, for _busy_share_one."""
        return [math.log(n) for n, _ in self.stream], [math.log(b) for _, b in self.stream]

    @property
    def exp_roof_per_s(self) -> float | None:
        """eps: the exp units plus the FMA units emulating exps (None where the spec gives no exp rate)."""
        if not self.exp_per_s:
            return None
        return self.exp_per_s + self.vector_flop_per_s / EMULATED_EXP_FLOP

    @property
    def ridge_flop_per_byte(self) -> float:
        return self.matmul_flop_per_s / self.bandwidth_bytes_per_s

    def rate(self, pipe: Pipe) -> float:
        return self.matmul_flop_per_s if pipe is Pipe.tensor else self.vector_flop_per_s


@dataclass(frozen=True)
class Floors:
    """The roofs and the floor of one cost (arrays broadcast like the cost's): physical bounds, never a fitted time."""

    flops: np.ndarray
    hbm_bytes: np.ndarray
    t_compute_s: np.ndarray
    t_memory_s: np.ndarray
    t_floor_s: np.ndarray
    ridge_flop_per_byte: float
    t_exp_s: np.ndarray = np.float64(0.0)

    @property
    def intensity_flop_per_byte(self) -> np.ndarray:
        return self.flops / self.hbm_bytes

    @property
    def memory_bound(self) -> np.ndarray:
        return self.t_memory_s >= np.maximum(self.t_compute_s, self.t_exp_s)

    @property
    def bound(self) -> np.ndarray:
        """The Bound's value: 'memory', 'exp' or 'compute', elementwise, by the largest of the three times
        (a tie goes to memory, then to exp)."""
        return np.where(self.memory_bound, Bound.memory.value,
                        np.where(self.t_exp_s >= self.t_compute_s, Bound.exp.value, Bound.compute.value))

    @property
    def ridge_ratio(self) -> np.ndarray:
        """I / I*: above 1 the kernel sits right of the ridge, below 1 left of it."""
        return self.intensity_flop_per_byte / self.ridge_flop_per_byte

    @property
    def achieved_flop_per_s(self) -> np.ndarray:
        """The FLOP rate a kernel running exactly at its floor reaches."""
        return self.flops / self.t_floor_s


def emulated_exps(flops: np.ndarray, exps: np.ndarray, ceilings: Ceilings) -> np.ndarray:
    """How many of E exps to emulate when F vector FLOPs share the FMA units with them, for the least time:
    x = (E pi_vec - F eps_sfu) / (pi_vec + c eps_sfu), clipped to [0, E] (where the two pipes finish together)."""
    rv, rs, c = ceilings.vector_flop_per_s, ceilings.exp_per_s, EMULATED_EXP_FLOP
    return np.clip((exps * rv - flops * rs) / (rv + c * rs), 0.0, exps)


def shared_fma_time(flops: np.ndarray, exps: np.ndarray, ceilings: Ceilings) -> np.ndarray:
    """The least time for F vector FLOPs and E exps when emulated exps share the FMA units with the FLOPs:
    max((F + c x) / pi_vec, (E - x) / eps_sfu) at x = emulated_exps(F, E)."""
    x = emulated_exps(flops, exps, ceilings)
    return np.maximum((flops + EMULATED_EXP_FLOP * x) / ceilings.vector_flop_per_s,
                      (exps - x) / ceilings.exp_per_s)


def floor_kernel(kernel: KernelCost, ceilings: Ceilings) -> Floors:
    """One launch's three roofs and its physical floor (the module docstring's table)."""
    kernel, ceilings = check_spec(kernel, KernelCost, "kernel"), check_spec(ceilings, Ceilings, "ceilings")
    t_flops = kernel.flops / ceilings.rate(kernel.pipe)
    eps = ceilings.exp_roof_per_s
    t_exp = kernel.exp_ops / eps if eps else np.zeros_like(np.asarray(t_flops, dtype=np.float64))
    t_memory = kernel.hbm_bytes / ceilings.bandwidth_bytes_per_s
    if kernel.pipe is Pipe.vector and eps:
        t_work = shared_fma_time(kernel.flops, kernel.exp_ops, ceilings)
    else:
        t_work = np.maximum(t_flops, t_exp)
    t_floor = np.maximum(t_work, t_memory)
    return Floors(kernel.flops, kernel.hbm_bytes, t_flops, t_memory, t_floor, ceilings.ridge_flop_per_byte, t_exp)


def floor(cost: Cost, ceilings: Ceilings) -> Floors:
    """The floor of a whole variant: its headline FLOPs and bytes, and the sum of its kernels' floors.

    t_compute is the headline FLOPs over the pipe's rate (for naive attention, F / pi: the chapter's
    compute floor); t_exp all the exps over the exp roof; t_memory all bytes over the bandwidth. The floor,
    a sum of per-kernel maxima, is never below any of them.
    """
    ceilings, cost = check_spec(ceilings, Ceilings, "ceilings"), check_cost(cost)
    t_floor = sum(floor_kernel(k, ceilings).t_floor_s for k in cost.kernels)
    t_compute = cost.flops / ceilings.matmul_flop_per_s if _on_tensor(cost) else \
        cost.flops / ceilings.vector_flop_per_s
    eps = ceilings.exp_roof_per_s
    exps = sum(k.exp_ops for k in cost.kernels)
    t_exp = exps / eps if eps else np.zeros_like(np.asarray(t_compute, dtype=np.float64))
    t_memory = cost.hbm_bytes / ceilings.bandwidth_bytes_per_s
    t_floor = np.maximum(t_floor, np.maximum(np.maximum(t_compute, t_memory), t_exp))   # equal or larger; rounding
    return Floors(np.asarray(cost.flops), np.asarray(cost.hbm_bytes), np.asarray(t_compute),
                  np.asarray(t_memory), np.asarray(t_floor), ceilings.ridge_flop_per_byte, np.asarray(t_exp))


def _on_tensor(cost: Cost) -> bool:
    return any(k.pipe is Pipe.tensor for k in cost.kernels)


__all__ = ["EMULATED_EXP_FLOP", "MAX_ROOF", "Ceilings", "Floors", "emulated_exps", "floor", "floor_kernel",
           "shared_fma_time"]

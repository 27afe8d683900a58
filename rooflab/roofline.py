"""Cost x ceilings -> prediction: time floors, the bound, and where a kernel sits against the ridge.

For one kernel with F FLOP on a pipe of rate pi, E special-function calls at rate
epsilon, and Q bytes at bandwidth beta:

    t_compute = max(F / pi, E / epsilon)      t_memory = Q / beta
    t_floor   = max(t_compute, t_memory) / f  intensity I = F / Q,  ridge I* = pi / beta

where f <= 1 is the share of the GPU a launch keeps busy when its work units cannot fill
every SM for the whole launch (cost/parallel.py; 1 for an ideal launch).

A variant made of several launches (naive attention) runs them one after another,
so its floor is the sum of the kernels' floors, never less than either total.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cost.common import Cost, KernelCost
from .errors import InputError
from .specs import GpuSpec
from .units import DType
from .vocab import Bound, CeilingSource, Pipe


@dataclass(frozen=True)
class Ceilings:
    """The roofs one prediction is made against."""

    source: CeilingSource
    bandwidth_bytes_per_s: float
    matmul_flop_per_s: float
    vector_flop_per_s: float
    exp_per_s: float | None

    @classmethod
    def of(cls, gpu: GpuSpec, dtype: DType, source: CeilingSource = CeilingSource.datasheet) -> Ceilings:
        """Ceilings for `dtype` operands; calibrated ones fall back to the datasheet for what was not measured.

        `dtype` and `source` may be given as their values ('fp16', 'calibrated'); anything else is an InputError.
        """
        try:
            dtype, source = DType(dtype), CeilingSource(source)
        except ValueError as exc:
            raise InputError(str(exc)) from None
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
        return cls(source, bandwidth, matmul, gpu.vector_fp32_flop_per_s, exp)

    @property
    def ridge_flop_per_byte(self) -> float:
        return self.matmul_flop_per_s / self.bandwidth_bytes_per_s

    def rate(self, pipe: Pipe) -> float:
        return self.matmul_flop_per_s if pipe is Pipe.tensor else self.vector_flop_per_s


@dataclass(frozen=True)
class Prediction:
    """Roofline prediction for one cost (arrays broadcast like the cost's)."""

    flops: np.ndarray
    hbm_bytes: np.ndarray
    t_compute_s: np.ndarray
    t_memory_s: np.ndarray
    t_floor_s: np.ndarray
    ridge_flop_per_byte: float

    @property
    def intensity_flop_per_byte(self) -> np.ndarray:
        return self.flops / self.hbm_bytes

    @property
    def memory_bound(self) -> np.ndarray:
        return self.t_memory_s >= self.t_compute_s

    @property
    def bound(self) -> np.ndarray:
        """The Bound's value, 'memory' or 'compute', elementwise (a tie counts as memory)."""
        return np.where(self.memory_bound, Bound.memory.value, Bound.compute.value)

    @property
    def ridge_ratio(self) -> np.ndarray:
        """I / I*: above 1 the kernel sits right of the ridge, below 1 left of it."""
        return self.intensity_flop_per_byte / self.ridge_flop_per_byte

    @property
    def achieved_flop_per_s(self) -> np.ndarray:
        """The FLOP rate a kernel running exactly at its floor reaches."""
        return self.flops / self.t_floor_s


def predict_kernel(kernel: KernelCost, ceilings: Ceilings) -> Prediction:
    t_flops = kernel.flops / ceilings.rate(kernel.pipe)
    t_exp = kernel.exp_ops / ceilings.exp_per_s if ceilings.exp_per_s else 0.0
    t_compute = np.maximum(t_flops, t_exp)
    t_memory = kernel.hbm_bytes / ceilings.bandwidth_bytes_per_s
    t_floor = np.maximum(t_compute, t_memory) / kernel.parallel_fraction
    return Prediction(kernel.flops, kernel.hbm_bytes, t_compute, t_memory, t_floor, ceilings.ridge_flop_per_byte)


def predict(cost: Cost, ceilings: Ceilings) -> Prediction:
    """Prediction for a whole variant: its headline FLOPs and bytes, and the sum of its kernels' floors.

    t_compute is the headline FLOPs over the pipe's rate (for naive attention, F / pi: the chapter's
    compute floor); t_memory is all bytes over the bandwidth. The floor, a sum of per-kernel maxima,
    is never below either.
    """
    floor = sum(predict_kernel(k, ceilings).t_floor_s for k in cost.kernels)
    t_compute = cost.flops / ceilings.matmul_flop_per_s if _on_tensor(cost) else \
        cost.flops / ceilings.vector_flop_per_s
    t_memory = cost.hbm_bytes / ceilings.bandwidth_bytes_per_s
    floor = np.maximum(floor, np.maximum(t_compute, t_memory))  # equal in exact arithmetic; rounding
    return Prediction(np.asarray(cost.flops), np.asarray(cost.hbm_bytes), np.asarray(t_compute),
                      np.asarray(t_memory), np.asarray(floor), ceilings.ridge_flop_per_byte)


def _on_tensor(cost: Cost) -> bool:
    return any(k.pipe is Pipe.tensor for k in cost.kernels)

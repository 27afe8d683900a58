"""How much of the GPU a launch keeps busy: the parallelism model shared by decode and flash.

A kernel launches one thread block per work unit (decode: sequence x KV head x split;
flash: batch x query head x query tile). The GPU runs `num_sms x units_per_sm` of them at
once ("slots"), and one unit runs at no more than 1/slots of the whole GPU's rate. So a
launch cannot finish before its longest unit does, and units issued in launch order to the
first free slot (the hardware's block scheduler) can leave slots idle at the end (the tail).
The fraction f <= 1 of the GPU a launch keeps busy divides its roofline floor:

    uniform or free order   f = total work / (slots x max(total / slots, longest unit))
    launch order            f = total work / (slots x makespan of list scheduling)

`units_per_sm` is kernel-specific (registers and shared memory decide how many blocks fit an
SM, and how many it takes to saturate one); `rooflab validate` fits it per kernel.
"""

from __future__ import annotations

import heapq
from typing import Iterable

import numpy as np

from ..specs.fitted import MAX_UNITS_PER_SM, MIN_UNITS_PER_SM
from ..specs.gpu import MAX_SMS
from .common import real_number, whole_number


def check_parallelism(num_sms: object, units_per_sm: object) -> tuple[int | None, float]:
    """`num_sms` (None: the launch is taken as filling the GPU) and `units_per_sm` checked against the ranges a
    GPU spec allows them, as an int (or None) and a float; InputError naming the argument otherwise."""
    if num_sms is not None:
        num_sms = whole_number(num_sms, "num_sms (SMs of the GPU)", maximum=MAX_SMS)
    units_per_sm = real_number(units_per_sm, "units_per_sm", MIN_UNITS_PER_SM, MAX_UNITS_PER_SM)
    return num_sms, units_per_sm


def parallel_fraction(total_unit_work: np.ndarray | float, longest_unit_work: np.ndarray | float,
                      num_sms: int | None, units_per_sm: float = 1.0) -> np.ndarray:
    """f = min(1, total / (longest x slots)): the longest unit bounds the launch (no tail effects).

    Uniform units give min(1, U / slots): one sequence with 8 KV heads fills 8 of 132 SMs, 6%.
    `num_sms=None` means an ideal machine (f = 1).
    """
    num_sms, units_per_sm = check_parallelism(num_sms, units_per_sm)
    if num_sms is None:
        return np.float64(1.0)
    total = np.asarray(total_unit_work, dtype=np.float64)
    longest = np.asarray(longest_unit_work, dtype=np.float64)
    return np.minimum(1.0, total / (longest * num_sms * units_per_sm))


def schedule_fraction(unit_work: Iterable[float], num_sms: int | None, units_per_sm: float = 1.0) -> float:
    """f for units issued in launch order to the first free slot (greedy list scheduling).

    Fractional `units_per_sm` rounds the slot count to the nearest whole number (at least 1).
    """
    num_sms, units_per_sm = check_parallelism(num_sms, units_per_sm)
    if num_sms is None:
        return 1.0
    work = np.asarray(list(unit_work), dtype=np.float64)
    slots = max(1, int(round(num_sms * units_per_sm)))
    if work.size <= slots:
        return float(work.sum() / (slots * work.max()))
    finish = list(work[:slots])
    heapq.heapify(finish)
    for w in work[slots:]:
        heapq.heappush(finish, heapq.heappop(finish) + w)
    return float(work.sum() / (slots * max(finish)))

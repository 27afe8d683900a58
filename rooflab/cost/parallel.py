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

import functools
import heapq
from typing import Iterable

import numpy as np

from ..errors import InputError, shown
from ..limits import MAX_BATCH
from ..specs.fitted import MAX_UNITS_PER_SM, MIN_UNITS_PER_SM
from ..specs.gpu import MAX_SMS
from ..specs.heads import MAX_HEADS
from .common import as_array, real_number, whole_number


#: Most times one launch issues its units over: sequences x heads.
MAX_REPEATS = MAX_BATCH * MAX_HEADS


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
    total = as_array(total_unit_work, "total_unit_work", minimum=0)
    longest = as_array(longest_unit_work, "longest_unit_work", minimum=0, lo_open=True)
    return np.minimum(1.0, total / (longest * num_sms * units_per_sm))


def schedule_fraction(unit_work: Iterable[float], num_sms: int | None, units_per_sm: float = 1.0,
                      repeats: int = 1) -> float:
    """f for units issued in launch order to the first free slot (greedy list scheduling).

    `repeats`: the launch issues `unit_work` that many times over (one sequence x head after another), as if given
    np.tile(unit_work, repeats), which is not built where it would be large (_periodic_makespan).
    Fractional `units_per_sm` rounds the slot count to the nearest whole number (at least 1). In closed form
    where one exists: U <= slots units run in one wave (f = total / (slots x longest)); U equal units of work w
    take ceil(U / slots) waves (f = U / (slots ceil(U / slots))). Otherwise the makespan of list scheduling
    (_list_makespan).
    """
    num_sms, units_per_sm = check_parallelism(num_sms, units_per_sm)
    repeats = whole_number(repeats, "repeats (times unit_work is issued over)", maximum=MAX_REPEATS)
    if num_sms is None:
        return 1.0
    if isinstance(unit_work, (str, bytes, bytearray)):     # list(b"4096") is four small numbers, priced once
        raise InputError(f"unit_work (each work unit's work) must be numbers, got {shown(unit_work)}")
    if not isinstance(unit_work, (np.ndarray, list, tuple)):
        try:
            unit_work = list(unit_work)
        except TypeError:
            raise InputError(f"unit_work (each work unit's work) must be numbers, got {shown(unit_work)}") from None
    work = as_array(unit_work, "unit_work (each work unit's work)", minimum=0, lo_open=True).ravel()
    slots = max(1, int(round(num_sms * units_per_sm)))
    if repeats > 1 and (work.size * repeats <= MEMO_MAX_UNITS or not _sums_exact(work, repeats)):
        work, repeats = np.tile(work, repeats), 1
    units = work.size * repeats
    total = work.sum() * repeats            # whole numbers below 2**53 where repeats > 1: the tiled array's sum
    longest = float(work.max())
    if units <= slots:
        return float(total / (slots * longest))
    if float(work.min()) == longest:
        waves = -(-units // slots)
        return units / (slots * waves)
    if repeats > 1:
        return float(total / (slots * _periodic_makespan(work, repeats, slots)))
    if work.size <= MEMO_MAX_UNITS:
        return float(total / (slots * _remembered_makespan(work.tobytes(), slots)))
    return float(total / (slots * _list_makespan(work, slots)))


#: Below this every sum of whole numbers in float64 is exact.
_EXACT_BELOW = 2.0 ** 53


def _sums_exact(work: np.ndarray, repeats: int) -> bool:
    """Whether every sum list scheduling makes of `work` issued `repeats` times over is exact in float64: whole
    numbers whose total stays below 2**53 (a unit's work is whole key tiles, so every launch of flash's and cuDNN's)."""
    return bool(np.all(work == np.floor(work))) and float(work.sum()) * repeats < _EXACT_BELOW


#: Launches of at most this many units have their makespan remembered (a few hundred kilobytes at most each): the fit
#: prices one launch at each units-per-SM value for rows of one shape and dtype (peers, head dims, fp8 and bf16).
MEMO_MAX_UNITS = 1 << 16


@functools.lru_cache(maxsize=512)
def _remembered_makespan(work: bytes, slots: int) -> float:
    """_list_makespan of float64 work given as its bytes, computed once for each (work, slots)."""
    return _list_makespan(np.frombuffer(work, dtype=np.float64), slots)


#: From this many slots the makespan is computed a wave of `slots` units at a time (_wave_makespan), below it unit by
#: unit (a heap): NumPy's cost a step outweighs the heap's below about 200 slots (the bundled dataset, 2 cores).
WAVE_MIN_SLOTS = 192


def _list_makespan(work: np.ndarray, slots: int) -> float:
    """When the last of `work`'s units ends, each issued in order to the slot that frees first (the first `slots`
    units start at 0). Exact: a wave at a time from WAVE_MIN_SLOTS slots, else a min-heap of the slots' finish times
    (Python floats, one heapreplace a unit)."""
    if slots >= WAVE_MIN_SLOTS:
        return _wave_makespan(work, slots)
    finish = work[:slots].tolist()
    heapq.heapify(finish)
    replace = heapq.heapreplace
    for w in work[slots:].tolist():
        replace(finish, finish[0] + w)
    return max(finish)


def _periodic_makespan(period: np.ndarray, repeats: int, slots: int) -> float:
    """_list_makespan of `period` issued `repeats` times over, without issuing every unit: exact for whole-number
    work whose total is below 2**53 (_sums_exact; the caller checks it).

    Every sum is then exact, so slots whose finish times are all later by a constant schedule the rest the same way,
    later by that constant. The slots' finish times after each period less their earliest (finitely many states:
    whole numbers up to the longest unit) come round again: from a state seen before, `cycle` periods later, each
    further `cycle` periods add the same `shift` to every slot, and those are skipped. The repeat is found with
    Brent's method (the state saved at 1, 2, 4, ... checks, each later one compared with it); a check, a sort of
    the slots, is made every `stride` periods (about a wave of units apart). A launch whose states never come round
    is simulated unit by unit, as _list_makespan would.
    """
    units = period.tolist()
    finish = [0.0] * slots                  # every slot free at 0: the first `slots` units start at once
    replace = heapq.heapreplace
    stride = -(-slots // len(units))
    saved, saved_base, saved_done = None, 0.0, 0
    checks, power = 0, 1
    done = 0
    while done < repeats:
        step = min(stride, repeats - done)
        for _ in range(step):
            for w in units:
                replace(finish, finish[0] + w)
        done += step
        if saved_done < 0 or done == repeats:   # skipped already, or finished: no more checks
            continue
        base = finish[0]
        state = sorted(f - base for f in finish)
        if state == saved:
            cycle, shift = done - saved_done, base - saved_base
            cycles = (repeats - done) // cycle
            finish = [f + cycles * shift for f in finish]   # a constant added: still a heap
            done += cycles * cycle
            saved_done = -1
            continue
        checks += 1
        if saved is None or checks == power:
            saved, saved_base, saved_done = state, base, done
            checks, power = 0, power * 2
    return max(finish)


def _wave_makespan(work: np.ndarray, slots: int) -> float:
    """_list_makespan a wave of B <= `slots` units at a time, in NumPy.

    Issued in order to the first free slot, units start in non-decreasing order, each at the earliest finish not
    yet taken: with `free` the sorted finish times not taken before a wave, the wave's starts s (sorted) solve
    s = the B smallest of free + (s + w), since a unit's own and later units' finishes lie past its start. Iterating
    s <- the B smallest of free + (s + w) from s = the B smallest of free comes down to that solution, exact after
    at most as many steps as the longest chain of units in the wave that start where another of the wave ends
    (usually a few); the B taken leave the rest as the next wave's free. The same sums as the heap's (start + w),
    so the same floats.
    """
    free = np.sort(work[:slots])
    done = slots
    while done < work.size:
        w = work[done:done + slots]
        starts = free[:w.size]
        while True:
            events = np.concatenate((free, starts + w))
            events.sort()
            taken = events[:w.size]
            if np.array_equal(taken, starts):
                break
            starts = taken
        free = events[w.size:]
        done += w.size
    return float(free.max())

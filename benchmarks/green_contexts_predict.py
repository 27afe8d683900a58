"""SM scaling on one GPU: the green-context rows (measurements/h200-green-contexts.csv) predicted from the full-GPU fit.

    python benchmarks/green_contexts_predict.py [measurements/h200-green-contexts.csv]

Each row ran a rooflab kernel on a green context of n SMs (impl "<fitted impl>_sm<n>"; benchmarks/green_contexts.py).
The run of 2026-12-01 recorded the count it asked for (reading the context's own count failed), but the driver rounds
it: CUDA Driver API, 6.35 Green Contexts (CUDA 12.4 to 13.0): "On Compute Architecture 9.0+: The minimum count is 8
SMs and must be a multiple of 8", so 33, 66 and 99 ran on 40, 72 and 104 SMs (held_sms); `--as-recorded` prices the
recorded counts instead.
Its prediction takes the H200 fit of that implementation unchanged and prices the launch on n SMs
(rooflab.transfer.fewer_sms: roofs x n / 132, bandwidth from the measured per-SM read curve, the parallelism model
with n SMs). Nothing is fitted on these rows. Prints one line a row and the median / worst error per kernel.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflab.bench.costs import measurement_cost  # noqa: E402
from rooflab.fit.records import read_measurements  # noqa: E402
from rooflab.load import load_gpu  # noqa: E402
from rooflab.predict import fitted_model_time  # noqa: E402
from rooflab.transfer import calibrated_ceilings, fewer_sms  # noqa: E402
from rooflab.units import DType  # noqa: E402


#: The SM granularity of a green context on compute capability 9.0 and later (the module docstring's citation).
SM_GRANULARITY = 8


def held_sms(requested: int, total: int) -> int:
    """The SMs a green context asked for `requested` holds: rounded up to a multiple of SM_GRANULARITY."""
    return min(total, -(-requested // SM_GRANULARITY) * SM_GRANULARITY)


def predictions(path: Path, gpu_name: str = "h200-sxm", curve: bool = True, rounded: bool = True) -> list[tuple]:
    """(kernel/impl, SMs, shape, measured s, predicted s) of every row; `curve` False: bandwidth x n / SMs;
    `rounded` False: the SM counts as recorded."""
    gpu = load_gpu(gpu_name)
    _, rows = read_measurements(path)
    out = []
    for m in rows:
        found = re.fullmatch(r"(.+)_sm(\d+)", m.impl)
        if found is None:
            continue
        impl, n = found.group(1), int(found.group(2))
        n = held_sms(n, gpu.num_sms) if rounded else n
        fit = gpu.fitted_model(m.kernel, impl)
        if fit is None:
            continue
        base = dataclasses.replace(m, impl=impl)
        cost = measurement_cost(base, gpu, n if fit.units_per_sm else None, fit.units_per_sm or 1.0)
        roofs, _ = calibrated_ceilings(gpu, DType(m.dtype))
        if not curve:
            roofs = dataclasses.replace(roofs, stream=())
        t = fit.overhead_s + float(np.asarray(fitted_model_time(cost, fewer_sms(roofs, gpu.num_sms, n), fit))) \
            / fit.efficiency
        out.append((f"{m.kernel.value}/{impl}", n, base.shape(), m.time_s, t))
    return out


def main(argv: list[str]) -> int:
    rounded = "--as-recorded" not in argv
    argv = [a for a in argv if a != "--as-recorded"]
    path = Path(argv[0]) if argv else Path("measurements/h200-green-contexts.csv")
    print(f"SM counts: {'as the driver rounds them (multiples of 8)' if rounded else 'as recorded'}")
    for curve in (True, False):
        rows = predictions(path, curve=curve, rounded=rounded)
        print(f"\n{'per-SM read curve' if curve else 'bandwidth x n / SMs (no curve)'}")
        by = defaultdict(list)
        for name, n, shape, measured, predicted in rows:
            err = predicted / measured - 1
            by[(name, shape)].append(abs(err))
            if curve:
                print(f"  {name:24s} {shape:40s} {n:4d} SMs  measured {measured * 1e6:9.1f} us  predicted "
                      f"{predicted * 1e6:9.1f} us  {err:+.1%}")
        print(f"  {'kernel':24s} {'shape':40s} median  worst  (over SM counts 16-132)")
        for (name, shape), errs in by.items():
            print(f"  {name:24s} {shape:40s} {np.median(errs):6.1%} {max(errs):6.1%}")
        every = [e for errs in by.values() for e in errs]
        print(f"  all rows: median {np.median(every):.1%}, worst {max(every):.1%} ({len(every)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""How long `rooflab validate` takes on the bundled dataset, and where the time goes (cProfile).

Best of `--runs` (3): validate() in this process, CPU (time.process_time, which other work on a shared machine does
not count) and wall time; then the whole command, `rooflab validate` in a fresh process, wall and user + system CPU
of the child (its start-up included); then the profile's top entries, which show the step to make cheaper next.
Issue 24's target: the command under 2 s on the project's 2-core machine. Run: python benchmarks/validate_speed.py
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import subprocess
import sys
import time


def _forget() -> None:
    """Empty what a process remembers of costs (validate's workloads and their shapes, the fit's and flash's tile
    work, launches' makespans), so that each run prices everything as a fresh process does (the specs stay loaded)."""
    from rooflab.cost import flash, parallel
    from rooflab.fit import costs, fitting

    costs._costs.clear()
    for remembered in (costs._decode_batch, costs._heads, costs._mla_layer, flash._tile_work_ratio,
                       parallel._remembered_makespan):
        remembered.cache_clear()
    fitting._tile_works.clear()


def _in_process(runs: int) -> tuple[float, float]:
    """(best CPU s, best wall s) of validate() on the bundled dataset, each run with the caches emptied (_forget)."""
    from rooflab.fit.validate import validate

    cpu, wall = [], []
    for _ in range(runs):
        _forget()
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        validate()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    return min(cpu), min(wall)


def _command(runs: int) -> tuple[float, float]:
    """(best wall s, best user + system CPU s) of `python -m rooflab.cli validate` in a fresh process, bytecode
    written (PYTHONDONTWRITEBYTECODE unset) and compiled by a first run that is not counted."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    argv = [sys.executable, "-m", "rooflab.cli", "validate"]
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(wall), min(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each measurement; the best is shown")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile listing")
    args = parser.parse_args()
    cpu_s, wall_s = _in_process(args.runs)
    print(f"validate() on the bundled dataset: {cpu_s:.2f} s CPU, {wall_s:.2f} s wall (best of {args.runs})")
    wall_s, child_cpu_s = _command(args.runs)
    print(f"rooflab validate (a fresh process): {wall_s:.2f} s wall, {child_cpu_s:.2f} s CPU (best of {args.runs})")
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores: above 2, others' work counts "
          f"in the wall time)")
    if args.no_profile:
        return
    from rooflab.fit.validate import validate

    _forget()
    profile = cProfile.Profile()
    profile.enable()
    validate()
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(25)
    print(out.getvalue().split("ncalls", 1)[-1][:4000])


if __name__ == "__main__":
    main()

"""Benchmark: start-up of `rooflab report` and `rooflab capacity` (default model and GPU) as a ratio to
`python -c "import numpy, yaml"` (issue 25's "no slower" target: report <= 1.97x, capacity <= 2.14x, the figures
at session 7's start).

The three commands run interleaved, one of each per round (so a change of load hits all three alike), after one
untimed round that compiles the bytecode; the medians of the rounds are compared. Wall seconds are the target's
figure; CPU seconds (user + system of the child) are printed beside them, being less moved by other work on a
shared machine.

Run: python benchmarks/startup.py [--runs 12] [--tree PATH ...]
With --tree (repeatable), the rooflab package is taken from each tree in turn (PYTHONPATH=PATH), interleaved too:
an A/B comparison of two checkouts (`git archive <commit> | tar -x -C /tmp/a`).
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BASELINE = ["-c", "import numpy, yaml"]
COMMANDS = {"report": ["-m", "rooflab.cli", "report"], "capacity": ["-m", "rooflab.cli", "capacity"]}
#: The ratios at session 7's start (RESULTS.md, "Start-up, session 7 against its start").
TARGETS = {"report": 1.97, "capacity": 2.14}


def timed(cmd: list[str], tree: str | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh process running `cmd` (rooflab from `tree` where given), bytecode
    written and read as a user's run would."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree:
        env["PYTHONPATH"] = str(Path(tree).resolve())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12, help="timed rounds (default 12)")
    parser.add_argument("--tree", action="append", help="take rooflab from this folder (repeat to compare)")
    args = parser.parse_args()
    trees = args.tree or [None]
    jobs = [("numpy + yaml", None, BASELINE)] + [(f"{name}{f' @ {tree}' if tree else ''}", tree, cmd)
                                                 for tree in trees for name, cmd in COMMANDS.items()]
    for _, tree, cmd in jobs:                    # compile the bytecode; not timed
        timed([sys.executable, *cmd], tree)
    walls: dict[str, list[float]] = {label: [] for label, _, _ in jobs}
    cpus: dict[str, list[float]] = {label: [] for label, _, _ in jobs}
    load = [os.getloadavg()[0]]
    for _ in range(args.runs):
        for label, tree, cmd in jobs:
            wall, cpu = timed([sys.executable, *cmd], tree)
            walls[label].append(wall)
            cpus[label].append(cpu)
        load.append(os.getloadavg()[0])
    base_wall = statistics.median(walls["numpy + yaml"])
    base_cpu = statistics.median(cpus["numpy + yaml"])
    print(f"{args.runs} interleaved runs, medians; load average {min(load):.2f} .. {max(load):.2f} on "
          f"{os.cpu_count()} CPUs")
    print(f"{'command':<40} {'wall s':>7} {'ratio':>6} {'CPU s':>7} {'ratio':>6}  target")
    for label, _, _ in jobs:
        wall, cpu = statistics.median(walls[label]), statistics.median(cpus[label])
        name = label.split(" @ ")[0]
        target = TARGETS.get(name)
        verdict = "" if target is None else f"<= {target:.2f}x: {'met' if wall / base_wall <= target else 'missed'}"
        print(f"{label:<40} {wall:7.3f} {wall / base_wall:5.2f}x {cpu:7.3f} {cpu / base_cpu:5.2f}x  {verdict}")


if __name__ == "__main__":
    main()

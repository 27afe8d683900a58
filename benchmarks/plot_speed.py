"""Benchmark: wall time of `rooflab plot capacity -o FILE.png` (default model llama-3-8b, default GPU h100-sxm), each
run a fresh process, as CI runs it. Issue 24's target: under 1.5 s on the project's 2-core machine.

Each run starts the `rooflab` console script anew, bytecode written and read as a user's run would (so the first,
untimed rounds compile it and warm the file cache). With --tree (repeatable) the rooflab package is taken from each
folder in turn (PYTHONPATH=PATH; the console script then imports that tree's rooflab), one run of each per round, so
a change of load hits every tree alike: an A/B comparison of two checkouts (`git archive <commit> | tar -x -C
/tmp/a`). Wall seconds are the target's figure; CPU seconds (user + system of the child) are printed beside them,
being less moved by other work on a shared machine. The load average is printed before and after.

Run: python benchmarks/plot_speed.py [--runs 12] [--chart capacity] [--tree PATH ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from startup import timed      # one fresh-process timer for the start-up benchmarks

#: Issue 24's target for `rooflab plot capacity`, wall seconds.
TARGET_S = 1.5
WARMUP_ROUNDS = 2


def rooflab_command() -> list[str]:
    """The console script beside this interpreter (as a user runs it), else `python -m rooflab.cli`."""
    script = Path(sys.executable).with_name("rooflab")
    found = str(script) if script.exists() else shutil.which("rooflab")
    return [found] if found else [sys.executable, "-m", "rooflab.cli"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12, help="timed rounds (default 12)")
    parser.add_argument("--chart", default="capacity", help="the `rooflab plot` chart to time (default capacity)")
    parser.add_argument("--tree", action="append", help="take rooflab from this folder (repeat to compare)")
    args = parser.parse_args()
    trees = args.tree or [None]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [*rooflab_command(), "plot", args.chart, "-o", str(Path(tmp) / f"{args.chart}.png")]
        for _ in range(WARMUP_ROUNDS):                 # compile the bytecode, warm the file cache; not timed
            for tree in trees:
                timed(cmd, tree)
        walls: dict[str | None, list[float]] = {tree: [] for tree in trees}
        cpus: dict[str | None, list[float]] = {tree: [] for tree in trees}
        load_before = os.getloadavg()
        for _ in range(args.runs):
            for tree in trees:
                wall, cpu = timed(cmd, tree)
                walls[tree].append(wall)
                cpus[tree].append(cpu)
        load_after = os.getloadavg()
    print(f"`rooflab plot {args.chart} -o {args.chart}.png`: {args.runs} interleaved runs on {os.cpu_count()} CPUs; "
          f"load average (1, 5, 15 min) {' '.join(f'{x:.2f}' for x in load_before)} before, "
          f"{' '.join(f'{x:.2f}' for x in load_after)} after")
    print(f"{'rooflab from':<32} {'median s':>8} {'best s':>7} {'worst s':>7} {'CPU s':>6}  target < {TARGET_S} s")
    for tree in trees:
        median = statistics.median(walls[tree])
        verdict = "met" if median < TARGET_S else "missed"
        print(f"{tree or 'installed':<32} {median:8.3f} {min(walls[tree]):7.3f} {max(walls[tree]):7.3f} "
              f"{statistics.median(cpus[tree]):6.3f}  {verdict} (median)")


if __name__ == "__main__":
    main()

"""Benchmark: `rooflab serve` for Llama-3-70B with fp8 weights on 8 x H100 (TP 8) at 1k/1k over concurrency 1-256
prints the curve (issue 30's target: under 1 s), and `rooflab plot serve` draws it.
Run: python benchmarks/serve_cli.py (prints each command's CPU and wall seconds and the load average: the machine
may be shared, and CPU seconds are what the command itself spent).
"""

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CURVE = ["serve", "-m", "llama-3-70b", "-g", "h100-sxm", "--tp", "8", "--quantization", "fp8", "--input-len", "1024",
         "--output-len", "1024", "--max-concurrency", "1,2,4,8,16,32,64,128,256"]


def timed(args: list[str]) -> tuple[subprocess.CompletedProcess, float, float]:
    """(the finished command, its CPU seconds (user + system), wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rooflab", *args], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    done, cpu, wall = timed(["--help"])
    print(f"python -m rooflab --help (start-up alone): {cpu:.2f} s CPU, {wall:.2f} s wall")
    done, cpu, wall = timed(CURVE)
    print(done.stdout)
    print(f"rooflab serve: {cpu:.2f} s CPU, {wall:.2f} s wall")
    with tempfile.TemporaryDirectory() as folder:
        image = Path(folder) / "serve.png"
        _, cpu, wall = timed(["plot", *CURVE, "-o", str(image)])
        print(f"rooflab plot serve: {cpu:.2f} s CPU, {wall:.2f} s wall, {image.stat().st_size:,} bytes")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""One device run for the kernel work: GPU state, the GPU tests of every kernel, then the variants' timings.

Run on the GPU machine from the repository root:  python3 benchmarks/kernels_new_device_run.py --out DIR
  DIR/nvidia-smi.txt   the card as found (clocks, memory, driver)
  DIR/pytest.log       pytest -m gpu on tests/kernels/ (test_*_gpu.py) and tests/bench/test_ours_gpu.py
  DIR/bench.log        benchmarks/kernels_new_variants.py (its DIR/variants.csv, DIR/variants.json)
Each step has a wall-clock limit, so a hang in one leaves the others' output; the benchmark's summary
table is printed last.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def step(cmd: list[str], log: Path, limit_s: int) -> int:
    t0 = time.time()
    with open(log, "w") as f:
        try:
            done = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, timeout=limit_s,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"})
            rc = done.returncode
        except subprocess.TimeoutExpired:
            rc = 124
            f.write(f"\n[timed out after {limit_s} s]\n")
    print(f"{' '.join(cmd[:4])} ... -> rc {rc} in {time.time() - t0:.0f} s", flush=True)
    return rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tests-limit", type=int, default=240)
    ap.add_argument("--bench-limit", type=int, default=300)
    ap.add_argument("--maxfail", type=int, default=30)
    ap.add_argument("--only", action="append", default=[], help="benchmark sections (default all)")
    ap.add_argument("-k", default=None, help="pytest -k expression")
    ap.add_argument("--skip-tests", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    step(["nvidia-smi"], out / "nvidia-smi.txt", 30)
    if not args.skip_tests:
        cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", f"--maxfail={args.maxfail}",
               "-rf", "tests/kernels/", "tests/bench/test_ours_gpu.py"]
        if args.k:
            cmd += ["-k", args.k]
        step(cmd, out / "pytest.log", args.tests_limit)
        print((out / "pytest.log").read_text().splitlines()[-1] if (out / "pytest.log").stat().st_size else "", flush=True)
        fails = [ln for ln in (out / "pytest.log").read_text().splitlines() if ln.startswith("FAILED")]
        print("\n".join(fails[:40]), flush=True)
    bench = [sys.executable, "benchmarks/kernels_new_variants.py", "--out", str(out)]
    for section in args.only:
        bench += ["--only", section]
    step(bench, out / "bench.log", args.bench_limit)
    text = (out / "bench.log").read_text()
    print(text[text.find("==== summary"):] if "==== summary" in text else text[-4000:], flush=True)


if __name__ == "__main__":
    main()

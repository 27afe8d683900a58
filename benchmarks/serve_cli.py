"""Benchmark: `rooflab serve` for Llama-3-70B with fp8 weights on 8 x H100 (TP 8) at 1k/1k over concurrency 1-256
prints the curve (issue 30's target: under 1 s), and `rooflab plot serve` draws it.
Run: python benchmarks/serve_cli.py (prints wall seconds of each command).
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

CURVE = ["serve", "-m", "llama-3-70b", "-g", "h100-sxm", "--tp", "8", "--quantization", "fp8", "--input-len", "1024",
         "--output-len", "1024", "--max-concurrency", "1,2,4,8,16,32,64,128,256"]


def main() -> None:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rooflab", *CURVE], capture_output=True, text=True, check=True)
    print(done.stdout)
    print(f"rooflab serve: {time.perf_counter() - start:.2f} s wall")
    with tempfile.TemporaryDirectory() as folder:
        image = Path(folder) / "serve.png"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rooflab", "plot", *CURVE, "-o", str(image)], check=True,
                       capture_output=True)
        print(f"rooflab plot serve: {time.perf_counter() - start:.2f} s wall, {image.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()

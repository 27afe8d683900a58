"""Benchmark (not a timed test): 10,000 requests through rooflab.serve's SimPy simulation.

Issue 30's target: under 2 s on a two-core machine. Llama-3-8B bf16 on one H200, 1k/1k drawn as InferenceX draws
them ([819, 1024]), vLLM V1 defaults; a closed loop at concurrency 64 and a Poisson rate of 8 requests/s.
Run: python benchmarks/serve_simulation.py (prints CPU and wall seconds per run and the load average: the machine
may be shared; the step table's build, once per replica, is timed apart).
"""

import os
import time

from rooflab import load_gpu, load_model
from rooflab.deployment import Deployment
from rooflab.serve import ClosedLoop, Lengths, Replica, RequestRate, Workload, simulate


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    cpu, wall = time.process_time(), time.perf_counter()
    replica = Replica.build(load_model("llama-3-8b"), load_gpu("h200-sxm"), Deployment(),
                            Workload(Lengths.inferencex_random(1024, 0.8), Lengths.inferencex_random(1024, 0.8)))
    replica.steps.table.complete()             # a lazy table: every point priced here, once, not in the first run
    print(f"replica and its step table: {time.process_time() - cpu:.2f} s CPU, {time.perf_counter() - wall:.2f} s wall")
    for load in (ClosedLoop(64), RequestRate(8.0)):
        cpu, wall = time.process_time(), time.perf_counter()
        sim = simulate(replica, load, num_requests=10_000)
        print(f"{load.describe():32s} 10,000 requests: {time.process_time() - cpu:.2f} s CPU, "
              f"{time.perf_counter() - wall:.2f} s wall, {sim.steps:,} steps, {sim.output_tokens_per_s:,.0f} tok/s, "
              f"mean TPOT {sim.tpot.mean_s * 1e3:.2f} ms")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

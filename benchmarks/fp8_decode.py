"""fp8 (e4m3) KV cache against fp16 KV in rooflab's paged decode: does halving the KV bytes halve the time?

Run on a GPU machine from the repository root (ROOFLAB_GIT_COMMIT names the commit when the
tree is not a git checkout):

    python3 benchmarks/fp8_decode.py -o fp8-decode.csv [--configs]

It checks and times rooflab.bench.cases.fp8_decode_cases() (each workload with an fp16 cache and
with an fp8 cache, at the split count rooflab recommends) with the same machinery as `rooflab
bench` (oracle check first, L2 flushed before each repeat, median of the repeats), writes the rows
as a measurement CSV with its metadata, and prints fp16 against fp8: times, the measured ratio
beside the ratio the cost model predicts (floor with the fitted parallelism, calibrated ceilings),
and the KV bytes moved per second against the calibrated copy bandwidth. `--configs` also times
the fp8 kernel at other (warps, stages) choices on two of the workloads (not written to the CSV).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflab.measure.cases import LLAMA3_8B, Case, fp8_decode_cases  # noqa: E402
from rooflab.measure.device import default_spec, device_name  # noqa: E402
from rooflab.fit.records import format_context_lens  # noqa: E402
from rooflab.measure.run import run_to_file  # noqa: E402
from rooflab.bench.validate import predict_measurement  # noqa: E402
from rooflab.cost.paged import paged_decode  # noqa: E402
from rooflab.load import load_gpu  # noqa: E402
from rooflab.vocab import CeilingSource  # noqa: E402
from rooflab.units import DType  # noqa: E402

#: (warps, stages) tried by --configs; the launcher's default for fp8 is (4, 4): 64 KiB a CTA, three an SM.
CONFIGS = ((4, 3), (4, 4), (4, 5), (4, 6), (8, 3))


def kv_bytes(case: Case) -> float:
    cost = paged_decode(LLAMA3_8B, case.context_lens, case.page_size, case.dtype, case.kv_dtype, case.splits)
    return float(cost.kv_bytes)


def comparison(rows, gpu) -> list[str]:
    """fp16 against fp8 KV per workload, measured and predicted."""
    copy = gpu.measured.copy_bytes_per_s if gpu.measured else gpu.hbm_bandwidth_bytes_per_s
    by_case = {(r.context_lens, r.splits, r.kv_dtype or r.dtype): r for r in rows}
    cases = fp8_decode_cases()
    lines = [f"{'workload':>16s} {'S':>3s} {'fp16 us':>9s} {'fp8 us':>9s} {'fp8/fp16':>9s} {'predicted':>9s} "
             f"{'fp16 KV TB/s':>13s} {'fp8 KV TB/s':>12s} {'fp8 % copy':>10s}"]
    for fp16_case, fp8_case in zip(cases[::2], cases[1::2]):
        lens = format_context_lens(fp8_case.context_lens)
        m16 = by_case.get((lens, fp16_case.splits, "fp16"))
        m8 = by_case.get((lens, fp8_case.splits, "fp8_e4m3"))
        if m16 is None or m8 is None:
            continue
        floors = [float(predict_measurement(m, gpu, CeilingSource.calibrated, gpu.units_per_sm).t_floor_s)
                  for m in (m16, m8)]
        tb16 = kv_bytes(fp16_case) / m16.time_s / 1e12
        tb8 = kv_bytes(fp8_case) / m8.time_s / 1e12
        workload = f"{fp8_case.batch} x {fp8_case.context_lens[0]}"
        lines.append(f"{workload:>16s} {fp8_case.splits:3d} {m16.time_s * 1e6:9.1f} {m8.time_s * 1e6:9.1f} "
                     f"{m8.time_s / m16.time_s:9.3f} {floors[1] / floors[0]:9.3f} {tb16:13.3f} {tb8:12.3f} "
                     f"{100 * tb8 * 1e12 / copy:9.1f}%")
    return lines


def time_configs(cases: list[Case], l2_bytes: int, repeats: int) -> list[str]:
    """The fp8 kernel at each (warps, stages) of CONFIGS, on the given fp8 cases: one line a case."""
    import cupy

    from rooflab.measure.timing import L2Flusher

    flush = L2Flusher(l2_bytes)
    lines = [f"{'workload':>16s} " + " ".join(f"{f'({w},{s}) us':>11s}" for w, s in CONFIGS)]
    for case in cases:
        times = _config_times(case, flush, repeats)
        lines.append(f"{case.batch:>8d} x {case.context_lens[0]:<5d} " + " ".join(f"{t * 1e6:11.1f}" for t in times))
        cupy.get_default_memory_pool().free_all_blocks()
    return lines


def _config_times(case: Case, flush, repeats: int) -> list[float]:
    import cupy

    from rooflab.measure.ours import FP8_BENCH_SCALE
    from rooflab.measure.timing import time_gpu
    from rooflab.kernels import paged_decode as decode
    from rooflab.kernels.testing import FP8_KV, make_paged_cache, nan_like, poison, random_normal

    h = case.heads
    cache = make_paged_cache(case.context_lens, h.num_kv_heads, h.head_dim, case.page_size, FP8_KV, seed=1,
                             k_scale=FP8_BENCH_SCALE, v_scale=FP8_BENCH_SCALE)
    q = random_normal((case.batch, h.num_qo_heads, h.head_dim), case.dtype.value, cupy.random.default_rng(2))
    out = nan_like(q)
    times = []
    for config in CONFIGS:
        def launch(config=config):
            decode(q, cache.k_cache, cache.v_cache, cache.block_table, cache.context_lens, num_splits=case.splits,
                   out=out, config=config, **cache.scales)
        poison(out)
        times.append(time_gpu(launch, repeats=repeats, flush=flush).median_s)
        if bool(cupy.isnan(out).any()):
            raise RuntimeError(f"config {config} left NaN in the output")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=Path("fp8-decode.csv"))
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--configs", action="store_true", help="also time the fp8 kernel's (warps, stages) choices")
    args = parser.parse_args()

    spec = default_spec()
    gpu = load_gpu(spec)
    cases = fp8_decode_cases()
    print(f"{len(cases)} decode configurations (fp16 and fp8 KV) on {device_name()}", file=sys.stderr)
    result = run_to_file(cases, spec, args.output, " ".join(["python3", *sys.argv]), False, args.repeats)
    for failure in result.failures:
        print(f"not timed: {failure}", file=sys.stderr)
    if args.configs:
        tuned = [c for c in cases if c.kv_dtype is DType.fp8_e4m3 and c.batch in (128, 1)]
        print("\n".join(time_configs(tuned, gpu.l2_bytes, args.repeats)))
    print("\n".join(comparison(result.rows, gpu)))


if __name__ == "__main__":
    main()

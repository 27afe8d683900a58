#!/usr/bin/env bash
# Refresh the bundled H200 dataset on a lent H200 (the device tool), from the repository root:
#   calibrate -> the measured: section of hardware/h200-sxm.yaml; the GPU tests; the full sweep ->
#   measurements/h200-sweep.csv; validate. Everything lands under $OUT (or ./.out); copy
#   $OUT/h200-sxm.yaml and $OUT/h200-sweep.csv back into the repo after the run.
# BENCH_SECONDS caps the sweep (it saves after every case, so a cut run keeps what it measured).
set -uo pipefail
OUT="${OUT:-$PWD/.out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -c "import rooflab.kernels as k; print('precompiled', k.precompile(), 'kernels')"
python3 -m rooflab.cli calibrate --gpu h200-sxm -o "$OUT/h200-sxm.yaml" 2>&1 | tee "$OUT/calibrate.log"
[ -s "$OUT/h200-sxm.yaml" ] && cp "$OUT/h200-sxm.yaml" hardware/h200-sxm.yaml   # the sweep runs beside these ceilings
python3 -m pytest -m gpu -q -p no:cacheprovider tests/ 2>&1 | tail -4 | tee "$OUT/gpu-tests.txt"
timeout "${BENCH_SECONDS:-420}" python3 -m rooflab.cli bench --gpu h200-sxm ${BENCH_ARGS:-} -o "$OUT/h200-sweep.csv" \
  > "$OUT/bench.out" 2> "$OUT/bench.log"; echo "bench exit $?"
grep -v "^\[" "$OUT/bench.log" | tail -20; tail -3 "$OUT/bench.log"
python3 -m rooflab.cli validate "$OUT/h200-sweep.csv" 2>&1 | tee "$OUT/validate.txt"

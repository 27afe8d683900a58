#!/usr/bin/env bash
# Refresh the bundled H200 dataset on a lent H200 (the device tool), from the repository root:
#   calibrate -> hardware/h200-sxm.yaml's measured: section, the full sweep -> measurements/h200-sweep.csv.
# Output lands under $OUT (or ./.out); copy the two files back into the repo after the run.
set -uo pipefail
OUT="${OUT:-$PWD/.out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -c "import rooflab.kernels as k; print('precompiled', k.precompile())" 2>&1 | tail -2
python3 -m rooflab.cli calibrate --gpu h200-sxm -o "$OUT/h200-sxm.yaml" 2>&1 | tee "$OUT/calibrate.log"
cp "$OUT/h200-sxm.yaml" hardware/h200-sxm.yaml   # the sweep records which ceilings it ran beside
python3 -m rooflab.cli bench --gpu h200-sxm ${BENCH_ARGS:-} -o "$OUT/h200-sweep.csv" 2>&1 | tee "$OUT/bench.log" | grep -v "^\[" 
python3 -m rooflab.cli validate "$OUT/h200-sweep.csv" 2>&1 | tee "$OUT/validate.txt"

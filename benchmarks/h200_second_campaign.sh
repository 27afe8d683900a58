#!/usr/bin/env bash
# The second H200 campaign (issue 15's out-of-campaign test), on a lent H200, from the repository root:
#   calibrate (with the per-SM streaming curve) -> $OUT/h200-sxm.yaml; `rooflab bench --second-campaign`
#   -> $OUT/h200-second-campaign.csv; the new kernels' sweep (windows, several query tokens, MLA) ->
#   $OUT/h200-new-kernels.csv; validate the second campaign with constants fitted on the first.
# Copy the CSVs into measurements/ and the measured: section into hardware/h200-sxm.yaml afterwards.
set -uo pipefail
OUT="${OUT:-$PWD/.out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  | tee "$OUT/nvidia-smi.txt"
python3 -c "import rooflab.kernels as k; print('precompiled', k.precompile(), 'kernels')"
python3 -m rooflab.cli calibrate --gpu h200-sxm -o "$OUT/h200-sxm.yaml" 2>&1 | tee "$OUT/calibrate.log"
timeout "${BENCH_SECONDS:-300}" python3 -m rooflab.cli bench --gpu h200-sxm --second-campaign \
  -o "$OUT/h200-second-campaign.csv" > "$OUT/bench2.out" 2> "$OUT/bench2.log"; echo "bench exit $?"
grep -v "^\[" "$OUT/bench2.log" | tail -20; tail -2 "$OUT/bench2.log"
if [ -n "${NEW_KERNELS:-}" ]; then
  timeout "${NEW_SECONDS:-200}" python3 -m rooflab.cli bench --gpu h200-sxm $NEW_KERNELS \
    -o "$OUT/h200-new-kernels.csv" > "$OUT/bench3.out" 2> "$OUT/bench3.log"; echo "new kernels exit $?"
  grep -v "^\[" "$OUT/bench3.log" | tail -20; tail -2 "$OUT/bench3.log"
fi
python3 -m rooflab.cli validate "$OUT/h200-second-campaign.csv" --fit-from measurements/h200-sweep.csv 2>&1 \
  | tee "$OUT/validate-across.txt"

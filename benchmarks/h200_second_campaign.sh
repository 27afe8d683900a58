#!/usr/bin/env bash
# The second H200 campaign (the out-of-campaign test of the fitted time models) and the new kernels' rows, on a lent H200, from the
# repository root:
#   calibrate (with the per-SM streaming curve) -> $OUT/h200-sxm.yaml;
#   `rooflab bench --second-campaign` -> $OUT/h200-second-campaign.csv (cut at BENCH_SECONDS, default 300);
#   `rooflab bench --new-kernels` (windowed / chunked prefill with sinks, windowed paged decode, multi-token
#   decode, MLA decode) -> $OUT/h200-new-kernels.csv (cut at NEW_SECONDS, default 180; bench saves after every
#   case, so a cut run keeps what it measured);
#   `rooflab fit` on the bundled single-GPU campaigns and both new files -> $OUT/h200-fitted.yaml;
#   validate: the second campaign with constants fitted on the first (across campaigns), the new kernels within
#   their own file (alternate rows);
#   a short summary table last.
# Afterwards copy the CSVs into measurements/, the measured: section into hardware/h200-sxm.yaml and the fitted:
# list from $OUT/h200-fitted.yaml (the summary names any bundled fit it lacks).
set -uo pipefail
OUT="${OUT:-$PWD/.out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
declare -A RC
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  | tee "$OUT/nvidia-smi.txt"
python3 -c "import rooflab.kernels as k; print('precompiled', k.precompile(), 'kernels')"
python3 -m rooflab.cli calibrate --gpu h200-sxm -o "$OUT/h200-sxm.yaml" 2>&1 | tee "$OUT/calibrate.log"
RC[calibrate]=${PIPESTATUS[0]}

timeout "${BENCH_SECONDS:-300}" python3 -m rooflab.cli bench --gpu h200-sxm --second-campaign \
  -o "$OUT/h200-second-campaign.csv" > "$OUT/bench2.out" 2> "$OUT/bench2.log"
RC[bench_second]=$?; echo "bench exit ${RC[bench_second]}"
grep -v "^\[" "$OUT/bench2.log" | tail -20; tail -2 "$OUT/bench2.log"

timeout "${NEW_SECONDS:-180}" python3 -m rooflab.cli bench --gpu h200-sxm --new-kernels \
  -o "$OUT/h200-new-kernels.csv" > "$OUT/bench3.out" 2> "$OUT/bench3.log"
RC[bench_new]=$?; echo "new kernels exit ${RC[bench_new]}"
grep -v "^\[" "$OUT/bench3.log" | tail -20; tail -2 "$OUT/bench3.log"

# Every single-GPU campaign on this spec (the bundled fits rest on the first three), plus what this run measured.
FILES=(measurements/h200-sweep.csv measurements/h200-splits.csv measurements/h200-fp8-decode.csv)
for f in "$OUT/h200-second-campaign.csv" "$OUT/h200-new-kernels.csv"; do [ -s "$f" ] && FILES+=("$f"); done
python3 -m rooflab.cli fit "${FILES[@]}" --gpu h200-sxm -o "$OUT/h200-fitted.yaml" 2>&1 | tee "$OUT/fit.txt"
RC[fit]=${PIPESTATUS[0]}

python3 -m rooflab.cli validate "$OUT/h200-second-campaign.csv" --fit-from measurements/h200-sweep.csv 2>&1 \
  | tee "$OUT/validate-across.txt"
RC[validate_across]=${PIPESTATUS[0]}
python3 -m rooflab.cli validate "$OUT/h200-new-kernels.csv" 2>&1 | tee "$OUT/validate-new-kernels.txt"
RC[validate_new]=${PIPESTATUS[0]}

echo
echo "==== summary"
for step in calibrate bench_second bench_new fit validate_across validate_new; do
  printf '%-16s exit %s\n' "$step" "${RC[$step]:-not run}"
done
python3 - "$OUT" <<'EOF'
import sys
from pathlib import Path

from rooflab.bench.records import read_measurements
from rooflab.load import load_gpu
from rooflab.vocab import Kernel

out = Path(sys.argv[1])
for name in ("h200-second-campaign.csv", "h200-new-kernels.csv"):
    try:
        rows = read_measurements(out / name)[1]
        kernels = sorted({r.kernel.value for r in rows})
        print(f"{name:28s} {len(rows):4d} rows  {', '.join(kernels)}")
    except Exception as exc:
        print(f"{name:28s} unreadable: {exc}")
try:
    fitted = load_gpu(str(out / "h200-fitted.yaml")).fitted
except Exception as exc:
    sys.exit(f"h200-fitted.yaml unreadable: {exc}")
new = (Kernel.flash_window, Kernel.paged_window, Kernel.paged_multi, Kernel.mla_decode)
print(f"{'kernel':14s} {'impl':16s} {'rows':>4s} {'held out':>8s} {'median':>7s} {'worst':>7s}")
for m in fitted:
    if m.kernel in new:
        err = (f"{m.median_error:7.1%} {m.worst_error:7.1%}" if m.median_error is not None else f"{'-':>7s} {'-':>7s}")
        print(f"{m.kernel.value:14s} {m.impl:16s} {m.rows:4d} {m.held_out_rows:8d} {err}")
missing = [f"{f.kernel.value}/{f.impl}" for f in load_gpu("h200-sxm").fitted
           if (f.kernel, f.impl) not in {(m.kernel, m.impl) for m in fitted}]
if missing:
    print("bundled fits not in h200-fitted.yaml (rooflab fit rewrites the whole list): " + ", ".join(missing))
EOF

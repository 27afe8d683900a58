#!/usr/bin/env bash
# Session 7's GPU campaign (issue 31) on a lent H200, from the repository root; one call a part:
#   PART=1: the GPU tests, `rooflab calibrate --fp8`, the green-context SM scaling probe, `rooflab bench --gap-campaign`
#   PART=2: `rooflab bench --mla-sweep`, the rest of the gap campaign if PART 1 was cut (GAP_FROM), the step timings
#   PART=3: whole decode steps, Llama-3-8B and Qwen3-30B-A3B, graph and eager per component (benchmarks/step_device_run.py)
# Every step has its own timeout inside DEADLINE seconds; bench saves after every case. Everything lands under $OUT
# and is tarred into $OUT/session7-partN.tar.gz (the device returns ~8 files); a short table is printed last.
# Set ROOFLAB_GIT_COMMIT to the commit sent (the device copy's .git is stale).
set -uo pipefail
OUT="${OUT:-$PWD/.out}"; W="$OUT/w"; mkdir -p "$W"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" NCCL_NVLS_ENABLE=0
START=$(date +%s); DEADLINE="${DEADLINE:-560}"
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
declare -A RC
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
  --format=csv | tee "$W/nvidia-smi.txt"
[ "${PART:-1}" = 3 ] || python3 -c "import rooflab.kernels as k; print('precompiled', k.precompile(), 'kernels')" 2>&1 | tail -1
if [ "${PART:-1}" = 1 ]; then
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider --timeout 120 > "$W/gpu-tests.log" 2>&1
  RC[gpu_tests]=$?; tail -3 "$W/gpu-tests.log"
  timeout 90 python3 -m rooflab.cli calibrate --fp8 -g h200-sxm -o "$W/h200-sxm.yaml" > "$W/calibrate-fp8.log" 2>&1
  RC[fp8]=$?; cat "$W/calibrate-fp8.log" | tail -4
  timeout 90 python3 benchmarks/green_contexts.py "$W/h200-green-contexts.csv" > "$W/green.log" 2>&1
  RC[green]=$?; tail -4 "$W/green.log"
  timeout $(( $(left) - 15 )) python3 -m rooflab.cli bench -g h200-sxm --gap-campaign -o "$W/h200-gap-campaign.csv" \
    > "$W/bench-gap.out" 2> "$W/bench-gap.log"
  RC[bench_gap]=$?
elif [ "${PART:-1}" = 3 ]; then
  python3 -c "import torch; a=torch.randn(24,256,device='cuda',dtype=torch.bfloat16); w=torch.randn(4,512,256,device='cuda',dtype=torch.bfloat16); o=torch.tensor([5,5,17,24],device='cuda',dtype=torch.int32); r=torch._grouped_mm(a,w.transpose(-2,-1),offs=o); e=(r[5:17].float()-a[5:17].float()@w[2].float().t()).norm()/r[5:17].float().norm(); print('grouped_mm probe rel err', float(e))" 2>&1 | tail -2
  timeout $(( $(left) - 20 )) python3 benchmarks/step_device_run.py --out "$W" --deadline-s $(( $(left) - 90 )) \
    > "$W/step.out" 2> "$W/step.err"
  RC[step]=$?; tail -5 "$W/step.err"
else
  timeout $(( $(left) / 2 )) python3 -m rooflab.cli bench -g h200-sxm --mla-sweep -o "$W/h200-mla-sweep.csv" \
    > "$W/bench-mla.out" 2> "$W/bench-mla.log"
  RC[bench_mla]=$?
  if [ -n "${EXTRA:-}" ]; then timeout $(( $(left) - 15 )) bash -c "$EXTRA" > "$W/extra.log" 2>&1; RC[extra]=$?; fi
fi
tar -czf "$OUT/session7-part${PART:-1}.tar.gz" -C "$W" .
echo "==== summary (part ${PART:-1}, $(( $(date +%s) - START )) s)"
for k in "${!RC[@]}"; do printf '%-12s exit %s\n' "$k" "${RC[$k]}"; done
[ -f "$W/step.out" ] && cat "$W/step.out"
python3 - "$W" <<'PY'
import sys
from pathlib import Path
from rooflab.bench.records import read_measurements
for f in sorted(Path(sys.argv[1]).glob("*.csv")):
    try:
        rows = read_measurements(f)[1]
        print(f"{f.name:28s} {len(rows):4d} rows", sorted({(r.kernel.value, r.impl) for r in rows})[:12])
    except Exception as exc:
        print(f.name, "unreadable", exc)
PY

"""The one device run for the distributed work (2 x H200, nvidia-h200-x2): state, NCCL, then every section.

Run on the GPU machine from the repository root:  python3 benchmarks/distributed_device_run.py --out DIR
  DIR/nvidia-smi.txt, DIR/topo.txt    the cards as found and how they are linked
  DIR/h200x2-*.csv                    the measurement files (rooflab.bench.distributed)
  DIR/h200x2-ranks/                   each rank's log and rows, torchrun's log
The summary table is printed last. NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and its PyTorch and
NVSHMEM switches, set here and again by the launcher for every rank).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.update({"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"})


def main() -> None:
    from rooflab.measure.device import spec_for_device
    from rooflab.measure.distributed.launch import launch, summary, topology

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--deadline-s", type=float, default=240.0, help="no case starts after this many seconds")
    ap.add_argument("--timeout-s", type=float, default=420.0)
    ap.add_argument("--section", action="append", default=[])
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,clocks.sm,clocks.mem,memory.total,"
                          "temperature.gpu,power.draw", "--format=csv"], capture_output=True, text=True)
    (args.out / "nvidia-smi.txt").write_text(smi.stdout + smi.stderr)
    (args.out / "topo.txt").write_text(topology())
    print(smi.stdout, topology(), sep="\n", flush=True)
    name = smi.stdout.splitlines()[1].split(", ")[1] if len(smi.stdout.splitlines()) > 1 else ""
    t0 = time.time()
    result = launch(args.nproc, args.out, args.section, deadline_s=args.deadline_s, timeout_s=args.timeout_s,
                    prefix=f"h200x{args.nproc}", gpu_spec=spec_for_device(name) if name else None,
                    command="python3 benchmarks/distributed_device_run.py " + " ".join(sys.argv[1:]))
    print(f"torchrun exit {result.returncode} after {time.time() - t0:.0f} s; files: "
          + ", ".join(str(p.name) for p in result.files.values()), flush=True)
    for n in result.notes:
        if n["note"] in ("failed", "section_failed", "skipped"):
            print(f"  rank {n['rank']} {n['note']}: {n['value']}")
    print(summary(result.rows))


if __name__ == "__main__":
    main()

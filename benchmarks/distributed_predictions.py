"""Predictions for 4 and 8 GPUs of the kind measured on 2 (nvidia-h200-x4 / -x8), written before any such run.

    python benchmarks/distributed_predictions.py [--format markdown]

Three tables, from hardware/h200-sxm.yaml (its interconnect: fits on 2 GPUs, scaled by rooflab.comm's stated
assumptions; its kernel fits) and the cost models:
  1. collective times, 64 KiB .. 1 GiB per rank, in CUDA graphs, on 2 (fitted), 4 and 8 GPUs
  2. DCP decode speedup over one GPU at batch 8 x 128k and 1 x 1M tokens (32 / 8 heads, d 128, fp16)
  3. Llama-3-70B decode steps with TP 8 (bf16), and the same on 4 GPUs
The later runs on those machines test them (the x4/x8 issue); the numbers here are not to be edited after.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflab.comm import collective_time  # noqa: E402
from rooflab.errors import InputError  # noqa: E402
from rooflab.context_parallel import dcp_speedup, dcp_threshold, dcp_time  # noqa: E402
from rooflab.load import load_gpu, load_model  # noqa: E402
from rooflab.output import table  # noqa: E402
from rooflab.specs import AttentionHeads  # noqa: E402
from rooflab.step import step_report  # noqa: E402
from rooflab.units import DType, fmt_seconds  # noqa: E402
from rooflab.vocab import Kernel  # noqa: E402

SIZES = (1 << 16, 1 << 20, 1 << 24, 1 << 28, 1 << 30)
COUNTS = (2, 4, 8)


def collectives(gpu, md: bool) -> str:
    rows = []
    for kernel in (Kernel.all_reduce, Kernel.all_gather, Kernel.reduce_scatter, Kernel.all_to_all, Kernel.send_recv):
        for size in SIZES:
            cells = [kernel.value, f"{size / 2**20:g} MiB"]
            for n in COUNTS:
                t = collective_time(gpu, kernel, size, n, "graph")
                cells.append(f"{fmt_seconds(t.t_predicted_s)} ({t.bus_bytes / t.t_predicted_s / 1e9:.0f} GB/s)")
            rows.append(cells)
    return table(["collective", "bytes per rank", *[f"{n} GPUs" + (" (fit)" if n == 2 else "") for n in COUNTS]],
                 rows, markdown=md)


def dcp(gpu, md: bool) -> str:
    heads = AttentionHeads(32, 8, 128)
    rows = []
    for batch, context in ((8, 131072), (1, 1 << 20)):
        cells = [f"{batch} x {context:,}", fmt_seconds(dcp_time(gpu, heads, context, batch, 1).t_predicted_s)]
        for n in COUNTS:
            t = dcp_time(gpu, heads, context, batch, n)
            cells.append(f"{fmt_seconds(t.t_predicted_s)}, {dcp_speedup(gpu, heads, context, batch, n):.2f}x")
        rows.append(cells)
    for batch in (1, 8, 32):
        rows.append([f"pays from (batch {batch})", "", *[f"{dcp_threshold(gpu, heads, batch, n):,} tokens"
                                                         for n in COUNTS]])
    return table(["batch x context", "1 GPU", *[f"DCP {n}" for n in COUNTS]], rows, markdown=md)


def tp70b(gpu, md: bool) -> str:
    model = load_model("llama-3-70b")
    rows = []
    for tp in (4, 8):
        for batch in (1, 8, 64):
            for context in (8192, 32768):
                try:
                    r = step_report(model, gpu, batch, context, "decode", tp=tp, dtype=DType.bf16)
                except InputError as exc:                  # does not fit: say so
                    need = str(exc).split("needs ", 1)[-1].split(" per GPU")[0]
                    rows.append([f"TP {tp}", str(batch), f"{context:,}", "-", "-", f"does not fit: {need} per GPU"])
                    continue
                comm = sum(x.t_predicted_s for x in r.rows if x.is_communication)
                rows.append([f"TP {tp}", str(batch), f"{context:,}", fmt_seconds(r.t_floor_s),
                             fmt_seconds(r.t_predicted_s), f"{comm / r.t_predicted_s:.0%} all-reduces"])
    return table(["deployment", "batch", "context", "t_floor", "t_predicted", "communication share"], rows,
                 markdown=md)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", choices=("table", "markdown"), default="table")
    md = ap.parse_args().format == "markdown"
    gpu = load_gpu("h200-sxm")
    for title, fn in (("Collectives in CUDA graphs (NCCL, NVLS off)", collectives),
                      ("DCP decode, 32/8 heads, d 128, fp16", dcp), ("Llama-3-70B decode step, bf16", tp70b)):
        print(f"\n{'### ' if md else ''}{title}\n")
        print(fn(gpu, md))


if __name__ == "__main__":
    main()

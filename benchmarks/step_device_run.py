"""Issue 31 item 4 on one GPU: whole Llama-3-8B and Qwen3-30B-A3B decode steps, CUDA graph and eager, per component.

    python3 benchmarks/step_device_run.py --out DIR [--deadline-s 300]

Runs rooflab.bench.step_bench.section_models (bf16, random weights, batch 1 / 8 / 64 x context 1k / 8k) in this
process on GPU 0 and writes DIR/h200-step-<model>.csv (decode_step rows, impl torch_graph and torch_eager; the
eager per-component seconds in `components_<batch>x<context>` metadata, JSON), DIR/step-run.log and
DIR/step-notes.jsonl. The comparison with rooflab.step (benchmarks/step_compare.py) is printed last.
On a machine without CUDA it runs the tiny CPU shapes (a dry run of the code paths).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")


def main() -> None:
    import torch

    from rooflab.measure.distributed.context import Ctx
    from rooflab.measure.distributed.launch import read_ranks, run_metadata
    from rooflab.fit.records import write_measurements
    from rooflab.measure.distributed.step import MODELS, section_models

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--deadline-s", type=float, default=300.0, help="no case starts after this many seconds")
    ap.add_argument("--model", action="append", choices=sorted(MODELS), default=None)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("rank*.jsonl"):
        old.unlink()
    cuda = torch.cuda.is_available()
    log = open(args.out / "step-run.log", "a")
    ctx = Ctx(rank=0, world=1, local_rank=0, cuda=cuda, out=args.out, deadline=time.time() + args.deadline_s,
              tiny=not cuda, log_file=log)
    if cuda:
        from rooflab.kernels._runtime import compile_all
        from rooflab.kernels.precompile import instantiations

        items = [i for i in instantiations(("bf16",), (128,), fp8_kv=False)
                 if i[0] == "merge_partials.cu" or (i[0] == "paged_decode.cu" and i[1].endswith(", 0>"))]
        t0 = time.time()
        compile_all(items, workers=16)
        ctx.log(f"compiled {len(items)} kernels in {time.time() - t0:.1f} s")
    models = tuple(MODELS[m] for m in (args.model or ("llama-3-8b", "qwen3-30b-a3b")))
    t0 = time.time()
    section_models(ctx, models)
    ctx.log(f"steps done in {time.time() - t0:.1f} s")
    rows, notes = read_ranks(args.out)
    command = "python3 benchmarks/step_device_run.py " + " ".join(sys.argv[1:])
    meta = run_metadata(command, "h200-sxm" if cuda else None, 1, not cuda)
    meta.pop("nccl", None), meta.pop("backend", None), meta.pop("nvls", None)
    cases = [n["value"] for n in notes if n["note"] == "step_case"]
    failed = "; ".join(str(n["value"]) for n in notes if n["note"] in ("failed", "skipped"))
    with open(args.out / "step-notes.jsonl", "w") as f:
        for n in notes:
            f.write(json.dumps(n) + "\n")
    written = []
    for i, model in enumerate(models):
        mine = [c for c in cases if c["model"] == model.name]
        # rows in the order written: each case emits graph then eager; cases of this model are a contiguous run
        members = [m for m in rows if m.num_qo_heads == model.heads and m.num_kv_heads == model.kv_heads]
        if not members:
            continue
        file_meta = dict(meta, model=model.name, weights="random, " + ("bf16" if cuda else "fp32"),
                         layer="rooflab.bench.step_bench (torch layer stack, rooflab paged decode, unfused "
                               "elementwise; RoPE left out" + ("; MoE through torch._grouped_mm)" if model.is_moe
                                                               else ")"))
        for c in mine:
            key = f"{c['context']}x{c['batch']}"
            if "components" in c:
                file_meta[f"components_{key}"] = json.dumps({k: round(v, 9) for k, v in c["components"].items()})
            if c.get("kv_shared_across_layers"):
                file_meta["kv_shared_across_layers"] = file_meta.get("kv_shared_across_layers", "") + key + " "
            if "moe_rel_err_vs_loop" in c:
                file_meta["moe_rel_err_vs_loop"] = f"{c['moe_rel_err_vs_loop']:.3e} (batch {c['batch']}, 4 rows, " \
                                                   "fp32 loop over each token's experts)"
            if not c.get("logits_finite", True):
                file_meta.setdefault("logits_not_finite", "")
                file_meta["logits_not_finite"] += key + " "
        if failed:
            file_meta["failed"] = failed[:2000]
        path = args.out / (f"h200-step-{model.name}.csv" if cuda else f"cpu-step-{model.name}.csv")
        write_measurements(path, members, file_meta)
        written.append(path)
    print("wrote", ", ".join(p.name for p in written), flush=True)
    if failed:
        print("failed / skipped:", failed[:1500])
    from step_compare import compare_files

    print(compare_files(written))


if __name__ == "__main__":
    main()

"""SM scaling on one GPU through CUDA green contexts: rooflab's kernels on 16..132 SMs (issue 31, item 5).

Run on a GPU machine from the repository root:  python3 benchmarks/green_contexts.py OUT.csv
For each SM count a green context of that many SMs is made (torch.cuda.green_contexts, beta in PyTorch 2.9+; the
driver rounds a count up to its SM granularity and the context's real count is recorded); rooflab's kernels run on a
stream of that context (CuPy's ExternalStream over torch's stream), timed as `rooflab bench` times them (events,
warm-up, the L2 flushed before every repeat, the median). Nothing about the card is changed: a green context is a
view of the SMs one process launches on, gone when the process ends. Rows are `rooflab bench` rows with the SM
count in the impl name ("rooflab_sm66"); benchmarks/green_contexts_predict.py compares them with the full-GPU fit.
Where no green context can be made, the script says why and exits 3.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SM_COUNTS = (16, 33, 66, 99, 132)


def green_stream(num_sms: int):
    """(stream pointer, SMs the context holds, keepalive) of a green context of about `num_sms` SMs."""
    import torch
    from torch.cuda.green_contexts import GreenContext

    ctx = GreenContext.create(num_sms=num_sms, device_id=0) if hasattr(GreenContext, "create") else \
        GreenContext(num_sms=num_sms, device_id=0)
    if hasattr(ctx, "Stream"):
        stream = ctx.Stream()
    else:                                   # torch 2.9-2.11: set the context current, make a stream inside it
        ctx.set_context()
        stream = torch.cuda.Stream()
        ctx.pop_context()
    return stream.cuda_stream, ctx, stream


def main(out_path: str) -> int:
    import cupy
    import torch

    from rooflab.measure.cases import Case, LLAMA3_8B
    from rooflab.measure import ours
    from rooflab.measure.device import metadata
    from rooflab.fit.records import write_measurements
    from rooflab.measure.timing import L2Flusher, time_gpu
    from rooflab.load import load_gpu
    from rooflab.units import DType
    from rooflab.vocab import Kernel

    torch.cuda.init()
    fp16 = DType.fp16
    cases = [Case(Kernel.flash, fp16, seq_len=4096, causal=True), Case(Kernel.flash, fp16, seq_len=2048, batch=4),
             Case(Kernel.paged, fp16, batch=32, context_lens=(8192,) * 32, page_size=16),
             Case(Kernel.paged, fp16, batch=128, context_lens=(4096,) * 128, page_size=16),
             Case(Kernel.split_kv, fp16, batch=1, context_lens=(32768,), page_size=16, splits=25),
             Case(Kernel.merge, DType.bf16, heads=type(LLAMA3_8B)(32, 32, 128), tokens=16384)]
    rows, failures = [], []
    flush = L2Flusher(load_gpu("h200-sxm").l2_bytes)
    for n in SM_COUNTS:
        try:
            ptr, ctx, keep = green_stream(n)
        except Exception as exc:
            print(f"no green context of {n} SMs: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            return 3
        held = n
        try:
            from cuda.bindings import driver as cu            # the real SM count of the context, where readable
            res = cu.CUdevResource()
            err, res = cu.cuGreenCtxGetDevResource(ctx._green_ctx if hasattr(ctx, "_green_ctx") else None,
                                                   cu.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM)
            if err == cu.CUresult.CUDA_SUCCESS:
                held = int(res.sm.smCount)
        except Exception:
            pass
        with cupy.cuda.ExternalStream(ptr):
            for i, case in enumerate(cases):
                launch, check = ours.runner(case, np.random.default_rng(100 + i))
                try:
                    err = float(check())
                    t = time_gpu(launch, repeats=20, flush=flush)
                except Exception as exc:
                    failures.append(f"{case.label()} sm{n}: {type(exc).__name__}: {exc}")
                    continue
                rows.append(case.measurement(f"{ours.impl_name(case)}_sm{held}", t.median_s, t.p10_s, t.p90_s,
                                             t.repeats, err))
                print(f"sm {n:3d} (held {held:3d})  {case.label():50s} {t.median_s * 1e6:9.1f} us  err {err:.1e}",
                      flush=True)
        cupy.cuda.Device().synchronize()
        del keep
    write_measurements(Path(out_path), rows, metadata("python3 benchmarks/green_contexts.py " + out_path, "h200-sxm"))
    for f in failures:
        print("failed:", f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "green-contexts.csv"))

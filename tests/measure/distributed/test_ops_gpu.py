"""GPU tests of the distributed bench's ops (rooflab.measure.distributed.ops): rooflab's CuPy kernels captured on
torch's stream in a CUDA graph give the torch reference's answer.

Marked `gpu` (skipped with a reason where torch sees no GPU). Timings are not asserted: they live in measurement
files (measurements/h200x2-*.csv).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest


pytestmark = pytest.mark.gpu


def _ctx(tmp_path: Path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    from rooflab.measure.distributed.context import Ctx

    torch.cuda.set_device(0)
    return Ctx(0, 1, 0, True, tmp_path, time.time() + 300, False, open(tmp_path / "log", "w"))


def test_decode_and_merge_in_a_graph_match_the_reference(tmp_path):
    import torch

    from rooflab.measure.distributed.context import free_memory, time_graph
    from rooflab.measure.distributed.ops import GpuOps, TorchOps

    ctx = _ctx(tmp_path)
    batch, context, pages = 4, 4096, 4096 // 16
    k = torch.randn((batch * pages, 8, 16, 128), device="cuda", dtype=torch.float16)
    v = torch.randn_like(k)
    q = torch.randn((batch, 32, 128), device="cuda", dtype=torch.float16)
    table = torch.arange(batch * pages, device="cuda", dtype=torch.int32).view(batch, pages)
    lens = torch.full((batch,), context - 5, device="cuda", dtype=torch.int32)      # a partial last page
    for splits in (1, 4):
        out = torch.full_like(q, float("nan"))
        scratch = (torch.empty((splits, batch, 32, 128), device="cuda"), torch.empty((splits, batch, 32), device="cuda"))
        t = time_graph(ctx, lambda i: GpuOps(ctx).decode(q, k, v, table, lens, splits, out, scratch), 3, 2,
                       together=False)
        assert t.timing == "graph" and t.median_s > 0
        ref = torch.empty((batch, 32, 128), device="cuda")
        TorchOps().decode(q, k, v, table, lens, 1, ref, (torch.empty((1, batch, 32, 128), device="cuda"),
                                                         torch.empty((1, batch, 32), device="cuda")))
        err = float(torch.linalg.vector_norm(out.float() - ref) / torch.linalg.vector_norm(ref))
        assert err < 2e-3, (splits, err)
    free_memory(ctx)

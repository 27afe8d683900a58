"""GPU tests of the distributed bench's device paths: rooflab's CuPy kernels captured on torch's stream in a CUDA
graph give the reference answer, and on two or more GPUs NCCL's collectives run and are timed (eager and in graphs).

Marked `gpu` (skipped with a reason where CuPy sees no GPU); the two-GPU test also skips with fewer GPUs.
Timings are not asserted: they live in measurement files (measurements/h200x2-*.csv).
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
    from rooflab.bench.dist_worker import Ctx

    torch.cuda.set_device(0)
    return Ctx(0, 1, 0, True, tmp_path, time.time() + 300, False, open(tmp_path / "log", "w"))


def test_decode_and_merge_in_a_graph_match_the_reference(tmp_path):
    import torch

    from rooflab.bench.dist_attention import GpuOps, TorchOps
    from rooflab.bench.dist_worker import free_memory, time_graph

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


def test_nccl_collectives_on_two_gpus(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, this machine has {torch.cuda.device_count()}")
    from rooflab.bench.distributed import launch
    from rooflab.bench.records import read_measurements

    result = launch(2, tmp_path, ("check", "collectives"), timeout_s=300, prefix="gpu-test")
    assert result.returncode == 0
    assert not [n for n in result.notes if n["note"] == "section_failed"]
    meta, rows = read_measurements(result.files["collectives"])
    assert meta["nvls"].startswith("0") and meta["world_size"] == "2"
    assert {m.timing for m in rows} == {"eager", "graph"}
    assert {m.kernel.value for m in rows} >= {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}

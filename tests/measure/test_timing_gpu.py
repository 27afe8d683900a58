"""GPU tests of the one timing module (rooflab.measure.timing): CuPy and torch, eager and CUDA graphs, each loop runs
its calls and returns per-call seconds labelled with how they were taken.

Marked `gpu` (skipped with a reason where CuPy or torch sees no GPU). Times are not asserted, only their shape.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


def _ordered(t) -> bool:
    return 0 < t.p10_s <= t.median_s <= t.p90_s


def test_cupy_eager_and_graph_timings():
    from rooflab.kernels._runtime import cupy_module
    from rooflab.measure.timing import L2Flusher, time_cupy_graph, time_gpu

    cupy = cupy_module()
    x = cupy.ones(1 << 20, dtype=cupy.float32)
    out = cupy.empty_like(x)
    flush = L2Flusher()
    assert flush.nbytes >= 2 * cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"]
    eager = time_gpu(lambda: cupy.multiply(x, 2, out=out), warmup=2, repeats=7, flush=flush)
    assert eager.repeats == 7 and eager.timing == "eager" and _ordered(eager)
    graph = time_cupy_graph(lambda i: cupy.multiply(x, i, out=out), calls=5, replays=4)
    assert graph.repeats == 4 and graph.timing == "graph" and _ordered(graph)
    assert float(out[0]) == 4.0                 # the graph holds the five calls, the last multiplies by 4


def test_torch_eager_and_graph_timings():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    from rooflab.measure.timing import time_torch, time_torch_calls, time_torch_graph

    x = torch.ones(1 << 20, device="cuda")
    out = torch.empty_like(x)
    eager = time_torch(lambda: torch.mul(x, 2, out=out), warmup=2, repeats=6, flush_bytes=64 << 20)
    assert eager.repeats == 6 and eager.timing == "eager" and _ordered(eager)
    lined_up = []
    calls = time_torch_calls(lambda i: torch.mul(x, i, out=out), repeats=3, device=torch.device("cuda"),
                             line_up=lambda: lined_up.append(1))
    assert calls.repeats == 3 and lined_up == [1] and _ordered(calls)
    graph = time_torch_graph(lambda i: torch.mul(x, i + 1, out=out), calls=3, replays=4,
                             line_up=lambda: lined_up.append(2))
    assert graph.timing == "graph" and graph.repeats == 4 and lined_up == [1, 2, 2, 2, 2] and _ordered(graph)
    assert float(out[0]) == 3.0

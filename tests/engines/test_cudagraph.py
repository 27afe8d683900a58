"""Tests of vLLM V1's v0.20.0 terms: the profile's CUDA-graph estimate (rooflab/engines/cudagraph.py) and the 0.92
default utilisation (vllm.default_utilization), each hand-computed from the source it cites (vllm v0.20.0 - v0.29.0
wheels: vllm/v1/worker/gpu_worker.py determine_available_memory, vllm/v1/worker/gpu_model_runner.py
profile_cudagraph_memory, vllm/config/vllm.py _set_cudagraph_sizes, vllm/config/cache.py, vllm/envs.py).
"""

from __future__ import annotations

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import engine_capacity
from rooflab.engines.cudagraph import capture_sizes, cudagraph_estimate
from rooflab.engines.settings import resolve
from rooflab.engines.vllm import CUDA_GRAPH_ESTIMATE, default_utilization, given_release
from rooflab.units import MiB
from support import vllm

QWEN3_8B = load_model("qwen3-8b")
H100 = load_gpu("h100-sxm")


@pytest.mark.parametrize("max_num_seqs, mnbt, largest, piecewise, full", [
    (256, 8192, 512, 51, 35),   # set 6's RTX 3090 log: "PIECEWISE=51 (largest=512), FULL=35 (largest=256)"
    (1024, 8192, 512, 51, 51),  # set 6's 8x H100 log: "PIECEWISE=51 (largest=512), FULL=51 (largest=512)"
    (128, 8192, 256, 35, 19),   # 2 x 128 = 256: [1, 2, 4] + 8..248 by 8 (31) + [256]; FULL [1, 2, 4] + 8..128
    (256, 300, 288, 37, 35),    # capped at 300 tokens: 3 + 31 + 256..288 by 16 (3), the largest 288
])
def test_capture_sizes_follow_set_cudagraph_sizes(max_num_seqs, mnbt, largest, piecewise, full):
    """vllm/config/vllm.py _set_cudagraph_sizes (v0.20.0, v0.29.0): largest = min(2 max_num_seqs, 512, max_num_batched_
    tokens), sizes [1, 2, 4] + range(8, 256, 8) + range(256, largest + 1, 16); FULL decode graphs up to max_num_seqs."""
    sizes = capture_sizes(max_num_seqs, mnbt)
    assert (sizes[-1], len(sizes), len([n for n in sizes if n <= max_num_seqs])) == (largest, piecewise, full)


def test_estimate_of_qwen3_8b_by_hand():
    """Qwen3-8B, TP 1, max_num_seqs 128, v0.20.0: 35 PIECEWISE and 19 FULL sizes, largest 256. The first capture is
    the forward at 256 tokens, 256 x (3 x 4,096 + 3 x 12,288) x 2 = 25,165,824 bytes; each further graph the code's
    1 MiB floor (profile_cudagraph_memory: max(second capture, 1 << 20) x (n - 1)): 34 + 18 MiB. G = 79,691,776."""
    s = resolve(vllm(max_num_seqs=128, max_num_batched_tokens=8192, release="0.20.0"), QWEN3_8B, H100)
    g = cudagraph_estimate(QWEN3_8B, s, given_release(s))
    assert (g.largest, g.piecewise_graphs, g.full_graphs) == (256, 35, 19)
    assert g.first_capture_bytes == 256 * (3 * 4096 + 3 * 12288) * 2 == 25_165_824
    assert g.bytes == 25_165_824 + 52 * MiB == 79_691_776


@pytest.mark.parametrize("release, applied", [("0.20.0", True), ("0.20.2", True), ("0.19.1", False), (None, False)])
def test_estimate_subtracted_from_v0_20_for_a_release_given(release, applied):
    """VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "1" from v0.20.0 ("0" in v0.19.1, vllm/envs.py), and
    determine_available_memory subtracts the estimate then: the KV cache is smaller by exactly the term. A label
    (no release) keeps v0.19's terms."""
    kw = dict(max_num_seqs=128, max_num_batched_tokens=8192, utilization=0.9)
    with_release = engine_capacity(QWEN3_8B, H100, vllm(release=release, **kw))
    before = engine_capacity(QWEN3_8B, H100, vllm(release="0.19.1", **kw))
    term = {t.name: t.bytes for t in with_release.terms}.get(CUDA_GRAPH_ESTIMATE)
    assert (term is not None) is applied
    assert with_release.kv_cache_bytes == before.kv_cache_bytes - (term or 0)


@pytest.mark.parametrize("release, expected", [("0.20.0", 0.92), ("0.20.2", 0.92), ("0.19.1", 0.9), (None, 0.9)])
def test_default_utilization_by_release(release, expected):
    """vllm/config/cache.py CacheConfig.gpu_memory_utilization: Field(default=0.9) in v0.19.1, default=0.92 from
    v0.20.0 (v0.20.0, v0.22.1, v0.24.0, v0.29.0); a label keeps 0.9."""
    settings = vllm(release=release)
    assert default_utilization(resolve(settings, QWEN3_8B, H100)) == expected
    assert engine_capacity(QWEN3_8B, H100, settings).utilization == expected


def test_given_utilization_wins():
    assert engine_capacity(QWEN3_8B, H100, vllm(release="0.20.0", utilization=0.85)).utilization == 0.85


def test_first_capture_of_a_moe_model_leaves_out_the_kept_moe_caches():
    """From v0.14 the fused-MoE caches are WorkspaceManager's buffers kept from the profile run (profile.py; vllm
    v0.20.0 vllm/v1/worker/workspace.py), so the capture at 512 tokens allocates the residual stream and the widest
    attention or dense block only. Qwen3-30B-A3B at TP 1: H 2,048, 32 query heads and 4 KV heads of 128, no dense
    or shared MLP: 512 x (3 x 2,048 + 32 x 256 + 4 x 256) x 2 = 15,728,640 bytes."""
    model = load_model("qwen3-30b-a3b")
    s = resolve(vllm(max_num_seqs=256, max_num_batched_tokens=8192, release="0.20.0"), model, H100)
    g = cudagraph_estimate(model, s, given_release(s))
    assert g.first_capture_bytes == 512 * (3 * 2048 + 32 * 256 + 4 * 256) * 2 == 15_728_640

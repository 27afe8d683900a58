"""Tests of rooflab/engines/pipeline.py: vLLM's and SGLang's caches under pipeline parallelism, by hand.

Llama-3-70B, PP 2 x TP 4 on 8 x H100 (T = 85,061,827,297 bytes, the H100 YAML's CUDA-visible total):

    weights   stage 0: (1,050,673,152 + 40 x 855,654,400) x 2 / 4 = 17,638,424,576 bytes  (tests/capacity/
              test_stages.py), stage 1: (40 x 855,654,400 + 8192 + 1,050,673,152) x 2 / 4 = 17,638,428,672;
              each stage also keeps one rotary cache, 8192 x 128 x 2 = 2,097,152
    KV token  40 layers x 2 (K, V) x 8 / 4 KV heads x 128 x 2 bytes = 40,960; a 16-token block 655,360
    profile   vLLM V1 `serve` on an H100: 8192 tokens, 1024 sequences. Forward: 8192 x (3 x 8192 + 3 x 28672 / 4)
              x 2 = 754,974,720; the sampler (last stage only): 1024 x 128,256 x 15 + 8192 x 8192 x 2 =
              2,104,229,888 (engines/profile.py)
    vLLM V1   KV_s = int(0.9 T) - W_s - A_s - 2.1 GiB; blocks = min_s KV_s // 655,360
"""

from __future__ import annotations

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import engine_capacity
from rooflab.errors import InputError
from rooflab.units import GiB
from support import sglang, vllm

H100 = load_gpu("h100-sxm")
LLAMA70 = load_model("llama-3-70b")
ROPE = 8192 * 128 * 2
W0, W1 = 17_638_424_576 + ROPE, 17_638_428_672 + ROPE
FORWARD, SAMPLER = 754_974_720, 2_104_229_888


def test_vllm_v1_pp2_tp4_by_hand():
    budget = int(85_061_827_297 * 0.9)
    non_torch = int(2.1 * GiB)
    kv0 = budget - W0 - FORWARD - non_torch
    kv1 = budget - W1 - SAMPLER - non_torch
    c = engine_capacity(LLAMA70, H100, vllm(tensor_parallel=4, pipeline_parallel=2))
    assert H100.cuda_visible_bytes == 85_061_827_297
    assert c.num_blocks == min(kv0, kv1) // 655_360 == kv1 // 655_360       # the last stage binds: its sampler
    assert c.kv_cache_bytes == kv1 and c.block_bytes == 655_360
    assert c.kv_cache_tokens == c.num_blocks * 16
    assert c.pipeline_parallel == 2 and "stage 1 of 2 (layers 40-79, LM head)" in c.binding_stage
    assert any(f"{kv0 // 655_360:,} blocks" in n for n in c.notes)          # every stage noted
    assert any("binds" in n and "fewest blocks" in n for n in c.notes)


def test_vllm_pp1_is_the_whole_model():
    """--pp 1 is the plain answer: the same terms as without the option."""
    plain = engine_capacity(LLAMA70, H100, vllm(tensor_parallel=8))
    assert engine_capacity(LLAMA70, H100, vllm(tensor_parallel=8, pipeline_parallel=1)) == plain
    assert plain.pipeline_parallel == 1 and plain.binding_stage is None


def test_vllm_v0_splits_as_before_pr_13839():
    """V0 releases (v0.6.x - v0.7.x) gave the last stage the layers left over: 80 over 3 is 26, 26, 28."""
    c = engine_capacity(LLAMA70, H100, vllm("v0", tensor_parallel=2, pipeline_parallel=3))
    assert "layers 52-79" in c.binding_stage
    with pytest.raises(InputError, match="added pipeline parallelism in v0.5.1"):
        engine_capacity(LLAMA70, H100, vllm("v0.2", pipeline_parallel=2))


def test_sglang_pp3_by_hand():
    """SGLang (f = 0.85 given, 1.6 GiB in use before it measures under TP): pre = T - 1.6 GiB, the free memory after
    loading is the min over every rank, so the heaviest stage's weights come off all; 80 layers over 3 stages are
    26, 27, 27 (its get_pp_indices), cells 26 and 27 x 1024 bytes at TP 4; tokens = rest // the largest cell."""
    pre = 85_061_827_297 - int(1.6 * GiB)
    margin = int(pre * (1 - 0.85))
    layer = 150_994_944 + 704_643_072 + 2 * 8192
    weights = [(1_050_673_152 + 26 * layer) * 2 // 4, 27 * layer * 2 // 4, (27 * layer + 8192 + 1_050_673_152) * 2 // 4]
    rest = pre - margin - (max(weights) + ROPE)
    c = engine_capacity(LLAMA70, H100, sglang("v0.5", tensor_parallel=4, pipeline_parallel=3, utilization=0.85))
    assert c.kv_cache_tokens == rest // (27 * 1024)
    assert "stage 1 of 3 (layers 26-52)" in c.binding_stage                  # the first of the two 27-layer stages


def test_pipeline_refusals():
    with pytest.raises(InputError, match="--pp-layer-partition applies with --pp"):
        vllm(pp_layer_partition=(40, 40))
    with pytest.raises(InputError, match="hybrid allocator under --pp"):
        engine_capacity(load_model("gpt-oss-120b"), H100, vllm(pipeline_parallel=2))
    c = engine_capacity(LLAMA70, H100, vllm(tensor_parallel=4, pipeline_parallel=2, pp_layer_partition=(30, 50)))
    assert "layers 30-79" in c.binding_stage and c.block_bytes == 50 * 1024 * 16

"""Tests of rooflab/engines/lora.py: the LoRA buffers vLLM and SGLang preallocate, against a hand computation.

Llama-3-8B (H 4,096, 32 query and 8 KV heads of 128, F 14,336, 32 layers, bf16), per layer and slot at rank r
(vllm/lora/layers/base_linear.py create_lora_weights; sglang/srt/lora/mem_pool.py get_lora_A/B_shape):
q/k/v A 3 r H + B r (4,096 + 2 x 1,024), o A r 4,096 + B r H, gate/up A 2 r H + B 2 r F, down A r F + B r H.
"""

from __future__ import annotations

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import Engine, engine_capacity
from rooflab.engines.lora import lora_buffer_bytes, lora_defaults
from rooflab.errors import InputError
from rooflab.units import DType, MiB
from support import sglang, vllm

LLAMA3 = load_model("llama-3-8b")
H100 = load_gpu("h100-sxm")
H, F = 4096, 14336


def _per_layer(r: int, tp: int = 1, kv_heads: int = 8) -> int:
    qkv = 3 * r * H + r * (32 * 128 // tp + kv_heads * 256)
    out = r * 32 * 128 // tp + r * H
    mlp = 2 * r * H + 2 * r * F // tp + r * F // tp + r * H
    return qkv + out + mlp


@pytest.mark.parametrize("tp, slots, rank, kv_heads", [(1, 1, 16, 8), (2, 4, 64, 4), (16, 8, 8, 1)])
def test_buffers_by_hand(tp, slots, rank, kv_heads):
    """tp 16: one KV head a GPU (replicated past 8), as the KV cache."""
    assert lora_buffer_bytes(LLAMA3, tp, slots, rank, DType.bf16) == slots * 32 * _per_layer(rank, tp, kv_heads) * 2


def test_vllm_default_is_80_mib_and_comes_off_the_budget():
    """vLLM's defaults (1 slot, rank 16): 32 x 1,310,720 elements x 2 bytes = 80 MiB, inside its weights figure."""
    alone = engine_capacity(LLAMA3, H100, vllm(max_model_len=8192))
    lora = engine_capacity(LLAMA3, H100, vllm(max_model_len=8192, enable_lora=True))
    assert lora.term("lora_buffers").bytes == 80 * MiB == 32 * _per_layer(16) * 2
    assert alone.kv_cache_bytes - lora.kv_cache_bytes == 80 * MiB


def test_sglang_buffers_come_off_the_pool():
    """At v0.5.9, whose default fraction LoRA leaves alone (from v0.5.10 LoRA also turns the piecewise CUDA graphs
    and their reserve off: engines/sglang.py piecewise_reserve_mib)."""
    alone = engine_capacity(LLAMA3, H100, sglang("v0.5", max_model_len=8192, release=(0, 5, 9)))
    lora = engine_capacity(LLAMA3, H100, sglang("v0.5", max_model_len=8192, enable_lora=True, max_lora_rank=64,
                                                release=(0, 5, 9)))
    assert lora.term("lora_buffers").bytes == 8 * 32 * _per_layer(64) * 2      # SGLang's 8 slots
    assert alone.kv_cache_bytes - lora.kv_cache_bytes == lora.term("lora_buffers").bytes


@pytest.mark.parametrize("engine, loras, rank, needle", [
    (Engine.vllm, None, 24, "vLLM takes one of"), (Engine.sglang, 4, None, "needs --max-lora-rank")])
def test_defaults_refuse(engine, loras, rank, needle):
    with pytest.raises(InputError, match=needle):
        lora_defaults(engine, loras, rank)


@pytest.mark.parametrize("model, needle", [("qwen3-30b-a3b", "routed experts"), ("deepseek-v3", "routed experts"),
                                            ("qwen3-next-80b-a3b", "routed experts")])
def test_unmodelled_layers_are_refused(model, needle):
    with pytest.raises(InputError, match=needle):
        lora_buffer_bytes(load_model(model), 1, 1, 16, DType.bf16)


def test_options_need_enable_lora():
    with pytest.raises(InputError, match="apply with --enable-lora"):
        vllm(max_loras=2)


@pytest.mark.parametrize("release, counted", [((0, 6, 5), False), ((0, 7, 1), False), ((0, 7, 3), False),
                                              ((0, 8, 0), True), ((0, 9, 2), True)])
def test_vllm_v0_before_0_8_leaves_the_buffers_out_of_its_budget(release, counted):
    """vLLM V0 v0.6.5-v0.7.3 create the LoRA manager after load_model's memory profiler (vllm 0.7.3 wheel,
    worker/model_runner.py:1109-1144) and the profile's peak and non-torch terms do not see it, so the buffers take
    none of u x total; vllm#14469 moved them inside the profiler from v0.8.0 (0.8.0 wheel, model_runner.py:1111-1145).
    Rank 32, one slot: 32 layers x _per_layer(32) x 2 bytes = 167,772,160 bytes (0.15625 GiB), off the KV cache
    from v0.8.0 only."""
    alone = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, release=release))
    lora = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, release=release, enable_lora=True,
                                              max_lora_rank=32))
    assert 32 * _per_layer(32) * 2 == 167_772_160
    assert alone.kv_cache_bytes - lora.kv_cache_bytes == (167_772_160 if counted else 0)
    assert (lora.term("lora_buffers") is None) is not counted
    assert any("outside vLLM's budget" in n for n in lora.notes) is not counted

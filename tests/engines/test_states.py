"""Tests of rooflab/engines/states.py and what vLLM V1 and SGLang v0.5 make of the states (layout.py, sglang.py).

Hand computations from the engines' formulas (each cited where it is used): Qwen3-Next-80B-A3B's Gated DeltaNet
layers (16 key heads and 32 value heads of 128, a 4-wide convolution; 36 linear and 12 full-attention layers of 2
KV heads of 256, models/qwen3-next-80b-a3b.yaml), and Jamba-v0.1's Mamba-1 layers (support.JAMBA_V01).
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import Engine, engine_capacity
from rooflab.engines.layout import vllm_layout
from rooflab.engines.settings import resolve
from rooflab.engines.sglang import max_running_requests
from rooflab.engines.states import state_layers, vllm_hybrid_block_size
from rooflab.engines.vocab import MambaCacheMode
from rooflab.errors import InputError
from rooflab.specs import LinearMixer
from rooflab.units import GiB, DType
from support import JAMBA_V01, read_config, sglang, vllm

NEXT = load_model("qwen3-next-80b-a3b")
H200 = load_gpu("h200-sxm")
#: An H200 with 256 GiB (hypothetical): the layout tests give 200 GiB CUDA-visible to hold an 80B model at TP 1, more
#: than an H200's 140 GiB (a CUDA-visible total above the device's memory is refused, issue 24 round 2 D2).
ROOMY = dataclasses.replace(H200, hbm_capacity_bytes=256 * GiB)

# One layer, one sequence, TP 1 (mamba_utils.py gated_delta_net_state_shape): conv (2 x 16 x 128 + 32 x 128) x 3,
# temporal 32 x 128 x 128 elements.
CONV_ELEMENTS = (2 * 16 * 128 + 32 * 128) * 3          # 24,576
TEMPORAL_ELEMENTS = 32 * 128 * 128                     # 524,288


@pytest.mark.parametrize("engine, ssm, expected", [
    (Engine.vllm, None, CONV_ELEMENTS * 2 + TEMPORAL_ELEMENTS * 2),          # auto: bf16 both, 1,097,728
    (Engine.vllm, DType.fp32, CONV_ELEMENTS * 2 + TEMPORAL_ELEMENTS * 4),    # --mamba-ssm-cache-dtype float32
    (Engine.sglang, None, CONV_ELEMENTS * 2 + TEMPORAL_ELEMENTS * 4),        # SGLang's default float32, 2,146,304
    (Engine.sglang, DType.bf16, CONV_ELEMENTS * 2 + TEMPORAL_ELEMENTS * 2)])
def test_state_bytes_by_engine(engine, ssm, expected):
    (layers,) = state_layers(NEXT, engine, 1, DType.bf16, ssm)
    assert (layers.num_layers, layers.bytes_per_layer) == (36, expected)
    assert layers.bytes_per_sequence == 36 * expected


def test_state_splits_by_tp_and_refuses_what_tp_does_not_divide():
    (tp4,) = state_layers(NEXT, Engine.vllm, 4, DType.bf16)
    assert tp4.bytes_per_layer == (CONV_ELEMENTS * 2 + TEMPORAL_ELEMENTS * 2) // 4
    with pytest.raises(InputError, match="does not divide"):
        state_layers(NEXT, Engine.vllm, 3, DType.bf16)
    with pytest.raises(InputError, match="SGLang takes"):
        state_layers(NEXT, Engine.sglang, 1, DType.bf16, DType.fp16)


@pytest.mark.parametrize("per_token, state, block, expected", [
    (2 * 2 * 256 * 2, 1_097_728, None, 544),    # TP 1, bf16: 16 x ceil(1,097,728 / 32,768) (vLLM's log: 544)
    (2 * 1 * 256 * 2, 274_432, None, 272),      # TP 4: one KV head a GPU, a quarter of the state
    (2 * 2 * 256 * 1, 1_097_728, None, 1072),   # fp8 KV: 16 x ceil(1,097,728 / 16,384)
    (2 * 2 * 256 * 2, 1_097_728, 1024, 1024),   # a larger --block-size is kept
    (2 * 2 * 256 * 2, 1_097_728, 16, 544)])     # a smaller one is raised
def test_vllm_hybrid_block_size(per_token, state, block, expected):
    assert vllm_hybrid_block_size(per_token, state, block) == expected


@pytest.mark.parametrize("mode, state_pages", [(MambaCacheMode.none, 1), (MambaCacheMode.align, 2)])
def test_vllm_v1_layout_and_concurrency(mode, state_pages):
    """12 full + 36 linear layers: group size 12, 1 + 3 groups; a page of 544 tokens x 2,048 bytes; a 32k request
    holds ceil(32,768 / 544) = 61 full-attention blocks and 1 (none) or 2 (align) in each linear group
    (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size, get_max_concurrency_for_kv_cache_config)."""
    settings = vllm(tensor_parallel=1, max_model_len=32768, mamba_cache_mode=mode,
                    cuda_visible_bytes=200 * GiB, utilization=1.0, activation_bytes=0, non_torch_bytes=0)
    s = resolve(settings, NEXT, ROOMY)
    layout = vllm_layout(NEXT, s)
    assert (layout.block_size, layout.num_groups, layout.group_size, layout.state_groups) == (544, 4, 12, 3)
    assert layout.block_bytes == 544 * 2048 * 12
    assert layout.blocks_per_request == 61 + 3 * state_pages
    c = engine_capacity(NEXT, ROOMY, settings)
    blocks = c.kv_cache_bytes // (544 * 2048 * 12)
    assert c.num_blocks == blocks
    assert c.kv_cache_tokens == blocks // 4 * 544        # the tokens line: blocks // groups x block
    assert c.max_concurrency == pytest.approx(blocks / (61 + 3 * state_pages))
    assert c.block_size == 544 and c.lines[0].startswith("Setting attention block size to 544 tokens")


def test_vllm_v1_refuses_more_sequences_than_state_blocks():
    """'max_num_seqs (N) exceeds available Mamba cache blocks (M)' (vLLM PR #38270): a small budget, 1024 seqs."""
    c = engine_capacity(NEXT, H200, vllm(tensor_parallel=4, max_model_len=8192, utilization=0.31))
    assert 0 < c.num_blocks < 1024
    assert any(f"at most {c.num_blocks}" in n and "PR #38270" in n for n in c.notes)
    roomy = engine_capacity(NEXT, H200, vllm(tensor_parallel=4, max_model_len=8192, max_num_seqs=64))
    assert not any("PR #38270" in n for n in roomy.notes)


def test_sglang_state_pool_by_ratio():
    """rest = f x pre - weights; slots = int(rest x 0.9 / 1.9) // P; tokens = (rest - slots P) // cell, the cell
    the 12 full-attention layers' 2 x 2 x 256 x 2 bytes (model_runner_kv_cache_mixin.py handle_max_mamba_cache)."""
    settings = sglang("v0.5", max_model_len=32768, cuda_visible_bytes=140 * GiB, non_torch_bytes=0, utilization=0.9,
                      tensor_parallel=2)
    c = engine_capacity(NEXT, H200, settings)
    pre = 140 * GiB
    rest = pre - int(pre * (1 - 0.9)) - c.term("weights").bytes
    per_request = 36 * ((CONV_ELEMENTS * 2 + TEMPORAL_ELEMENTS * 4) // 2)
    slots = int(rest * 0.9 / 1.9) // per_request
    assert c.state_slots == slots and c.term("mamba_state").bytes == slots * per_request
    cell = 12 * 2 * 1 * 256 * 2          # TP 2: one KV head a GPU
    assert c.kv_cache_tokens == (rest - slots * per_request) // cell
    # max_running_requests: min(max(int(T / 32,768 x 512), 2048), 4096), at most slots // 3, + 1 (sglang.py)
    reqs = min(min(max(int(c.kv_cache_tokens / 32768 * 512), 2048), 4096), slots // 3)
    assert c.max_running_requests == min(c.kv_cache_tokens // 2, reqs + 1)


def test_sglang_state_pool_given_and_ratio_changes_it():
    base = sglang("v0.5", max_model_len=32768, tensor_parallel=4)
    given = engine_capacity(NEXT, H200, dataclasses.replace(base, max_mamba_cache_size=600))
    assert given.state_slots == 600
    assert given.max_running_requests == 600 // 3 + 1
    less = engine_capacity(NEXT, H200, dataclasses.replace(base, mamba_full_memory_ratio=0.3))
    more = engine_capacity(NEXT, H200, base)
    assert less.state_slots < more.state_slots and less.kv_cache_tokens > more.kv_cache_tokens


@pytest.mark.parametrize("tokens, context, expected", [
    (444_500, 131072, 2049),     # sglang#4760's Llama-3.1-8B log: max_running_requests=2049
    (105_531, 131072, 2049),     # the RTX 3090 log: int(105,531 / 131,072 x 512) = 412 -> 2048, + 1
    (4_000_000, 32768, 4097),    # capped at 4096 rows, + 1
    (3000, 131072, 1500)])       # tokens // 2 below the pool
def test_sglang_max_running_requests(tokens, context, expected):
    s = resolve(sglang("v0.4", max_model_len=context), load_model("llama-3-8b"), H200)
    assert max_running_requests(tokens, s) == expected


# --- Mamba hybrids ------------------------------------------------------------------------------------------------
# Jamba-v0.1's shape (support.JAMBA_V01): 28 Mamba-1 layers (d_inner 8,192, d_state 16, d_conv 4) and 4 attention
# layers of 8 KV heads of 128. One layer, one sequence, TP 1 (vLLM v0.11.2 mamba_utils.py mamba1_state_shape):
JAMBA = read_config(JAMBA_V01)
JAMBA_CONV = 8192 * 3                       # (d_inner / tp, d_conv - 1)
JAMBA_TEMPORAL = 8192 * 16                  # (d_inner / tp, d_state)


@pytest.mark.parametrize("engine, ssm, expected", [
    # vLLM: MambaStateDtypeCalculator.mamba1_state_dtype -> _mamba_state_dtype: conv in the model's dtype (auto),
    # temporal in --mamba-ssm-cache-dtype (auto: the conv dtype): 311,296 bytes a layer in bf16
    (Engine.vllm, None, JAMBA_CONV * 2 + JAMBA_TEMPORAL * 2),
    (Engine.vllm, DType.fp32, JAMBA_CONV * 2 + JAMBA_TEMPORAL * 4),
    # SGLang v0.5.23 mamba_utils.py: conv bf16, temporal float32 by default (mamba2_state_dtype): 573,440 bytes
    (Engine.sglang, None, JAMBA_CONV * 2 + JAMBA_TEMPORAL * 4)])
def test_jamba_state_bytes_by_engine(engine, ssm, expected):
    (layers,) = state_layers(JAMBA, engine, 1, DType.bf16, ssm)
    assert (layers.num_layers, layers.bytes_per_layer) == (28, expected)


def test_mamba2_state_at_tp_4_replicates_the_one_group():
    """A Mamba-2 layer of 128 heads of 64, one group, d_state 128, d_conv 4 (Bamba-9B's shape) at TP 4:
    mamba2_state_shape raises n_groups to 4 (extra_groups_for_head_shards(1, 4) = 3), conv (3, (8192 + 2 x 4 x 128)
    / 4) = 3 x 2,304, temporal (128 / 4, 64, 128); vLLM bf16 both."""
    mamba = dataclasses.replace(JAMBA.layer_types["linear"], mixer=LinearMixer.mamba2, ssm_inner=None, ssm_dt_rank=None,
                                ssm_heads=128, ssm_head_dim=64, ssm_groups=1, ssm_state=128)
    model = dataclasses.replace(JAMBA, layer_types={**JAMBA.layer_types, "linear": mamba})
    (layers,) = state_layers(model, Engine.vllm, 4, DType.bf16)
    assert layers.bytes_per_layer == (3 * 2304 + 32 * 64 * 128) * 2
    with pytest.raises(InputError, match="mamba2 state widths"):
        state_layers(model, Engine.vllm, 3, DType.bf16)


def test_jamba_vllm_v1_layout():
    """Attention page a token 2 x 8 x 128 x 2 = 4,096 bytes; block 16 ceil(311,296 / (16 x 4,096)) = 80 tokens
    (HybridAttentionMambaModelConfig, v0.11.2 vllm/model_executor/models/config.py); 4 full and 28 Mamba layers make
    groups of 4: 1 + 7; a 32k request holds ceil(32,768 / 80) = 410 full blocks and 1 per Mamba group (none)."""
    settings = vllm(tensor_parallel=1, max_model_len=32768, cuda_visible_bytes=200 * GiB, utilization=1.0,
                    activation_bytes=0, non_torch_bytes=0)
    layout = vllm_layout(JAMBA, resolve(settings, JAMBA, ROOMY))
    assert (layout.block_size, layout.num_groups, layout.group_size, layout.state_groups) == (80, 8, 4, 7)
    assert layout.block_bytes == 80 * 4096 * 4 and layout.blocks_per_request == 410 + 7
    c = engine_capacity(JAMBA, ROOMY, settings)
    blocks = c.kv_cache_bytes // (80 * 4096 * 4)
    assert c.num_blocks == blocks and c.kv_cache_tokens == blocks // 8 * 80
    assert c.max_concurrency == pytest.approx(blocks / 417)


def test_jamba_sglang_state_pool():
    """28 layers x (8,192 x 3 x 2 + 8,192 x 16 x 4) = 16,056,320 bytes a request; slots = int(rest x 0.9 / 1.9)
    // that; the cell the 4 attention layers' 2 x 8 x 128 x 2 bytes (handle_max_mamba_cache, as for Qwen3-Next)."""
    settings = sglang("v0.5", max_model_len=32768, cuda_visible_bytes=140 * GiB, non_torch_bytes=0, utilization=0.9)
    c = engine_capacity(JAMBA, H200, settings)
    rest = 140 * GiB - int(140 * GiB * (1 - 0.9)) - c.term("weights").bytes
    per_request = 16_056_320
    slots = int(rest * 0.9 / 1.9) // per_request
    assert c.state_slots == slots and c.term("mamba_state").bytes == slots * per_request
    assert c.kv_cache_tokens == (rest - slots * per_request) // (4 * 2 * 8 * 128 * 2)
    assert any("no Jamba model" in n for n in c.notes)
    assert not any("Jamba" in n for n in engine_capacity(NEXT, H200, settings).notes)


def test_vllm_v0_refuses_mamba_layers_by_name():
    with pytest.raises(InputError, match="MambaCacheManager is not modelled"):
        engine_capacity(JAMBA, H200, vllm("v0.6.4", max_model_len=8192))

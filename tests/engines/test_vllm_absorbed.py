"""Tests of vLLM's absorbed MLA copies (rooflab/engines/memory.py vllm_absorbed_bytes): the bf16 W_UK_T / W_UV each
rank keeps of a quantised kv_b_proj, by release, counted in the weights vLLM measures.
"""

from __future__ import annotations

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import engine_capacity
from rooflab.engines.memory import vllm_absorbed_bytes
from rooflab.engines.vocab import Accounting
from rooflab.units import DType
from support import vllm

DEEPSEEK_V3 = load_model("deepseek-v3")
H200 = load_gpu("h200")

#: DeepSeek-V3 / R1 config.json: num_hidden_layers 61 (all MLA), kv_lora_rank 512, num_attention_heads 128,
#: qk_nope_head_dim 128, v_head_dim 128; fp8 128 x 128 blocks (quantization_config), bf16 activations.
LAYERS, D_C, HEADS, D_NOPE, D_V, BF16 = 61, 512, 128, 128, 128, 2


@pytest.mark.parametrize("tp, expected", [(16, 127_926_272), (8, 255_852_544)])
def test_deepseek_r1_by_hand(tp, expected):
    """61 x 512 x (128 / TP) x (128 + 128) x 2 bytes: TP 16 127,926,272 B (0.119 GiB), TP 8 twice that."""
    assert LAYERS * D_C * (HEADS // tp) * (D_NOPE + D_V) * BF16 == expected
    assert vllm_absorbed_bytes(DEEPSEEK_V3, tp, None, Accounting.vllm_v1) == expected


@pytest.mark.parametrize("accounting, release, kept", [
    (Accounting.vllm_v1, None, True), (Accounting.vllm_v1, (0, 20, 2), True), (Accounting.vllm_v1, (0, 9, 1), True),
    (Accounting.vllm_v0_8, (0, 8, 0), True), (Accounting.vllm_v0, None, True), (Accounting.vllm_v0, (0, 8, 1), True),
    # v0.7.x absorbed into q_proj / o_proj instead (not modelled); v0.2 / v0.6.4 cached MLA's full K / V
    (Accounting.vllm_v0, (0, 7, 3), False), (Accounting.vllm_v0_6_4, None, False), (Accounting.vllm_v0_2, None, False),
    (Accounting.sglang_v0_5, None, False)])
def test_by_release(accounting, release, kept):
    got = vllm_absorbed_bytes(DEEPSEEK_V3, 16, None, accounting, release)
    assert got == (127_926_272 if kept else 0)


def test_an_unquantised_kv_b_is_viewed_not_copied():
    """get_and_maybe_dequant_weights returns an UnquantizedLinearMethod layer's own weight: W_UV / W_UK_T are views."""
    assert vllm_absorbed_bytes(DEEPSEEK_V3, 16, DType.bf16, Accounting.vllm_v1) == 0
    assert vllm_absorbed_bytes(load_model("llama-3-8b"), 1, None, Accounting.vllm_v1) == 0


def test_the_weights_term_carries_them():
    """vLLM's weights term at v0.8.4 exceeds v0.7.3's (V0, same weights otherwise) by exactly the copies."""
    args = dict(tensor_parallel=16, max_model_len=8192)
    new = engine_capacity(DEEPSEEK_V3, H200, vllm("v0", release="0.8.4", **args))
    old = engine_capacity(DEEPSEEK_V3, H200, vllm("v0", release="0.7.3", **args))
    assert new.term("weights").bytes - old.term("weights").bytes == 127_926_272
    assert "W_UK_T / W_UV (0.119 GiB)" in new.term("weights").source

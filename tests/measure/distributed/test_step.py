"""The step section's layer stacks (rooflab.measure.distributed.step) are the bundled models' specs: Llama-3-8B and
Qwen3-30B-A3B as their config.json files give them, and their CPU-sized copies keep the structure."""

from __future__ import annotations

from rooflab.load import load_model
from rooflab.measure.distributed.step import LLAMA_3_8B, MODELS, QWEN3_30B_A3B, StepModel


def test_the_models_are_their_config_files():
    # meta-llama/Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32 / 8 heads, intermediate 14336, vocab 128256
    assert LLAMA_3_8B == StepModel("llama-3-8b", 32, 4096, 32, 8, 128, 14336, 128256)
    # Qwen/Qwen3-30B-A3B config.json: 48 layers, hidden 2048, 32 / 4 heads of 128, 128 experts of 768, 8 a token
    assert QWEN3_30B_A3B == StepModel("qwen3-30b-a3b", 48, 2048, 32, 4, 128, 768, 151936, experts=128, top_k=8,
                                      qk_norm=True)
    assert set(MODELS) == {"llama-3-8b", "qwen3-30b-a3b"}


def test_a_dense_spec_has_no_experts_and_tiny_keeps_the_structure():
    dense = StepModel.of(load_model("llama-3-8b"))
    assert not dense.is_moe and dense.top_k == 0
    tiny = QWEN3_30B_A3B.tiny()
    assert tiny.is_moe and tiny.qk_norm and tiny.layers == 2 and tiny.top_k <= tiny.experts

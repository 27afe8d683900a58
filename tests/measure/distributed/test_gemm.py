"""The gemm section's shapes (rooflab.measure.distributed.gemm) come from the model's spec: Llama-3-8B's projections
and MLP as its config.json gives them (hidden 4096, 32 / 8 heads of 128, intermediate 14336, vocabulary 128256)."""

from __future__ import annotations

from rooflab.load import load_model
from rooflab.measure.distributed.gemm import SHAPES, model_shapes


def test_llama_3_8b_gemm_shapes():
    assert SHAPES == {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336),
                      "lm_head": (128256, 4096)}


def test_the_shapes_follow_the_spec():
    qwen = load_model("qwen3-30b-a3b")          # hidden 2048, 32 / 4 heads of 128 (wider than 2048 / 32)
    shapes = model_shapes(qwen)
    assert shapes["qkv"] == ((32 + 2 * 4) * 128, 2048) and shapes["o"] == (2048, 32 * 128)
    assert shapes["lm_head"] == (151936, 2048)

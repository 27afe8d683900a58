"""The MLA projection layouts by engine release (rooflab.step.mla_layout): each fact as read from the engines' wheels
on PyPI (the module docstring names the file and line), and the absorbed matmuls' weight width from the capacity
model's own facts (engines.memory)."""

import pytest

from rooflab.load import load_model
from rooflab.step.mla_layout import MlaLayout, absorbed_weight_bytes, mla_layout_fact
from rooflab.units import WeightFormat


@pytest.mark.parametrize("engine, version, expected", [
    ("vllm", "0.7.0", MlaLayout.separate),              # no MLA backend yet: not modelled
    ("vllm", "0.7.1", MlaLayout.absorbed_into_q_o),     # mla/utils.py W_Q_UK, W_UV_O
    ("vllm", "0.7.3", MlaLayout.absorbed_into_q_o),
    ("vllm", "0.8.0", MlaLayout.separate),              # mla/common.py W_UK_T / W_UV
    ("vllm", "0.9.2", MlaLayout.separate),              # q_a_proj and kv_a_proj_with_mqa apart
    ("vllm", "0.10.0", MlaLayout.fused_qkv_a),          # deepseek_v2.py:411 fused_qkv_a_proj
    ("vllm", "0.29.0", MlaLayout.fused_qkv_a),
    ("sglang", "0.4.3.post2", MlaLayout.separate),
    ("sglang", "0.4.5.post3", MlaLayout.separate),
    ("sglang", "0.4.6", MlaLayout.fused_qkv_a),         # deepseek_v2.py:447 fused_qkv_a_proj_with_mqa
    ("sglang", "0.5.12", MlaLayout.fused_qkv_a),
    ("tensorrt-llm", "0.9.0", MlaLayout.separate),      # not read
    (None, None, MlaLayout.separate),                   # rooflab's own step
])
def test_the_release_facts_pick_the_layout(engine, version, expected):
    layout, why = mla_layout_fact(engine, version)
    assert layout is expected and "MLA projections" in why


def test_the_absorbed_width_follows_the_capacity_facts():
    """DeepSeek-V3 (block fp8): SGLang before v0.4.7 keeps w_kc / w_vc fp8 (a byte a parameter), from v0.4.7 bf16
    (2); vLLM keeps 16-bit copies (the activations' 2 bytes); a bf16 checkpoint is read at 2 everywhere."""
    v3 = load_model("deepseek-v3")
    assert absorbed_weight_bytes("sglang", "0.4.3.post2", v3, 8, None, 2) == 1.0
    assert absorbed_weight_bytes("sglang", "0.5.12", v3, 8, None, 2) == 2.0
    assert absorbed_weight_bytes("vllm", "0.8.0", v3, 8, None, 2) == 2.0
    assert absorbed_weight_bytes(None, None, v3, 8, None, 2) == 2.0
    assert absorbed_weight_bytes("sglang", "0.4.3.post2", v3, 8, WeightFormat.bf16, 2) == 2.0

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


class _G:
    """One priced GEMM as the test reads it: its name, m and k (the quantised input), n = FLOPs / 2 m k, weight."""

    def __init__(self, cost, block, shape):
        self.name, self.block, (self.m, self.k) = cost.kernel.name, block, shape
        self.n = round(float(cost.kernel.flops) / (2 * self.m * self.k))
        self.weight_bytes = float(cost.weight_bytes)


def _shapes(layout, absorbed_bytes=None, decodes=32, prefill=0):
    """One DeepSeek-V3 MLA layer's projections at TP 8 (16 heads a rank), as _mla_projections returns them."""
    from rooflab.deployment import Deployment
    from rooflab.load import load_gpu
    from rooflab.step.gemms import _mla_projections
    from rooflab.step.pricing import step_context

    v3 = load_model("deepseek-v3")
    ctx = step_context(v3, load_gpu("h200-sxm"), Deployment(tensor_parallel=8), mla_layout=layout,
                       absorbed_bytes=absorbed_bytes)
    layer = next(layer for _, layer, _ in v3.layer_walk() if layer.is_latent)
    out = _mla_projections(ctx, layer, decodes + prefill, decodes)
    return out


def _by_name(out):
    return {c.kernel.name: _G(c, block, shape) for c, _, block, shape in out}


def test_the_layouts_launch_the_engines_gemms_by_hand():
    """DeepSeek-V3 (H 7168, r_q 1536, d_c 512, d_R 64, d_nope 128, d_v 128) at TP 8, 16 heads a rank, 32 decodes:
    separate q_a [1536, 7168], kv_a [576, 7168], q_b [3072, 1536], o [7168, 2048], W_UK [8192, 128], W_UV [2048, 512];
    fused_qkv_a one [2112, 7168] for q_a and kv_a (one input quantised); absorbed_into_q_o (vLLM 0.7.x) W_Q_UK
    [8192, 1536], W_UV_O [7168, 8192] in block fp8 and W_QR [1024, 1536] in bf16, no q_b, o or kv_b at decode."""
    sep = _shapes(MlaLayout.separate)
    names = _by_name(sep)
    assert sorted(names) == ["kv_a", "o", "q_a", "q_b", "w_uk", "w_uv"]
    assert (names["q_a"].n, names["q_a"].k) == (1536, 7168) and (names["kv_a"].n, names["kv_a"].k) == (576, 7168)
    assert (names["q_b"].n, names["o"].n, names["o"].k) == (3072, 7168, 2048)
    fused = _shapes(MlaLayout.fused_qkv_a)
    f = _by_name(fused)
    assert sorted(f) == ["o", "q_b", "qkv_a", "w_uk", "w_uv"] and (f["qkv_a"].n, f["qkv_a"].k) == (2112, 7168)
    assert sum(1 for _, _, block, _ in fused if block) == sum(1 for _, _, block, _ in sep if block) - 1
    old = _shapes(MlaLayout.absorbed_into_q_o)
    o = _by_name(old)
    assert sorted(o) == ["kv_a", "q_a", "w_q_uk", "w_qr", "w_uv_o"]
    assert (o["w_q_uk"].n, o["w_q_uk"].k) == (8192, 1536) and (o["w_uv_o"].n, o["w_uv_o"].k) == (7168, 8192)
    assert (o["w_qr"].n, o["w_qr"].k) == (1024, 1536)
    assert not o["w_qr"].block and o["w_uv_o"].block     # W_QR bf16 (not requantised), W_UV_O block fp8


def test_prefill_rows_run_the_raw_gemms_under_every_layout():
    """16 prefill rows beside 32 decodes: kv_b's GEMM over the 16 (and, under vLLM 0.7.x's layout, q_b and o over
    them too, the absorbed weights over the 32)."""
    old = _shapes(MlaLayout.absorbed_into_q_o, prefill=16)
    o = _by_name(old)
    assert (o["kv_b"].m, o["q_b"].m, o["o"].m, o["w_q_uk"].m, o["q_a"].m) == (16, 16, 16, 32, 48)
    sep = _shapes(MlaLayout.separate, prefill=16)
    s = _by_name(sep)
    assert (s["kv_b"].m, s["q_b"].m, s["w_uk"].m) == (16, 48, 32)


def test_the_absorbed_matmuls_read_their_weights_at_the_width_given():
    """W_UK [16 x 512, 128]: 1,048,576 parameters, at 2 bytes (vLLM's 16-bit copies, the default) or 1 (SGLang
    0.4.3's fp8 w_kc)."""
    two = _shapes(MlaLayout.separate)
    one = _shapes(MlaLayout.separate, absorbed_bytes=1.0)
    assert _by_name(two)["w_uk"].weight_bytes == 16 * 512 * 128 * 2
    assert _by_name(one)["w_uk"].weight_bytes == 16 * 512 * 128 * 1

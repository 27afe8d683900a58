"""Tests of rooflab/specs/layers.py: the per-kind questions a LayerType answers for the rest of the package (issue 25:
no `kind is ...` branch outside this module), each pinned against the formula it stands for."""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import SpecError, load_model
from rooflab.specs import AttentionHeads, LayerType, LinearMixer
from rooflab.units import DType
from rooflab.vocab import LayerKind

HEADS = AttentionHeads(32, 8, 128)
FULL = LayerType(LayerKind.full)
SLIDING = LayerType(LayerKind.sliding, window=1024)
CHUNKED = LayerType(LayerKind.chunked, chunk=8192)
MLA = LayerType(LayerKind.mla, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128)
LINEAR = LayerType(LayerKind.linear, linear_num_key_heads=16, linear_num_value_heads=32, linear_key_head_dim=128,
                   linear_value_head_dim=128, linear_conv_kernel=4)


def test_which_kinds_are_full_latent_or_attention():
    assert FULL.is_full and not SLIDING.is_full and not MLA.is_full and not LINEAR.is_full
    assert MLA.is_latent and not FULL.is_latent
    assert SLIDING.is_windowed and CHUNKED.is_windowed and not FULL.is_windowed and not MLA.is_windowed
    assert all(t.is_attention for t in (FULL, SLIDING, CHUNKED, MLA)) and not LINEAR.is_attention


def test_which_kinds_project_as_qkv_and_o():
    assert FULL.has_qkv_projections and SLIDING.has_qkv_projections and CHUNKED.has_qkv_projections
    assert not MLA.has_qkv_projections and not LINEAR.has_qkv_projections


def test_key_bytes_are_the_keys_share_or_the_whole_latent():
    assert FULL.key_bytes(8 * 256 * 2, HEADS) == 8 * 128 * 2           # K of K and V: d / (d + d_v)
    mixed = AttentionHeads(16, 16, 192, 128)                             # d 192, d_v 128
    assert FULL.key_bytes(16 * 320 * 2, mixed) == 16 * 192 * 2
    assert MLA.key_bytes(1152, HEADS) == 1152                             # SGLang: the latent is the K buffer


def test_vllm_groups_mla_with_full_and_windows_by_their_size():
    assert MLA.allocator_group == FULL.allocator_group == (LayerKind.full, None, None)
    assert SLIDING.allocator_group == (LayerKind.sliding, 1024, None)
    assert CHUNKED.allocator_group == (LayerKind.chunked, None, 8192)


@pytest.mark.parametrize("layer, length, batched, page, pages", [
    (FULL, 32768, 8192, 16, 2048),                                 # ceil(L / P)
    (MLA, 32768, 8192, 64, 512),
    (SLIDING, 32768, 2048, 16, -(-(1024 - 1 + 2048) // 16) + 1),  # ceil((W - 1 + batched) / P) + 1
    (SLIDING, 1000, 2048, 16, -(-1000 // 16) + 1),                # at most the length
    (CHUNKED, 32768, 2048, 16, (8192 + 2048) // 16),              # ceil((C + batched) / P)
    (CHUNKED, 4096, 2048, 16, 4096 // 16),
])
def test_request_pages_as_vllm_v1_counts_them(layer, length, batched, page, pages):
    assert layer.request_pages(length, batched, page) == pages


def test_rotary_dims():
    assert FULL.rotary_dim(HEADS) == 128 and MLA.rotary_dim(HEADS) == 64 and LINEAR.rotary_dim(HEADS) == 0


def test_a_linear_state_divides_over_tensor_parallel_rounding_up():
    whole = LINEAR.state_bytes_per_sequence(DType.bf16)
    assert whole == (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2
    # The fullest GPU of 3 keeps ceil(32 / 3) = 11 value heads' states and ceil(8192 / 3) = 2731 conv channels
    # (each width rounded up on its own, as KV heads are; the engines refuse such a TP: state_split_problem).
    assert LINEAR.state_bytes_per_sequence(DType.bf16, 3) == (11 * 128 * 128 + 3 * 2731) * 2
    assert LINEAR.state_split_problem(3) and LINEAR.state_split_problem(4) is None
    assert FULL.state_bytes_per_sequence(DType.bf16, 4) == 0


def test_qwen3_next_keeps_its_state_split_over_tp():
    """kvcache.kv_layout asks the layer type for the state one GPU keeps (it once branched on the kind itself)."""
    from rooflab.kvcache import kv_layout

    model = load_model("qwen3-next-80b-a3b")
    one, two = (kv_layout(model, 4096, DType.bf16, 16, tp) for tp in (1, 2))
    linear = [k for k in one.layers if k.state_bytes]
    assert linear and all(b.state_bytes == -(-a.state_bytes // 2) for a, b in zip(one.layers, two.layers)
                          if a.state_bytes)


# --- Mamba mixers -------------------------------------------------------------------------------------------------
# Jamba-v0.1's Mamba-1 layer (transformers 5.24.0 JambaConfig defaults: hidden 4096 x mamba_expand 2, d_state 16,
# d_conv 4) and a Mamba-2 layer of Bamba-9B's shape (128 heads of 64, one group, d_state 128, d_conv 4).
MAMBA1 = LayerType(LayerKind.linear, mixer=LinearMixer.mamba1, ssm_inner=8192, ssm_state=16, ssm_dt_rank=256,
                   linear_conv_kernel=4)
MAMBA2 = LayerType(LayerKind.linear, mixer=LinearMixer.mamba2, ssm_heads=128, ssm_head_dim=64, ssm_groups=1,
                   ssm_state=128, linear_conv_kernel=4)


@pytest.mark.parametrize("layer, tp, conv, temporal", [
    # vLLM v0.11.2 mamba_utils.py mamba1_state_shape: (d_inner / tp, K - 1) and (d_inner / tp, d_state)
    (MAMBA1, 1, 8192 * 3, 8192 * 16),
    (MAMBA1, 4, 2048 * 3, 2048 * 16),
    # mamba2_state_shape: conv (K - 1, (d_inner + 2 G N) / tp), temporal (n_heads / tp, head_dim, d_state); at TP 4
    # n_groups 1 becomes 1 + extra_groups_for_head_shards(1, 4) = 4: (8192 + 2 x 4 x 128) / 4 = 2304 channels
    (MAMBA2, 1, 3 * (8192 + 2 * 1 * 128), 128 * 64 * 128),
    (MAMBA2, 4, 3 * 2304, 32 * 64 * 128),
    # Gated DeltaNet, unchanged: conv (2 h_k d_k + h_v d_v) / tp x (K - 1), temporal h_v / tp x d_v x d_k
    (LINEAR, 2, 3 * 4096, 16 * 128 * 128)])
def test_state_elements_as_vllm_shapes_them(layer, tp, conv, temporal):
    assert layer.state_elements(tp) == (conv, temporal)
    assert layer.state_bytes_per_sequence(DType.bf16, tp) == (conv + temporal) * 2


def test_mamba2_groups_that_divide_tp_are_not_replicated():
    eight = dataclasses.replace(MAMBA2, ssm_groups=8)
    assert eight.state_elements(4)[0] == 3 * (8192 + 2 * 8 * 128) // 4     # 8 % 4 == 0: no extra groups
    assert MAMBA2.state_split_problem(4) is None and MAMBA2.state_split_problem(3)
    assert MAMBA1.state_split_problem(3) and not MAMBA1.state_split_problem(8)
    assert FULL.state_split_problem(3) is None and FULL.state_elements(3) == (0, 0)      # no state to split


def test_mamba_layers_need_their_fields_and_refuse_others():
    with pytest.raises(SpecError, match="ssm_head_dim"):
        LayerType(LayerKind.linear, mixer=LinearMixer.mamba2, ssm_heads=128, ssm_groups=1, ssm_state=128,
                  linear_conv_kernel=4)
    with pytest.raises(SpecError, match="linear_num_key_heads"):
        dataclasses.replace(MAMBA1, linear_num_key_heads=16)
    with pytest.raises(SpecError, match="mixer"):
        LayerType(LayerKind.full, mixer=LinearMixer.mamba1)
    with pytest.raises(SpecError, match="must divide ssm_heads"):
        dataclasses.replace(MAMBA2, ssm_groups=3)
    assert MAMBA1.linear_mixer is LinearMixer.mamba1 and LINEAR.linear_mixer is LinearMixer.gated_deltanet
    assert FULL.linear_mixer is None and MAMBA2.ssm_width == 8192 and not MAMBA2.is_attention
    assert MAMBA2.describe() == "linear (mamba2, state 128 x 64 x 128)"

"""A model's weights (rooflab/specs/weights.py): every bundled model's parameter count against the published one,
and the bytes its weights take on a GPU and a step reads, from one loop over the components.

Published counts and what each includes are in each YAML's comment and parameters_note; the config.json
files and where they were copied from are listed in tests/data/hf_configs/SOURCES.md.
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import available, load_model
from rooflab.specs.weights import bytes_read_per_step
from rooflab.units import DType


BUNDLED = available("models")


#: Published counts are rounded figures (671B, 80B) or exact ones; the derived count leaves out small terms
#: (q/k norms, output gates, expert biases: below 0.6% of any bundled model). 1% holds them all.
PARAMETER_TOLERANCE = 0.01


def llama4_scout_vision_parameters() -> int:
    """Llama 4 Scout's vision encoder and projector: counted in the published 109B, not modelled by rooflab.

    The shapes of transformers' Llama4VisionModel and Llama4MultiModalProjector for Scout's vision_config
    (width 1408, 34 layers with biases, MLP 5632, 14-pixel patches of 336-pixel images, a pixel-shuffle
    MLP 4 x 1408 -> 4096 -> 4096, a projector 4096 -> the text model's 5120): 871,932,416 parameters.
    """
    d, layers, mlp, positions = 1408, 34, 5632, (336 // 14) ** 2 + 1
    embeddings = d + positions * d + 3 * 14 * 14 * d + 2 * 2 * d   # class token, positions, patches, 2 norms
    layer = 4 * (d * d + d) + (d * mlp + mlp) + (mlp * d + d) + 2 * 2 * d
    adapter = 4 * d * 4096 + 4096 * 4096
    projector = 4096 * 5120
    return embeddings + layers * layer + adapter + projector


#: Parameters a published count includes that rooflab's spec does not describe.
NOT_MODELLED = {"llama-4-scout": llama4_scout_vision_parameters()}


# --- parameter counts -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", BUNDLED)
def test_derived_parameters_within_1_percent_of_the_published_count(name):
    m = load_model(name)
    assert m.name == name and m.num_parameters is not None, "every bundled model gives its published count"
    derived = m.derived_parameters + NOT_MODELLED.get(name, 0)
    assert derived == pytest.approx(m.num_parameters, rel=PARAMETER_TOLERANCE)


def test_what_the_published_count_includes_is_stated():
    new = ("deepseek-v3", "gpt-oss-120b", "gpt-oss-20b", "gemma-3-27b", "qwen3-32b", "qwen3-235b-a22b",
           "llama-4-scout", "qwen3-next-80b-a3b", "mistral-7b-v0.1")
    assert all(load_model(name).parameters_note for name in new)


def test_llama4_scout_vision_tower_by_its_shapes():
    assert llama4_scout_vision_parameters() == 871_932_416
    derived = load_model("llama-4-scout").derived_parameters
    assert derived == 107_769_861_120                           # the text model
    assert (derived + llama4_scout_vision_parameters()) / 1e9 == pytest.approx(108.64, abs=0.01)  # "109B"


# --- weight bytes: what a GPU holds and what a step reads, one loop -------------------------------------------

def test_weight_bytes_per_gpu():
    # every parameter in the weight dtype, split evenly and rounded up per GPU
    m = load_model("llama-3-70b")
    assert m.weight_bytes(DType.fp16) == 2 * m.total_parameters
    # an fp8 override converts the linear layers only: embeddings, LM head and norms stay in bf16 (issue 28)
    kept = m.parameters.embeddings + m.parameters.lm_head + m.parameters.norms
    scale = m.total_parameters / m.derived_parameters
    assert m.weight_bytes(DType.fp8_e4m3, 3) == pytest.approx((m.total_parameters + kept * scale) / 3, abs=2)


@pytest.mark.parametrize("name", BUNDLED)
def test_a_step_reading_every_expert_reads_what_one_gpu_holds(name):
    """The two prices of the weights come from one loop: with every expert read, a step reads the bytes a single
    GPU holds (up to weight_bytes' rounding up), in the checkpoint's formats and under an override alike, less a
    vision tower (held in the checkpoint's dtype, never read by a text step)."""
    m = load_model(name)
    vision = m.vision_parameters * (m.weight_dtype or DType.bf16).bytes
    for dtype in (None, DType.fp8_e4m3):
        assert bytes_read_per_step(m, 1.0, dtype) == pytest.approx(m.weight_bytes(dtype) - vision, abs=1)
    if m.is_moe:
        share = m.num_experts_per_token / m.num_experts
        routed = m.parameters.experts * (1 - share) * m.weight_format("experts").bits_per_weight / 8
        scale = m.total_parameters / m.derived_parameters
        assert bytes_read_per_step(m, share) == pytest.approx(m.weight_bytes() - routed * scale, rel=1e-9)


def test_kept_unquantized_parameters_are_held_and_read_in_the_checkpoint_dtype():
    """gpt-oss's experts are mxfp4 (4.25 bits); parameters a checkpoint keeps unquantized stay in bf16 for both."""
    oss = load_model("gpt-oss-120b")
    kept = dataclasses.replace(oss, unquantized_parameters={"experts": 10**9})
    extra = 10**9 * (16 - 4.25) / 8 * (oss.total_parameters / oss.derived_parameters)
    assert kept.weight_bytes() - oss.weight_bytes() == pytest.approx(extra, abs=2)
    assert bytes_read_per_step(kept, 1.0) - bytes_read_per_step(oss, 1.0) == pytest.approx(extra, rel=1e-9)
    assert kept.weight_bytes(DType.fp8_e4m3) == oss.weight_bytes(DType.fp8_e4m3)   # an override converts them too


def test_a_vision_tower_is_held_on_every_gpu_but_not_read_by_a_text_step():
    text = dataclasses.replace(load_model("llama-3-8b"), num_parameters=None)
    vlm = dataclasses.replace(text, vision_parameters=10**9)
    assert vlm.weight_bytes(tensor_parallel=2) - text.weight_bytes(tensor_parallel=2) == 2 * 10**9
    assert bytes_read_per_step(vlm, 1.0) == bytes_read_per_step(text, 1.0) == text.weight_bytes()


def test_gemma_3_27b_holds_its_siglip_tower_in_bf16():
    """The -it checkpoint's tower and projector (423,060,336 parameters, rooflab/hf/vision.py) at 2 bytes each on
    top of the text model's published 27,016M (models/gemma-3-27b.yaml), on every GPU under TP."""
    vlm = load_model("gemma-3-27b")
    text = dataclasses.replace(vlm, vision_parameters=0, image_tokens=0, image_input_elements=0,
                               num_parameters=27_016_000_000)
    for tp in (1, 2):
        assert vlm.weight_bytes(tensor_parallel=tp) - text.weight_bytes(tensor_parallel=tp) == \
            pytest.approx(2 * 423_060_336, abs=1)


def test_the_old_module_name_still_answers():
    from rooflab.specs import parameters, weights

    assert parameters.count_parameters is weights.count_parameters
    assert parameters.attention_parameters is weights.attention_parameters


def test_a_mamba_layers_parameters_by_the_modules_shapes():
    """One Mamba layer's weights, summed by hand from transformers 5.24.0's modules (JambaMambaMixer; BambaMixer,
    the same in GraniteMoeHybridMambaLayer), in Jamba-v0.1's and Bamba-9B's shapes (H 4096, d_inner 8192)."""
    from rooflab.specs import AttentionHeads, LayerType, LinearMixer
    from rooflab.specs.weights import attention_parameters
    from rooflab.vocab import LayerKind

    heads = AttentionHeads(32, 8, 128)
    mamba1 = LayerType(LayerKind.linear, mixer=LinearMixer.mamba1, ssm_inner=8192, ssm_state=16, ssm_dt_rank=256,
                       linear_conv_kernel=4)
    # in_proj 4096 x 16384, conv1d 8192 x 4 + 8192 bias, x_proj 8192 x (256 + 32), dt_proj 256 x 8192 + 8192,
    # A_log 8192 x 16, D 8192, dt/b/c norms 256 + 16 + 16, out_proj 8192 x 4096
    assert attention_parameters(mamba1, heads, 4096, False) == (
        67_108_864 + 40_960 + 2_359_296 + 2_105_344 + 131_072 + 8_192 + 288 + 33_554_432)
    mamba2 = LayerType(LayerKind.linear, mixer=LinearMixer.mamba2, ssm_heads=128, ssm_head_dim=64, ssm_groups=1,
                       ssm_state=128, linear_conv_kernel=4)
    # in_proj 4096 x (8192 z + 8448 xBC + 128 dt), conv1d 8448 x 4 + 8448 bias, dt_bias, A_log, D 128 each,
    # gated norm 8192, out_proj 8192 x 4096
    assert attention_parameters(mamba2, heads, 4096, False) == (
        68_681_728 + 42_240 + 384 + 8_192 + 33_554_432)


# --- what every tensor-parallel rank holds whole (issue 28) ---------------------------------------------------
# vLLM's and SGLang's models/deepseek_v2.py build q_a_proj and kv_a_proj_with_mqa (fused_qkv_a_proj) and the MoE
# gate as replicated linear layers; every MoE model's router gate likewise (mixtral.py, qwen3_moe.py, ...).

FP8_BLOCK_BITS = 8 + 32 / (128 * 128)      # e4m3 plus one fp32 scale per 128 x 128 block, per weight


def test_deepseek_v3_replicated_parts_by_hand():
    """DeepSeek-V3 (config.json): H 7168, r_q 1536, d_c 512, d_R 64, 61 MLA layers, 58 MoE layers, 256 experts."""
    m = load_model("deepseek-v3")
    q_a = 7168 * 1536 + 1536                          # q_a_proj and q_a_layernorm
    kv_a = 7168 * (512 + 64) + 512                    # kv_a_proj_with_mqa and kv_a_layernorm
    router = 58 * 7168 * 256
    assert dict(m.parameters.tp_replicated) == {"attention": 61 * (q_a + kv_a), "router": router}
    assert 61 * (q_a + kv_a) == 923_592_704 and router == 106_430_464
    whole_bytes = (61 * (q_a + kv_a) * FP8_BLOCK_BITS + router * 16) / 8     # down-projections fp8, router bf16
    scale = 671e9 / m.derived_parameters                                     # the published 671B
    all_of_it = m.weight_bytes(None, 1)
    for tp in (8, 16):
        # bytes = (all - whole) / TP + whole = all / TP + whole (1 - 1 / TP), all scaled to the published count
        extra = whole_bytes * (1 - 1 / tp) * scale
        assert m.weight_bytes(None, tp) == pytest.approx(all_of_it / tp + extra, abs=2)
    assert whole_bytes * (1 - 1 / 16) * scale / 2**30 == pytest.approx(0.992, abs=0.001)   # GiB more at TP 16


def test_mixtral_router_is_held_whole_at_tp2():
    """Mixtral-8x7B: 32 layers x H 4096 x 8 experts of bf16 router, half of it more per GPU at TP 2."""
    m = load_model("mixtral-8x7b")
    assert dict(m.parameters.tp_replicated) == {"router": 32 * 4096 * 8}
    assert m.weight_bytes(None, 2) == m.weight_bytes(None, 1) // 2 + 32 * 4096 * 8 * 2 // 2


def test_a_dense_model_splits_evenly():
    m = load_model("llama-3.1-8b")
    assert m.parameters.tp_replicated == ()
    assert m.weight_bytes(None, 2) == m.weight_bytes(None, 1) // 2


def test_data_parallel_attention_counts_the_down_projections_once():
    """With attention split 1 way (`splits`) the whole attention component is on every GPU; its down-projections
    are in it, not counted again."""
    m = load_model("deepseek-v3")
    router_extra = 106_430_464 * 16 / 8 * (1 - 1 / 8) * (671e9 / m.derived_parameters)
    attention = m.parameters.attention * FP8_BLOCK_BITS / 8 * (1 - 1 / 8) * (671e9 / m.derived_parameters)
    assert m.weight_bytes(None, 8, splits={"attention": 1}) == pytest.approx(
        m.weight_bytes(None, 1) / 8 + router_extra + attention, abs=2)


def test_a_component_split_its_own_ways_keeps_its_replicated_part_whole():
    """splits={"attention": 2} under TP 8: attention's split part / 2, its MLA down-projections (replicated) whole,
    every other component / 8, so the difference from TP 8 is the split part x (1/2 - 1/8)."""
    m = load_model("deepseek-v3")
    scale = 671e9 / m.derived_parameters
    down = dict(m.parameters.tp_replicated)["attention"]
    split_part = (m.parameters.attention - down) * FP8_BLOCK_BITS / 8 * scale
    assert m.weight_bytes(None, 8, splits={"attention": 2}) - m.weight_bytes(None, 8) == pytest.approx(
        split_part * (1 / 2 - 1 / 8), abs=2)


def test_deepseek_v3_bytes_per_gpu_at_tp8_and_tp16_by_hand():
    """DeepSeek-V3's weights a GPU under TP, every term from its config.json (models/deepseek-v3.yaml): H 7168,
    vocab 129,280, 61 MLA layers (128 heads, d_nope 128, d_R 64, d_v 128, r_q 1536, d_c 512), 3 dense layers of
    18,432, 58 MoE layers of 256 experts and 1 shared expert of 2,048. Linear layers fp8 with one fp32 scale per
    128 x 128 block (8 + 32 / 16,384 bits a weight, as WeightFormat.fp8_block averages it); embeddings, lm_head,
    norms and the router bf16. Scaled to the published 671B. Per GPU, R the replicated bits, S all of them:

        bytes = ceil(((S - R) / TP + R) x 671e9 / derived / 8)
        R = 61 (q_a 7168 x 1536 + 1536 + kv_a 7168 x 576 + 512) x fp8 + 58 x 7168 x 256 x 16
    """
    from fractions import Fraction
    import math

    fp8, bf16 = Fraction(8) + Fraction(32, 128 * 128), Fraction(16)
    h, vocab = 7168, 129_280
    q_a, q_b = h * 1536 + 1536, 1536 * 128 * (128 + 64)
    kv_a, kv_b = h * (512 + 64) + 512, 512 * 128 * (128 + 128)
    o = 128 * 128 * h
    attention = 61 * (q_a + q_b + kv_a + kv_b + o)
    dense, experts, shared = 3 * 3 * h * 18_432, 58 * 256 * 3 * h * 2048, 58 * 1 * 3 * h * 2048
    router, norms, embeddings = 58 * h * 256, 61 * 2 * h + h, vocab * h
    derived = 2 * embeddings + attention + dense + experts + shared + router + norms
    all_bits = (2 * embeddings + router + norms) * bf16 + (attention + dense + experts + shared) * fp8
    whole_bits = 61 * (q_a + kv_a) * fp8 + router * bf16
    scale = Fraction(671 * 10**9, derived)
    m = load_model("deepseek-v3")
    assert m.derived_parameters == derived
    by_hand = {tp: math.ceil(((all_bits - whole_bits) / tp + whole_bits) * scale / 8) for tp in (8, 16)}
    assert by_hand == {8: 85_135_046_687, 16: 43_135_840_539}
    assert {tp: m.weight_bytes(None, tp) for tp in (8, 16)} == by_hand
    # everything split (rooflab before 4696a30): 84,140,491,595 at TP 8
    assert math.ceil(all_bits / 8 * scale / 8) == 84_140_491_595


def test_mixtral_bytes_per_gpu_at_tp2_by_hand():
    """Mixtral-8x7B (config.json): H 4096, vocab 32,000, 32 layers of 32 / 8 heads of 128, 8 experts of 14,336,
    all bf16; the derived count is the published 46,702,792,704 exactly, so no scale. At TP 2 each GPU holds half of
    everything but the router, 32 x 4096 x 8, which it holds whole:

        bytes = (46,702,792,704 - 1,048,576) x 2 / 2 + 1,048,576 x 2 = 46,703,841,280
    """
    m = load_model("mixtral-8x7b")
    router = 32 * 4096 * 8
    total = 2 * 32_000 * 4096 + 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024) + 32 * 8 * 3 * 4096 * 14_336 + router \
        + 32 * 2 * 4096 + 4096
    assert total == m.derived_parameters == m.total_parameters == 46_702_792_704
    assert m.weight_bytes(None, 2) == (total - router) * 2 // 2 + router * 2 == 46_703_841_280


def test_a_dense_models_bytes_are_unchanged_by_replication():
    """Llama-3-70B has no replicated part: TP 8 is an eighth of every parameter in bf16, rounded up."""
    m = load_model("llama-3-70b")
    assert m.parameters.tp_replicated == ()
    assert m.weight_bytes(DType.bf16, 8) == -(-2 * m.total_parameters // 8)


def test_the_lightning_indexer_is_held_whole_on_every_rank():
    """DeepSeek-V3.2 (tests/data/hf_configs/deepseek-v3.2.json): V3's layers plus an indexer a layer, wq_b
    1536 x 64 x 128 + wk 7168 x 128 + k_norm 2 x 128 + weights_proj 7168 x 64, replicated by vLLM (v0.20.2
    deepseek_v2.py Indexer) and SGLang (v0.5.3 nsa_indexer.py). Neither config gives a published count (no
    scale), so at TP 8 V3.2 holds the whole indexer in fp8 more than V3 does."""
    from fractions import Fraction
    from pathlib import Path

    from rooflab.hf import from_hf_config
    from rooflab.hf.read import read_json
    from rooflab.specs.weights import indexer_parameters, mla_down_parameters

    configs = Path(__file__).parent.parent / "data" / "hf_configs"
    v32, v3 = (from_hf_config(read_json(configs / n), n) for n in ("deepseek-v3.2.json", "deepseek-v3.json"))
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    layer = v32.layer_types["mla"]
    assert indexer_parameters(layer, 7168) == indexer and indexer_parameters(v3.layer_types["mla"], 7168) == 0
    assert dict(v32.parameters.tp_replicated)["attention"] == 61 * (mla_down_parameters(layer, 7168) + indexer)
    fp8 = Fraction(8) + Fraction(32, 128 * 128)
    assert v32.weight_bytes(None, 8) - v3.weight_bytes(None, 8) == pytest.approx(61 * indexer * fp8 / 8, abs=2)


# --- the components, one closed set (reviewer's finding 6) ------------------------------------------------------------

@pytest.mark.parametrize("splits, named", [({"atention": 2}, "'atention'"), ({"attention": 0}, "splits['attention']"),
                                           ({"attention": -1}, "splits['attention']"),
                                           ({"lm_head": 2.5}, "splits['lm_head']"),
                                           ({"embeddings": True}, "splits['embeddings']"), ([("attention", 2)], "mapping")])
def test_weight_bytes_refuses_a_split_it_cannot_apply_naming_the_key(splits, named):
    """A misspelt component was ignored (the weights counted as if no split were given), {'attention': 0} raised
    ZeroDivisionError and {'attention': -1} took attention's bytes off the total. The keys are WeightComponent's
    members (or their names) and the ways whole numbers >= 1; anything else an InputError naming the key."""
    from rooflab.errors import InputError
    from rooflab.specs.weights import weight_bytes
    from support import refused

    llama = load_model("llama-3-8b")
    refused(lambda: weight_bytes(llama, None, 2, splits=splits), named, error=InputError)


def test_the_components_are_one_enum_that_names_and_members_both_key():
    """ParameterCount.by_component, dp_attention_splits and a stage's shares are keyed by WeightComponent; a name
    given as text splits the same as its member (Llama-3-8B, TP 2, attention whole: its 1,342,177,280 bf16
    parameters a GPU, 2 bytes x 1/2 more than split), and every component is one of ParameterCount's fields."""
    from rooflab.capacity.stages import pipeline_stages
    from rooflab.capacity.weight_split import dp_attention_splits
    from rooflab.specs.weights import ParameterCount, WeightComponent, weight_bytes

    llama = load_model("llama-3-8b")
    assert list(llama.parameters.by_component()) == list(WeightComponent)
    assert {f.name for f in dataclasses.fields(ParameterCount)} >= {c.value for c in WeightComponent}
    assert set(dp_attention_splits(8, 2)) <= set(WeightComponent)
    assert set(pipeline_stages(llama, 2)[0].shares(llama)) == set(WeightComponent)
    member = weight_bytes(llama, None, 2, splits={WeightComponent.attention: 1})
    assert member == weight_bytes(llama, None, 2, splits={"attention": 1})
    assert member - weight_bytes(llama, None, 2) == 1_342_177_280 * 2 // 2

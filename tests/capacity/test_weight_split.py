"""SGLang's weights a GPU where it does not split a component TP ways (rooflab/capacity/weight_split.py): data-
parallel attention's layout by release and v0.4.6's fused shared-expert copies, in engine mode (engines/memory.py)
and in the capacity plan, by hand from DeepSeek-V3's config.json (models/deepseek-v3.yaml): H 7168, vocab 129,280,
61 MLA layers of 128 heads (d_nope 128, d_R 64, d_v 128, r_q 1536, d_c 512), 58 MoE layers with one shared expert of
2,048; linear layers fp8 with an fp32 scale a 128 x 128 block, embeddings and lm_head bf16; scaled to the published
671B as weights.weight_bytes scales. Below the TP size (--tp T --enable-dp-attention --dp N, N < T) each of the N
attention ranks keeps its own sequences over T / N GPUs' KV heads."""

from fractions import Fraction

import pytest

from rooflab.capacity import gpu_weight_bytes, plan_capacity
from rooflab.capacity.weight_split import dp_attention_splits
from rooflab.deployment import Deployment
from rooflab.engines import EngineSettings, engine_capacity, parse_accounting
from rooflab.engines.memory import engine_weight_bytes, sglang_absorbed_bytes
from rooflab.errors import InputError
from rooflab.kvcache import kv_layout
from rooflab.load import load_gpu, load_model
from rooflab.units import DType

V3 = load_model("deepseek-v3")
H100, A100, H200 = load_gpu("h100-sxm"), load_gpu("a100-80gb"), load_gpu("h200-sxm")
SGLANG = parse_accounting("sglang", "v0.4")
FP8_BLOCK = Fraction(8) + Fraction(32, 128 * 128)        # bits a weight
SCALE = Fraction(671 * 10**9, V3.derived_parameters)     # the published count over the derived one
LAYERS, HEADS, HIDDEN, VOCAB = 61, 128, 7168, 129_280
Q_B, KV_B, O = 1536 * HEADS * 192, 512 * HEADS * 256, HEADS * 128 * HIDDEN   # an MLA layer's split projections


def weights(tp=16, dp=1, release=None, gpu=H100):
    return engine_weight_bytes(V3, tp, None, 1, dp, None, SGLANG, gpu, release)[0]


def weights(tp=16, dp=1, release=None, gpu=H100):
    return engine_weight_bytes(V3, tp, None, 1, dp, None, SGLANG, gpu, release)[0]


def test_dp_attention_16_over_tp_16_by_hand_at_v0_4_6():
    """At v0.4.6 (dp = tp = 16) a GPU holds attention's split projections and the embedding whole, the lm_head
    split 16 ways as under TP, and its absorbed copies for all 128 heads: against TP 16 alone,

        + 61 (q_b + kv_b + o) fp8-block x 15/16 + 129,280 x 7168 x 2 bytes x 15/16   (x 671e9 / derived)
        + 61 x 512 x 128 x 256 x 15/16 bytes
    """
    split = LAYERS * (Q_B + KV_B + O) * FP8_BLOCK / 8 * SCALE * Fraction(15, 16)
    embed = VOCAB * HIDDEN * 2 * SCALE * Fraction(15, 16)
    absorbed = LAYERS * KV_B * Fraction(15, 16)
    delta = weights(dp=16, release=(0, 4, 6)) - weights(dp=1, release=(0, 4, 6))
    assert delta == pytest.approx(float(split + embed + absorbed), abs=4)


def test_lm_head_whole_through_v0_4_4_split_from_v0_4_5():
    """deepseek_v2.py: ReplicatedLinear(hidden, vocab) under DP attention up to v0.4.4, ParallelLMHead from v0.4.5:
    the two differ by the lm_head's 129,280 x 7168 bf16 x 15/16 (v0.4.4 and v0.4.5 also share the fp8 copies)."""
    lm_head = VOCAB * HIDDEN * 2 * SCALE * Fraction(15, 16)
    assert weights(dp=16, release=(0, 4, 4)) - weights(dp=16, release=(0, 4, 5)) == pytest.approx(
        float(lm_head), abs=4)


def test_partial_dp_attention_splits_attention_and_from_v0_5_8_the_embedding_over_tp_over_dp():
    """--tp 16 --dp 4: attention over 4 GPUs; the embedding whole up to v0.5.7, over the attention TP group (4)
    from v0.5.8 (VocabParallelEmbedding(use_attn_tp_group=True)); both releases keep bf16 copies."""
    assert dp_attention_splits(16, 4, (0, 5, 7)) == {"attention": 4, "embeddings": 1, "lm_head": 16}
    assert dp_attention_splits(16, 4, (0, 5, 8)) == {"attention": 4, "embeddings": 4, "lm_head": 16}
    embed = VOCAB * HIDDEN * 2 * SCALE * (1 - Fraction(1, 4))
    assert weights(dp=4, release=(0, 5, 7)) - weights(dp=4, release=(0, 5, 8)) == pytest.approx(float(embed), abs=4)
    split = LAYERS * (Q_B + KV_B + O) * FP8_BLOCK / 8 * SCALE * (Fraction(1, 4) - Fraction(1, 16))
    absorbed = LAYERS * KV_B * 2 * (Fraction(1, 4) - Fraction(1, 16))
    embed_tp = VOCAB * HIDDEN * 2 * SCALE * (Fraction(1, 4) - Fraction(1, 16))
    assert weights(dp=4, release=(0, 5, 8)) - weights(dp=1, release=(0, 5, 8)) == pytest.approx(
        float(split + absorbed + embed_tp), abs=4)


def test_partial_dp_attention_is_refused_before_v0_4_5_with_the_reason():
    """v0.4.3.post2 and v0.4.4 server_args.py set dp_size = tp_size under DP attention."""
    with pytest.raises(InputError, match="v0.4.4 sets --dp to --tp"):
        weights(dp=4, release=(0, 4, 4))
    settings = EngineSettings(accounting=SGLANG, tensor_parallel=16, attention_data_parallel=4, release=(0, 4, 4))
    with pytest.raises(InputError):
        engine_capacity(V3, H100, settings)


def test_v0_4_6_holds_the_shared_expert_whole_on_hopper_only():
    """v0.4.6's determine_n_share_experts_fusion clones TP copies of the shared expert into the MoE on compute
    capability 9.0+, each split TP ways: one whole shared expert a GPU, 58 x 3 x 7168 x 2048 fp8-block x 15/16
    more than v0.4.5 at TP 16 (both keep fp8 copies); an A100 (8.0) keeps it split."""
    shared = 58 * 3 * HIDDEN * 2048 * FP8_BLOCK / 8 * SCALE * Fraction(15, 16)
    assert weights(release=(0, 4, 6)) - weights(release=(0, 4, 5)) == pytest.approx(float(shared), abs=4)
    assert weights(release=(0, 4, 6), gpu=A100) == weights(release=(0, 4, 5), gpu=A100)
    assert weights(release=(0, 4, 7)) - sglang_absorbed_bytes(V3, 16, None, (0, 4, 7)) == \
        weights(release=(0, 4, 5)) - sglang_absorbed_bytes(V3, 16, None, (0, 4, 5))


def test_v0_4_6_fuses_the_shared_expert_under_expert_parallelism_too():
    """The fusion's gate is DeepEP, not EP (v0.4.6 and v0.4.6.post1 deepseek_v2.py determine_n_share_experts_fusion:
    `not enable_deepep_moe`): under --enable-ep-moe (ep_size = tp_size) the EPMoE holds 256 + 8 experts at TP 8,
    (256 + 8) / 8 = 33 a GPU whole (ep_moe/layer.py num_experts_per_partition), the 32 routed and one shared
    expert's bytes: 58 x 3 x 7168 x 2048 fp8-block x 7/8 more than v0.4.5's shared expert split 8 ways. It was
    gated on EP 1, so EP 8 counted v0.4.5's bytes."""
    def ep8(release):
        return engine_weight_bytes(V3, 8, None, 8, 1, None, SGLANG, H200, release)[0]

    shared = 58 * 3 * HIDDEN * 2048 * FP8_BLOCK / 8 * SCALE * Fraction(7, 8)
    assert ep8((0, 4, 6)) - ep8((0, 4, 5)) == pytest.approx(float(shared), abs=4)
    assert ep8((0, 4, 6, 1)) == ep8((0, 4, 6))
    assert "the shared expert whole on every GPU" in engine_weight_bytes(V3, 8, None, 8, 1, None, SGLANG, H200,
                                                                         (0, 4, 6))[1]


def test_capacity_and_engine_mode_split_dp_attention_by_one_rule():
    """The plain capacity bound (and the step, through gpu_weight_bytes) takes the newest release's layout: the
    engine's weights less its rotary cache and absorbed copies at the label's release (v0.4.5: fp8 copies;
    engines.vocab.label_release)."""
    from rooflab.engines.memory import rotary_cache_bytes
    from rooflab.engines.vocab import label_release

    engine = weights(dp=16) - rotary_cache_bytes(V3) - sglang_absorbed_bytes(V3, 1, release=label_release(SGLANG))
    assert gpu_weight_bytes(V3, None, 16, 1, 16) == engine


def test_llama_70b_tp8_dp2_keeps_two_kv_heads_a_gpu_and_two_groups_of_sequences():
    """Llama-3-70B (8 KV heads) at TP 8, attention DP 2: 2 KV heads a GPU (8 / (8 / 2)), 80 layers x 2 x 2 x 128 x
    2 bytes = 81,920 bytes a token; the group serves 2 x (budget // a sequence's bytes)."""
    model = load_model("llama-3-70b")
    plan = plan_capacity(model, H200, 4096, deployment=Deployment(tensor_parallel=8, attention_data_parallel=2))
    assert plan.kv_heads_per_gpu == 2
    assert plan.kv_bytes_per_token == 80 * 2 * 2 * 128 * 2
    per_sequence = kv_layout(model, 4096, DType.bf16, 16, 4).bytes_per_sequence
    assert plan.max_sequences_paged == 2 * (plan.kv_budget_bytes // per_sequence)
    assert plan.weights_bytes == gpu_weight_bytes(model, None, 8, 1, 2)


def test_partial_dp_sits_between_tp_and_full_dp_attention():
    """DeepSeek-V3 at TP 16: attention DP 4 holds more weights a GPU than TP alone and fewer than DP 16."""
    model = load_model("deepseek-v3")
    w = [gpu_weight_bytes(model, None, 16, 1, n) for n in (1, 4, 16)]
    assert w[0] < w[1] < w[2]
    plan = plan_capacity(model, H200, 8192, deployment=Deployment(tensor_parallel=16, attention_data_parallel=4))
    assert plan.weights_bytes == w[1] and plan.dp_attention


def test_full_dp_attention_is_the_flag():
    model = load_model("llama-3-70b")
    flag = plan_capacity(model, H200, 4096, tensor_parallel=8, dp_attention=True)
    dep = plan_capacity(model, H200, 4096, deployment=Deployment(tensor_parallel=8, attention_data_parallel=8))
    assert flag.max_sequences_paged == dep.max_sequences_paged and flag.kv_heads_per_gpu == 8
    assert flag.weights_bytes == dep.weights_bytes


# --- SGLang's switch under another engine (hostile round session12: D41) --------------------------------------------

def test_sglangs_dp_attention_is_refused_under_vllm_naming_vllms_spelling():
    """D41: --enable-dp-attention is SGLang's (attention over TP / DP inside the TP group). capacity --engine vllm
    took it and printed 'SGLang's layout' beside vLLM's absorbed W_UK_T / W_UV over all of TP, one report counting
    kv_b two ways; vLLM's data-parallel attention is --data-parallel-size N (each rank's attention over its own
    TP group). Refused, not counted: in EngineSettings (capacity --engine vllm) and in the step (--engine vllm)."""
    from rooflab.capacity.weight_split import check_dp_attention_engine
    from rooflab.cli import app
    from rooflab.vocab import Engine
    from typer.testing import CliRunner

    check_dp_attention_engine(Engine.sglang, 8)
    check_dp_attention_engine(None, 8)
    check_dp_attention_engine(Engine.vllm, 1)
    with pytest.raises(InputError, match="vLLM's is --data-parallel-size N"):
        check_dp_attention_engine(Engine.vllm, 2)
    with pytest.raises(InputError, match="--enable-dp-attention --dp 2 is SGLang's"):
        EngineSettings(accounting=parse_accounting("vllm", None), tensor_parallel=8, attention_data_parallel=2)
    runner = CliRunner()
    for command in (["capacity", "-m", "deepseek-v3", "-g", "h200-sxm", "--tp", "8"],
                    ["report", "--phase", "step", "-m", "deepseek-v3", "-g", "h200-sxm", "-tp", "8"]):
        r = runner.invoke(app, command + ["--enable-dp-attention", "--dp", "2", "--engine", "vllm"])
        assert r.exit_code == 2 and "--data-parallel-size" in r.output and "--enable-dp-attention" in r.output
        assert len(r.output.strip().splitlines()) <= 2


def test_an_sglang_release_that_is_not_numbers_is_refused():
    with pytest.raises(InputError, match="an SGLang release must be a tuple of numbers"):
        dp_attention_splits(8, 2, "0.5.7")
    with pytest.raises(InputError, match="an SGLang release must be a tuple of numbers"):
        plan_capacity(V3, H200, 1024, deployment=Deployment(tensor_parallel=8, attention_data_parallel=2),
                      dp_attention_release=(0, 5, "7"))

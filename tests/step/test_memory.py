"""Tests of rooflab/step/memory.py: the KV cache a GPU of the step holds, and the fit check."""

from __future__ import annotations

import pytest

from rooflab.capacity import tensor_parallel_sizes
from rooflab.load import available, load_gpu, load_model
from rooflab.step.memory import kv_bytes
from rooflab.units import DType


@pytest.mark.parametrize("name", available("models"))
def test_tensor_parallel_never_increases_the_kv_per_gpu(name):
    model = load_model(name)
    kv = [kv_bytes(model, 4, 8192, DType.bf16, 16, tp, 1) for tp in tensor_parallel_sizes(model)]
    assert kv == sorted(kv, reverse=True)
    assert [model.kv_bytes_per_token(DType.bf16, tp) for tp in tensor_parallel_sizes(model)] == \
        sorted((model.kv_bytes_per_token(DType.bf16, tp) for tp in tensor_parallel_sizes(model)), reverse=True)


def test_a_split_by_position_holds_its_share_of_every_page():
    model = load_model("llama-3-8b")
    one = kv_bytes(model, 2, 8192, DType.bf16, 16, 1, 1)
    assert one == 2 * 32 * 8192 * 2 * 8 * 128 * 2                     # B x L x T x (K and V) x h_kv x d x 2 bytes
    assert kv_bytes(model, 2, 8192, DType.bf16, 16, 1, 4) == one / 4  # 512 pages: 128 on each of 4 GPUs


# --- one path with rooflab capacity (issue 24, hostile round 2: D14, D18, D19) -----------------------------------

def test_a_draft_model_holds_its_weights_and_its_kv_beside_the_target():
    """D14: a draft model is loaded beside the target, split over the target's TP (vLLM v0.11.2's
    draft_tensor_parallel_size default), with a KV cache of its own. llama-3.2-1b: 1.23B published parameters
    x 2 bytes (bf16) = 2,460,000,000; its KV a token 16 layers x 2 (K, V) x 8 KV heads x 64 x 2 bytes = 32,768,
    so 8,192 tokens hold 268,435,456."""
    from rooflab.deployment import Deployment, Speculative
    from rooflab.step import step_report

    model, gpu = load_model("llama-3-8b"), load_gpu("h200-sxm")
    plain = step_report(model, gpu, 1, 8192)
    draft = step_report(model, gpu, 1, 8192, deployment=Deployment(
        speculative=Speculative("draft_model", 2, draft_model="llama-3.2-1b")))
    assert draft.draft_weight_bytes_per_gpu == 1_230_000_000 * 2
    assert draft.draft_kv_bytes_per_gpu == 8192 * 16 * 2 * 8 * 64 * 2
    assert draft.weight_bytes_per_gpu == plain.weight_bytes_per_gpu + 2_460_000_000
    assert draft.kv_bytes_per_gpu == plain.kv_bytes_per_gpu + 268_435_456
    assert any("draft model llama-3.2-1b" in n for n in draft.notes)


def test_a_draft_model_counts_in_the_memory_check():
    """D14: the check takes the draft's weights off the KV budget and its KV per sequence: rooflab capacity's budget
    B = floor(0.9 x HBM) - weights holds floor(B / 1 GiB) sequences of 8,192 tokens of llama-3-8b (32 x 2 x 8 x 128
    x 2 bytes a token: 1 GiB), floor((B - 2.46e9) / (1 GiB + 268,435,456)) with the draft beside it."""
    from rooflab.capacity import plan_capacity
    from rooflab.deployment import Deployment, Speculative
    from rooflab.errors import InputError
    from rooflab.step import step_report

    model, gpu = load_model("llama-3-8b"), load_gpu("h200-sxm")
    budget = plan_capacity(model, gpu, 8192).kv_budget_bytes
    alone, with_draft = budget // (1 << 30), (budget - 2_460_000_000) // ((1 << 30) + 268_435_456)
    dep = Deployment(speculative=Speculative("draft_model", 2, draft_model="llama-3.2-1b"))
    step_report(model, gpu, alone, 8192)
    step_report(model, gpu, with_draft, 8192, deployment=dep)
    with pytest.raises(InputError, match=f"holds {with_draft:,} sequences"):
        step_report(model, gpu, with_draft + 1, 8192, deployment=dep)


def test_fp8_ds_mla_is_capacitys_layout():
    """D18: the step's KV under --kv-cache-dtype fp8_ds_mla (Deployment.mla_sparse_fp8) is capacity's: 656 bytes a
    token a layer (512 fp8 latent + 4 fp32 scales + 64 bf16 rope: specs.layers.MLA_SPARSE_FP8_BYTES), so
    DeepSeek-V3's 61 layers hold 8,192 x 61 x 656 = 327,811,072 bytes for one 8,192-token sequence."""
    from rooflab.capacity import plan_capacity
    from rooflab.deployment import Deployment
    from rooflab.step import step_report

    model, gpu = load_model("deepseek-v3"), load_gpu("h200-sxm")
    dep = Deployment(tensor_parallel=8, mla_sparse_fp8=True)
    assert dep.kv_cache_dtype is DType.fp8_e4m3
    step = step_report(model, gpu, 1, 8192, deployment=dep)
    assert step.kv_bytes_per_gpu == 8192 * 61 * (512 + 4 * 4 + 64 * 2) == 327_811_072
    assert plan_capacity(model, gpu, 8192, deployment=dep).kv_bytes_per_sequence == 327_811_072


def test_pipeline_stages_hold_capacitys_binding_stage():
    """D19: under --pp the step's bytes a GPU are capacity's binding stage, not the mean over stages. gemma-2-9b
    (42 layers, [sliding, full] from layer 0, 8 KV heads of 256: 8,192 bytes a token a layer in bf16) at --pp 2:
    vLLM's split gives 21 layers a stage; stage 1 (layers 21-41: 11 full, 10 sliding) holds 11 x 8,192 tokens +
    10 x (4,096 / 16 + 1) pages x 16 tokens = 131,232 token-layers x 8,192 = 1,075,052,544 bytes a sequence (the mean
    over both stages, 1,058,340,864, is what the step printed). Both stages hold the tied 256,000 x 3,584 embedding
    (the last for the LM head), so a stage holds half the weights plus half the embedding's 2 x 256,000 x 3,584
    bytes (the final norm and the published count's scale move it by 3 parts in a million)."""
    from rooflab.capacity import plan_capacity
    from rooflab.deployment import Deployment
    from rooflab.step import step_report

    model, gpu = load_model("gemma-2-9b"), load_gpu("h200-sxm")
    dep = Deployment(pipeline_parallel=2)
    step = step_report(model, gpu, 1, 8192, deployment=dep)
    plan = plan_capacity(model, gpu, 8192, deployment=dep)
    assert step.kv_bytes_per_gpu == (11 * 8192 + 10 * (4096 // 16 + 1) * 16) * 8192 == 1_075_052_544
    assert (step.weight_bytes_per_gpu, step.kv_bytes_per_gpu) == (plan.weights_bytes, plan.kv_bytes_per_sequence)
    half = model.weight_bytes() / 2
    assert step.weight_bytes_per_gpu == pytest.approx(half + 256_000 * 3584, rel=5e-6)


def test_pipeline_stages_outside_capacity_take_the_stage_that_holds_most():
    """D19: where capacity does not plan the deployment (--dp 2 with --pp 2) the step counts each stage with
    capacity's own function (capacity.gpu_weight_bytes with the stage's shares) and keeps the stage that holds
    most: llama-3-8b's last stage adds the final norm (4,096 x 2 bytes) and the LM head equals the embedding, so it
    holds 8,192 bytes more than the first; a stage's 16 layers keep 8,192 x 16 x 2 x 8 x 128 x 2 bytes of KV."""
    from rooflab.capacity import gpu_weight_bytes
    from rooflab.capacity.stages import pipeline_stages
    from rooflab.deployment import Deployment
    from rooflab.step import step_report

    model, gpu = load_model("llama-3-8b"), load_gpu("h200-sxm")
    first, last = (gpu_weight_bytes(model, None, 1, stage=s) for s in pipeline_stages(model, 2))
    assert last - first == 4096 * 2            # the final norm
    step = step_report(model, gpu, 2, 8192, deployment=Deployment(pipeline_parallel=2, data_parallel=2))
    assert step.weight_bytes_per_gpu == last
    assert step.kv_bytes_per_gpu == 8192 * 16 * 2 * 8 * 128 * 2


# --- SGLang's DP-attention layout at the step's release (hostile round session12: D39) ----------------------------

def test_the_steps_weights_under_dp_attention_follow_the_engine_release_as_capacity_does():
    """D39: report --phase step --engine sglang --engine-version V takes V's layout (capacity.weight_split, the rule
    `capacity --engine sglang` uses). DeepSeek-V3 (config.json: vocab 129,280, hidden 7,168; embedding bf16) at
    TP 8, attention DP 2: v0.5.7 keeps the embedding whole, v0.5.8 splits it over TP / DP = 4 GPUs, so the step's
    weights differ by 129,280 x 7,168 x 2 B x 3/4 = 1,390,018,560 x 671e9 / derived parameters = 1,389,963,864 B:
    88,068,184,002 at v0.5.7, 86,678,220,138 at v0.5.8 (and with no engine, v0.5.10's)."""
    from fractions import Fraction

    from rooflab.capacity import gpu_weight_bytes
    from rooflab.deployment import Deployment
    from rooflab.step import step_report

    model, gpu = load_model("deepseek-v3"), load_gpu("h200-sxm")
    dep = Deployment(tensor_parallel=8, attention_data_parallel=2)

    def weights(version=None):
        return step_report(model, gpu, 8, 1024, deployment=dep, engine="sglang" if version else None,
                           engine_version=version).weight_bytes_per_gpu

    scale = Fraction(671 * 10**9, model.derived_parameters)
    embedding = 129_280 * 7_168 * 2 * Fraction(3, 4) * scale
    assert weights("0.5.7") == 88_068_184_002 == gpu_weight_bytes(model, None, 8, 1, 2, release=(0, 5, 7))
    assert weights("0.5.8") == weights() == 86_678_220_138
    assert weights("0.5.7") - weights("0.5.8") == pytest.approx(float(embedding), abs=4)
    assert weights("0.5") == weights("0.5.10")          # a label: its accounting's newest release, as capacity reads it


def test_the_step_refuses_a_dp_attention_layout_its_release_never_ran():
    """D39: SGLang v0.4.4 sets --dp to --tp under DP attention (server_args.py), so TP 8 DP 2 at v0.4.4 is refused
    by the step as by capacity --engine sglang, naming --dp; DP 8 is planned."""
    from rooflab.deployment import Deployment
    from rooflab.errors import InputError
    from rooflab.step import step_report

    model, gpu = load_model("deepseek-v3"), load_gpu("h200-sxm")
    with pytest.raises(InputError, match="--dp 2 under --tp 8: SGLang v0.4.4 sets --dp to --tp"):
        step_report(model, gpu, 8, 1024, deployment=Deployment(tensor_parallel=8, attention_data_parallel=2),
                    engine="sglang", engine_version="0.4.4")
    step_report(model, gpu, 8, 1024, deployment=Deployment(tensor_parallel=8, attention_data_parallel=8),
                engine="sglang", engine_version="0.4.4")


# --- an MTP / EAGLE head's weights and KV pages (hostile round 16b) ----------------------------------------------

def _head(method, tp=1):
    from rooflab.deployment import Deployment, Speculative

    return Deployment(tensor_parallel=tp, speculative=Speculative(method, 3))


def test_an_eagle_head_holds_one_decoder_layer_and_its_kv_pages():
    """vLLM keeps an EAGLE head's KV in the target's pool (v0.11.0 v1/spec_decode/eagle.py:813-831,
    v1/worker/gpu_model_runner.py:4051-4052): Llama-3-8B's head is one of its 32 decoder layers, so its KV a
    sequence of 8,192 tokens is 1 GiB / 32 = 33,554,432 bytes (1/33 of the pool). Its weights, by hand: a layer's
    attention 4096 x (4096 + 2 x 1024 + 4096) = 41,943,040 and MLP 3 x 4096 x 14,336 = 176,160,768 parameters, norms
    (2 x 4096 x 32 + 4096) / 32 = 8,320, at 2 bytes: 436,224,256; EAGLE's fc 2H x H x 2 bytes = 67,108,864
    (llama_eagle.py:74-76); the lm_head and embeddings are the target's (eagle.py:854-890): 503,333,120."""
    from rooflab.step.memory import draft_memory

    model = load_model("llama-3-8b")
    name, weights, kv = draft_memory(_head("eagle"), DType.bf16, 8192, model=model)
    assert kv == kv_bytes(model, 1, 8192, DType.bf16, 16, 1, 1) / 32 == 33_554_432
    assert weights == (41_943_040 + 176_160_768 + 8_320) * 2 + 67_108_864 == 503_333_120
    assert name == "eagle head of llama-3-8b"


def test_eagle3s_wider_fc_and_mtps_own_lm_head():
    """EAGLE-3's fc takes three hidden states (3H x H, llama_eagle3.py:131-138): H x H x 2 bytes more than EAGLE's
    (Llama-3-8B: 33,554,432). DeepSeek's MTP layer holds its own lm_head (deepseek_mtp.py:35-37, :141-144): on
    DeepSeek-V3 at TP 8, 129,280 x 7,168 x 2 bytes / 8 = 231,669,760 more than an EAGLE head (to the spec's
    published-count scale, 1e-4)."""
    from rooflab.step.memory import draft_memory

    llama, v3 = load_model("llama-3-8b"), load_model("deepseek-v3")
    eagle, eagle3 = (draft_memory(_head(m), DType.bf16, 8192, model=llama)[1] for m in ("eagle", "eagle3"))
    assert eagle3 - eagle == 4096 * 4096 * 2
    mtp, eagle = (draft_memory(_head(m, 8), DType.bf16, 8192, model=v3)[1] for m in ("mtp", "eagle"))
    assert mtp - eagle == pytest.approx(129_280 * 7_168 * 2 / 8, rel=1e-4)


def test_deepseek_v3s_mtp_layer_is_one_of_its_61_layers_of_kv():
    """DeepSeek-V3's MTP module is one MTP layer (num_nextn_predict_layers 1): its MLA latent a token is one of the
    61 layers' (512 + 64) x 2 bytes, 8,192 tokens: 9,437,184 bytes, replicated on every TP rank."""
    from rooflab.step.memory import draft_memory

    v3 = load_model("deepseek-v3")
    kv = draft_memory(_head("mtp", 8), DType.bf16, 8192, model=v3)[2]
    assert kv == (512 + 64) * 2 * 8192 == kv_bytes(v3, 1, 8192, DType.bf16, 16, 8, 1) / 61


def test_a_head_counts_in_the_steps_figures_and_its_memory_check():
    """The step's weights and KV hold the head's (the figures above), and the check takes its weights off capacity's
    KV budget B: floor((B - 503,333,120) / (1 GiB + 33,554,432)) sequences of 8,192 tokens of llama-3-8b."""
    from rooflab.capacity import plan_capacity
    from rooflab.errors import InputError
    from rooflab.step import step_report

    model, gpu = load_model("llama-3-8b"), load_gpu("h200-sxm")
    plain = step_report(model, gpu, 1, 8192)
    head = step_report(model, gpu, 1, 8192, deployment=_head("eagle"))
    assert head.weight_bytes_per_gpu == plain.weight_bytes_per_gpu + 503_333_120
    assert head.kv_bytes_per_gpu == plain.kv_bytes_per_gpu + 33_554_432
    assert any("eagle head of llama-3-8b" in n for n in head.notes)
    budget = plan_capacity(model, gpu, 8192).kv_budget_bytes
    fits = (budget - 503_333_120) // ((1 << 30) + 33_554_432)
    assert fits < budget // (1 << 30)
    step_report(model, gpu, fits, 8192, deployment=_head("eagle"))
    with pytest.raises(InputError, match=f"holds {fits:,} sequences"):
        step_report(model, gpu, fits + 1, 8192, deployment=_head("eagle"))


def test_ngram_and_no_target_hold_no_draft_memory():
    """n-gram drafting holds nothing on the GPU; a head without the target model is not counted (every caller
    passes it)."""
    from rooflab.deployment import Deployment, Speculative
    from rooflab.step.memory import draft_memory

    model = load_model("llama-3-8b")
    assert draft_memory(Deployment(speculative=Speculative("ngram", 3)), DType.bf16, 8192, model=model) == ("", 0, 0.0)
    assert draft_memory(_head("eagle"), DType.bf16, 8192) == ("", 0, 0.0)

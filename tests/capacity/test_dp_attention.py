"""Capacity under data-parallel attention inside the TP group (--tp T --enable-dp-attention --dp N), N below T:
each of the N attention ranks keeps its own sequences over T / N GPUs' KV heads, and the weights are laid out as
capacity.weight_split says (attention over T / N, the embedding over T / N at the newest release read, the lm_head
over T)."""

from rooflab.capacity import gpu_weight_bytes, plan_capacity
from rooflab.deployment import Deployment
from rooflab.kvcache import kv_layout
from rooflab.load import load_gpu, load_model
from rooflab.units import DType

H200 = load_gpu("h200-sxm")


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

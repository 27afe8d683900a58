"""Tests of rooflab/capacity/plan.py: the capacity planner (test_curve.py and test_position_split.py hold the
closed-form curve's and the position split's).

Tensor-parallel plans per GPU (70B needs two H100s), the smallest deployment when nothing fits, shared
prefixes, paging and fp8 KV, a workload that does not fit as an answer and weights that do not fit as an
error, expert parallelism counted on the busiest GPU, frames; bad arguments (numbers past 2**64, long lists, NaN, prefixes as long as the
context, a runaway split search) refused naming the argument, and NumPy scalars and dtype names accepted.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from rooflab.capacity import plan_capacity, smallest_deployment, tensor_parallel_sizes
from rooflab.cost.paged import paged_decode
from rooflab.engines.memory import engine_weight_bytes
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.paging import shared_prefix_blocks
from rooflab.units import DType, GiB, KiB
from support import HUGE, heads, refused


LLAMA8 = load_model("llama-3-8b")
LLAMA70 = load_model("llama-3-70b")
H100 = load_gpu("h100-sxm")


def test_tensor_parallel_sizes():
    assert tensor_parallel_sizes(LLAMA70, 16) == [1, 2, 4, 8, 16]
    assert tensor_parallel_sizes(LLAMA8) == [1, 2, 4, 8]


# --- the planner with tensor parallelism ----------------------------------------------------

def test_tensor_parallel_plan_is_per_gpu():
    one = plan_capacity(LLAMA8, H100, 4096)
    two = plan_capacity(LLAMA8, H100, 4096, tensor_parallel=2)
    assert two.tensor_parallel == 2 and two.kv_heads_per_gpu == 4
    assert two.weights_bytes == -(-LLAMA8.total_parameters * 2 // 2)
    assert two.kv_bytes_per_token == one.kv_bytes_per_token // 2
    assert two.kv_budget_bytes == two.usable_bytes - two.weights_bytes
    # half the KV per GPU and more budget per GPU: more than twice the sequences
    assert two.max_sequences_paged > 2 * one.max_sequences_paged


def test_seventy_b_needs_two_h100s_and_gains_sequences_with_more():
    with pytest.raises(InputError, match="do not fit"):
        plan_capacity(LLAMA70, H100, 8192)
    with pytest.raises(InputError, match="split 2 ways"):
        plan_capacity(LLAMA70, H100, 8192, gpu_memory_utilization=0.5, tensor_parallel=2)
    smallest = smallest_deployment(LLAMA70, H100, 8192)
    assert smallest.tensor_parallel == 2 and smallest.max_sequences_paged >= 1
    plans = [plan_capacity(LLAMA70, H100, 8192, tensor_parallel=tp) for tp in (2, 4, 8)]
    seqs = [p.max_sequences_paged for p in plans]
    assert seqs == sorted(seqs) and seqs[-1] > 10 * seqs[0]


def test_smallest_deployment_when_nothing_fits():
    with pytest.raises(InputError, match="up to 8 x h100-sxm"):
        smallest_deployment(load_model("llama-3.1-405b"), H100, 8192, gpu_memory_utilization=0.3)


# --- prefix sharing in the planner --------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(prefix=st.integers(0, 6000), extra=st.integers(1, 6000), page=st.sampled_from([1, 16, 256]),
       reserve_gib=st.integers(0, 50))
def test_shared_prefix_sequences_are_the_most_the_blocks_hold(prefix, extra, page, reserve_gib):
    context = prefix + extra
    plan = plan_capacity(LLAMA8, H100, context, page_size=page, shared_prefix_len=prefix,
                         activation_reserve_bytes=reserve_gib * 2**30)
    n = plan.max_sequences_shared_prefix
    # counted independently with the block accounting of paging.py
    if n:
        assert shared_prefix_blocks(prefix, [extra] * n, page).total_blocks <= plan.num_blocks
    assert shared_prefix_blocks(prefix, [extra] * (n + 1), page).total_blocks > plan.num_blocks
    assert n >= plan.max_sequences_paged


def test_no_prefix_means_no_change_and_bad_prefix_is_refused():
    plan = plan_capacity(LLAMA8, H100, 4096)
    assert plan.shared_prefix_len == 0 and plan.max_sequences_shared_prefix == plan.max_sequences_paged
    with pytest.raises(InputError, match="shared prefix"):
        plan_capacity(LLAMA8, H100, 4096, shared_prefix_len=5000)


LLAMA = load_model("llama-3-8b")


def test_capacity_plan_arithmetic():
    plan = plan_capacity(LLAMA, H100, 8192)
    assert plan.kv_bytes_per_token == 128 * KiB
    assert plan.weights_bytes == LLAMA.total_parameters * 2
    assert plan.kv_budget_bytes == int(H100.hbm_capacity_bytes * 0.9) - plan.weights_bytes
    assert plan.num_blocks == plan.kv_budget_bytes // (16 * 128 * KiB)
    assert plan.max_sequences_paged == plan.num_blocks // 512
    assert plan.max_context_len == plan.num_blocks * 16
    # at the model's own max length, paging and max-length reservation hold the same sequences
    assert plan.max_sequences_paged == plan.max_sequences_contiguous == 56
    assert plan.reason is None


def test_paging_fits_more_short_sequences():
    plan = plan_capacity(LLAMA, H100, 2000)
    assert plan.max_sequences_contiguous == 56          # 8192 tokens reserved per request
    assert plan.max_sequences_paged == plan.num_blocks // 125
    assert plan.paging_gain > 4


def test_fp8_kv_doubles_tokens():
    fp16 = plan_capacity(LLAMA, H100, 4096)
    fp8 = plan_capacity(LLAMA, H100, 4096, kv_dtype=DType.fp8_e4m3)
    assert fp8.kv_bytes_per_token * 2 == fp16.kv_bytes_per_token
    assert fp8.max_context_len == pytest.approx(2 * fp16.max_context_len, rel=1e-3)


def test_workload_that_does_not_fit_is_an_answer():
    plan = plan_capacity(LLAMA, H100, 10_000_000)
    assert plan.max_sequences_paged == 0 and "longest that fits" in plan.reason
    starved = plan_capacity(LLAMA, H100, 1000, activation_reserve_bytes=200 * GiB)
    assert starved.max_sequences_paged == 0 and starved.kv_budget_bytes == 0 and "no memory left" in starved.reason


def test_weights_that_do_not_fit_are_an_error():
    with pytest.raises(InputError, match="do not fit"):
        plan_capacity(load_model("llama-3.1-405b"), H100, 4096)


LONG_LIST = [8192] * (2**16 + 1)


@pytest.mark.parametrize("argument, name", [("context_len", "context length"), ("page_size", "page size"),
                                            ("max_model_len", "max model length"),
                                            ("activation_reserve_bytes", "reserve"),
                                            ("shared_prefix_len", "prefix")])
def test_plan_capacity_refuses_ints_past_2_64(llama, h100, argument, name):
    kwargs = {"context_len": 8192, argument: HUGE}
    refused(lambda: plan_capacity(llama, h100, **kwargs), name)


@pytest.mark.parametrize("call, name", [
    (lambda m, g: plan_capacity(m, g, LONG_LIST), "context length"),
    (lambda m, g: plan_capacity(m, g, 8192, page_size=LONG_LIST), "page size"),
    (lambda m, g: plan_capacity(m, g, 8192, gpu_memory_utilization=LONG_LIST), "utilisation"),
    (lambda m, g: paged_decode(heads(), [8192], 16, num_splits=LONG_LIST), "splits"),
])
def test_a_long_list_where_a_number_belongs_is_not_printed_whole(llama, h100, call, name):
    refused(lambda: call(llama, h100), name)


H200 = load_gpu("h200-sxm")


@pytest.mark.parametrize("model_name, tp", [("llama-3-8b", 1), ("gemma-2-9b", 1), ("qwen3-next-80b-a3b", 2)])
def test_capacity_plan_frame(model_name, tp):
    # full, sliding-window and linear (recurrent state) layer types
    plan = plan_capacity(load_model(model_name), H200, 8192, tensor_parallel=tp)
    one = plan.to_frame()
    assert len(one) == 1 and "layers" not in one.columns
    expected = {k: v for k, v in plan.to_dict().items() if k != "layers"}
    assert {k: one[k].item() for k in expected} == expected
    assert one.paging_gain.item() == plan.paging_gain
    layers = plan.to_frame(layers=True)
    assert len(layers) == len(plan.layers) and layers.index.name == "layer_type"
    # the layer types' shares add up to the plan's bytes per sequence
    assert layers.bytes_per_sequence.sum() == plan.kv_bytes_per_sequence


def test_smallest_deployment_is_a_plan_with_a_frame():
    plan = smallest_deployment(load_model("llama-3-70b"), H100, 8192)
    assert plan.to_frame().tensor_parallel.item() == plan.tensor_parallel > 1


def test_capacity_refuses_a_prefix_as_long_as_the_context_and_nan_reserves():
    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    with pytest.raises(InputError, match="shorter than the context"):
        plan_capacity(model, gpu, 8192, shared_prefix_len=8192)
    for reserve in (float("nan"), float("inf"), -1):
        with pytest.raises(InputError, match="activation reserve"):
            plan_capacity(model, gpu, 8192, activation_reserve_bytes=reserve)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(gpu_memory_utilization=0), "utilisation"),
    (dict(gpu_memory_utilization=1.01), "utilisation"),
    (dict(page_size=0), "page size"),
    (dict(activation_reserve_bytes=-1), "activation reserve"),
])
def test_plan_capacity_bad_input(kwargs, needle):
    with pytest.raises(InputError, match=needle):
        plan_capacity(load_model("llama-3-8b"), load_gpu("h100-sxm"), 4096, **kwargs)


@pytest.mark.parametrize("kwargs, named", [
    ({"expert_parallel": 0}, "expert parallel"),             # a ZeroDivisionError from Fraction(n, 0) once
    ({"expert_parallel": 2, "tensor_parallel": 2}, "no routed experts"),   # llama-3-8b is dense: --ep was ignored
    ({"expert_parallel": 2}, "TP x PCP x DP"),               # EP spans GPUs of the TP (x PCP x DP) group
    ({"weight_dtype": "nope"}, "weight_dtype"),              # ValueError from the enum once
    ({"kv_dtype": "nope"}, "kv_dtype"),
    ({"window_allocation": "nope"}, "window_allocation"),
    ({"dp_attention": "yes"}, "dp_attention"),
    ({"gpu_memory_utilization": "0.9"}, "utilisation"),
])
def test_plan_capacity_names_a_bad_argument(kwargs, named):
    with pytest.raises(InputError, match=named):
        plan_capacity(load_model("llama-3-8b"), load_gpu("h100-sxm"), 8192, **kwargs)


def test_plan_capacity_takes_numpy_scalars_and_dtype_names():
    """np.float32(0.9) was refused as not a number, np.int32(16) overflowed in the page arithmetic, and 'fp8_e4m3'
    as kv_dtype failed on .value: each is the value it holds."""
    import numpy as np

    model, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    plain = plan_capacity(model, gpu, 8192, kv_dtype=DType.fp8_e4m3, gpu_memory_utilization=0.9, page_size=16)
    odd = plan_capacity(model, gpu, np.int64(8192), kv_dtype="fp8_e4m3", gpu_memory_utilization=np.float64(0.9),
                        page_size=np.int32(16))
    assert odd.max_sequences_paged == plain.max_sequences_paged


def test_expert_parallel_past_the_experts_is_refused():
    with pytest.raises(InputError, match="8 routed experts"):
        plan_capacity(load_model("mixtral-8x7b"), load_gpu("h100-sxm"), 8192, expert_parallel=16, tensor_parallel=16)


def test_expert_parallel_weights_are_the_busiest_gpus():
    """Experts are dealt whole and not split again by TP: 6 experts over EP 4 put 2 on the busiest GPU (not the
    average 1.5), and the rest of the model splits TP 4 ways. Mixtral's components by hand (bf16, 2 bytes):
    embeddings and lm_head 131,072,000 each, attention 1,342,177,280, norms 266,240 parameters (/4), the router
    786,432 whole on every GPU (the engines replicate it, specs.weights), experts 33,822,867,456 for 6 experts
    (x 2/6). Before: experts / (EP x TP) = 1/16, the average GPU's
    share divided by TP once more (DeepSeek-V3 --tp 8 --ep 8 planned 11.7 GiB of weights a GPU, not 78)."""
    model = dataclasses.replace(load_model("mixtral-8x7b"), num_experts=6, num_parameters=None)
    plan = plan_capacity(model, load_gpu("h200"), 4096, tensor_parallel=4, expert_parallel=4)
    rest = (2 * 131_072_000 + 1_342_177_280 + 266_240) * 2 // 4 + 786_432 * 2
    assert plan.weights_bytes == rest + 33_822_867_456 * 2 * 2 // 6
    deepseek = plan_capacity(load_model("deepseek-v3"), load_gpu("h200"), 4096, tensor_parallel=8, expert_parallel=8)
    engine = engine_weight_bytes(load_model("deepseek-v3"), 8, None, 8)[0]
    assert abs(deepseek.weights_bytes - engine) < 0.001 * engine     # the engines' count, less the rotary cache


@pytest.mark.parametrize("limit", [0, -1, 2.5, 10**12])
def test_split_search_limit_is_checked(limit):
    """limit=10**12 looped for hours; 0 returned an empty list and a message saying 'up to 1 x'."""
    with pytest.raises(InputError, match="limit"):
        tensor_parallel_sizes(load_model("llama-3-8b"), limit)
    with pytest.raises(InputError, match="limit"):
        smallest_deployment(load_model("llama-3-8b"), load_gpu("h100-sxm"), 8192, limit=limit)


def test_pipeline_parallel_bound_by_hand():
    """Llama-3-70B, PP 2 x TP 4 on H100s (tests/capacity/test_stages.py has the stage weights by hand): usable =
    0.9 x 85,520,809,984; each stage's budget is usable less its weights (stage 1's LM head and final norm outweigh
    stage 0's embedding by 8192 x 2 / 4 bytes); 40 layers x 2 x 2 KV heads x 128 x 2 = 40,960 KV bytes a token;
    an 8192-token sequence 512 pages x 16 x 40,960 = 335,544,320 bytes."""
    from rooflab.deployment import Deployment
    from rooflab.load import load_gpu, load_model

    h100, llama = load_gpu("h100-sxm"), load_model("llama-3-70b")
    layer = 150_994_944 + 704_643_072 + 2 * 8192
    w0, w1 = (1_050_673_152 + 40 * layer) * 2 // 4, (40 * layer + 8192 + 1_050_673_152) * 2 // 4
    usable = int(85_520_809_984 * 0.9)
    plan = plan_capacity(llama, h100, 8192, deployment=Deployment(tensor_parallel=4, pipeline_parallel=2))
    assert plan.kv_bytes_per_token == 40_960 and plan.num_gpus == 8 and plan.pipeline_parallel == 2
    assert plan.max_sequences_paged == min(usable - w0, usable - w1) // 335_544_320
    assert plan.weights_bytes in (w0, w1) and len(plan.stage_notes) == 3 and "binds" in plan.stage_notes[-1]
    assert plan.num_blocks == (usable - plan.weights_bytes) // (16 * 40_960)


def test_pipeline_parallel_one_is_unchanged():
    from rooflab.deployment import Deployment
    from rooflab.load import load_gpu, load_model

    h100, llama = load_gpu("h100-sxm"), load_model("llama-3-70b")
    plain = plan_capacity(llama, h100, 8192, tensor_parallel=4)
    assert plan_capacity(llama, h100, 8192, deployment=Deployment(tensor_parallel=4, pipeline_parallel=1)) == plain
    assert plain.stage_notes == () and plain.pipeline_parallel == 1
    with pytest.raises(InputError, match="--pp-layer-partition applies"):
        plan_capacity(llama, h100, 8192, tensor_parallel=4, pp_layer_partition=(40, 40))


# --- gpu_weight_bytes' attention ranks (reviewer's finding 5) ---------------------------------------------------------

@pytest.mark.parametrize("ranks, named", [(True, "dp_attention flag"), (False, "dp_attention flag"),
                                          (0, "from 1"), (-2, "from 1"), (2.5, "whole number"), ("x", "whole number"),
                                          (3, "must divide tensor_parallel 8")])
def test_gpu_weight_bytes_checks_its_attention_ranks(ranks, named):
    """Its 5th argument was dp_attention (a bool) and is now attention_data_parallel, a number of ranks dividing TP:
    the old call gpu_weight_bytes(V3, None, 8, 1, True) read True as 1 and returned plain TP's 79.29 GiB, not DP
    attention's 89.35; 0 and -2 were read as plain TP too, 3 under TP 8 split attention 8 // 3 = 2 ways, 2.5 and
    'x' raised a raw TypeError. Each is now an InputError naming attention_data_parallel."""
    from rooflab.capacity import gpu_weight_bytes

    v3 = load_model("deepseek-v3")
    refused(lambda: gpu_weight_bytes(v3, None, 8, 1, ranks), "attention_data_parallel", named)


def test_gpu_weight_bytes_counts_dp_attention_over_the_whole_group_at_n_equal_tp():
    """The call the flag's True stood for: N = TP = 8 (DeepSeek-V3 at v0.5.10's layout) holds attention and the
    embedding whole, 89.35 GiB a GPU against plain TP's 79.29 (N = 1), and a NumPy count is read as its number."""
    import numpy as np
    from rooflab.capacity import gpu_weight_bytes

    v3 = load_model("deepseek-v3")
    assert gpu_weight_bytes(v3, None, 8, 1, 8) / GiB == pytest.approx(89.35, abs=0.005)
    assert gpu_weight_bytes(v3, None, 8, 1, 1) / GiB == pytest.approx(79.29, abs=0.005)
    assert gpu_weight_bytes(v3, None, 8, 1, np.int64(8)) == gpu_weight_bytes(v3, None, 8, 1, 8)
    refused(lambda: gpu_weight_bytes(v3, None, 0, 1, 1), "tensor_parallel")

"""Tests of rooflab/capacity/stages.py: the engines' layer splits and what each pipeline stage holds.

The splits are get_pp_indices as each engine writes it (vllm/distributed/utils.py after PR #13839 and before it;
sglang python/sglang/srt/distributed/utils.py); the stage weights are Llama-3-70B's by hand (80 layers,
H 8192, F 28672, 64 query and 8 KV heads of 128, vocabulary 128,256, untied).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from rooflab import load_gpu, load_model
from rooflab.capacity import plan_capacity
from rooflab.capacity.stages import LayerPartition, check_partition, parse_partition, partition, pipeline_stages
from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.specs.weights import weight_bytes
from rooflab.units import DType

LLAMA70 = load_model("llama-3-70b")


@pytest.mark.parametrize("layers, pp, rule, expected", [
    (80, 2, LayerPartition.vllm, (40, 40)),
    (61, 3, LayerPartition.vllm, (20, 21, 20)),        # the one left over to partitions[-2]
    (62, 4, LayerPartition.vllm, (15, 16, 16, 15)),    # two: partitions[-2] and [-3]
    (61, 3, LayerPartition.vllm_v0_7, (20, 20, 21)),   # before PR #13839 the last stage took it
    (80, 3, LayerPartition.sglang, (26, 27, 27)),      # SGLang: the last r stages one more
    (62, 4, LayerPartition.sglang, (15, 15, 16, 16)),
])
def test_partition_rules(layers, pp, rule, expected):
    assert partition(layers, pp, rule) == expected
    assert sum(expected) == layers


def test_explicit_partition_and_its_refusals():
    assert partition(80, 2, LayerPartition.vllm, (30, 50)) == (30, 50)
    assert parse_partition("30,50") == (30, 50) and parse_partition(None) is None
    for counts, needle in (((40,), "gives 1 stages"), ((40, 41), "sums to 81"), ((0, 80), "needs a layer")):
        with pytest.raises(InputError, match=needle):
            partition(80, 2, LayerPartition.vllm, counts)
    with pytest.raises(InputError, match="whole layer counts"):
        parse_partition("40,")
    with pytest.raises(InputError, match="more stages"):
        pipeline_stages(LLAMA70, 81)


@pytest.mark.parametrize("value", [True, float("nan"), np.int64(4), np.array(4), "40,40", {40: 40}, [40, "40"],
                                   [40.5, 39.5]])
def test_an_explicit_partition_that_is_not_layer_counts_is_refused(value):
    """Issue 24 round 2 D12: pp_layer_partition=True ended in TypeError "'bool' object is not iterable"."""
    with pytest.raises(InputError, match="pp_layer_partition"):
        check_partition(value)
    with pytest.raises(InputError, match="pp_layer_partition"):
        plan_capacity(LLAMA70, load_gpu("h200-sxm"), 8192, pp_layer_partition=value,
                      deployment=Deployment(pipeline_parallel=2))
    assert check_partition(np.array([40, 40])) == check_partition([40, 40]) == (40, 40)


def test_llama_70b_stage_weights_by_hand():
    """Per layer: attention 8192 x (8192 + 1024 + 1024) + 8192 x 8192 = 150,994,944; MLP 3 x 8192 x 28672 =
    704,643,072; norms 2 x 8192. Stage 0: the embedding (128,256 x 8192 = 1,050,673,152) and 40 layers; stage 1:
    40 layers, the final norm (8192) and the LM head (1,050,673,152). bf16, TP 4: parameters x 2 / 4 bytes."""
    layer = 150_994_944 + 704_643_072 + 2 * 8192
    stage0 = 1_050_673_152 + 40 * layer
    stage1 = 40 * layer + 8192 + 1_050_673_152
    first, last = pipeline_stages(LLAMA70, 2)
    assert (first.start, first.end, last.start, last.end) == (0, 40, 40, 80)
    assert weight_bytes(LLAMA70, DType.bf16, 4, shares=first.shares(LLAMA70)) == stage0 * 2 // 4
    assert weight_bytes(LLAMA70, DType.bf16, 4, shares=last.shares(LLAMA70)) == stage1 * 2 // 4
    assert stage0 + stage1 == LLAMA70.total_parameters        # every parameter on exactly one stage


def test_shares_cover_each_component_once_and_tied_embeddings_twice():
    """Untied: each component's shares sum to 1 over the stages. Tied (Llama-3.2-1B): the last stage keeps a copy
    of the embedding for its LM head, so the embeddings are held twice (vLLM's llama.py: is_first_rank or
    (tie_word_embeddings and is_last_rank))."""
    for name, pp in (("llama-3-70b", 3), ("deepseek-v3", 4), ("gpt-oss-120b", 5)):
        model = load_model(name)
        stages = pipeline_stages(model, pp)
        for component in ("embeddings", "lm_head", "attention", "dense_mlp", "experts", "norms"):
            total = sum(st.shares(model)[component] for st in stages)
            assert total in (Fraction(1), Fraction(0)), (name, component, total)
        layers = [st.layers_model(model) for st in stages]
        assert sum(m.num_layers for m in layers) == model.num_layers
        for kind in model.layer_counts:
            assert sum(m.layer_counts.get(kind, 0) for m in layers) == model.layer_counts[kind]
    tied = load_model("llama-3.2-1b")
    assert tied.tie_word_embeddings
    assert sum(st.shares(tied)["embeddings"] for st in pipeline_stages(tied, 2)) == 2
    assert pipeline_stages(tied, 1)[0].shares(tied) == {}     # one stage: the whole model, unchanged


def test_deepseek_v3_stage_of_only_dense_layers_by_hand():
    """DeepSeek-V3 over 16 stages (vLLM's get_pp_indices: 61 = 16 x 3 + 13, the 13 left over to stages 14..2), so
    stage 0 is layers 0-2, the 3 dense ones: a dense model (no experts, the dense MLP of 18,432), which vLLM runs.
    Its parameters: the embedding 129,280 x 7168 = 926,679,040; each MLA layer's attention q_a 7168 x 1536, q_b
    1536 x 128 x 192, kv_a 7168 x 576, kv_b 512 x 128 x 256, o 128 x 128 x 7168 and the q_a / kv_a norms (1536 +
    512) = 187,107,328; each MLP 3 x 7168 x 18432 = 396,361,728; norms 2 x 7168 a layer. bf16 at TP 1, times the
    spec's published-over-derived count (671B over its derived total, specs.weights._published_scale)."""
    v3 = load_model("deepseek-v3")
    first = pipeline_stages(v3, 16)[0]
    assert (first.start, first.end) == (0, 3)
    stage0 = 926_679_040 + 3 * (187_107_328 + 396_361_728 + 2 * 7168)
    scale = Fraction(671_000_000_000, v3.parameters.total)
    assert weight_bytes(v3, DType.bf16, 1, shares=first.shares(v3)) == math.ceil(stage0 * 2 * scale)
    dense = first.layers_model(v3)
    assert not dense.is_moe and dense.num_moe_layers == 0 and dense.num_dense_layers == 3
    counts = dense.parameters.by_component()
    assert counts["experts"] == counts["shared_experts"] == counts["router"] == 0
    assert counts["dense_mlp"] == 3 * 396_361_728
    second = pipeline_stages(v3, 16)[1].layers_model(v3)                       # layers 3-5: MoE, as before
    assert second.is_moe and second.num_moe_layers == 3 and second.num_experts == 256
    plan = plan_capacity(v3, load_gpu("h200-sxm"), 8192, deployment=Deployment(pipeline_parallel=16))
    assert plan.max_sequences_paged > 0

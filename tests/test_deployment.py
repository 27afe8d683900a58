"""rooflab.Deployment: the engines' parallelism rules, the GPU count, and the answers that take it.

The rules are vLLM's (vllm/config/parallel.py, ParallelConfig's validator, main at commit 00193b8, 2026) and
SGLang's (--enable-dp-attention, --ep-size); the module docstring of rooflab/deployment.py lists them.
"""

from __future__ import annotations

import math

import pytest

from rooflab.capacity import plan_capacity
from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.load import load_gpu, load_model
from rooflab.step import step_report
from support import HUGE


@pytest.mark.parametrize("kw, gpus", [
    ({}, 1),
    (dict(tensor_parallel=8, decode_context_parallel=8), 8),          # DCP reuses the TP group: 8 GPUs, not 64
    (dict(tensor_parallel=8, kv_parallel=8), 64),                     # KVP (rooflab 0.1's --dcp) adds groups
    (dict(tensor_parallel=4, prefill_context_parallel=2, pipeline_parallel=2), 16),   # world = TP x PCP x PP
    (dict(tensor_parallel=2, data_parallel=4, expert_parallel=8), 8),                # vLLM -dp 4 with EP = TP x DP
    (dict(tensor_parallel=8, attention_data_parallel=8, expert_parallel=8), 8),      # SGLang dp attention: inside TP
    (dict(tensor_parallel=2, prefill_context_parallel=2, decode_context_parallel=4), 4),  # DCP = TP x PCP allowed
])
def test_gpus_count_as_the_engines_count_them(kw, gpus):
    assert Deployment(**kw).num_gpus == gpus


@pytest.mark.parametrize("kw, needle", [
    (dict(tensor_parallel=8, decode_context_parallel=3), "--dcp 3 must divide --tp 8"),
    (dict(prefill_context_parallel=2, data_parallel=2), "PCP does not support data parallelism"),
    (dict(tensor_parallel=4, prefill_context_parallel=2, decode_context_parallel=4), "allows DCP 1, PCP (2) or TP x PCP (8)"),
    (dict(tensor_parallel=8, attention_data_parallel=3), "--dp 3 must divide --tp 8"),
    (dict(tensor_parallel=4, expert_parallel=3), "--ep 3 must divide TP x PCP x DP = 4"),
    (dict(tensor_parallel=8, decode_context_parallel=2, kv_parallel=2), "give one of them"),
    (dict(tensor_parallel=0), "--tp"), (dict(tensor_parallel=-1), "--tp"),
    (dict(tensor_parallel=2.5), "--tp"), (dict(tensor_parallel=HUGE), "--tp"),
    (dict(tensor_parallel=float("nan")), "--tp"), (dict(tensor_parallel=""), "--tp"),
    (dict(tensor_parallel=True), "--tp"), (dict(page_size=0), "page size"), (dict(kv_parallel=0), "--kv-parallel"),
    (dict(gpu_memory_utilization=1.5), "utilisation"),
    (dict(gpu_memory_utilization=float("inf")), "utilisation"),
    (dict(kv_cache_dtype="fp9"), "kv_cache_dtype"),
    (dict(tensor_parallel=4096, kv_parallel=4096), "at most 4,096"),
])
def test_combinations_the_engines_refuse_are_refused_with_the_rule(kw, needle):
    with pytest.raises(InputError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        Deployment(**kw)


def test_dcp_needs_kv_heads_that_tp_replicates():
    """vLLM: DCP <= TP / H_kv. Llama-3-70B has 8 KV heads: TP 8 replicates none, so DCP 2 has nothing to split;
    TP 16 replicates each twice, so DCP 2 fits. MLA (one latent) allows DCP up to TP."""
    llama = load_model("llama-3-70b")
    with pytest.raises(InputError, match=r"DCP <= TP / H_kv.*--kv-parallel 2"):
        Deployment(tensor_parallel=8, decode_context_parallel=2).check_model(llama)
    Deployment(tensor_parallel=16, decode_context_parallel=2).check_model(llama)
    Deployment(tensor_parallel=8, decode_context_parallel=8).check_model(load_model("deepseek-v3"))


def test_expert_parallelism_needs_experts():
    with pytest.raises(InputError, match="no routed experts"):
        Deployment(tensor_parallel=2, expert_parallel=2).check_model(load_model("llama-3-8b"))
    with pytest.raises(InputError, match="exceeds the 8 routed experts"):
        Deployment(tensor_parallel=16, expert_parallel=16).check_model(load_model("mixtral-8x7b"))


def test_capacity_with_dcp_inside_tp_is_the_kv_split_on_the_same_gpus():
    """TP 8 + DCP 8 on DeepSeek-V3: 8 GPUs, each holding 1/8 of every sequence's latent pages (whole pages:
    ceil(2,000 / 8) = 250 of 2,000 at 32,000 tokens), so about 8x the sequences of TP 8 alone."""
    model, gpu = load_model("deepseek-v3"), load_gpu("h200-sxm")
    tp = plan_capacity(model, gpu, 32000, deployment=Deployment(tensor_parallel=8))
    dcp = plan_capacity(model, gpu, 32000, deployment=Deployment(tensor_parallel=8, decode_context_parallel=8))
    assert dcp.num_gpus == 8 and tp.num_gpus == 8
    assert dcp.blocks_per_sequence == math.ceil(tp.blocks_per_sequence / 8) == 250
    assert dcp.kv_bytes_per_sequence == tp.kv_bytes_per_sequence // 8           # 2,000 pages divide by 8 exactly
    assert dcp.max_sequences_paged == tp.kv_budget_bytes // dcp.kv_bytes_per_sequence
    kvp = plan_capacity(model, gpu, 32000, deployment=Deployment(tensor_parallel=8, kv_parallel=8))
    assert kvp.num_gpus == 64 and kvp.max_sequences_paged == dcp.max_sequences_paged


def test_capacity_keyword_arguments_and_a_deployment_agree():
    model, gpu = load_model("mixtral-8x7b"), load_gpu("h100-sxm")
    old = plan_capacity(model, gpu, 8192, tensor_parallel=4, expert_parallel=4, page_size=32, kv_dtype="fp8_e4m3",
                        gpu_memory_utilization=0.85)
    new = plan_capacity(model, gpu, 8192, deployment=Deployment(tensor_parallel=4, expert_parallel=4, page_size=32,
                                                                kv_cache_dtype="fp8_e4m3", gpu_memory_utilization=0.85))
    assert old == new


def test_step_with_dcp_inside_tp_reads_a_share_of_the_kv_on_the_same_gpus():
    model, gpu = load_model("deepseek-v3"), load_gpu("h200-sxm")
    tp = step_report(model, gpu, 8, 32768, deployment=Deployment(tensor_parallel=8))
    dcp = step_report(model, gpu, 8, 32768, deployment=Deployment(tensor_parallel=8, decode_context_parallel=8))
    kvp = step_report(model, gpu, 8, 32768, deployment=Deployment(tensor_parallel=8, kv_parallel=8))
    assert (tp.gpus, dcp.gpus, kvp.gpus) == (8, 8, 64)
    assert dcp.kv_bytes_per_gpu == pytest.approx(tp.kv_bytes_per_gpu / 8)
    attention = {r.label.split(",")[0]: r for r in dcp.rows if r.label.startswith("attention [")}
    plain = {r.label.split(",")[0]: r for r in tp.rows if r.label.startswith("attention [")}
    # every query head of the layer (16 a GPU x 8 gathered) over 1/8 of the tokens: the same FLOPs up to the merge
    assert attention["attention [mla]"].flops == pytest.approx(plain["attention [mla]"].flops, rel=0.01)
    assert dcp.to_dict()["decode_context_parallel"] == 8 and kvp.to_dict()["kv_parallel"] == 8


def test_step_keyword_dcp_keeps_its_old_meaning():
    """step_report(dcp=N) is KV parallelism (extra GPUs), as in rooflab 0.1; the Deployment spells it kv_parallel."""
    model, gpu = load_model("llama-3-8b"), load_gpu("h200-sxm")
    old = step_report(model, gpu, 8, 32768, tp=1, dcp=2)
    new = step_report(model, gpu, 8, 32768, deployment=Deployment(kv_parallel=2))
    assert old.to_dict() == new.to_dict() and old.gpus == 2


def test_a_setting_beside_a_deployment_is_refused_not_ignored():
    model, gpu = load_model("llama-3-8b"), load_gpu("h200-sxm")
    with pytest.raises(InputError, match="give gemm_dtype in the Deployment"):
        step_report(model, gpu, 1, 8192, gemm_dtype="fp8_e4m3", deployment=Deployment())
    with pytest.raises(InputError, match="give page_size, tensor_parallel in the Deployment"):
        plan_capacity(model, gpu, 8192, tensor_parallel=2, page_size=32, deployment=Deployment())
    with pytest.raises(InputError, match="deployment must be a rooflab.Deployment"):
        plan_capacity(model, gpu, 8192, deployment={"tensor_parallel": 2})


def test_describe_names_the_degrees_and_the_gpus():
    assert Deployment().describe() == "one GPU"                  # was "one GPU (1 GPU)"
    assert Deployment(tensor_parallel=8, decode_context_parallel=8).describe() == "TP 8, DCP 8 (8 GPUs)"


def _qwen3_next_with_value_heads(tmp_path, heads: int):
    """Qwen3-Next's config.json (tests/data/hf_configs) with `heads` linear value heads."""
    import json

    from fuzz_support import ROOT

    doc = json.loads((ROOT / "tests" / "data" / "hf_configs" / "qwen3-next-80b-a3b-thinking.json").read_text())
    doc["linear_num_value_heads"] = heads
    (tmp_path / "config.json").write_text(json.dumps(doc))
    return load_model(str(tmp_path / "config.json"))


def test_tp_must_split_a_linear_layers_state_heads(tmp_path):
    """D15: vLLM's GatedDeltaNet divides the value heads by TP (divide() asserts); 7 value heads at TP 4 do not split
    (7 % 4 = 3), so the deployment refuses where it meets the model: plan_capacity, the step and the engines'
    accounting give one refusal."""
    from rooflab.engines import EngineSettings, engine_capacity, parse_accounting

    model, gpu = _qwen3_next_with_value_heads(tmp_path, 7), load_gpu("h200-sxm")
    dep = Deployment(tensor_parallel=4)
    messages = []
    for call in (lambda: dep.check_model(model), lambda: plan_capacity(model, gpu, 8192, deployment=dep),
                 lambda: step_report(model, gpu, deployment=dep)):
        with pytest.raises(InputError, match=r"--tp 4 does not divide .* 7 state heads") as info:
            call()
        messages.append(str(info.value))
    assert len(set(messages)) == 1
    with pytest.raises(InputError, match=r"--tp 4 does not divide .* 7 state heads"):
        engine_capacity(model, gpu, EngineSettings(accounting=parse_accounting("vllm", None), tensor_parallel=4))
    Deployment(tensor_parallel=4).check_model(_qwen3_next_with_value_heads(tmp_path, 8))     # 8 / 4 splits


def test_eager_keeps_the_engines_fused_elementwise_kernels():
    """Both engines fuse add-RMSNorm and SiLU-and-mul with or without CUDA graphs (vLLM's eager flips its custom
    ops to 'all': vllm/config/vllm.py:1444-1451 at v0.29.0): eager is fused unless asked otherwise; unfused is
    rooflab's own torch layer, by name."""
    assert Deployment(cuda_graphs=False).fused and Deployment().fused
    assert not Deployment(cuda_graphs=False, fused_elementwise=False).fused

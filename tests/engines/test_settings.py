"""Tests of rooflab/engines/settings.py: vLLM v1's defaults follow the GPU, v0 chunks prefill for long
contexts, the state-cache and LoRA settings are checked, and a label is computed at the one release it stands for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines.settings import resolve
from rooflab.errors import InputError
from support import vllm


DATA = Path(__file__).resolve().parents[1] / "data" / "engine_logs"
H100 = load_gpu("h100-sxm")
A100 = load_gpu("a100-sxm-80gb")
LLAMA3 = load_model("llama-3-8b")
LLAMA31 = load_model(DATA / "models" / "llama-3.1-8b-instruct.yaml")


def test_v1_defaults_follow_the_gpu():
    big = resolve(vllm(), LLAMA3, H100)
    small = resolve(vllm(), LLAMA3, A100)       # A100s are left out of the large defaults
    assert (big.max_num_batched_tokens, big.max_num_seqs) == (8192, 1024)
    assert (small.max_num_batched_tokens, small.max_num_seqs) == (2048, 256)


def test_v0_chunked_prefill_for_long_contexts():
    assert resolve(vllm("v0", max_model_len=32768), LLAMA31, H100).max_num_batched_tokens == 32768
    assert resolve(vllm("v0", max_model_len=65536), LLAMA31, H100).max_num_batched_tokens == 2048
    assert resolve(vllm("v0.6.4", max_model_len=65536), LLAMA31, H100).max_num_batched_tokens == 512


def test_logprobs_mode_taken_by_name_and_refused_naming_the_option():
    """vLLM's four --logprobs-mode names (vocab.LogprobsMode); the default raw_logprobs, as vLLM's."""
    from rooflab.engines.vocab import LogprobsMode
    from support import vllm

    assert vllm().logprobs_mode is LogprobsMode.raw_logprobs
    assert vllm(logprobs_mode="processed_logits").logprobs_mode is LogprobsMode.processed_logits
    assert LogprobsMode.processed_logprobs.processed and not LogprobsMode.raw_logits.processed
    with pytest.raises(InputError, match=r"--logprobs-mode must be one of raw_logprobs, raw_logits, "
                                         r"processed_logprobs, processed_logits, got 'processed'"):
        vllm(logprobs_mode="processed")
    with pytest.raises(InputError, match=r"logprobs mode \(--logprobs-mode\) must be a LogprobsMode"):
        vllm(logprobs_mode=1)


def test_state_and_lora_settings_checked():
    """The linear-attention and LoRA settings (engines/states.py, lora.py): names taken as the CLI takes them, ranges
    refused naming the option."""
    from rooflab.engines.vocab import MambaCacheMode
    from rooflab.units import DType
    from support import sglang, vllm

    s = vllm(mamba_cache_mode="align", mamba_ssm_dtype="float32")
    assert s.mamba_cache_mode is MambaCacheMode.align and s.mamba_ssm_dtype is DType.fp32
    for kw, needle in (({"mamba_cache_mode": "all"}, "--mamba-cache-mode"),
                       ({"mamba_full_memory_ratio": 0}, "--mamba-full-memory-ratio"),
                       ({"mamba_full_memory_ratio": 101}, "--mamba-full-memory-ratio"),
                       ({"max_mamba_cache_size": 0}, "--max-mamba-cache-size"),
                       ({"memory_in_use_bytes": -1}, "--memory-in-use"),
                       ({"enable_lora": True, "max_loras": 0}, "--max-loras"),
                       ({"enable_lora": "yes"}, "--enable-lora")):
        with pytest.raises(InputError, match=needle):
            sglang("v0.5", **kw)


@pytest.mark.parametrize("override", [80 * 2**30, 200 * 2**30, 2**40])
def test_a_cuda_visible_total_above_the_gpus_memory_is_refused(override):
    """Issue 24 round 2 D2: --cuda-visible-memory 200GiB on an 80 GB H100 gave 162.89 GiB of KV cache; the GPU
    YAML's cuda_visible_bytes is held to the same rule (GpuSpec.cuda_visible_problem)."""
    from rooflab.engines.settings import cuda_visible

    with pytest.raises(InputError, match=r"--cuda-visible-memory .* on h100-sxm exceeds hbm_capacity_bytes"):
        cuda_visible(H100, override)
    assert cuda_visible(H100, H100.hbm_capacity_bytes) == (H100.hbm_capacity_bytes, "--cuda-visible-memory")


@pytest.mark.parametrize("override", [0, 1, 2**20])
def test_a_cuda_visible_total_below_the_yaml_fields_range_is_refused(override):
    """'--cuda-visible-memory 0' was taken and then refused as '--memory-in-use 0.00 GiB is the whole CUDA-visible
    total': the override is held to cuda_visible_bytes' own range (100e6 bytes and up), named as the option."""
    from rooflab.engines.settings import cuda_visible

    with pytest.raises(InputError, match=r"--cuda-visible-memory .* on h100-sxm must be"):
        cuda_visible(H100, override)


@pytest.mark.parametrize("field, value, word", [
    ("accounting", None, "accounting"), ("accounting", "vllm", "accounting"),
    ("utilization", "x", "utilisation"), ("utilization", float("nan"), "utilisation"),
    ("memory_in_use_bytes", None, "--memory-in-use"), ("enable_lora", H100, "--enable-lora"),
    ("kv_cache_dtype", "fp8", "--kv-cache-dtype"), ("dtype", "bf16", "--dtype"),
    ("weight_format", "fp8", "--quantization"), ("pp_layer_partition", True, "--pp-layer-partition")])
def test_settings_of_the_wrong_kind_are_refused_naming_the_field(field, value, word):
    """Issue 24 round 2 D9: AttributeError and TypeError from inside, and a 24,782-character message (the repr
    of a GpuSpec given as enable_lora)."""
    from rooflab.engines import Engine, EngineSettings, parse_accounting

    given = {"accounting": parse_accounting(Engine.vllm, None), "pipeline_parallel": 2, field: value}
    with pytest.raises(InputError, match=word) as exc:
        EngineSettings(**given)
    assert len(str(exc.value)) < 300 and "\n" not in str(exc.value)


def test_engine_capacity_refuses_what_is_not_a_spec():
    from rooflab.engines import engine_capacity

    settings = vllm()
    for args, word in (((None, H100, settings), "model"), ((LLAMA3, "h100-sxm", settings), "gpu"),
                       ((LLAMA3, H100, {"accounting": "vllm"}), "settings")):
        with pytest.raises(InputError, match=f"^{word} must be"):
            engine_capacity(*args)


# --- a label is one release, every term (hostile session12 D37) -----------------------------------------------------

#: Each accounting's label and a release it stands for (engines.vocab.label_release; for a series' newest, v0's
#: v0.10.x and v1's v0.19.x, its last release: v0.10.2, v0.19.1).
LABEL_AT = {"vllm-v0.2": "0.6.3", "vllm-v0.6.4": "0.6.4", "vllm-v0": "0.10.2", "vllm-v0.8": "0.9.0.1",
            "vllm-v1": "0.19.1", "sglang-v0.4": "0.4.5", "sglang-v0.5": "0.5.10"}


#: Models and deployments: dense, MoE, MLA (SGLang's absorbed copies by release), and SGLang's DP attention.
LABEL_DEPLOYMENTS = [("llama-3-8b", {"tensor_parallel": 8}), ("qwen3-30b-a3b", {"tensor_parallel": 8}),
                     ("deepseek-v3", {"tensor_parallel": 8})]
SGLANG_DP = [("deepseek-v3", {"tensor_parallel": 8, "attention_data_parallel": dp}) for dp in (2, 8)]


@pytest.mark.parametrize("accounting, model, deployment", [
    (a, m, d) for a in sorted(LABEL_AT) for m, d in LABEL_DEPLOYMENTS + (SGLANG_DP if a.startswith("sglang") else [])])
def test_a_label_is_its_release_on_every_term(accounting, model, deployment):
    """D37: SGLang's label v0.4 took mem_fraction_static from v0.4.0 - v0.4.5's table and the weights (MLA copies in
    bf16) from v0.5.2: no one release. settings.resolve now computes every term of a label at the release it
    stands for; only the releases line says whether one was given."""
    from rooflab.engines import Accounting, EngineSettings, engine_capacity

    a = Accounting(accounting)
    m, gpu = load_model(model), load_gpu("h200-sxm")
    label = engine_capacity(m, gpu, EngineSettings(a, **deployment))
    at = engine_capacity(m, gpu, EngineSettings(a, release=LABEL_AT[accounting], **deployment))
    assert [(t.name, t.bytes) for t in label.terms] == [(t.name, t.bytes) for t in at.terms]
    assert (label.kv_cache_bytes, label.utilization, label.kv_cache_tokens) == (at.kv_cache_bytes, at.utilization,
                                                                                at.kv_cache_tokens)
    assert label.releases == a.releases and at.releases == f"{a.releases} at v{LABEL_AT[accounting]}"


@pytest.mark.parametrize("settings, needle", [
    (lambda: vllm("v0", skip_mm_profiling=True), r"arrived in vLLM V1 v0\.10\.1 .*vllm-v0 .* has no such option"),
    (lambda: vllm("v0.8", skip_mm_profiling=True), r"arrived in vLLM V1 v0\.10\.1"),
    (lambda: vllm(release="0.10.0", skip_mm_profiling=True), r"arrived in vLLM v0\.10\.1 .*v0\.10\.0 has no such")])
def test_skip_mm_profiling_is_refused_where_vllm_has_no_such_option(settings, needle):
    """--skip-mm-profiling arrived in vLLM 0.10.1 (vllm 0.10.1 vllm/engine/arg_utils.py:354 and :734; 0.10.0's and
    0.7.3's arg_utils.py have no such field), read by V1's model runner only (0.10.1
    vllm/v1/worker/gpu_model_runner.py:2569): refused before it and under V0, as --kv-cache-memory-bytes is
    (hostile session 16: accepted at 0.7.3 with no effect)."""
    with pytest.raises(InputError, match=needle):
        settings()
    assert vllm(release="0.10.1", skip_mm_profiling=True).skip_mm_profiling
    assert not vllm("v0", skip_mm_profiling=False).skip_mm_profiling

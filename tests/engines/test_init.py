"""Tests of rooflab/engines/__init__.py: engine-faithful capacity, term by term.

vLLM's and SGLang's sums against public logs (vllm#10511, vllm PR #2031, sglang#4760), the terms adding up and the
blocks following, fp8 caches holding twice the tokens, more utilisation giving more blocks, the estimated CUDA total
said, and linear attention in accountings older than it and options vLLM refuses refused. Golden figures cite the public log they come from
(tests/data/engine_logs/SOURCES.md); tolerances are written once with their reason.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import Role, engine_capacity, parse_kv_cache_dtype
from rooflab.errors import InputError
from rooflab.units import GiB
from support import sglang, vllm


DATA = Path(__file__).resolve().parents[1] / "data" / "engine_logs"
H100 = load_gpu("h100-sxm")
A100 = load_gpu("a100-sxm-80gb")
LLAMA3 = load_model("llama-3-8b")
LLAMA31 = load_model(DATA / "models" / "llama-3.1-8b-instruct.yaml")


#: Logs print GiB with two decimals: a figure rebuilt from several of them is off by up to a few of 0.005 GiB.
LOGGED_GIB = 0.02 * GiB


@pytest.mark.parametrize("settings", [vllm("v0"), vllm("v0.6.4"), sglang("v0.4")], ids=str)
def test_linear_attention_before_the_engines_served_it_is_refused(settings):
    """Qwen3-Next arrived in vLLM V1 (v0.10.2) and SGLang v0.5: the older accountings refuse it (V1 and v0.5 model
    its state caches: tests/engines/test_states.py)."""
    with pytest.raises(InputError, match="linear-attention"):
        engine_capacity(load_model("qwen3-next-80b-a3b"), H100, settings)


# --- the sums -------------------------------------------------------------------------------------------------------

def test_vllm_10511_from_its_terms():
    """vllm#10511: 79.22 GiB x 0.9 - 14.96 - 1.79 - 1.26 = 53.29 GiB = 27,284 blocks of 2 MiB (derived)."""
    c = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, activation_bytes=int(1.26 * GiB),
                                           non_torch_bytes=int(1.79 * GiB)))
    assert c.term("weights").bytes == pytest.approx(14.96 * GiB, abs=LOGGED_GIB)
    assert c.kv_cache_bytes == pytest.approx(53.29 * GiB, abs=LOGGED_GIB)
    assert abs(c.num_blocks - 27284) <= 10
    assert c.lines[0].startswith(f"# GPU blocks: {c.num_blocks}, # CPU blocks: 2048")


def test_vllm_2031_llama2_7b_estimate():
    """vllm PR #2031: Llama-2-7B on one A100-80GB at utilisation 0.9 logged 7,351 GPU blocks (v0.2.5 profiler)."""
    c = engine_capacity(load_model("llama-2-7b"), A100, vllm("v0.2"))
    assert c.num_blocks == pytest.approx(7351, rel=0.05)
    assert c.block_bytes == 16 * 32 * 32 * 128 * 2 * 2


def test_sglang_4760_estimate():
    """sglang#4760: Llama-3.1-8B on one H100, mem_fraction_static 0.88: 442,750 tokens."""
    c = engine_capacity(LLAMA31, H100, sglang())
    assert c.utilization == 0.88 and c.block_size == 1
    assert c.kv_cache_tokens == pytest.approx(442750, rel=0.01)
    assert c.lines[0].startswith(f"KV Cache is allocated. #tokens: {c.kv_cache_tokens}, K size:")


MODELS = ["llama-3-8b", "llama-2-70b", "mixtral-8x7b", "gemma-3-27b", "gpt-oss-20b", "deepseek-v3", "qwen2.5-72b"]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("settings", [vllm("v0.2"), vllm("v0.6.4"), vllm("v0"), vllm("v1"), sglang("v0.4"),
                                      sglang("v0.5")], ids=lambda s: s.accounting.value)
def test_terms_add_up_and_blocks_follow(name, settings):
    model = load_model(name)
    for tp in (1, 8):
        c = engine_capacity(model, load_gpu("h200-sxm"), dataclasses.replace(settings, tensor_parallel=tp))
        assert sum(t.bytes for t in c.terms if t.role is not Role.total) == c.term("cuda_visible_total").bytes
        assert c.kv_cache_bytes == max(0, c.term("kv_cache").bytes)
        assert ("refuse to start" in " ".join(c.notes)) == (c.kv_cache_bytes == 0)
    assert c.num_blocks == c.kv_cache_bytes // c.block_bytes > 0
    assert c.kv_cache_tokens <= c.num_blocks * c.block_size
    assert c.largest_term.role in (Role.used, Role.margin)
    assert c.to_dict()["terms"][0]["name"] == "cuda_visible_total"


@pytest.mark.parametrize("settings", [vllm("v0"), vllm("v1"), sglang()], ids=lambda s: s.accounting.value)
def test_fp8_cache_holds_twice_the_tokens(settings):
    bf16 = engine_capacity(LLAMA3, H100, settings)
    fp8 = engine_capacity(LLAMA3, H100, dataclasses.replace(settings, kv_cache_dtype=parse_kv_cache_dtype("fp8")))
    assert fp8.block_bytes * 2 == bf16.block_bytes
    assert fp8.kv_cache_tokens == pytest.approx(2 * bf16.kv_cache_tokens, abs=2 * bf16.block_size)


def test_more_utilisation_more_blocks():
    lo = engine_capacity(LLAMA3, H100, vllm(utilization=0.8))
    hi = engine_capacity(LLAMA3, H100, vllm(utilization=0.95))
    assert hi.kv_cache_bytes - lo.kv_cache_bytes == pytest.approx(0.15 * H100.cuda_visible_bytes, abs=2)


def test_estimated_cuda_total_is_said():
    c = engine_capacity(LLAMA3, load_gpu("l40"), vllm())   # the L40's YAML gives no cuda_visible_bytes
    assert c.term("cuda_visible_total").source.startswith("estimated: l40's nvidia-smi total less 0.45 GiB")
    given = engine_capacity(LLAMA3, load_gpu("l40"), vllm(cuda_visible_bytes=44 * GiB))
    assert given.term("cuda_visible_total").bytes == 44 * GiB


@pytest.mark.parametrize("settings, needle", [
    (vllm(max_num_seqs=512, max_num_batched_tokens=256), "below --max-num-seqs"),
    (vllm("v0", max_model_len=8192, max_num_batched_tokens=4096), "V0 without chunked prefill"),
    (vllm(max_model_len=16384), "exceeds llama-3-8b's max_context_len"),
])
def test_options_vllm_refuses(settings, needle):
    with pytest.raises(InputError, match=needle):
        engine_capacity(LLAMA3, H100, settings)

"""Engine-faithful capacity (rooflab/engines): the engines' vocabulary, the modelled profile run, the block layouts,
vLLM's and SGLang's sums, golden figures from public logs, and invariants across models, versions and TP sizes.

Golden figures cite the log they come from (tests/data/engine_logs/SOURCES.md); tolerances are written once below
with their reason.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import (Accounting, Engine, EngineSettings, Role, engine_capacity, parse_accounting,
                             parse_kv_cache_dtype)
from rooflab.engines.layout import sglang_cell, vllm_layout
from rooflab.engines.profile import profile_run
from rooflab.engines.settings import resolve
from rooflab.engines.sglang import default_fraction
from rooflab.errors import InputError
from rooflab.units import DType, GiB

DATA = Path(__file__).resolve().parent / "data" / "engine_logs"
H100, A100 = load_gpu("h100-sxm"), load_gpu("a100-sxm-80gb")
LLAMA3 = load_model("llama-3-8b")
LLAMA31 = load_model(DATA / "models" / "llama-3.1-8b-instruct.yaml")
RTX3090 = load_gpu(DATA / "hardware" / "rtx-3090.yaml")

#: Logs print GiB with two decimals: a figure rebuilt from several of them is off by up to a few of 0.005 GiB.
LOGGED_GIB = 0.02 * GiB
#: The modelled activation peak against a logged one: the sampler's bytes per logit are one constant per version.
ACTIVATION_REL = 0.05


def vllm(version: str = "v1", **kw) -> EngineSettings:
    return EngineSettings(parse_accounting(Engine.vllm, version), **kw)


def sglang(version: str = "v0.4", **kw) -> EngineSettings:
    return EngineSettings(parse_accounting(Engine.sglang, version), **kw)


# --- vocabulary -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, dtype, sparse", [
    ("auto", None, False), ("fp8", DType.fp8_e4m3, False), ("FP8_E4M3", DType.fp8_e4m3, False),
    ("fp8_e5m2", DType.fp8_e5m2, False), ("fp8_ds_mla", DType.fp8_e4m3, True), ("bfloat16", DType.bf16, False),
    ("half", DType.fp16, False), ("fp8_inc", DType.fp8_e4m3, False)])
def test_kv_cache_dtype_names(name, dtype, sparse):
    kv = parse_kv_cache_dtype(name)
    assert kv.dtype is dtype and kv.mla_sparse_fp8 is sparse


def test_unknown_kv_cache_dtype_lists_the_names():
    with pytest.raises(InputError, match="'int4' is not a KV-cache dtype; choose one of auto, fp8"):
        parse_kv_cache_dtype("int4")


@pytest.mark.parametrize("engine, text, expected", [
    (Engine.vllm, None, Accounting.vllm_v1), (Engine.vllm, "v0", Accounting.vllm_v0),
    (Engine.vllm, "0.6.4", Accounting.vllm_v0_6_4), (Engine.vllm, "vllm-v0.2", Accounting.vllm_v0_2),
    (Engine.sglang, None, Accounting.sglang_v0_5), (Engine.sglang, "V0.4", Accounting.sglang_v0_4)])
def test_accountings(engine, text, expected):
    assert parse_accounting(engine, text) is expected


@pytest.mark.parametrize("engine, text, needle", [
    (Engine.vllm, "sglang-v0.4", "is SGLang's, but --engine is vllm"),
    (Engine.vllm, "v2", "not a vLLM accounting rooflab models; choose one of v0.2, v0.6.4, v0, v1"),
    (Engine.sglang, "v1", "not a SGLang accounting")])
def test_bad_accountings(engine, text, needle):
    with pytest.raises(InputError, match=needle):
        parse_accounting(engine, text)


# --- the profile run ------------------------------------------------------------------------------------------------

def _activation(model, gpu, settings):
    return profile_run(model, resolve(settings, model, gpu)).peak_bytes


def test_v0_sampler_reproduces_vllm_10511():
    """vllm#10511: Llama-3-8B, H100, V0 defaults (8,192 tokens over 256 sequences): 1.26 GiB logged."""
    s = vllm("v0", max_model_len=8192)
    run = profile_run(LLAMA3, resolve(s, LLAMA3, H100))
    assert run.sampler_bytes == 256 * 128256 * 40 + 8192 * 4096 * 2
    assert run.peak_bytes == run.sampler_bytes > run.forward_bytes
    assert run.peak_bytes == pytest.approx(1.26 * GiB, rel=ACTIVATION_REL)


@pytest.mark.parametrize("max_len, logged_gib", [(20000, 17.06 - 14.9888), (29000, 17.98 - 14.9888)])
def test_v0_forward_reproduces_vllm_10517(max_len, logged_gib):
    """vllm#10517 (v0.6.4, RTX 3090, Llama-3.1-8B): peak_torch_memory less the weights, at 20k and 29k tokens."""
    run = profile_run(LLAMA31, resolve(vllm("v0.6.4", max_model_len=max_len), LLAMA31, RTX3090))
    assert run.forward_bytes == max_len * (3 * 4096 + 3 * 14336) * 2
    assert run.peak_bytes == run.forward_bytes
    assert run.peak_bytes == pytest.approx(logged_gib * GiB, rel=0.01)


@pytest.mark.parametrize("model, tp, logged_gib", [
    (LLAMA31, 1, 1.89), (LLAMA31, 4, 1.89), (load_model("qwen2.5-72b"), 2, 2.29),
    (load_model(DATA / "models" / "qwen3-30b-a3b.yaml"), 1, 2.68), (load_model("mixtral-8x7b"), 2, 1.21)])
def test_v1_activation_against_v019_logs(model, tp, logged_gib):
    """vLLM v0.19.0 H100 logs (llm-d-planner d3121e0): 'torch peak memory increase' at 8,192 tokens, 1,024 seqs."""
    peak = _activation(model, H100, vllm("v1", tensor_parallel=tp, max_model_len=8192))
    assert peak == pytest.approx(logged_gib * GiB, rel=0.08 if model.is_moe else ACTIVATION_REL)


def test_v1_defaults_follow_the_gpu():
    big = resolve(vllm(), LLAMA3, H100)
    small = resolve(vllm(), LLAMA3, A100)       # A100s are left out of the large defaults
    assert (big.max_num_batched_tokens, big.max_num_seqs) == (8192, 1024)
    assert (small.max_num_batched_tokens, small.max_num_seqs) == (2048, 256)


def test_v0_chunked_prefill_for_long_contexts():
    assert resolve(vllm("v0", max_model_len=32768), LLAMA31, H100).max_num_batched_tokens == 32768
    assert resolve(vllm("v0", max_model_len=65536), LLAMA31, H100).max_num_batched_tokens == 2048
    assert resolve(vllm("v0.6.4", max_model_len=65536), LLAMA31, H100).max_num_batched_tokens == 512


# --- layouts ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model, tp, kv_gib, tokens, concurrency", [
    ("gemma-3-27b", 1, 19.53, 36560, 4.46),             # 10 full + 52 sliding layers: 7 groups, 8 padding layers
    ("gpt-oss-20b", 2, 59.32, 2591776, 316.07),         # 12 + 12: 2 groups
    (DATA / "models" / "gemma-2-27b.yaml", 1, 20.59, 58672, 7.16),
    (DATA / "models" / "deepseek-v2-lite.yaml", 1, 43.61, 1505552, 183.78),   # MLA: 576 x 2 B a token a layer
])
def test_v1_layout_reproduces_v019_token_lines(model, tp, kv_gib, tokens, concurrency):
    """vLLM v0.19.0 logs: 'Available KV cache memory' -> 'GPU KV cache size' and 'Maximum concurrency' (8,192)."""
    spec = load_model(model)
    s = resolve(vllm(tensor_parallel=tp, max_model_len=8192), spec, H100)
    layout = vllm_layout(spec, s)
    blocks = layout.num_blocks(int(kv_gib * GiB))
    # two-decimal GiB leaves the block count uncertain by a few blocks; the logged figures fall in that range
    spread = [layout.tokens(layout.num_blocks(int((kv_gib + d) * GiB))) for d in (-0.005, 0.005)]
    assert spread[0] <= tokens <= spread[1]
    assert layout.concurrency(blocks, 8192) == pytest.approx(concurrency, abs=0.02)


def test_v0_counts_every_layer_full_length():
    gemma = load_model("gemma-3-27b")
    v0 = vllm_layout(gemma, resolve(vllm("v0", max_model_len=8192), gemma, H100))
    assert v0.num_groups == 1 and v0.block_bytes == 16 * 62 * 16 * 128 * 2 * 2


def test_sglang_k_size_line():
    """sglang#4760: 442,750 tokens of Llama-3.1-8B on one GPU: 'K size: 27.02 GB' (the pool keeps one page more)."""
    cell = sglang_cell(LLAMA31, resolve(sglang(), LLAMA31, H100))
    assert cell.block_bytes == 32 * 8 * 128 * 2 * 2
    assert (442750 + 1) * cell.k_bytes_per_token / GiB == pytest.approx(27.02, abs=0.005)


def test_linear_attention_is_refused():
    with pytest.raises(InputError, match="linear-attention layers"):
        engine_capacity(load_model("qwen3-next-80b-a3b"), H100, vllm())


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


@pytest.mark.parametrize("version, tp, gpu, expected", [
    ("v0.4", 1, H100, 0.88), ("v0.4", 2, H100, 0.87), ("v0.4", 4, H100, 0.85), ("v0.4", 8, H100, 0.81),
    ("v0.5", 1, H100, 0.835),     # reserve 512 + 8192 x 1.5 + 256 x 2 + 128 = 13,440 MiB of 81,559
    ("v0.5", 1, load_gpu("rtx-4090"), round((24564 - (512 + 3072 + 48 + 128)) / 24564, 3))])
def test_sglang_default_fraction(version, tp, gpu, expected):
    assert default_fraction(parse_accounting(Engine.sglang, version), tp, gpu) == expected


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
    c = engine_capacity(LLAMA3, load_gpu("l40s"), vllm())
    assert c.term("cuda_visible_total").source.startswith("estimated: l40s's nvidia-smi total less 0.45 GiB")
    given = engine_capacity(LLAMA3, load_gpu("l40s"), vllm(cuda_visible_bytes=44 * GiB))
    assert given.term("cuda_visible_total").bytes == 44 * GiB


@pytest.mark.parametrize("settings, needle", [
    (vllm(max_num_seqs=512, max_num_batched_tokens=256), "below --max-num-seqs"),
    (vllm("v0", max_model_len=8192, max_num_batched_tokens=4096), "V0 without chunked prefill"),
    (vllm(max_model_len=16384), "exceeds llama-3-8b's max_context_len"),
])
def test_options_vllm_refuses(settings, needle):
    with pytest.raises(InputError, match=needle):
        engine_capacity(LLAMA3, H100, settings)

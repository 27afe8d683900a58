"""Tests of the sizing overrides (rooflab/engines/overrides.py, issue 28): --enforce-eager / --disable-cuda-graph,
SGLang's --max-total-tokens, vLLM's --num-gpu-blocks-override and --kv-cache-memory-bytes, each hand-computed from
the source it cites:

    vLLM   vllm/v1/worker/gpu_worker.py determine_available_memory (the kv_cache_memory_bytes branch returns before
           profiling; the CUDA-graph estimate is skipped under cudagraph_mode NONE, v0.20.0 - v0.29.0),
           vllm/v1/core/kv_cache_utils.py get_num_blocks / may_override_num_blocks, vllm/engine/llm_engine.py
           _initialize_kv_caches (V0), vllm/engine/arg_utils.py human_readable_int and get_kwargs, vllm#27181's log
    SGLang python/sglang/srt/model_executor/model_runner.py init_memory_pool (v0.4.x: max_num_reqs from the profiled
           tokens, then min(tokens, max_total_tokens) floored to page_size), model_runner_kv_cache_mixin.py
           _resolve_max_num_reqs on main (from the capped tokens), init_cuda_graphs (returns under
           --disable-cuda-graph), server_args.py _handle_gpu_memory_settings (the graph reserve regardless)
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import Engine, engine_capacity
from rooflab.engines.explain import explain_log
from rooflab.engines.logs import parse_log
from rooflab.engines.request import parse_kv_cache_memory
from rooflab.engines.vllm import CUDA_GRAPH_ESTIMATE
from rooflab.errors import InputError
from rooflab.units import GiB, MiB
from support import sglang, vllm

LLAMA3 = load_model("llama-3-8b")
QWEN3_8B = load_model("qwen3-8b")
H100 = load_gpu("h100-sxm")
#: Llama-3-8B's KV bytes a token: 32 layers x 8 KV heads x 128 x (K, V) x 2 bytes.
LLAMA3_CELL = 32 * 8 * 128 * 2 * 2


def _sums(c) -> None:
    """The terms add up to the total (result.EngineCapacity): margin + used + KV (vLLM), + in use before (SGLang)."""
    total = c.term("cuda_visible_total").bytes
    assert sum(t.bytes for t in c.terms if t.role.value != "total") == total


# --- enforce_eager -----------------------------------------------------------------------------------------------

def test_enforce_eager_charges_no_cuda_graph_estimate_from_v0_20():
    """Qwen3-8B, TP 1, max_num_seqs 128, v0.20.0: the estimate is 79,691,776 bytes (test_cudagraph.py's hand
    computation: 25,165,824 for the first capture + (34 + 18) MiB); --enforce-eager (cudagraph_mode NONE) captures
    nothing, so the term is 0 and the KV cache gains exactly that."""
    kw = dict(max_num_seqs=128, max_num_batched_tokens=8192, release="0.20.0")
    graphs = engine_capacity(QWEN3_8B, H100, vllm(**kw))
    eager = engine_capacity(QWEN3_8B, H100, vllm(enforce_eager=True, **kw))
    assert graphs.term(CUDA_GRAPH_ESTIMATE).bytes == 25_165_824 + 52 * MiB == 79_691_776
    assert eager.term(CUDA_GRAPH_ESTIMATE).bytes == 0
    assert "--enforce-eager" in eager.term(CUDA_GRAPH_ESTIMATE).source
    assert eager.kv_cache_bytes - graphs.kv_cache_bytes == 79_691_776
    _sums(eager)


@pytest.mark.parametrize("settings", [vllm(), vllm("v1", release="0.19.1"), vllm("v0"), vllm("v0.6.4")],
                         ids=["v1-label", "v0.19.1", "v0", "v0.6.4"])
def test_enforce_eager_leaves_the_kv_cache_where_graphs_come_after_sizing(settings):
    """Before v0.20.0 (and for a label, v0.19's terms) vLLM sizes the cache, then captures graphs inside the
    (1 - u) margin: the KV figure is the same; a note says where the graphs' memory went."""
    base = engine_capacity(LLAMA3, H100, settings)
    eager = engine_capacity(LLAMA3, H100, dataclasses.replace(settings, enforce_eager=True))
    assert eager.kv_cache_bytes == base.kv_cache_bytes and eager.num_blocks == base.num_blocks
    assert eager.term(CUDA_GRAPH_ESTIMATE) is None
    assert any(n.startswith("--enforce-eager: no CUDA graphs are captured") for n in eager.notes)


@pytest.mark.parametrize("version", ["v0.4", "v0.5"])
def test_disable_cuda_graph_leaves_sglangs_pool(version):
    """SGLang's f x pre - weights has no graph term: graphs live in the (1 - f) margin, and the default fraction
    (v0.5's reserve counts 2 cuda_graph_max_bs MiB either way) does not read --disable-cuda-graph."""
    base = engine_capacity(LLAMA3, H100, sglang(version))
    eager = engine_capacity(LLAMA3, H100, sglang(version, enforce_eager=True))
    assert (eager.kv_cache_tokens, eager.utilization) == (base.kv_cache_tokens, base.utilization)
    assert any(n.startswith("--disable-cuda-graph: no CUDA graphs are captured") for n in eager.notes)


# --- max_total_tokens (SGLang) -----------------------------------------------------------------------------------

def test_max_total_tokens_caps_the_pool():
    """min(profiled, 4,096): 4,096 tokens of 131,072 bytes (32 x 8 x 128 x 2 x 2) = 536,870,912 bytes of pool; what
    the fraction allowed beyond them is the cap's margin term; the terms still add up."""
    free = engine_capacity(LLAMA3, H100, sglang("v0.4"))
    capped = engine_capacity(LLAMA3, H100, sglang("v0.4", max_total_tokens=4096))
    assert free.kv_cache_tokens > 4096
    assert capped.kv_cache_tokens == 4096 and capped.kv_cache_bytes == 4096 * LLAMA3_CELL == 536_870_912
    assert capped.term("max_total_tokens_cap").bytes == free.term("kv_cache").bytes - 536_870_912
    assert "max_total_num_tokens=4096" in capped.lines[-1]
    _sums(capped)


def test_max_total_tokens_is_floored_to_the_page():
    """max_total_num_tokens // page_size * page_size after the min: 20,007 at page 16 is 20,000."""
    c = engine_capacity(LLAMA3, H100, sglang("v0.5", block_size=16, max_total_tokens=20_007))
    assert c.kv_cache_tokens == 20_007 // 16 * 16 == 20_000


def test_max_total_tokens_above_the_profiled_value_warns_and_keeps_it():
    free = engine_capacity(LLAMA3, H100, sglang("v0.4"))
    c = engine_capacity(LLAMA3, H100, sglang("v0.4", max_total_tokens=10 * free.kv_cache_tokens))
    assert c.kv_cache_tokens == free.kv_cache_tokens and c.term("max_total_tokens_cap") is None
    assert any(f"is larger than the profiled value {free.kv_cache_tokens}" in n for n in c.notes)


def test_max_total_tokens_rows_follow_each_accountings_order():
    """Cap 20,000 at context_len 8,192. v0.4 (init_memory_pool): max_num_reqs from the profiled tokens P (412,017
    here: int(P / 8,192 x 512) = 25,751, clamped to 4,096), running = min(20,000 // 2, 4,096 + 1) = 4,097.
    sglang-v0.5 (main's _resolve_max_num_reqs, the finalized capacity): int(20,000 / 8,192 x 512) = 1,250, clamped up
    to 2,048, running = min(10,000, 2,049) = 2,049."""
    v04 = engine_capacity(LLAMA3, H100, sglang("v0.4", max_model_len=8192, max_total_tokens=20_000))
    profiled = engine_capacity(LLAMA3, H100, sglang("v0.4", max_model_len=8192)).kv_cache_tokens
    assert min(max(int(profiled / 8192 * 512), 2048), 4096) == 4096
    assert v04.max_running_requests == min(20_000 // 2, 4096 + 1) == 4097
    v05 = engine_capacity(LLAMA3, H100, sglang("v0.5", max_model_len=8192, max_total_tokens=20_000))
    assert min(max(int(20_000 / 8192 * 512), 2048), 4096) == 2048
    assert v05.max_running_requests == min(20_000 // 2, 2048 + 1) == 2049


def test_max_total_tokens_is_refused_for_vllm():
    with pytest.raises(InputError, match=r"--max-total-tokens is SGLang's; vLLM has no such option"):
        vllm(max_total_tokens=4096)
    with pytest.raises(InputError, match=r"max total tokens \(--max-total-tokens\)"):
        sglang("v0.5", max_total_tokens=0)


# --- num_gpu_blocks_override (vLLM) ------------------------------------------------------------------------------

def test_num_gpu_blocks_override_sets_the_blocks_after_sizing():
    """V1: get_num_blocks sizes M blocks, may_override_num_blocks returns N; 'GPU KV cache size' and 'Maximum
    concurrency' follow N: 1,000 blocks x 16 tokens = 16,000 tokens, 16,000 / 8,192 = 1.953125x. The KV cache is
    the blocks kept, 1,000 x 16 x 131,072 = 2,097,152,000 bytes (1.953 GiB); the rest of the sized memory is a
    margin term; 'Available KV cache memory' is the worker's figure before the override, unchanged."""
    base = engine_capacity(LLAMA3, H100, vllm(max_model_len=8192))
    c = engine_capacity(LLAMA3, H100, vllm(max_model_len=8192, num_gpu_blocks_override=1000))
    assert (c.num_blocks, c.kv_cache_tokens, c.max_concurrency) == (1000, 16_000, 1000 * 16 / 8192)
    assert c.kv_cache_bytes == c.term("kv_cache").bytes == 1000 * 16 * LLAMA3_CELL == 2_097_152_000
    assert c.term("num_gpu_blocks_override_rest").bytes == base.term("kv_cache").bytes - 2_097_152_000
    assert f"Available KV cache memory: {base.kv_cache_bytes / GiB:.2f} GiB" in c.lines
    _sums(c)
    assert f"Overriding num_gpu_blocks={base.num_blocks} with num_gpu_blocks_override=1000" in c.lines
    assert c.lines[-2:] == ("GPU KV cache size: 16,000 tokens", "Maximum concurrency for 8,192 tokens per request: 1.95x")


def test_num_gpu_blocks_override_of_one_block_prints_as_vllm_27181():
    """vllm#27181's log: num_gpu_blocks_override=1 gives 'GPU KV cache size: 16 tokens' and 'Maximum concurrency for
    2,048 tokens per request: 0.01x' (1 block x 16 tokens / 2,048 = 0.0078); no start-up refusal (vLLM checks the
    memory, not the override)."""
    c = engine_capacity(LLAMA3, H100, vllm(max_model_len=2048, num_gpu_blocks_override=1))
    assert c.lines[-2:] == ("GPU KV cache size: 16 tokens", "Maximum concurrency for 2,048 tokens per request: 0.01x")


def test_num_gpu_blocks_override_in_v0_prints_the_override_as_its_blocks():
    """V0 (llm_engine.py _initialize_kv_caches): the override replaces determine_num_available_blocks' count before
    initialize_cache prints '# GPU blocks'."""
    base = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192))
    c = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, num_gpu_blocks_override=1000))
    assert c.lines[:2] == (f"Overriding num_gpu_blocks={base.num_blocks} with num_gpu_blocks_override=1000",
                           "# GPU blocks: 1000, # CPU blocks: 2048")


def test_num_gpu_blocks_override_past_the_memory_is_a_note():
    base = engine_capacity(LLAMA3, H100, vllm())
    c = engine_capacity(LLAMA3, H100, vllm(num_gpu_blocks_override=2 * base.num_blocks))
    assert c.num_blocks == 2 * base.num_blocks
    assert any("would run out of memory allocating them" in n for n in c.notes)


def test_num_gpu_blocks_override_below_max_model_len_refuses_from_v0_21():
    """vLLM from v0.21.0 (vllm#41069) checks N x bytes per block against one request of max_model_len, from v0.29.0
    less the null block (kv_cache_utils.py:2294-2331, 0.29.0 wheel): 10 blocks, 9 checked, 144 tokens < 8,192. Before
    v0.21.0 it checks the sized memory, which fits; V0 checks the blocks kept (worker.py raise_if_cache_size_invalid,
    0.7.3): 10 x 16 = 160 < 8,192."""
    for release in ("0.21.0", "0.29.0"):
        c = engine_capacity(LLAMA3, H100, vllm(max_model_len=8192, num_gpu_blocks_override=10, release=release))
        assert c.kv_cache_tokens == 160
        assert any(n.startswith("vLLM would refuse to start: 'To serve at least one request with the model's max "
                                "seq len (8192), (1.00 GiB KV cache is needed") for n in c.notes), c.notes
    c = engine_capacity(LLAMA3, H100, vllm(max_model_len=8192, num_gpu_blocks_override=10, release="0.20.0"))
    assert not any("would refuse to start" in n for n in c.notes)
    c = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, num_gpu_blocks_override=10))
    assert any("is larger than the maximum number of tokens that can be stored in KV cache (160)" in n
               for n in c.notes)
    # 512 blocks hold one request at v0.21.0; v0.29.0 checks 511 and refuses
    fits = engine_capacity(LLAMA3, H100, vllm(max_model_len=8192, num_gpu_blocks_override=512, release="0.21.0"))
    assert not any("would refuse to start" in n for n in fits.notes)
    short = engine_capacity(LLAMA3, H100, vllm(max_model_len=8192, num_gpu_blocks_override=512, release="0.29.0"))
    assert any("would refuse to start" in n for n in short.notes)


def test_num_gpu_blocks_override_ignored_at_v0_9_1():
    """V1 v0.9.1's get_num_blocks logs the override and returns the sized count (kv_cache_utils.py:644-663 in the
    0.9.1 wheel; vllm#19503 assigned it in v0.9.2); v0.8.5 and v0.9.0 assign it in _get_kv_cache_config_uniform_type
    (kv_cache_utils.py:624-630 and :627-633 in their wheels)."""
    base = engine_capacity(LLAMA3, H100, vllm(release="0.9.1"))
    c = engine_capacity(LLAMA3, H100, vllm(release="0.9.1", num_gpu_blocks_override=100))
    assert (c.num_blocks, c.kv_cache_bytes) == (base.num_blocks, base.kv_cache_bytes)
    assert f"Overriding num_gpu_blocks={base.num_blocks} with num_gpu_blocks_override=100" in c.lines
    assert any("v0.9.1 logs the override and keeps" in n for n in c.notes)
    for version, release in (("v1", "0.9.2"), ("v0.8", "0.8.5")):
        c = engine_capacity(LLAMA3, H100, vllm(version, release=release, num_gpu_blocks_override=100))
        assert c.num_blocks == 100


def test_a_sizing_override_leaving_no_cache_refuses():
    """SGLang floors min(profiled, 63) to the 64-token page: 0 tokens, 'Not enough memory' (model_runner.py
    init_memory_pool); vLLM V1 given 1 MiB: 0 blocks, and 1 MiB < 512 blocks x 2 MiB for 8,192 tokens."""
    c = engine_capacity(LLAMA3, H100, sglang("v0.5", max_total_tokens=63, block_size=64))
    assert c.kv_cache_tokens == 0
    assert any(n.startswith("SGLang would refuse to start: max_total_num_tokens is 0") for n in c.notes), c.notes
    c = engine_capacity(LLAMA3, H100, vllm(max_model_len=8192, kv_cache_memory_bytes=MiB))
    assert c.kv_cache_tokens == 0
    assert any("(1.00 GiB KV cache is needed" in n for n in c.notes), c.notes


def test_num_gpu_blocks_override_is_refused_for_sglang():
    with pytest.raises(InputError, match=r"--num-gpu-blocks-override is vLLM's; SGLang has no such option"):
        sglang("v0.5", num_gpu_blocks_override=100)


# --- kv_cache_memory_bytes (vLLM V1 from v0.11.0) ----------------------------------------------------------------

@pytest.mark.parametrize("release", [None, "0.11.0", "0.20.0"])
def test_kv_cache_memory_bytes_is_the_kv_cache(release):
    """20 GiB given: 21,474,836,480 / (16 tokens x 131,072 bytes) = 10,240 blocks, 163,840 tokens, 163,840 / 8,192
    = 20.0x; the utilisation sizes nothing (0.5 gives the same), no CUDA-graph estimate (the branch returns before
    it), and the margin is what the cache and the held terms leave of the total."""
    kw = dict(max_model_len=8192, kv_cache_memory_bytes=20 * GiB, release=release)
    c = engine_capacity(LLAMA3, H100, vllm(**kw))
    assert (c.kv_cache_bytes, c.num_blocks, c.kv_cache_tokens, c.max_concurrency) == (20 * GiB, 10_240, 163_840, 20.0)
    assert engine_capacity(LLAMA3, H100, vllm(utilization=0.5, **kw)).kv_cache_tokens == 163_840
    assert c.term(CUDA_GRAPH_ESTIMATE) is None
    held = sum(c.term(n).bytes for n in ("weights", "activation_peak", "non_torch"))
    assert c.term("margin").bytes == c.term("cuda_visible_total").bytes - 20 * GiB - held
    assert c.lines[0].startswith("reserved 20.00 GiB memory for KV Cache as specified by kv_cache_memory_bytes")
    _sums(c)


def test_kv_cache_memory_bytes_past_the_total_is_a_note():
    c = engine_capacity(LLAMA3, H100, vllm(kv_cache_memory_bytes=79 * GiB))
    assert c.term("margin").bytes < 0
    assert any("pass the CUDA-visible total" in n for n in c.notes)


@pytest.mark.parametrize("settings, needle", [
    (lambda: sglang("v0.5", kv_cache_memory_bytes=GiB), r"--kv-cache-memory-bytes is vLLM's; SGLang has no such"),
    (lambda: vllm("v0", kv_cache_memory_bytes=GiB), r"arrived in vLLM V1 v0\.11\.0 .*vllm-v0 .* has no such option"),
    (lambda: vllm("v0.8", kv_cache_memory_bytes=GiB), r"arrived in vLLM V1 v0\.11\.0"),
    (lambda: vllm(release="0.10.2", kv_cache_memory_bytes=GiB), r"arrived in vLLM v0\.11\.0 .*v0\.10\.2 has no such"),
    (lambda: vllm(kv_cache_memory_bytes=0), r"kv cache memory bytes \(--kv-cache-memory-bytes\)"),
])
def test_kv_cache_memory_bytes_is_refused_where_it_does_not_exist(settings, needle):
    with pytest.raises(InputError, match=needle):
        settings()


@pytest.mark.parametrize("text, value", [
    ("8G", 8 * 2**30), ("8g", 8 * 10**9), ("25.6k", 25_600), ("1K", 1024), ("2T", 2 * 2**40), ("1.5t", 15 * 10**11),
    ("8589934592", 8_589_934_592), (" 4M ", 4 * 2**20)])
def test_kv_cache_memory_reads_bytes_as_vllm_does(text, value):
    """vllm/engine/arg_utils.py human_readable_int: k m g t decimal (decimals allowed), K M G T binary."""
    assert parse_kv_cache_memory(text) == value


@pytest.mark.parametrize("text, needle", [("1.5G", "did you mean 1.5g"), ("8GiB", "K M G T"), ("1.5", "decimal"),
                                          ("-1", "whole number"), ("", "whole number")])
def test_kv_cache_memory_refuses_what_vllm_refuses(text, needle):
    with pytest.raises(InputError, match=needle) as exc:
        parse_kv_cache_memory(text)
    assert "--kv-cache-memory-bytes" in str(exc.value)


def test_enforce_eager_must_be_a_flag():
    with pytest.raises(InputError, match=r"enforce eager \(--enforce-eager / --disable-cuda-graph\)"):
        vllm(enforce_eager="yes")


# --- log replay: the settings a configuration line states ------------------------------------------------------

_V1_ARGS = ("(APIServer pid=1) INFO 05-01 00:00:00 [utils.py:326] non-default args: {'model': 'meta-llama/Meta-Llama-3-8B', "
            "'max_model_len': 8192, {extra}}\n")
#: SYNTHETIC lines in vLLM V1's formats (vllm/entrypoints/utils.py "non-default args: %s", vllm/v1/core/
#: kv_cache_utils.py, vllm/v1/worker/gpu_worker.py): written to test the reader and the replay; the figures are
#: rooflab's own prediction for the settings, so the checks are exact by construction of the lines.
V1_OVERRIDE = """(EngineCore pid=2) INFO 05-01 00:00:10 [gpu_worker.py:436] Available KV cache memory: 54.19 GiB
(EngineCore pid=2) INFO 05-01 00:00:10 [kv_cache_utils.py:829] Overriding num_gpu_blocks=27745 with num_gpu_blocks_override=1000
(EngineCore pid=2) INFO 05-01 00:00:10 [kv_cache_utils.py:1319] GPU KV cache size: 16,000 tokens
(EngineCore pid=2) INFO 05-01 00:00:10 [kv_cache_utils.py:1323] Maximum concurrency for 8,192 tokens per request: 1.95x
"""
V1_GIVEN = """(EngineCore pid=2) INFO 05-01 00:00:10 [gpu_worker.py:492] Initial free memory 78.68 GiB, reserved 20.0 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not respect the gpu_memory_utilization config.
(EngineCore pid=2) INFO 05-01 00:00:10 [kv_cache_utils.py:1319] GPU KV cache size: 163,840 tokens
(EngineCore pid=2) INFO 05-01 00:00:10 [kv_cache_utils.py:1323] Maximum concurrency for 8,192 tokens per request: 20.00x
"""
#: SYNTHETIC, SGLang v0.4's formats (server_args=ServerArgs(...) as its launcher prints the dataclass, then
#: model_runner.py's weights and pool lines, the scheduler's line).
SGLANG_CAPPED = """[2025-05-01 00:00:00] server_args=ServerArgs(model_path='meta-llama/Meta-Llama-3-8B', tp_size=1, mem_fraction_static=0.88, max_total_tokens=4096, disable_cuda_graph=True, disable_cuda_graph_padding=False)
[2025-05-01 00:00:05 TP0] Load weight begin. avail mem=78.60 GB
[2025-05-01 00:00:09 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.60 GB, mem usage=15.00 GB.
[2025-05-01 00:00:09 TP0] KV Cache is allocated. #tokens: 4096, K size: 0.25 GB, V size: 0.25 GB
[2025-05-01 00:00:10 TP0] max_total_num_tokens=4096, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=8192
"""


def test_a_vllm_log_states_its_blocks_override():
    """'num_gpu_blocks_override': 1000 in the non-default args: the replay keeps 1,000 blocks (16,000 tokens, 1.95x)
    and never anchors on the overridden count; the 'Overriding' line itself is not read as the setting."""
    log = parse_log(_V1_ARGS.replace("{extra}", "'num_gpu_blocks_override': 1000") + V1_OVERRIDE, "o.log")
    assert log.setting("num_gpu_blocks_override").value == 1000
    x = explain_log(log, LLAMA3, H100, vllm())
    assert x.reproduced.num_blocks == 1000 and x.check("kv_cache_tokens").rel_error == 0
    assert x.check("max_concurrency").rel_error == pytest.approx(0, abs=0.003)
    # the logged 'Available KV cache memory' is what vLLM sized before the override: checked against the cache plus
    # the override's rest, not the 1,000 blocks kept (it read -96% there)
    assert abs(x.check("kv_cache_bytes").rel_error) < 0.01
    assert any(line.startswith("--num-gpu-blocks-override 1000: from the log (line 1") for line in x.settings_taken)
    assert parse_log(V1_OVERRIDE, "bare.log").setting("num_gpu_blocks_override") is None


def test_a_vllm_log_states_its_kv_cache_memory():
    """'kv_cache_memory_bytes': 21474836480 (20 GiB) and the worker's 'reserved 20.0 GiB memory for KV Cache' line:
    the replay's cache is the 20 GiB given, its tokens 163,840 as logged."""
    args = _V1_ARGS.replace("{extra}", "'kv_cache_memory_bytes': 21474836480")
    log = parse_log(args + V1_GIVEN, "k.log")
    assert log.value("kv_bytes") == 20 * GiB and log.setting("kv_cache_memory_bytes").value == 20 * GiB
    x = explain_log(log, LLAMA3, H100, vllm())
    assert not x.anchored and x.reproduced.kv_cache_bytes == 20 * GiB
    assert x.check("kv_cache_tokens").rel_error == 0 and x.check("kv_cache_bytes").rel_error == 0


def test_a_vllm_log_states_enforce_eager():
    """'enforce_eager': True in a v0.20.0 start-up: the prediction beside the replay charges a 0-byte estimate."""
    config = ("(EngineCore pid=2) INFO 05-01 00:00:01 [core.py:74] Initializing a V1 LLM engine (v0.20.0) with config: "
              "model='meta-llama/Meta-Llama-3-8B', dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1, "
              "enforce_eager=True, kv_cache_dtype=auto\n")
    kv = "(EngineCore pid=2) INFO 05-01 00:00:10 [gpu_worker.py:436] Available KV cache memory: 54.19 GiB\n"
    log = parse_log(config + kv, "e.log")
    assert log.setting("enforce_eager").value == "True"
    x = explain_log(log, LLAMA3, H100, vllm())
    assert x.modelled.term(CUDA_GRAPH_ESTIMATE).bytes == 0
    assert any(line.startswith("--enforce-eager / --disable-cuda-graph True: from the log") for line in x.settings_taken)


def test_an_sglang_log_states_its_token_cap():
    """server_args' max_total_tokens=4096 and disable_cuda_graph=True: the replay caps the pool at 4,096 tokens
    (the logged #tokens), max_running_requests min(4,096 // 2, rows) = 2,048 as logged."""
    log = parse_log(SGLANG_CAPPED, "s.log")
    assert log.setting("max_total_tokens").value == 4096 and log.setting("enforce_eager").value == "True"
    x = explain_log(log, LLAMA3, H100, sglang("v0.4"))
    assert x.reproduced.kv_cache_tokens == 4096 and x.check("kv_cache_tokens").rel_error == 0
    assert x.check("max_running_requests").rel_error == 0
    assert x.reproduced.term("max_total_tokens_cap").bytes > 0


def test_an_option_the_log_contradicts_is_refused():
    log = parse_log(_V1_ARGS.replace("{extra}", "'num_gpu_blocks_override': 1000") + V1_OVERRIDE, "o.log")
    with pytest.raises(InputError, match=r"--num-gpu-blocks-override 5 contradicts the log's 1000"):
        explain_log(log, LLAMA3, H100, vllm(num_gpu_blocks_override=5), given=frozenset({"num_gpu_blocks_override"}))


# --- what-ifs on a logged run ------------------------------------------------------------------------------------

#: SYNTHETIC, vLLM V1 DEBUG lines (as test_explain.py's V1_DEBUG): every term printed, no override.
V1_TERMS = """(EngineCore pid=1) DEBUG [gpu_worker.py:284] worker init memory snapshot: torch_peak=0.0GiB, free_memory=78.68GiB, total_memory=79.19GiB, cuda_memory=0.51GiB
(EngineCore pid=1) INFO [gpu_model_runner.py:4820] Model loading took 14.96 GiB memory and 10.0 seconds
(EngineCore pid=1) DEBUG [gpu_worker.py:424] Initial free memory: 78.68 GiB; Requested memory: 0.900000 (util), 71.27 GiB
(EngineCore pid=1) DEBUG [gpu_worker.py:435] Memory profiling takes 10.00 seconds. Total non KV cache memory: 17.11GiB; torch peak memory increase: 1.90GiB; non-torch forward increase memory: 0.25GiB; weights memory: 14.96GiB.
(EngineCore pid=1) INFO [gpu_worker.py:436] Available KV cache memory: 54.16 GiB
(EngineCore pid=1) INFO [kv_cache_utils.py:1319] GPU KV cache size: 443,680 tokens, Maximum concurrency for 8,192 tokens per request: 54.16x
"""


def test_what_if_the_overrides_on_a_vllm_log():
    """--what-if num-gpu-blocks-override=1000: 16,000 tokens; kv-cache-memory-bytes=20G: 20 GiB / 2 MiB a block =
    10,240 blocks, 163,840 tokens (the 54.16 GiB the log's terms leave is not used)."""
    from rooflab.engines.request import parse_what_if

    log = parse_log(V1_TERMS, "v1.log")
    blocks = explain_log(log, LLAMA3, H100, vllm(), parse_what_if(["num-gpu-blocks-override=1000"], Engine.vllm))
    assert (blocks.what_if.num_blocks, blocks.what_if.kv_cache_tokens) == (1000, 16_000)
    given = explain_log(log, LLAMA3, H100, vllm(), parse_what_if(["kv-cache-memory=20G"], Engine.vllm))
    assert (given.what_if.kv_cache_bytes, given.what_if.kv_cache_tokens) == (20 * GiB, 163_840)
    with pytest.raises(InputError, match="--max-total-tokens is SGLang's"):
        explain_log(log, LLAMA3, H100, vllm(), parse_what_if(["max-total-tokens=4096"], Engine.vllm))


def test_what_if_a_token_cap_on_an_sglang_log():
    """The uncapped log's pool (its free memory before and after loading) capped at 4,096 tokens."""
    uncapped = ("\n".join(SGLANG_CAPPED.replace("max_total_tokens=4096, ", "").splitlines()[:3])
                + "\n[2025-05-01 00:00:09 TP0] KV Cache is allocated. #tokens: 400000, K size: 24.41 GB, V size: 24.41 GB\n")
    log = parse_log(uncapped, "s.log")
    from rooflab.engines.request import parse_what_if

    x = explain_log(log, LLAMA3, H100, sglang("v0.4"), parse_what_if(["max-total-tokens=4096"], Engine.sglang))
    assert x.reproduced.kv_cache_tokens > 4096 and x.what_if.kv_cache_tokens == 4096


def test_the_given_kv_line_alone_states_the_option():
    """V1's 'reserved 20.0 GiB memory for KV Cache as specified by kv_cache_memory_bytes' with no configuration line:
    the line states --kv-cache-memory-bytes itself (20 GiB at its printed precision), so the replay sizes nothing."""
    log = parse_log(V1_GIVEN, "g.log")
    assert log.setting("kv_cache_memory_bytes").value == 20 * GiB
    x = explain_log(log, LLAMA3, H100, vllm())
    assert x.reproduced.kv_cache_bytes == 20 * GiB and x.check("kv_cache_tokens").rel_error == 0

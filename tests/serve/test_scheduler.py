"""The engines' defaults (sources in rooflab/serve/scheduler.py)."""

import pytest

from rooflab.errors import InputError
from rooflab.serve import Engine, Scheduler
from rooflab.units import GiB


def test_vllm_defaults_by_memory():
    big = Scheduler.vllm(141 * GiB)
    assert (big.max_num_seqs, big.max_num_batched_tokens, big.mixed) == (1024, 8192, True)
    small = Scheduler.vllm(48 * GiB)
    assert (small.max_num_seqs, small.max_num_batched_tokens) == (256, 2048)
    assert Scheduler.vllm(80 * GiB, a100=True).max_num_seqs == 256


def test_sglang_defaults_by_memory():
    assert Scheduler.sglang(141 * GiB).max_num_batched_tokens == 8192
    assert Scheduler.sglang(180 * GiB).max_num_batched_tokens == 16384
    assert Scheduler.sglang(24 * GiB).max_num_batched_tokens == 2048
    assert not Scheduler.sglang(141 * GiB).mixed


def test_prefix_hits_and_errors():
    s = Scheduler(prefix_cache_hit_rate=0.75)
    assert s.prefill_tokens(1000) == 250
    with pytest.raises(InputError):
        Scheduler(prefix_cache_hit_rate=1.0)
    with pytest.raises(InputError):
        Engine.of("tgi")


@pytest.mark.parametrize("max_model_len, tokens, mixed", [(8192, 8192, False), (1024, 2048, False),
                                                          (32768, 32768, False), (131072, 2048, True)])
def test_vllm_v0_defaults_by_release(max_model_len, tokens, mixed):
    """vLLM before 0.8.0 runs V0 by default (vllm 0.7.3 envs.py:503-504): max_num_seqs 256 (arg_utils.py:224),
    chunked prefill only above 32,768 tokens of max_model_len (arg_utils.py:1164), then 2,048 tokens a step,
    else max(max_model_len, 2,048) (config.py:1521-1536) with prefills and decodes in separate steps
    (core/scheduler.py:1440-1445); 0.8.0 and later keep V1's defaults."""
    from rooflab.serve import Scheduler
    from rooflab.units import GiB

    v0 = Scheduler.vllm(141 * GiB, version="0.7.3", max_model_len=max_model_len)
    assert (v0.max_num_seqs, v0.max_num_batched_tokens, v0.mixed, v0.version) == (256, tokens, mixed, "0.7.3")
    assert Scheduler.vllm(141 * GiB, version="0.7.3", max_model_len=max_model_len, max_num_seqs=64).max_num_seqs == 64
    v1 = Scheduler.vllm(141 * GiB, version="0.8.0", max_model_len=max_model_len)
    assert v1 == Scheduler.vllm(141 * GiB)              # V1's defaults, as without a release


def test_v0_keeps_chunked_prefill_off_where_it_must():
    """vllm 0.7.3 engine/arg_utils.py:1171-1186: no chunked prefill by default for a multimodal model, a
    sliding-window one or under speculative decoding, whatever max_model_len."""
    from rooflab import load_model
    from rooflab.serve import Scheduler
    from rooflab.units import GiB

    assert Scheduler.v0_chunkable(load_model("llama-3.1-8b"))
    assert not Scheduler.v0_chunkable(load_model("llama-3.1-8b"), speculative=True)
    assert not Scheduler.v0_chunkable(load_model("gemma-3-27b"))           # a vision tower and windows
    off = Scheduler.vllm(141 * GiB, version="0.7.3", max_model_len=131072, chunkable=False)
    assert (off.max_num_batched_tokens, off.mixed) == (131072, False)


@pytest.mark.parametrize("method, running, mixed", [("eagle", 48, False), ("mtp", 48, False), ("ngram", 48, False),
                                                    (None, None, True)])
def test_sglang_resets_its_scheduler_under_drafts(method, running, mixed):
    """sglang 0.5.12 srt/server_args.py:3735-3776 (EAGLE, EAGLE3, STANDALONE; NEXTN runs as EAGLE) and :3852-3859
    (NGRAM): --max-running-requests 48 unless given, --enable-mixed-chunk off; STANDALONE refuses DP attention."""
    from rooflab.errors import InputError
    from rooflab.serve import Scheduler
    from rooflab.units import GiB

    s = Scheduler.sglang(141 * GiB, enable_mixed_chunk=True, speculative=method)
    assert (s.max_num_seqs, s.mixed) == (running, mixed)
    assert Scheduler.sglang(141 * GiB, max_running_requests=96, speculative=method).max_num_seqs == 96
    with pytest.raises(InputError, match="STANDALONE"):
        Scheduler.sglang(141 * GiB, speculative="draft_model", dp_attention=True)


def test_v0_defaults_by_release_line_and_gpu():
    """vLLM V0's long-context chunked-prefill default exists from 0.5 (0.5.4 engine/arg_utils.py:747; 0.4.0's has
    none) and not on ROCm (0.7.3 arg_utils.py:1174-1186); without chunked prefill a budget below max_model_len is
    refused (0.7.3 config.py:1574-1583)."""
    from rooflab import load_gpu, load_model
    from rooflab.errors import InputError
    from rooflab.serve import Scheduler
    from rooflab.units import GiB

    old = Scheduler.vllm(141 * GiB, version="0.4.0", max_model_len=131072)
    assert (old.max_num_batched_tokens, old.mixed) == (131072, False)
    assert not Scheduler.v0_chunkable(load_model("llama-3.1-8b"), gpu=load_gpu("mi300x"))
    assert Scheduler.v0_chunkable(load_model("llama-3.1-8b"), gpu=load_gpu("h200-sxm"))
    with pytest.raises(InputError, match="max_model_len"):
        Scheduler.vllm(141 * GiB, version="0.7.3", max_model_len=8192, max_num_batched_tokens=1024)

"""Tests of rooflab/engines/settings.py: vLLM v1's defaults follow the GPU, v0 chunks prefill for long
contexts, and the state-cache and LoRA settings are checked.
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

"""Tests of rooflab/engines/vllm.py: memory other processes hold (--memory-in-use), accounting by accounting.

vLLM V1 refuses to start when the free memory at its first snapshot is below u x total (vllm/v1/worker/gpu_worker.py
init_device: "Free memory on device ... on startup is less than desired GPU memory utilization"); its KV budget
does not move. v0.6.4 counts other processes in non-torch memory (total - free - torch reserved) and v0.2.5 charges
everything in use after the profile run, so their KV shrinks by exactly that memory.
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflab import load_gpu, load_model
from rooflab.engines import Role, engine_capacity
from rooflab.errors import InputError
from rooflab.units import GiB
from support import vllm

H100 = load_gpu("h100-sxm")
LLAMA3 = load_model("llama-3-8b")


def test_v1_start_up_refusal_threshold():
    """T = 79.22 GiB (the H100 YAML), u = 0.9, vLLM's own 0.5 GiB at TP 1: it starts while T - M - 0.5 >= 0.9 T,
    that is M <= 0.1 x 79.22 - 0.5 = 7.422 GiB."""
    total = H100.cuda_visible_bytes
    edge = total - int(total * 0.9) - int(0.5 * GiB)
    fits = engine_capacity(LLAMA3, H100, vllm(memory_in_use_bytes=edge))
    alone = engine_capacity(LLAMA3, H100, vllm())
    assert fits.kv_cache_bytes == alone.kv_cache_bytes          # the budget does not move
    assert fits.term("other_processes").role is Role.margin
    assert fits.term("margin").bytes == alone.term("margin").bytes - edge
    with pytest.raises(InputError, match=r"would refuse to start.*Free memory on device.*at most 0\.8"):
        engine_capacity(LLAMA3, H100, vllm(memory_in_use_bytes=edge + 1))


@pytest.mark.parametrize("version", ["v0.2", "v0.6.4"])
def test_older_accountings_charge_other_processes(version):
    alone = engine_capacity(LLAMA3, H100, vllm(version, max_model_len=8192))
    shared = engine_capacity(LLAMA3, H100, vllm(version, max_model_len=8192, memory_in_use_bytes=3 * GiB))
    assert alone.kv_cache_bytes - shared.kv_cache_bytes == 3 * GiB
    assert shared.term("other_processes").role is Role.used


def test_v0_measures_increases_only():
    alone = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192))
    shared = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, memory_in_use_bytes=30 * GiB))
    assert shared.kv_cache_bytes == alone.kv_cache_bytes


def test_terms_add_up_with_other_processes():
    for settings in (vllm(memory_in_use_bytes=2 * GiB), vllm("v0.6.4", max_model_len=8192, memory_in_use_bytes=2 * GiB)):
        c = engine_capacity(LLAMA3, H100, settings)
        total = c.term("cuda_visible_total").bytes
        assert sum(t.bytes for t in c.terms if t.role is not Role.total) == total


def test_memory_in_use_beyond_the_total_is_refused():
    with pytest.raises(InputError, match="--memory-in-use.*nothing is free"):
        engine_capacity(LLAMA3, H100, vllm(memory_in_use_bytes=80 * GiB))
    with pytest.raises(InputError, match="--memory-in-use"):
        dataclasses.replace(vllm(), memory_in_use_bytes=-1)

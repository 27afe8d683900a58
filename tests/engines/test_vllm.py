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


@pytest.mark.parametrize("version", ["v0.2", "v0.6.4", "v0.8"])
def test_older_accountings_charge_other_processes(version):
    alone = engine_capacity(LLAMA3, H100, vllm(version, max_model_len=8192))
    shared = engine_capacity(LLAMA3, H100, vllm(version, max_model_len=8192, memory_in_use_bytes=3 * GiB))
    assert alone.kv_cache_bytes - shared.kv_cache_bytes == 3 * GiB
    assert shared.term("other_processes").role is Role.used


def test_v0_measures_increases_only():
    alone = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192))
    shared = engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, memory_in_use_bytes=7 * GiB))
    assert shared.kv_cache_bytes == alone.kv_cache_bytes


def test_v0_runs_out_of_memory_when_others_exceed_its_margin():
    """vLLM V0 (v0.6.5 worker.py determine_num_available_blocks) allocates u T of weights, profile and cache on top
    of its baseline snapshot (the CUDA context, 0.5 GiB, and other processes' M) without subtracting M: it fits
    while 0.9 T + M + 0.5 GiB <= T, M <= 79.22 x 0.1 - 0.5 = 7.42 GiB on an H100; beyond, the allocation fails.
    Largest utilisation with M = 30 GiB: (79.2197 - 30 - 0.5) / 79.2197 = 0.61499, 0.614 floored to 3 decimals."""
    total = H100.cuda_visible_bytes
    edge = total - int(total * 0.9) - int(0.5 * GiB)
    engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, memory_in_use_bytes=edge))
    with pytest.raises(InputError, match=r"--memory-in-use.*vLLM V0 would run out of memory allocating the KV cache"):
        engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, memory_in_use_bytes=edge + 1))
    fits = (total - 30 * GiB - int(0.5 * GiB)) * 1000 // total / 1000
    assert fits == 0.614
    with pytest.raises(InputError, match=rf"largest utilisation that fits is {fits:.3f}"):
        engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, memory_in_use_bytes=30 * GiB))
    engine_capacity(LLAMA3, H100, vllm("v0", max_model_len=8192, utilization=fits, memory_in_use_bytes=30 * GiB))


@pytest.mark.parametrize("version", ["v0.2", "v0.6.4", "v0", "v0.8", "v1"])
def test_no_accounting_holds_more_than_the_total(version):
    """Whatever other processes hold, a KV cache rooflab reports fits: used terms + KV + other processes <= T (the
    charging accountings take M out of u T; V0 and V1 refuse when it does not fit beside u T); with nothing left
    the capacity says vLLM would refuse to start."""
    for gib in (1, 5, 7, 8, 20, 40, 70):
        try:
            c = engine_capacity(LLAMA3, H100, vllm(version, max_model_len=8192, memory_in_use_bytes=gib * GiB))
        except InputError:
            continue
        if c.kv_cache_bytes == 0:
            assert any("would refuse to start" in n for n in c.notes)
            continue
        held = sum(t.bytes for t in c.terms if t.role.name in ("used", "kv") and t.bytes > 0)
        held += 0 if c.term("other_processes").role is Role.used else gib * GiB
        assert held <= H100.cuda_visible_bytes and c.term("margin").bytes >= 0


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


def test_v1_v0_8_accounting_by_hand():
    """vLLM V1 v0.8.0 - v0.9.0.1 (gpu_worker.py determine_available_memory at 48cb2109): KV = u T - (torch's
    allocated peak + (total - free) - torch's allocated bytes). Against vllm-v1 (v0.9.1 on) on Llama-3-8B, one H100,
    `vllm serve` defaults (8192 tokens, 1024 sequences): the same weights; a sampler beside 1024 x 4096 x 2 bytes of
    last-token hidden states, not 8192 x 4096 x 2 (v0.8's _dummy_run returns hidden_states[logit_indices]); non-torch
    memory 0.75 GiB, not 0.25 (the CUDA context that v0.9.1's snapshot leaves out, memory.py)."""
    old = engine_capacity(LLAMA3, H100, vllm("v0.8"))
    new = engine_capacity(LLAMA3, H100, vllm("v1"))
    assert old.term("weights").bytes == new.term("weights").bytes
    sampler = 1024 * 128_256 * 15
    assert old.term("activation_peak").bytes == sampler + 1024 * 4096 * 2
    assert new.term("activation_peak").bytes == sampler + 8192 * 4096 * 2
    assert old.term("non_torch").bytes == int(0.75 * GiB) and new.term("non_torch").bytes == int(0.25 * GiB)
    budget = int(H100.cuda_visible_bytes * 0.9)
    kv = budget - old.term("weights").bytes - (sampler + 1024 * 4096 * 2) - int(0.75 * GiB)
    assert old.kv_cache_bytes == kv and old.num_blocks == kv // (16 * 32 * 2 * 8 * 128 * 2)
    assert not any(line.startswith("Available KV cache memory") for line in old.lines)   # printed from v0.9.1
    assert old.lines[0] == f"GPU KV cache size: {old.num_blocks * 16:,} tokens"


def test_v1_v0_8_neither_refuses_other_processes_nor_excludes_a100():
    """v0.8 had no start-up refusal (PR #18974 added it in v0.9.1) and gave A100s the large-GPU defaults."""
    engine_capacity(LLAMA3, H100, vllm("v0.8", memory_in_use_bytes=20 * GiB))
    a100 = load_gpu("a100-sxm-80gb")
    assert engine_capacity(LLAMA3, a100, vllm("v0.8")).max_num_batched_tokens == 8192
    assert engine_capacity(LLAMA3, a100, vllm("v1")).max_num_batched_tokens == 2048
    with pytest.raises(InputError, match="one KV-cache type only"):
        engine_capacity(load_model("gpt-oss-120b"), H100, vllm("v0.8"))


def test_lora_is_refused_under_v0_2():
    """vLLM gained --enable-lora in v0.3.0 (PR #1804): the v0.2 accounting (v0.2.5 - v0.6.3) refuses it, naming the
    option; v0.6.4 on takes it."""
    with pytest.raises(InputError, match=r"--enable-lora.*v0\.3\.0"):
        engine_capacity(LLAMA3, H100, vllm("v0.2", max_model_len=8192, enable_lora=True))
    assert engine_capacity(LLAMA3, H100, vllm("v0.6.4", max_model_len=8192, enable_lora=True)).term("lora_buffers")

# --- what V1 holds at its start-up snapshot under TP, by the GPU's peer_transport (in_use_at_snapshot) ----------------

from rooflab.engines import engine_capacity  # noqa: E402
from rooflab.engines.memory import NCCL_OFF_DEVICE_GIB, PCIE_P2P_BUFFERS_GIB  # noqa: E402
from rooflab.engines.settings import cuda_visible  # noqa: E402
from rooflab.engines.vllm import IN_USE_AT_SNAPSHOT, in_use_at_snapshot  # noqa: E402

@pytest.mark.parametrize("gpu, tp, gib", [
    ("h100-sxm", 1, 0.5), ("h100-sxm", 2, 1.5),                                    # device_link: the H100 figures
    ("rtx-4090", 2, 0.5 + NCCL_OFF_DEVICE_GIB),                                    # host: 0.55 GiB
    ("a10", 2, 0.5 + NCCL_OFF_DEVICE_GIB + PCIE_P2P_BUFFERS_GIB)])                 # pcie_p2p: 0.5 + 0.05 + 0.087
def test_snapshot_by_transport(gpu, tp, gib):
    assert IN_USE_AT_SNAPSHOT == (int(0.5 * GiB), int(1.5 * GiB))
    assert in_use_at_snapshot(tp, load_gpu(gpu)) == int(gib * GiB)


def test_the_refusal_follows_the_transport():
    """Two RTX 4090s (host transport) at TP 2 with 1.5 GiB of other processes' memory: u T = 0.9 x total; free at
    the snapshot is T - 1.5 - 0.55 GiB, not T - 1.5 - 1.5, so a utilisation that the NVSwitch figure would refuse
    starts: the largest that starts is (T - 1.5 - 0.55) / T, printed in the refusal just above it."""
    gpu, model = load_gpu("rtx-4090"), load_model("llama-3-8b")
    total = cuda_visible(gpu)[0]
    fits = (total - int(1.5 * GiB) - int((0.5 + 0.05) * GiB)) / total
    engine_capacity(model, gpu, vllm("v1", tensor_parallel=2, max_model_len=4096, memory_in_use_bytes=int(1.5 * GiB),
                                     utilization=round(fits - 0.005, 3)))
    with pytest.raises(InputError, match=f"at most {int(fits * 1000) / 1000:.3f}"):
        engine_capacity(model, gpu, vllm("v1", tensor_parallel=2, max_model_len=4096,
                                         memory_in_use_bytes=int(1.5 * GiB), utilization=round(fits + 0.005, 3)))

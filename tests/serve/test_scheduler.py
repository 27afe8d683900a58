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

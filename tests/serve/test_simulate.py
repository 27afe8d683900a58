"""The SimPy simulation: request-rate runs, percentiles, preemption when the KV cache is full."""

import math

import numpy as np
import pytest

from rooflab import load_gpu, load_model
from rooflab.deployment import Deployment
from rooflab.errors import InputError
from rooflab.serve import ClosedLoop, Lengths, Replica, RequestRate, Scheduler, Workload, simulate


def test_a_low_rate_sees_no_queue(replica):
    sim = simulate(replica, RequestRate(0.5), num_requests=200, estimate="floor")
    assert sim.ttft.p50_s <= sim.ttft.p99_s
    assert sim.tpot.p50_s == pytest.approx(sim.tpot.mean_s, rel=0.2)
    assert sim.preemptions == 0
    # the offered load: about the rate times the mean output
    assert sim.requests_per_s == pytest.approx(0.5, rel=0.25)


def test_an_overload_queues(replica):
    calm = simulate(replica, RequestRate(1.0), num_requests=300, estimate="floor")
    flood = simulate(replica, RequestRate(math.inf), num_requests=300, estimate="floor")
    assert flood.ttft.mean_s > 5 * calm.ttft.mean_s


def test_a_full_kv_cache_preempts():
    gpu, model = load_gpu("h100-sxm"), load_model("llama-3-8b")
    small = Replica.build(model, gpu, Deployment(gpu_memory_utilization=0.25), Workload.fixed(4096, 4096),
                          Scheduler.vllm(80e9, max_num_seqs=1024))
    sim = simulate(small, ClosedLoop(small.kv_limit * 2), num_requests=small.kv_limit * 3, estimate="floor")
    assert sim.preemptions > 0


def test_sglang_apart_steps_stall_decodes(replica):
    mixed = Replica.build(replica.model, replica.gpu, replica.deployment, replica.workload,
                          Scheduler.sglang(150e9, enable_mixed_chunk=True))
    apart = Replica.build(replica.model, replica.gpu, replica.deployment, replica.workload, Scheduler.sglang(150e9))
    a = simulate(apart, ClosedLoop(64), num_requests=640, estimate="floor")
    m = simulate(mixed, ClosedLoop(64), num_requests=640, estimate="floor")
    assert a.itl.p99_s > m.itl.p99_s                   # a prefill step holds every decode back


def test_bad_load_is_refused(replica):
    with pytest.raises(InputError):
        simulate(replica, 8)
    with pytest.raises(InputError):
        simulate(replica, ClosedLoop(4), estimate="best")


def test_a_full_kv_cache_under_sglang_still_progresses():
    """SGLang without mixed chunks prefills before it decodes: a victim re-admitted at once after its preemption
    would be preempted again at the next decode, for ever; decodes take a step first (the module docstring)."""
    gpu, model = load_gpu("h100-sxm"), load_model("llama-3-8b")
    small = Replica.build(model, gpu, Deployment(gpu_memory_utilization=0.25), Workload.fixed(4096, 4096),
                          Scheduler.sglang(80e9))
    sim = simulate(small, ClosedLoop(small.kv_limit * 2), num_requests=small.kv_limit * 3, estimate="floor")
    assert sim.preemptions > 0 and sim.num_requests == small.kv_limit * 3

"""Tests of rooflab/comm.py: the communication model.

Bus bytes by hand, following nccl-tests' bus-bandwidth convention (its PERFORMANCE notes): all-reduce
2 (N - 1) / N S, all-gather and reduce-scatter (N - 1) S with S each rank's share, all-to-all (N - 1) / N S,
send/recv S; ring steps; the floor at the link's datasheet bandwidth; a prediction from a fitted band by hand,
never beating the floor and growing with the message; collectives by name; bad arguments named.
"""

from __future__ import annotations

import pytest

from rooflab.comm import HOP_LATENCY_S, bus_bytes, collective_time, ring_steps
from rooflab.errors import InputError
from rooflab.load import load_gpu
from rooflab.specs.interconnect import Band, CollectiveFit, InterconnectSpec
from rooflab.vocab import Kernel


MIB = 1 << 20
COLLECTIVES = [k for k in Kernel if k.is_collective]


def _link(**fits) -> InterconnectSpec:
    return InterconnectSpec("test link", 450e9, 8, "by hand", 50e9, tuple(fits.values()))


def test_bus_bytes_by_hand():
    assert bus_bytes(Kernel.all_reduce, MIB, 4) == 1.5 * MIB             # 2 x 3/4
    assert bus_bytes(Kernel.all_reduce, MIB, 2) == MIB
    assert bus_bytes(Kernel.all_gather, MIB, 8) == 7 * MIB
    assert bus_bytes(Kernel.reduce_scatter, MIB, 2) == MIB
    assert bus_bytes(Kernel.all_to_all, MIB, 4) == 0.75 * MIB
    assert bus_bytes(Kernel.send_recv, MIB, 8) == MIB
    assert all(bus_bytes(k, MIB, 1) == 0 for k in COLLECTIVES)


def test_ring_steps():
    assert ring_steps(Kernel.all_reduce, 8) == 14
    assert ring_steps(Kernel.all_gather, 8) == 7
    assert ring_steps(Kernel.send_recv, 8) == 1
    assert ring_steps(Kernel.all_reduce, 1) == 0


def test_floor_is_the_links_datasheet_bandwidth():
    # all-gather of 1 GiB per rank over 2 GPUs: 1 GiB over 450 GB/s = 2.386 ms; no fit, no prediction
    t = collective_time(_link(), Kernel.all_gather, 1 << 30, 2)
    assert t.t_floor_s == pytest.approx((1 << 30) / 450e9)
    assert t.t_predicted_s is None


def test_prediction_from_a_band_by_hand():
    fit = CollectiveFit(Kernel.all_reduce, 2, "graph", (Band(1 << 20, 10e-6, 100e9), Band(1 << 40, 20e-6, 300e9)))
    link = _link(a=fit)
    assert collective_time(link, Kernel.all_reduce, 1e6, 2).t_predicted_s == pytest.approx(10e-6 + 1e6 / 100e9)
    big = collective_time(link, Kernel.all_reduce, 1e9, 2)
    assert big.t_predicted_s == pytest.approx(20e-6 + 1e9 / 300e9)
    # 4 GPUs, no fit of their own: 4 more ring steps (6 against 2), the same bus bandwidth
    four = collective_time(link, Kernel.all_reduce, 1e6, 4)
    assert four.t_predicted_s == pytest.approx(10e-6 + 4 * HOP_LATENCY_S + 1.5e6 / 100e9)
    assert four.scaled and four.fitted_world_size == 2
    # past one node: the slower inter-node link, at the fitted share of it
    far = collective_time(link, Kernel.all_reduce, 1e9, 16)
    assert far.link_bytes_per_s == 50e9
    assert far.t_predicted_s == pytest.approx(20e-6 + 28 * HOP_LATENCY_S
                                              + bus_bytes(Kernel.all_reduce, 1e9, 16) / (300e9 * 50 / 450))
    # one GPU: nothing to send
    assert collective_time(link, Kernel.all_reduce, 1e9, 1).t_predicted_s == 0


@pytest.mark.parametrize("kernel", COLLECTIVES)
def test_time_never_beats_the_floor_and_grows_with_the_message(kernel):
    gpu = load_gpu("h200-sxm")
    sizes = [1 << p for p in range(12, 32)]
    for n in (2, 4, 8, 16):
        times = [collective_time(gpu, kernel, s, n) for s in sizes]
        assert all(t.t_predicted_s >= t.t_floor_s for t in times)
        floors = [t.t_floor_s for t in times]
        assert floors == sorted(floors)


def test_bad_input_names_the_value():
    with pytest.raises(InputError, match="not a collective"):
        bus_bytes(Kernel.flash, MIB, 2)
    with pytest.raises(InputError, match="GPU count"):
        bus_bytes(Kernel.all_reduce, MIB, 0)
    with pytest.raises(InputError, match="interconnect"):
        collective_time(load_gpu("a100-40gb"), Kernel.all_reduce, MIB, 2)


@pytest.mark.parametrize("call, named", [
    (lambda g: collective_time(g, "nope", 1e6, 2), "kernel"),                 # AttributeError on a str before
    (lambda g: collective_time(g, Kernel.all_gather, 1e6, 2, timing="nope"), "timing"),   # accepted before
    (lambda g: collective_time(g, Kernel.all_gather, float("nan"), 2), "bytes_per_rank"),
    (lambda g: collective_time(g, Kernel.all_gather, 1e6, 2.5), "world_size"),
    (lambda g: collective_time(None, Kernel.all_gather, 1e6, 2), "gpu"),
    (lambda g: ring_steps(Kernel.all_reduce, 0), "world_size"),               # answered 0 steps before
    (lambda g: bus_bytes(Kernel.all_reduce, 1e6, -2), "world_size"),
])
def test_collective_arguments_are_named(call, named):
    with pytest.raises(InputError, match=named):
        call(load_gpu("h200-sxm"))


def test_collective_kernel_by_name():
    gpu = load_gpu("h200-sxm")
    assert collective_time(gpu, "all_gather", 1e6, 2) == collective_time(gpu, Kernel.all_gather, 1e6, 2)

"""The communication model (rooflab.comm), its YAML section and its fit: golden values by hand, invariants, round trips.

Bus bytes follow nccl-tests' bus-bandwidth convention (its PERFORMANCE notes): all-reduce 2 (N - 1) / N S,
all-gather and reduce-scatter (N - 1) S with S each rank's share, all-to-all (N - 1) / N S, send/recv S.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rooflab.bench.comm_fit import fit_bands, held_out, interconnect_yaml, with_interconnect
from rooflab.bench.records import Measurement, read_measurements
from rooflab.comm import HOP_LATENCY_S, bus_bytes, collective_time, ring_steps
from rooflab.errors import InputError
from rooflab.load import data_dir, load_gpu, parse_yaml, spec_from_mapping
from rooflab.specs import GpuSpec
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


def test_interconnect_spec_checks():
    band = Band(1 << 20, 1e-5, 1e11)
    with pytest.raises(Exception, match="ascend"):
        CollectiveFit(Kernel.all_gather, 2, "graph", (band, band))
    with pytest.raises(Exception, match="timing"):
        CollectiveFit(Kernel.all_gather, 2, "sometimes", (band,))
    with pytest.raises(Exception, match="collective"):
        CollectiveFit(Kernel.flash, 2, "graph", (band,))
    fit = CollectiveFit(Kernel.all_gather, 2, "graph", (band,))
    with pytest.raises(Exception, match="fitted twice"):
        InterconnectSpec("x", 1e11, 8, "s", None, (fit, fit))


def _synthetic(kernel: Kernel, bands: list[tuple[float, float, float]], n: int = 2) -> list[Measurement]:
    rows = []
    for p in range(16, 31):
        s = 1 << p
        up, alpha, bw = next(b for b in bands if s <= b[0])
        rows.append(Measurement(kernel, "nccl", "bf16", alpha + bus_bytes(kernel, s, n) / bw, bytes_per_rank=s,
                                world_size=n, timing="graph"))
    return rows


def test_fit_recovers_bands_it_was_made_from():
    truth = [(2 * MIB, 9e-6, 120e9), (float(1 << 40), 30e-6, 300e9)]
    rows = _synthetic(Kernel.all_gather, truth)
    fit = fit_bands(rows)
    predicted = fit.predict(Kernel.all_gather, [m.bytes_per_rank for m in rows], 2)
    assert np.allclose(predicted, [m.time_s for m in rows], rtol=1e-6)
    (h,) = held_out(rows)
    assert h.errors.max() < 0.05          # the break lands between two fitted sizes; held-out rows near it


def test_bundled_collectives_meet_the_target():
    # the target for collectives: held-out median <= 10%, worst <= 25%, 64 KiB to 1 GiB
    _, rows = read_measurements(data_dir("measurements") / "h200x2-collectives.csv")
    errors = np.concatenate([h.errors for h in held_out(rows)])
    assert {m.bytes_per_rank for m in rows} == {1 << p for p in range(16, 31)}
    assert np.median(errors) <= 0.10 and errors.max() <= 0.25


def test_section_round_trips_through_the_yaml():
    gpu = load_gpu("h200-sxm")
    text = with_interconnect((data_dir("hardware") / "h200-sxm.yaml").read_text(), gpu.interconnect)
    again = spec_from_mapping(GpuSpec, parse_yaml(text, "h200"), "h200")
    assert again.interconnect == gpu.interconnect
    # a GPU without the section gets it before measured: / fitted:, or at the end
    bare = "name: x\n"
    assert with_interconnect(bare, gpu.interconnect).endswith(interconnect_yaml(gpu.interconnect))


def test_h200_and_h100_datasheet_links():
    for name in ("h200-sxm", "h100-sxm"):
        link = load_gpu(name).interconnect
        assert link.link_bytes_per_s == 450e9 and link.gpus_per_node == 8       # NVLink 4: 18 x 25 GB/s a way
    assert len(load_gpu("h200-sxm").interconnect.collectives) == 10
    assert not load_gpu("h100-sxm").interconnect.collectives

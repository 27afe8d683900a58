"""Tests of rooflab/fit/comm_fit.py: the communication fit recovers the bands it was made from, the bundled
collectives meet their target, and the fitted section round-trips through the GPU YAML.
"""

from __future__ import annotations

import numpy as np

from rooflab.fit.comm_fit import fit_bands, held_out, interconnect_yaml, with_interconnect
from rooflab.fit.records import Measurement, read_measurements
from rooflab.comm import bus_bytes
from rooflab.load import data_dir, load_gpu, parse_yaml, spec_from_mapping
from rooflab.specs import GpuSpec
from rooflab.vocab import Kernel


MIB = 1 << 20


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

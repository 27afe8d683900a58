"""Lengths and arrivals as the harnesses draw them."""

import math

import numpy as np
import pytest

from rooflab.errors import InputError, SpecError
from rooflab.serve import Lengths, RequestRate


def test_vllm_random_range():
    # vllm/benchmarks/datasets.py: [floor(L (1 - r)), ceil(L (1 + r))]
    assert (Lengths.vllm_random(1000, 0.25).low, Lengths.vllm_random(1000, 0.25).high) == (750, 1250)


def test_inferencex_range_and_mean():
    # InferenceX benchmark_serving.py: [int(L r), L]; 1024 at 0.8 -> [819, 1024], mean 921.5 (the rows' 922)
    lengths = Lengths.inferencex_random(1024, 0.8)
    assert (lengths.low, lengths.high) == (819, 1024)
    assert lengths.mean == pytest.approx(921.5)


def test_arrivals_end_at_n_over_rate():
    rng = np.random.default_rng(0)
    times = RequestRate(4.0, burstiness=0.5).arrivals(rng, 1000)
    assert times[-1] == pytest.approx(1000 / 4.0)
    assert np.all(np.diff(times) >= 0)
    assert not RequestRate(math.inf).arrivals(rng, 10).any()


def test_distribution_file(tmp_path):
    path = tmp_path / "lengths.csv"
    path.write_text("input_len\n100\n300\n")
    assert Lengths.from_file(path).mean == 200
    path.write_text("100\nabc\n")
    with pytest.raises(SpecError):
        Lengths.from_file(path)


def test_bad_values_refused():
    with pytest.raises(InputError):
        Lengths.vllm_random(100, 1.0)
    with pytest.raises(InputError):
        RequestRate(0)

"""Metrics as vllm bench serve defines them."""

import numpy as np

from rooflab.serve.metrics import Distribution, tpot_of, weighted_percentile


def test_tpot_excludes_the_first_token():
    tpot = tpot_of(np.array([1.1, 2.0]), np.array([0.1, 1.0]), np.array([11, 1]))
    assert np.allclose(tpot, [0.1])                    # (1.1 - 0.1) / 10; a one-token request has none


def test_weighted_percentile_is_numpys_on_repeated_values():
    rng = np.random.default_rng(1)
    values, weights = rng.random(50), rng.integers(1, 5, 50)
    repeated = np.repeat(values, weights)
    assert np.allclose(weighted_percentile(values, weights, (50, 90, 99)), np.percentile(repeated, (50, 90, 99)))
    assert Distribution.of(values, weights).mean_s == repeated.mean()

"""A seeded exact draw is the same whether its values are drawn on one thread or several."""

import numpy as np
import pytest

from dpspectral.privacy import _discrete
from dpspectral.privacy._discrete import GeneratorWords, discrete_gaussian_array, discrete_laplace_array


@pytest.mark.parametrize("sampler,scale", [(discrete_gaussian_array, 7.25), (discrete_gaussian_array, 3e6),
                                           (discrete_laplace_array, 11.0)])
@pytest.mark.parametrize("size", [_discrete._PARALLEL_VALUES - 1, _discrete._PARALLEL_VALUES + 12_345])
def test_threads_give_the_same_values(monkeypatch, sampler, scale, size):
    draws = {}
    for threads in (1, 2, 3):
        monkeypatch.setattr(_discrete, "_THREADS", threads)
        draws[threads] = sampler(scale, size, GeneratorWords(np.random.default_rng(11)))
    np.testing.assert_array_equal(draws[1], draws[2])
    np.testing.assert_array_equal(draws[1], draws[3])
    assert np.unique(draws[1]).size > 10  # a real draw, not a constant


def test_parts_cover_every_value_once(monkeypatch):
    monkeypatch.setattr(_discrete, "_THREADS", 3)
    for size in (1, _discrete._PARALLEL_VALUES - 1, _discrete._PARALLEL_VALUES, 10**6 + 1):
        parts = _discrete._parts(size)
        assert parts[0][0] == 0 and parts[-1][1] == size
        assert all(a[1] == b[0] for a, b in zip(parts, parts[1:], strict=False))
        assert len(parts) == (1 if size < _discrete._PARALLEL_VALUES else 3)

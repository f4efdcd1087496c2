"""Shared helpers of the adaptive-clipping tests (tests/test_adaptive_clip_*.py): spiked data with a
known direction, the sine of the angle to it, and a generator that records the Gaussian draws."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def spiked(n: int = 4000, d: int = 12, scale: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows of median norm ``scale / 4`` with one strong direction (the truth ``v = e_1``)."""
    rng = np.random.default_rng(seed)
    v = np.zeros(d)
    v[0] = 1.0
    X = rng.normal(size=(n, d)) * 0.3 + rng.normal(size=(n, 1)) * 3.0 * v
    X *= scale / 4.0 / np.median(np.linalg.norm(X, axis=1))
    return X, v


def sin_theta(W: np.ndarray, v: np.ndarray) -> float:
    """Sine of the angle between the first column of ``W`` and the unit vector ``v``."""
    return float(math.sqrt(max(0.0, 1.0 - float(W[:, 0] @ v) ** 2)))


def float_source() -> Any:
    """``config_context(noise="float")``: the seeded source then draws NumPy's ``normal`` with each
    release's planned std, which :class:`RecordingGenerator` records. (The default exact source takes the
    same planned std from the release; its widening for the grid is tested in tests/test_noise_and_plans.py.)
    """
    import dpspectral

    return dpspectral.config_context(noise="float")


class RecordingGenerator(np.random.Generator):
    """Records the std and shape of every ``normal`` draw (the pipeline's Gaussian releases under
    :func:`float_source`; sampling uses other draws)."""

    def __init__(self, seed: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.draws: list[tuple[float, tuple[int, ...]]] = []

    def normal(self, loc=0.0, scale=1.0, size=None):  # type: ignore[override]
        self.draws.append((float(scale), tuple(np.atleast_1d(size)) if size is not None else ()))
        return super().normal(loc, scale, size)

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def lowrank_data(rng: np.random.Generator) -> np.ndarray:
    """2,000 x 12 rows with a clear spectral gap, scaled to row norm <= 1."""
    n, d = 2000, 12
    basis, _ = np.linalg.qr(rng.normal(size=(d, d)))
    scales = np.array([3.0, 2.5, 2.0] + [0.3] * (d - 3))
    X = (rng.normal(size=(n, d)) * scales) @ basis.T
    return X / np.linalg.norm(X, axis=1).max()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} not present")
    return SHARED_DATA

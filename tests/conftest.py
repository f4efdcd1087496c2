from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

#: ../shared/data next to the checkout (this project's layout; CI clones the repository beside shared/).
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# The reproductions find their data sets in scikit-learn's convention (--data, else $DPSPECTRAL_DATA,
# else ~/dpspectral_data; dpspectral.datasets.get_data_home). The tests point DPSPECTRAL_DATA at the
# shared folder when it exists, for this process and the subprocesses it starts; a test that needs
# another location sets or deletes the variable with monkeypatch.
if SHARED_DATA.is_dir():
    os.environ.setdefault("DPSPECTRAL_DATA", str(SHARED_DATA))


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

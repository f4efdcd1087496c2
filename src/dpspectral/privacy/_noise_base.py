"""The interface of a noise source (:class:`NoiseSource`), shared by the host sources of
:mod:`dpspectral.privacy._noise` and the device source of :mod:`dpspectral.privacy._device_noise`."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["NoiseSource"]


class NoiseSource:
    """Where a release's noise comes from. Mechanisms receive one from
    :func:`~dpspectral.privacy._noise.noise_source`.

    Attributes
    ----------
    name : str
        ``"seeded"`` or ``"secure"`` (written in the privacy report).
    generator : numpy.random.Generator
        The secret generator for randomness other than additive noise (never published).
    """

    name: str = "abstract"
    generator: np.random.Generator

    def add_gaussian(self, statistic: Any, std: float, sensitivity: float | None = None) -> Any:
        """``statistic + N(0, std^2)`` coordinate-wise (``sensitivity``: L2, needed by the secure source)."""
        raise NotImplementedError

    def add_laplace(self, statistic: Any, scale: float, sensitivity: float | None = None) -> Any:
        """``statistic + Laplace(scale)`` coordinate-wise (``sensitivity``: L1, for the secure source)."""
        raise NotImplementedError

    def add_symmetric_gaussian(self, matrix: np.ndarray, std: float,
                               sensitivity: float | None = None, shape: str = "iid") -> np.ndarray:
        """``matrix + E`` with ``E`` symmetric.

        ``shape="iid"``: ``E`` i.i.d. ``N(0, std^2)`` on and above the diagonal (the Gaussian mechanism
        on ``upper(M)``; ``sensitivity`` bounds ``||upper(M) - upper(M')||_2``). ``shape="goe"``: the
        Gaussian mechanism on ``iso(M)`` (the diagonal, and ``sqrt(2)`` times each entry above it, so
        ``||iso(M)||_2 = ||M||_F``) mapped back to ``upper(M)`` (post-processing): the diagonal's noise
        has std ``std``, an off-diagonal entry's ``std / sqrt(2)`` (the Gaussian orthogonal ensemble);
        ``sensitivity`` then bounds ``||M - M'||_F``. For a scatter ``sum x x^T`` both bounds are the
        same (``||upper(x x^T)||_2 = ||x x^T||_F`` at a coordinate axis), so "goe" is the same
        mechanism, with the same event, and less noise: its spectral norm is smaller by ``sqrt(2)``.
        """
        raise NotImplementedError

    def gaussian(self, std: float, size: Any, sensitivity: float | None = None) -> np.ndarray:
        """Noise alone, for mechanisms that use it inside a computation (``0 + N(0, std^2)``)."""
        return np.asarray(self.add_gaussian(np.zeros(size), std, sensitivity))


def _check_shape(shape: str) -> str:
    if shape not in ("iid", "goe"):
        raise ValueError(f"The noise shape must be 'iid' or 'goe'. Got {shape!r} instead.")
    return shape

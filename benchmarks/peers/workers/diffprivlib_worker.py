"""Peer worker: IBM diffprivlib's PCA (``diffprivlib.models.PCA``), run in its own virtual environment.

Arguments (JSON): ``data`` (.npy path), ``k``, ``epsilon``, ``row_norm``, ``seed``, ``variant``.

* ``centered=True`` tells diffprivlib that the data need no (private) centring, so the whole epsilon
  goes to ``covariance_eig`` on ``X^T X`` -- the uncentred second-moment PCA that dpspectral's methods
  compute; ``data_norm=row_norm`` is the public row bound (rows above it are clipped by diffprivlib).
* The mechanism is Amin, Dick, Kulesza, Munoz Medina, Vassilvitskii (NeurIPS 2019), Algorithm 1:
  Laplace eigenvalues (L1 sensitivity 2, epsilon / (k + 1)) and k Bingham samples
  ``exp(eps_i / 4 u^T C u)`` by rejection from an angular central Gaussian envelope. Pure epsilon-DP;
  the calibration bounds the change of one replaced row (so it also covers adding or removing one).
* ``variant="shipped"`` runs the library as installed. ``variant="corrected"`` replaces the acceptance
  test of ``diffprivlib.mechanisms.Bingham.randomise`` -- the shipped code accepts with probability
  ``exp(-u^T A u) / (M (u^T Omega u)^(d/2))`` where Kent, Ganeiber and Mardia (2018) give
  ``exp(-u^T A u) (u^T Omega u)^(d/2) / M`` (and ``M`` overflows to inf for d >~ 300) -- computed in
  log space. Everything else (the proposal draws, b, Omega, the deflation) is the library's own code.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from _protocol import emit, load_data, read_args, timed, versions


def _corrected_randomise(self: Any, value: np.ndarray) -> np.ndarray:
    """``Bingham.randomise`` of diffprivlib 0.6.6 with the acceptance test of Kent et al. (2018)."""
    self._check_all(value)
    eigvals, eigvecs = np.linalg.eigh(value)
    dims = value.shape[0]
    if dims == 1:
        return np.ones((1, 1))
    if self.sensitivity / self.epsilon == 0:
        return eigvecs[:, eigvals.argmax()]
    value_translated = self.epsilon * (eigvals.max() * np.eye(dims) - value) / 4 / self.sensitivity
    translated_eigvals = np.linalg.eigvalsh(value_translated)
    left, right, mid = 1, dims, (1 + dims) / 2
    old_interval_size = (right - left) * 2
    while right - left < old_interval_size:
        old_interval_size = right - left
        mid = (right + left) / 2
        f_mid = np.array([1 / (mid + 2 * eig) for eig in translated_eigvals]).sum()
        if f_mid <= 1:
            right = mid
        if f_mid >= 1:
            left = mid
    b_const = mid
    omega = np.eye(dims) + 2 * value_translated / b_const
    omega_inv = np.linalg.inv(omega)
    log_m = -(dims - b_const) / 2 + (dims / 2) * math.log(dims / b_const)
    while True:
        rnd_vec = self._rng.multivariate_normal(np.zeros(dims), omega_inv / 4, size=4).sum(axis=0)
        unit_vec = rnd_vec / np.linalg.norm(rnd_vec)
        log_prob = (
            -unit_vec.dot(value_translated).dot(unit_vec)
            + (dims / 2) * math.log(unit_vec.dot(omega).dot(unit_vec))
            - log_m
        )
        if math.log(max(self._rng.random(), 1e-300)) <= log_prob:
            return unit_vec


def main() -> None:
    args = read_args()
    X = load_data(args)
    variant = args.get("variant", "shipped")
    from diffprivlib.mechanisms import Bingham
    from diffprivlib.models import PCA

    if variant == "corrected":
        Bingham.randomise = _corrected_randomise  # type: ignore[method-assign]
    elif variant != "shipped":
        raise SystemExit(f"unknown variant {variant!r}")
    model = PCA(
        n_components=int(args["k"]),
        epsilon=float(args["epsilon"]),
        data_norm=float(args["row_norm"]),
        centered=True,
        random_state=int(args["seed"]),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        components, seconds = timed(lambda: model.fit(X).components_)
    emit(
        components,
        seconds,
        versions=versions(["diffprivlib", "scikit-learn", "numpy", "scipy"]),
        privacy={
            "notion": "pure",
            "epsilon": float(args["epsilon"]),
            "delta": 0.0,
            "relation": "replace_one (Amin et al. 2019 calibration; also covers add/remove)",
            "spent": [list(map(float, e)) for e in model.accountant.spent_budget],
        },
        warnings=sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    )


if __name__ == "__main__":
    main()

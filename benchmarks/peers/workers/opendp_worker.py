"""Peer worker: OpenDP's private PCA (``opendp.extras.sklearn.decomposition.make_private_pca``).

Arguments (JSON): ``data`` (.npy path), ``k``, ``epsilon``, ``row_norm``, ``seed`` (unused: OpenDP
draws from a CSPRNG and takes no seed), ``variant``.

* The input domain is ``array2_domain(size=n, num_columns=d, norm=row_norm, p=2, origin=0)``: a known
  origin means no budget is spent on a mean, so this is the uncentred second-moment PCA that
  dpspectral's methods compute. (``dp.sklearn.PCA`` always estimates a private mean with a third of
  the budget and centres; it is the same eigendecomposition otherwise.)
* Privacy: pure epsilon-DP (``max_divergence``) in the ``symmetric_distance`` metric, where replacing
  one row is distance 2. ``unit_epsilon`` is the loss at distance 2, i.e. per replaced row, so
  ``unit_epsilon = epsilon`` is compared with dpspectral's replace-one epsilon; the worker reports the
  measurement's own ``map(2)``. (With ``dp.sklearn.PCA(epsilon=..., n_changes=1)`` the loss per
  replaced row would be ``2 epsilon``; ``n_changes=2`` gives ``epsilon``.)
* ``variant="corrected"`` swaps OpenDP's ``then_private_eigenvector`` for a copy whose rejection test
  is ``U < exp(-u^T A u) (u^T Omega u)^(d/2) / M`` (Kent, Ganeiber, Mardia 2018), computed in log
  space; OpenDP 0.16.0 divides by ``(u^T Omega u)^(d/2)`` instead and overflows ``M`` for large d.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from _protocol import emit, load_data, read_args, timed, versions


def _install_corrected_sampler() -> None:
    import opendp.extras.sklearn._make_eigenvector as mod
    import opendp.prelude as dp
    from opendp._internal import _make_measurement
    from opendp._lib import get_np_csprng
    from opendp.extras._utilities import to_then

    def make_private_eigenvector(input_domain: Any, input_metric: Any, unit_epsilon: float) -> Any:
        np_csprng = get_np_csprng()
        input_desc = input_domain.descriptor
        d = input_desc.num_features

        def function(C: np.ndarray) -> np.ndarray:
            C = C / input_desc.norm**2
            A = unit_epsilon / 4 * (np.linalg.eigvalsh(C).max() * np.eye(d) - C)
            A_eigvals = np.linalg.eigvalsh(A)
            b = dp.binary_search(lambda b: sum(1 / (b + 2 * A_eigvals)) >= 1, bounds=(0.9, float(d)))
            Omega = np.eye(d) + 2 * A / b
            log_m = -(d - b) / 2 + (d / 2) * math.log(d / b)
            Omega_inv = np.linalg.inv(Omega)
            while True:
                z = np_csprng.multivariate_normal(mean=np.zeros(d), cov=Omega_inv)
                u = z / np.linalg.norm(z)
                log_p = -u.T @ A @ u + (d / 2) * math.log(u.T @ Omega @ u) - log_m
                if math.log(max(np_csprng.random(), 1e-300)) < log_p:
                    return u

        return _make_measurement(
            input_domain,
            input_metric,
            dp.max_divergence(),
            function,
            lambda d_in: d_in / 2 * unit_epsilon,
            TO=f"Vec<{input_desc.T}>",
        )

    mod.make_private_eigenvector = make_private_eigenvector
    mod.then_private_eigenvector = to_then(make_private_eigenvector)


def main() -> None:
    args = read_args()
    X = load_data(args)
    variant = args.get("variant", "shipped")
    import opendp.prelude as dp

    dp.enable_features("contrib", "idealized-numerics")
    from opendp.extras.sklearn.decomposition import make_private_pca

    if variant == "corrected":
        _install_corrected_sampler()
    elif variant != "shipped":
        raise SystemExit(f"unknown variant {variant!r}")
    n, d = X.shape
    k = int(args["k"])
    domain = dp.numpy.array2_domain(
        num_columns=d, size=n, norm=float(args["row_norm"]), p=2, origin=np.zeros(d), T=float
    )
    meas = make_private_pca(domain, dp.symmetric_distance(), float(args["epsilon"]), num_components=k)
    eps_replace = float(meas.map(2))
    result, seconds = timed(lambda: np.asarray(meas(X).Vt)[:k])
    emit(
        result,
        seconds,
        versions=versions(["opendp", "scikit-learn", "numpy", "scipy", "randomgen"]),
        privacy={
            "notion": "pure",
            "epsilon": eps_replace,
            "delta": 0.0,
            "relation": "replace_one (symmetric distance 2)",
            "map_d_in_2": eps_replace,
            "unit_epsilon": float(args["epsilon"]),
        },
    )


if __name__ == "__main__":
    main()

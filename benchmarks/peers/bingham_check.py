"""Does a peer's Bingham sampler sample the Bingham law? A check on the circle (d = 2), exact by quadrature.

Run it with a peer venv's interpreter (it needs NumPy and SciPy, and diffprivlib for the first part)::

    ~/.cache/dpspectral/peers/diffprivlib/bin/python benchmarks/peers/bingham_check.py

On the circle with ``C = diag(4 beta, 0)`` and epsilon = 1, diffprivlib's ``Bingham`` mechanism is meant
to return ``u`` with density proportional to ``exp(eps / 4 u^T C u) = exp(beta u_1^2)``, i.e.
``exp(-beta sin^2 t)`` in the angle t from the first axis. The script compares the sample mean of
``u_2^2 = sin^2 t`` with its exact value (numerical quadrature), for the shipped sampler and for the same
envelope with the acceptance test of Kent, Ganeiber and Mardia (2018); OpenDP 0.16.0 uses the same
(shipped) test, reproduced here without OpenDP as ``"shipped test"``.
"""

from __future__ import annotations

import json
import math

import numpy as np
from scipy.integrate import quad


def exact_mean_sin2(beta: float) -> float:
    """E[sin^2 t] under the density proportional to exp(-beta sin^2 t) on [0, 2 pi)."""
    z = quad(lambda t: math.exp(-beta * math.sin(t) ** 2), 0, 2 * math.pi)[0]
    return quad(lambda t: math.sin(t) ** 2 * math.exp(-beta * math.sin(t) ** 2), 0, 2 * math.pi)[0] / z


def envelope_samples(beta: float, n: int, rng: np.random.Generator, *, corrected: bool) -> np.ndarray:
    """Accepted proposals of the ACG envelope with the shipped or the corrected acceptance test."""
    d = 2
    A = np.diag([0.0, beta])
    b = 1.0
    lo, hi = 1e-9, float(d)
    for _ in range(200):  # sum 1 / (b + 2 lambda_i) = 1
        b = (lo + hi) / 2
        if np.sum(1 / (b + 2 * np.diag(A))) > 1:
            lo = b
        else:
            hi = b
    omega = np.eye(d) + 2 * A / b
    log_m = -(d - b) / 2 + (d / 2) * math.log(d / b)
    y = rng.multivariate_normal(np.zeros(d), np.linalg.inv(omega), size=n)
    u = y / np.linalg.norm(y, axis=1, keepdims=True)
    z = np.einsum("ij,jk,ik->i", u, A, u)
    w = np.einsum("ij,jk,ik->i", u, omega, u)
    log_p = -z + (1 if corrected else -1) * (d / 2) * np.log(w) - log_m
    return u[np.log(rng.random(n)) < log_p]


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for beta in (1.0, 3.0, 6.0):
        row: dict[str, float | None] = {"beta": beta, "exact": exact_mean_sin2(beta)}
        for name, corrected in (("shipped test", False), ("corrected test", True)):
            s = envelope_samples(beta, 200_000, rng, corrected=corrected)
            row[name] = float(np.mean(s[:, 1] ** 2))
        try:
            from diffprivlib.mechanisms import Bingham

            mech = Bingham(epsilon=1.0, random_state=1)
            s = np.array([mech.randomise(np.diag([4 * beta, 0.0])) for _ in range(4000)])
            row["diffprivlib 0.6.6"] = float(np.mean(s[:, 1] ** 2))
            row["diffprivlib se"] = float(np.std(s[:, 1] ** 2) / math.sqrt(len(s)))
        except ImportError:
            row["diffprivlib 0.6.6"] = None
        rows.append(row)
        print(json.dumps(row))


if __name__ == "__main__":
    main()

"""Issue 3 benchmarks: DP-SPCA / DP-VRPCA speed on MNIST and utility vs epsilon.

    .venv/bin/python benchmarks/bench_stochastic.py [--data ../shared/data] [--epochs 5]

Prints JSON: wall time of DP-SPCA (T = n steps) and DP-VRPCA (m epochs of T = n steps) on MNIST
(60,000 x 784, rows scaled to unit norm, k = 10, delta = 1e-3, replace-one, tight calibration), and
the captured energy / projection distance of each at epsilon in {0.1, 0.5, 1, 2} next to Analyze Gauss.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_covariance import DEFAULT_DATA, load_mnist_unit_rows, machine  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.5, 1.0, 2.0])
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="public step size (default: 3/sqrt(n), as in the reproduction)")
    args = parser.parse_args()

    from dpspectral import analyze_gauss, dp_spca, dp_vrpca
    from dpspectral.metrics import captured_energy, projection_distance

    X, _ = load_mnist_unit_rows(Path(args.data))
    n, d = X.shape
    k, delta = 10, 1e-3
    eta = args.learning_rate or 3.0 / np.sqrt(n)
    A = X.T @ X  # evaluation only
    w, U = np.linalg.eigh(A)
    top = U[:, ::-1][:, :k]
    out: dict[str, object] = {"shape": [n, d], "k": k, "delta": delta, "learning_rate": eta,
                              "epochs": args.epochs, "runs": []}
    for eps in args.epsilons:
        for name, fn, kw in (
            ("analyze_gauss", analyze_gauss, {}),
            ("dp_spca", dp_spca, {"learning_rate": eta}),
            ("dp_vrpca", dp_vrpca, {"learning_rate": eta, "n_epochs": args.epochs}),
        ):
            t = time.perf_counter()
            res = fn(X, k, epsilon=eps, delta=delta, row_norm=1.0, random_state=0, **kw)
            total = time.perf_counter() - t
            out["runs"].append({  # type: ignore[union-attr]
                "method": name, "epsilon": eps, "seconds_total": total,  # timed outside the call
                "captured_energy": captured_energy(res.components, A),
                "projection_distance": projection_distance(res.components, top),
                "certified": res.privacy.certified,
            })
            print(json.dumps(out["runs"][-1]), flush=True)  # type: ignore[index]
    out["machine"] = machine()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

"""The real-data panel of ``reproduce upadhyay2018``: Upadhyay's methods on MNIST.

Upadhyay's experiments use uniform matrices with entries in the thousands, where unit-scale privacy noise
is negligible. This panel runs the same methods (library defaults) on MNIST's first ``rows`` training
images, rows scaled to unit norm, k = 10, delta = 1e-6, and reports for each epsilon the subspace error
``||A - A V V^T||_F / ||A - [A]_k||_F`` and, for a released factorization, ``||A - U S V^T||_F`` over the
same, against Analyze Gauss's V (row-level replace-one), a random V and the zero matrix.

Relations differ: Private-Space-Optimal-LRF (Priv1) and Private-Frobenius-LRF (Priv2) protect any unit
change of the matrix (a far stronger promise than one row's change), Hardt-Roth, Private-Covariance-LRF and
Analyze Gauss one row of norm <= 1.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["REAL_EPSILONS", "real_data_panel"]

REAL_EPSILONS: tuple[float, ...] = (0.25, 1.0, 4.0, 16.0)
_METHODS = ("private_space_optimal_lrf", "private_frobenius_lrf", "covariance_lrf", "hardt_roth",
            "hardt_roth (range_finder)")


def _run(method: str, A: np.ndarray, k: int, eps: float, seed: int) -> Any:
    from dpspectral.lowrank import (
        covariance_lrf,
        hardt_roth,
        private_frobenius_lrf,
        private_space_optimal_lrf,
    )

    kw: dict[str, Any] = dict(epsilon=eps, delta=1e-6, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "private_space_optimal_lrf":
            return private_space_optimal_lrf(A, k, **kw)
        if method == "private_frobenius_lrf":
            return private_frobenius_lrf(A, k, **kw)
        if method == "covariance_lrf":
            return covariance_lrf(A, k, row_norm=1.0, **kw)
        if method == "hardt_roth":
            return hardt_roth(A, k, row_norm=1.0, **kw)
        return hardt_roth(A, k, row_norm=1.0, algorithm="range_finder", **kw)


def _errors(A: np.ndarray, res: Any, best: float) -> tuple[float, float | None]:
    V = res.V
    sub = float(np.linalg.norm(A - (A @ V) @ V.T) / best)
    if getattr(res, "needs_data", False):
        return sub, None
    return sub, float(np.linalg.norm(A - res.reconstruct()) / best)


def _references(A: np.ndarray, k: int, eps: float, seed: int, best: float) -> dict[str, float]:
    from dpspectral.pca._covariance import analyze_gauss

    W = analyze_gauss(A, k, epsilon=eps, delta=1e-6, row_norm=1.0, adaptive_clip=False,
                      random_state=seed).components
    R = np.linalg.qr(np.random.default_rng(seed).standard_normal((A.shape[1], k)))[0]
    return {"Analyze Gauss V (row-level)": float(np.linalg.norm(A - (A @ W) @ W.T) / best),
            "random V": float(np.linalg.norm(A - (A @ R) @ R.T) / best),
            "zero matrix": float(np.linalg.norm(A) / best)}


def _mnist(data_dir: str | Path | None, rows: int) -> np.ndarray | None:
    from dpspectral.datasets import get_data_home
    from dpspectral_reproduce.chen2025 import load_chen_dataset

    home = get_data_home(data_dir)
    if not (home / "mnist" / "train-images-idx3-ubyte.gz").is_file():
        return None
    return np.asarray(load_chen_dataset("mnist", home).X_train[:rows], dtype=float)


def real_data_panel(out: str | Path, data_dir: str | Path | None = None, *, k: int = 10, rows: int = 20000,
                    epsilons: tuple[float, ...] = REAL_EPSILONS, seed: int = 0,
                    matrix: np.ndarray | None = None) -> Path | None:
    """Run the panel and write ``realdata.md`` into ``out``; None (nothing written) without MNIST.

    ``data_dir``: the data home (default :func:`dpspectral.datasets.get_data_home`, i.e.
    ``$DPSPECTRAL_DATA``), holding ``mnist/``. ``matrix``: another image matrix instead (its rows are
    scaled to unit norm; ``data_dir`` and ``rows`` are then ignored).
    """
    raw = _mnist(data_dir, rows) if matrix is None else np.asarray(matrix, dtype=float)
    if raw is None:
        return None
    A = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-300)
    s = np.linalg.svd(A, compute_uv=False)
    best = float(np.sqrt(np.sum(s[k:] ** 2)))
    cells: dict[str, list[str]] = {m: [] for m in (*_METHODS, "Analyze Gauss V (row-level)", "random V",
                                                    "zero matrix")}
    for eps in epsilons:
        for method in _METHODS:
            sub, rec = _errors(A, _run(method, A, k, eps, seed), best)
            cells[method].append(f"{sub:.3f} ({'-' if rec is None else f'{rec:.3f}'})")
        for name, value in _references(A, k, eps, seed, best).items():
            cells[name].append(f"{value:.3f}")
    what = f"MNIST, first {A.shape[0]} training images" if matrix is None else f"{A.shape[0]} images"
    lines = [f"# Real-data panel: {what} (unit rows), k = {k}, "
             "delta = 1e-6", "",
             "Subspace error `||A - A V V^T|| / best` (reconstruction error `||A - U S V^T|| / best`, "
             "'-' where no U is released); seed " + str(seed) + ".", "",
             "| method | " + " | ".join(f"eps {e:g}" for e in epsilons) + " |",
             "|---" * (len(epsilons) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(vals) + " |" for name, vals in cells.items()]
    path = Path(out) / "realdata.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path

"""Centred PCA with adaptive clipping: the clip quantile and what it buys.

Usage (from the project root, after `make install-dev`; the data from `../shared/data` or --data):

    .venv/bin/python benchmarks/bench_adaptive_clip.py [--datasets mnist a9a rt-iot2022]
        [--epsilons 0.1 0.25 0.5] [--quantiles 0.1 0.25 0.5 0.75 0.9] [--seeds 3] [--k 10]

For each data set (rows scaled to unit norm, as in the reproductions: public, non-private
preprocessing), each epsilon (delta = 1e-6, replace-one) and each setting — the centred rows clipped at
the public bound (``adaptive_clip=False``) or at the released
q-quantile of their norms — Analyze Gauss with ``centering="private"``: the captured energy of the
*centred* covariance, ``tr(V^T C V) / (sum of its top-k eigenvalues)``, averaged over seeds, and the
released clip. Prints one JSON line per data set; docs/algorithms/covariance.md records them.

``--uncentred`` measures the uncentred path (``centering=None``, DPPCA's default) instead, in three
scalings of each data set: ``unit`` (rows scaled to unit norm, ``row_norm = 1``: every norm at the bound),
``max`` (the raw rows divided by the largest raw norm, ``row_norm = 1``; RT-IoT2022 standardised per
column first) and ``4x`` (the same rows, ``row_norm = 4``: a loose public bound). The score is the
captured energy of the true, unclipped ``X^T X`` of the rows as given (what the user wants), for
``adaptive_clip=False`` (rows clipped at ``row_norm``), the default balance rule, and the released q-quantile
clip for each ``--quantiles``.
The scalings by the data's largest norm and the per-column standardisation are non-private
preprocessing of the benchmark (they stand for a user's public bound), not part of the mechanism.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from dpspectral.pca import AdaptiveClip, analyze_gauss
from dpspectral_reproduce.chen2025 import load_chen_dataset

ROOT = Path(__file__).resolve().parents[1]


def _captured(V: np.ndarray, C: np.ndarray, top: float) -> float:
    return float(np.trace(V.T @ C @ V)) / top


def _run(name: str, data: Path, args: argparse.Namespace) -> dict:
    X = load_chen_dataset(name, data).X_train
    mu = X.mean(axis=0)
    Xc = X - mu
    cov = Xc.T @ Xc
    top = float(np.sort(np.linalg.eigvalsh(cov))[::-1][: args.k].sum())
    norms = np.linalg.norm(Xc, axis=1)
    settings: list[tuple[str, dict]] = [("clip at row_norm", {"adaptive_clip": False})]
    settings += [(f"adaptive q={q:g}", {"adaptive_clip": AdaptiveClip(quantile=q)}) for q in args.quantiles]
    table = []
    for eps in args.epsilons:
        for label, kw in settings:
            values, clips, seconds = [], [], []
            for seed in range(args.seeds):
                t0 = time.perf_counter()
                res = analyze_gauss(X, args.k, epsilon=eps, delta=1e-6, row_norm=1.0,
                                    centering="private", random_state=seed, **kw)
                seconds.append(time.perf_counter() - t0)
                values.append(_captured(res.components, cov, top))
                clips.append(res.diagnostics.get("centred_clip", 1.0))
            table.append({"epsilon": eps, "setting": label,
                          "captured": round(statistics.mean(values), 4),
                          "captured_sd": round(statistics.pstdev(values), 4),
                          "clip": round(statistics.mean(clips), 4),
                          "seconds": round(statistics.median(seconds), 2)})
            print(json.dumps({"dataset": name, **table[-1]}), flush=True)
    return {"dataset": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "k": args.k,
            "centred_norm_quantiles": {str(q): round(float(np.quantile(norms, q)), 3)
                                       for q in (0.1, 0.25, 0.5, 0.75, 0.9, 0.99)},
            "results": table}


def _raw(name: str, data: Path) -> np.ndarray:
    """The raw training rows (MNIST pixels, a9a indicators, RT-IoT2022 standardised per column)."""
    from dpspectral.datasets import load, load_idx, load_libsvm
    from dpspectral_reproduce.chen2025 import _RT_IOT_CATEGORIES, _drop_unnamed

    if name == "mnist":
        X, _ = load_idx(data / "mnist" / "train-images-idx3-ubyte.gz",
                        data / "mnist" / "train-labels-idx1-ubyte.gz")
    elif name == "a9a":
        X, _ = load_libsvm(data / "a9a" / "a9a.gz", n_features=123)
    else:
        ds = load(data / "rt-iot2022" / "RT_IOT2022.csv.gz", label_column="Attack_type",
                  categories=_RT_IOT_CATEGORIES)
        X, _ = _drop_unnamed(np.asarray(ds.X), ds.feature_names)
        X = np.asarray(X, dtype=float)
        sd = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
    return X / np.linalg.norm(X, axis=1).max()


def _run_uncentred(name: str, data: Path, args: argparse.Namespace) -> dict:
    raw = _raw(name, data)
    norms = np.linalg.norm(raw, axis=1)
    unit = raw / np.where(norms > 0, norms, 1.0)[:, None]
    share = args.share or None
    settings: list[tuple[str, dict]] = [("clip at row_norm", {"adaptive_clip": False}),
                                        ("adaptive, balance rule (default)",
                                         {"adaptive_clip": AdaptiveClip(share=share)})]
    settings += [(f"adaptive q={q:g}", {"adaptive_clip": AdaptiveClip(quantile=q, share=share)})
                 for q in args.quantiles]
    table = []
    for scaling, X, C in [("unit", unit, 1.0), ("max", raw, 1.0), ("4x", raw, 4.0)]:
        if scaling not in args.scalings:
            continue
        A = X.T @ X
        top = float(np.sort(np.linalg.eigvalsh(A))[::-1][: args.k].sum())
        for eps in args.epsilons:
            for label, kw in settings:
                values, clips = [], []
                for seed in range(args.seeds):
                    res = analyze_gauss(X, args.k, epsilon=eps, delta=1e-6, row_norm=C, random_state=seed,
                                        **kw)
                    values.append(_captured(res.components, A, top))
                    clips.append(res.diagnostics.get("clip", C))
                table.append({"scaling": scaling, "row_norm": C, "epsilon": eps, "setting": label,
                              "captured": round(statistics.mean(values), 4),
                              "captured_sd": round(statistics.pstdev(values), 4),
                              "clip": round(statistics.mean(clips), 4)})
                print(json.dumps({"dataset": name, **table[-1]}), flush=True)
    return {"dataset": name, "n": int(raw.shape[0]), "d": int(raw.shape[1]), "k": args.k,
            "norm_quantiles_over_max": {str(q): round(float(np.quantile(norms, q)), 3)
                                        for q in (0.1, 0.5, 0.9, 0.99)},
            "results": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["mnist", "a9a", "rt-iot2022"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.25, 0.5])
    parser.add_argument("--quantiles", type=float, nargs="+", default=[0.1, 0.25, 0.5, 0.75, 0.9])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "DPSPECTRAL_DATA", ROOT.parent / "shared" / "data")))
    parser.add_argument("--uncentred", action="store_true",
                        help="the uncentred path (centering=None) in the unit / max / 4x scalings")
    parser.add_argument("--scalings", nargs="+", default=["unit", "max", "4x"])
    parser.add_argument("--share", type=float, default=None, help="clip_share (default: the method's)")
    args = parser.parse_args()
    for name in args.datasets:
        out = (_run_uncentred if args.uncentred else _run)(name, args.data, args)
        out["machine"] = {"cpu_count": os.cpu_count(), "platform": platform.platform()}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

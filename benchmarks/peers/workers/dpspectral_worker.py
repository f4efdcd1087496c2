"""Worker for dpspectral's own methods and the non-private scikit-learn PCA (runs in the project venv).

Arguments (JSON): ``data`` (.npy path), ``k``, ``epsilon``, ``delta``, ``row_norm``, ``seed`` and
``method``: a registry name (``analyze_gauss``, ``ppca``, ...; fitted with ``dpspectral.DPPCA``,
uncentred, relation ``replace_one``) or ``"sklearn"`` (``sklearn.decomposition.PCA(k)`` with its
default solver: centred and non-private, the wall-time ceiling).

Run in a fresh process like the peers, so that wall time (of the fit only) and peak memory (of the
whole process: imports, data, fit) are measured the same way for everybody. ``fit_seconds`` is that
first ("cold") fit, as for the peers; ``fit_seconds_warm`` times a second fit in the same process
(a fresh estimator, seed + 1; its output is discarded), i.e. without one-time costs such as lazy
imports and, for dpspectral, the noise calibration that is cached per process.
"""

from __future__ import annotations

import warnings

from _protocol import emit, load_data, read_args, timed, versions


def main() -> None:
    args = read_args()
    X = load_data(args)
    k = int(args["k"])
    method = str(args["method"])
    if method == "sklearn":
        from sklearn.decomposition import PCA

        model = PCA(n_components=k, random_state=int(args["seed"]))
        components, seconds = timed(lambda: model.fit(X).components_)
        _, warm = timed(lambda: PCA(n_components=k, random_state=int(args["seed"]) + 1).fit(X).components_)
        emit(
            components,
            seconds,
            fit_seconds_warm=warm,
            versions=versions(["scikit-learn", "numpy", "scipy"]),
            privacy={"notion": "none"},
            solver=str(getattr(model, "_fit_svd_solver", "")),
        )
        return
    from dpspectral import DPPCA

    def estimator(seed: int) -> DPPCA:
        return DPPCA(
            k,
            epsilon=float(args["epsilon"]),
            delta=float(args["delta"]),
            row_norm=float(args["row_norm"]),
            method=method,
            relation="replace_one",
            random_state=seed,
        )

    est = estimator(int(args["seed"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        components, seconds = timed(lambda: est.fit(X).components_)
        _, warm = timed(lambda: estimator(int(args["seed"]) + 1).fit(X).components_)
    p = est.privacy_
    emit(
        components,
        seconds,
        fit_seconds_warm=warm,
        versions=versions(["dpspectral", "numpy", "scipy", "scikit-learn"]),
        privacy={
            "notion": "pure" if float(p.delta) == 0.0 else "approximate",
            "epsilon": float(p.epsilon),
            "delta": float(p.delta),
            "relation": str(getattr(p.relation, "value", p.relation)),
            "certified": bool(p.certified),
            "statement": str(p),
        },
        warnings=sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    )


if __name__ == "__main__":
    main()

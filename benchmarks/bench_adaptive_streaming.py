"""Adaptive row clipping of the streaming methods minibatch_oja and private_oja: off against on.

Adaptive clipping off (``adaptive_clip=False``: rows clipped at the public bound) against on (the
default: a noisy norm histogram, 2 % of the budget, then the balance rule), in three scalings of the
same rows (benchmarks/bench_adaptive_clip.py ``_raw``): ``unit`` (every row normalised, C = 1),
``max`` (rows divided by the largest norm, C = 1) and ``4x`` (the same rows under a 4x loose bound,
C = 4). Data: MNIST (60,000 x 784, k = 10, captured energy of X^T X; also ``mnist:dp_pca``, whose
batches are released with noise from the bound at this d p) and the spiked set of bench_utility.py
(d = 40, lambda_1 / lambda_2 = 17, n = 3.2e5, k = 1, sin theta to e_1). delta = 1e-6.

``--rules``: the balance rule's ``nu`` (noise per unit r^2 that the rows' signal competes with) under
alternatives, on the 4x scaling (see ``_rule``).

Run: ``OMP_NUM_THREADS=1 nice python benchmarks/bench_adaptive_streaming.py --data /work/shared/data``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_adaptive_clip import _raw  # noqa: E402

import dpspectral.pca._minibatch as mb  # noqa: E402
import dpspectral.pca._oja as oja  # noqa: E402


def _spiked(n: int, seed: int = 0, d: int = 40) -> np.ndarray:
    """bench_oja's ``_spiked_unit``: N(0, diag(17, 1, ..., 1)) scaled to E||x||^2 = 1/1.5^2, clipped at 1."""
    rng = np.random.default_rng(seed)
    lam = np.ones(d)
    lam[0] = 17.0
    X = rng.standard_normal((n, d)) * np.sqrt(lam) / (1.5 * np.sqrt(lam.sum()))
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


_MB_NU, _OJA_NU = mb.noise_per_clip2, oja._oja_noise_per_clip2  # the library's rules


def _rule(name: str):
    """The methods' nu for one run (the caller patches them in and restores the defaults).

    minibatch (per-batch noise ``nu_1``): ``default`` = ``nu_1 n / min |B_t|`` (the smallest batch);
    ``last`` = ``nu_1 n / |B_T|``; ``sum`` = ``T nu_1``. Private Oja (per-step ``nu_s``): ``default`` =
    ``n nu_s`` (always the floor); ``quadrature`` = ``sqrt(n) nu_s``. ``xF``: the default times F;
    ``floor``: nu huge (the clip at the 10 % norm quantile).
    """
    mb_orig, oja_orig = _MB_NU, _OJA_NU
    if name == "default":
        return mb_orig, oja_orig
    if name == "last":
        return (lambda m, d, p, sizes: mb_orig(m, d, p, sizes) * min(sizes) / sizes[-1], oja_orig)
    if name == "sum":
        return (lambda m, d, p, sizes: mb_orig(m, d, p, sizes) * min(sizes) / sum(sizes) * len(sizes),
                oja_orig)
    if name == "quadrature":
        return mb_orig, (lambda a, b, src, n: oja_orig(a, b, src, n) / np.sqrt(max(n, 1)))
    if name == "floor":
        return (lambda *a: 1e30), (lambda *a: 1e30)
    f = float(name[1:])
    return (lambda *a: f * mb_orig(*a)), (lambda *a: f * oja_orig(*a))


def _patch(name: str) -> None:
    """Patch the rules of :func:`_rule` in: minibatch's nu (read by minibatch_oja, and by dp_pca under the
    name oja imports) and Private Oja's."""
    mb_nu, oja_nu = _rule(name)
    mb.noise_per_clip2 = oja.noise_per_clip2 = mb_nu
    oja._oja_noise_per_clip2 = oja_nu


def _score(X: np.ndarray, V: np.ndarray, A: np.ndarray | None, top: float) -> float:
    if A is None:  # spiked: sin theta to e_1
        w = V[:, 0] / np.linalg.norm(V[:, 0])
        return float(np.sqrt(max(0.0, 1.0 - w[0] ** 2)))
    return float(np.trace(V.T @ A @ V)) / top


def run(dataset: str, method: str, args: argparse.Namespace) -> None:
    raw = _raw("mnist", Path(args.data)) if dataset == "mnist" else _spiked(args.n_spiked)
    raw = raw / np.linalg.norm(raw, axis=1).max()
    k = 10 if dataset == "mnist" else 1
    norms = np.linalg.norm(raw, axis=1)
    unit = raw / np.where(norms > 0, norms, 1.0)[:, None]
    fn = {"minibatch_oja": mb.minibatch_oja, "private_oja": oja.private_oja, "dp_pca": oja.dp_pca}[method]
    print(json.dumps({"dataset": dataset, "n": raw.shape[0], "d": raw.shape[1],
                      "norm_quantiles_over_max": {str(q): round(float(np.quantile(norms, q)), 3)
                                                  for q in (0.1, 0.5, 0.9, 0.99)}}), flush=True)
    for scaling, X, C in [("unit", unit, 1.0), ("max", raw, 1.0), ("4x", raw, 4.0)]:
        if scaling not in args.scalings:
            continue
        A, top = None, 1.0
        if dataset == "mnist":
            A = X.T @ X
            top = float(np.sort(np.linalg.eigvalsh(A))[::-1][:k].sum())
        settings = [("off", {"adaptive_clip": False}, "default"), ("on", {}, "default")]
        if scaling == "4x":
            mine = {"minibatch_oja": ("last", "sum"), "private_oja": ("quadrature",)}.get(method, ())
            settings += [(f"on, nu {r}", {}, r) for r in args.rules
                         if r != "default" and (r in mine or r[0] == "x" or r == "floor")]
        for eps in args.epsilons:
            for label, kw, rule in settings:
                vals, clips = [], []
                _patch(rule)
                try:
                    for seed in range(args.seeds):
                        res = fn(X, k, epsilon=eps, delta=1e-6, row_norm=C, random_state=seed, **kw)
                        vals.append(_score(X, res.components, A, top))
                        clips.append(res.diagnostics.get("clip", C))
                finally:
                    _patch("default")
                print(json.dumps({"dataset": dataset, "method": method, "scaling": scaling, "row_norm": C,
                                  "epsilon": eps, "setting": label,
                                  "metric": "captured" if A is not None else "sin",
                                  "value": round(statistics.mean(vals), 4),
                                  "values": [round(v, 4) for v in vals],
                                  "clip": round(statistics.mean(clips), 4)}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/work/shared/data")
    ap.add_argument("--cases", nargs="+", default=["mnist:minibatch_oja", "spiked:minibatch_oja",
                                                    "spiked:private_oja", "mnist:private_oja"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[0.25, 1.0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--scalings", nargs="+", default=["unit", "max", "4x"])
    ap.add_argument("--rules", nargs="*", default=["default", "last", "sum", "quadrature", "x0.25", "floor"])
    ap.add_argument("--n-spiked", type=int, default=320_000)
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # dp_pca's AnalysisRangeWarning (utility range, not privacy)
    for case in args.cases:
        dataset, method = case.split(":")
        run(dataset, method, args)


if __name__ == "__main__":
    main()

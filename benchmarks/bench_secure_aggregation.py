"""Secure aggregation against the independent protocol and pooled Analyze Gauss on MNIST.

MNIST's 60,000 training images (rows scaled to unit norm, a per-row map), split evenly over S = 10, 100
and 600 sites, k = 10, delta = 1e-6, epsilon 0.5 and 1, one seed per setting: the captured share of the
top-10 energy of X^T X, the bytes the sites send, and the wall time, for

* pooled Analyze Gauss (``pooled_pca``: a trusted curator),
* DPdisPCA as published (``dpdispca``, each site's own noise), with ``variant="full"``: the sites send
  their whole noisy matrices, the model's limit (at least the default proxy's captured energy, without
  600 per-site eigendecompositions; docs/algorithms/distributed.md, "Utility with defaults"),
* DPdisPCA with ``aggregation="secure"`` (noise shares summing to the pooled noise, pairwise masks).

Writes ``reports/secure_aggregation/results.json``, ``table.md`` and ``captured_energy.png``.
``--quick``: 12,000 rows, S = 10 and 100, epsilon 0.5 only (a CI-size check, about 30 s).

Usage: ``python benchmarks/bench_secure_aggregation.py [--data ../shared/data] [--quick]``
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np


def load_mnist(data: Path, n: int | None) -> np.ndarray:
    from dpspectral.datasets import load_idx

    X, _ = load_idx(data / "mnist" / "train-images-idx3-ubyte.gz")
    X = np.asarray(X, dtype=np.float64)[:n]
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)  # a per-row map: private for free
    return np.ascontiguousarray(X)


def split(X: np.ndarray, n_sites: int) -> list[np.ndarray]:
    bounds = np.linspace(0, X.shape[0], n_sites + 1).round().astype(int)
    return [np.ascontiguousarray(X[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def run(X: np.ndarray, A: np.ndarray, sites_list: list[int], epsilons: list[float], k: int,
        delta: float) -> list[dict[str, Any]]:
    from dpspectral.distributed import dpdispca, pooled_pca
    from dpspectral.metrics import captured_energy

    rows: list[dict[str, Any]] = []
    common = dict(delta=delta, row_norm=1.0, random_state=0)
    for eps in epsilons:
        t = time.perf_counter()
        res = pooled_pca(X, k, epsilon=eps, **common)
        rows.append(dict(method="pooled Analyze Gauss", epsilon=eps, sites=1, seconds=time.perf_counter() - t,
                         energy=captured_energy(res.components, A), bytes=0, coalition_epsilon=None))
        print(rows[-1], flush=True)
        for S in sites_list:
            parts = split(X, S)
            for label, kw in (("DPdisPCA (independent)", {"variant": "full"}),
                              ("DPdisPCA secure", {"aggregation": "secure"})):
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = dpdispca(parts, k, epsilon=eps, **common, **kw)
                rows.append(dict(method=label, epsilon=eps, sites=S, seconds=time.perf_counter() - t,
                                 energy=captured_energy(res.components, A),
                                 bytes=int(res.diagnostics["bytes_total"]),
                                 coalition_epsilon=res.diagnostics.get("coalition_epsilon")))
                print(rows[-1], flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| epsilon | S | method | captured energy | bytes sent (all sites) | seconds | "
             "epsilon against all other sites |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        ce = "" if r["coalition_epsilon"] is None else f"{r['coalition_epsilon']:.2f}"
        s = "pooled" if r["method"].startswith("pooled") else str(r["sites"])
        lines.append(f"| {r['epsilon']:g} | {s} | {r['method']} | {r['energy']:.3f} | {r['bytes']:,} | "
                     f"{r['seconds']:.1f} | {ce} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for eps, style in zip(sorted({r["epsilon"] for r in rows}), ("-", "--"), strict=False):
        for method, colour in (("DPdisPCA (independent)", "C1"), ("DPdisPCA secure", "C0")):
            pts = sorted((r["sites"], r["energy"]) for r in rows
                         if r["method"] == method and r["epsilon"] == eps)
            ax.plot(*zip(*pts, strict=True), style, marker="o", color=colour, label=f"{method}, eps={eps:g}")
        pooled = next(r["energy"] for r in rows if r["method"].startswith("pooled") and r["epsilon"] == eps)
        ax.axhline(pooled, linestyle=style, color="grey", label=f"pooled Analyze Gauss, eps={eps:g}")
    ax.set_xscale("log")
    ax.set_xlabel("sites S")
    ax.set_ylabel("captured energy (top 10)")
    ax.set_title("MNIST, k = 10, delta = 1e-6")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--out", default="reports/secure_aggregation")
    parser.add_argument("--quick", action="store_true", help="12,000 rows, S = 10 and 100, epsilon 0.5")
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    X = load_mnist(Path(args.data), 12_000 if args.quick else None)
    A = X.T @ X
    sites_list = [10, 100] if args.quick else [10, 100, 600]
    epsilons = [0.5] if args.quick else [0.5, 1.0]
    with threadpool_limits(1):
        rows = run(X, A, sites_list, epsilons, k=10, delta=1e-6)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    (out / "table.md").write_text(table(rows))
    plot(rows, out / "captured_energy.png")
    print(table(rows))


if __name__ == "__main__":
    main()

"""DPdisPCA (paper 004) on the in-process and Dask engines: speed, scaling, utility, number of sites.

Usage (from the project root, after `make install-dev`):

    .venv/bin/python benchmarks/bench_distributed.py speed   [--data ../shared/data] [--repeats 3]
    .venv/bin/python benchmarks/bench_distributed.py scaling [--data ../shared/data]
    .venv/bin/python benchmarks/bench_distributed.py utility [--data ../shared/data] [--repeats 5]
    .venv/bin/python benchmarks/bench_distributed.py sites   [--data ../shared/data] [--repeats 2]

``speed``: all of MNIST (60,000 x 784, rows divided by their own norm) split over S = 10 sites, K = 50,
R = 100: ``DistributedDPPCA`` in-process and on a 2-worker Dask ``LocalCluster`` (started once; its start-up
is reported separately), against the central ``DPPCA`` (Analyze Gauss on the pooled rows) and
scikit-learn's non-private ``PCA`` (covariance solver), with the time spent in the sites, in the aggregator
and the bytes sent. ``scaling``: the same with S in {2, 5, 10, 20, 50} (N fixed), in-process and on Dask,
and the bytes per site of the proxy (by R) against the full matrix. ``utility``: captured-energy ratio
``q / q_o`` of DPdisPCA (both proxies), the full variant, the pooled and the local baselines at
epsilon in {0.5, 1, 2}, delta = 1e-6, against the non-private ceiling 1.

Each prints one JSON line per measurement, with the machine; docs/algorithms/distributed.md records them.
BLAS runs single-threaded in the in-process measurements (as on Dask workers, whose nannies set
``OPENBLAS_NUM_THREADS=1``), so both engines do the same work per site.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
KW: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-6, "row_norm": 1.0}


def machine() -> dict[str, object]:
    import dask
    import sklearn

    info: dict[str, object] = {"python": platform.python_version(), "numpy": np.__version__,
                               "sklearn": sklearn.__version__, "dask": dask.__version__,
                               "cpus": os.cpu_count(), "load_avg_1min": os.getloadavg()[0]}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def load_mnist(data: Path) -> np.ndarray:
    from dpspectral.datasets import load_idx

    X, _ = load_idx(data / "mnist" / "train-images-idx3-ubyte.gz")
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)  # a per-row map: private for free
    return np.ascontiguousarray(X)


def split(X: np.ndarray, n_sites: int) -> list[np.ndarray]:
    bounds = np.linspace(0, X.shape[0], n_sites + 1).round().astype(int)
    return [np.ascontiguousarray(X[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record, default=float), flush=True)


def _fit_times(est_factory: Any, sites: Any, repeats: int) -> tuple[list[float], Any]:
    times, est = [], None
    for r in range(repeats):
        est = est_factory(r)
        t = time.perf_counter()
        est.fit(sites)
        times.append(time.perf_counter() - t)
    return times, est


def _site_and_aggregate_seconds(sites: list[np.ndarray], k: int, R: int) -> tuple[list[float], float]:
    """Time each site's step and the aggregation from outside (the library reports no timing: a site's
    time depends on its private rows), with the plan ``DistributedDPPCA`` uses for these settings."""
    from dpspectral.distributed import aggregate, plan_site_release, site_step, spawn_site_seeds
    from dpspectral.distributed._site import SitePlan
    from dpspectral.privacy import PrivacyBudget, Relation

    std, count_std, _, _ = plan_site_release(budget=PrivacyBudget(KW["epsilon"], KW["delta"]),
                                             relation=Relation.REPLACE_ONE, calibration="tight",
                                             row_norm=KW["row_norm"], release_count=False)
    plan = SitePlan(variant="proxy", rank=R, spectrum="eigh", relation=Relation.REPLACE_ONE,
                    calibration="tight", row_norm=KW["row_norm"], scatter_std=std, count_std=count_std,
                    n_features=int(sites[0].shape[1]))
    seeds = spawn_site_seeds(0, len(sites))
    site_s, payloads = [], []
    for s, X in enumerate(sites):
        t = time.perf_counter()
        payloads.append(site_step(X, plan, seeds[s], s))
        site_s.append(time.perf_counter() - t)
    t = time.perf_counter()
    aggregate(payloads, k)
    return site_s, time.perf_counter() - t


def bench_speed(args: argparse.Namespace) -> None:
    from distributed import Client, LocalCluster
    from sklearn.decomposition import PCA
    from threadpoolctl import threadpool_limits

    from dpspectral import DPPCA
    from dpspectral.distributed import DaskEngine, DistributedDPPCA

    X = load_mnist(Path(args.data))
    sites = split(X, 10)
    k, R = 50, 100
    with threadpool_limits(1, user_api="blas"):
        t_in, est = _fit_times(lambda r: DistributedDPPCA(k, intermediate_rank=R, engine="inprocess",
                                                          random_state=r, **KW), sites, args.repeats)
        res = est.result_
        site_s, aggregate_s = _site_and_aggregate_seconds(sites, k, R)
        t_c, _ = _fit_times(lambda r: DPPCA(k, random_state=r, **KW), X, args.repeats)
        t_sk, _ = _fit_times(lambda r: PCA(k, svd_solver="covariance_eigh"), X, args.repeats)
    emit({"bench": "speed", "engine": "inprocess", "n": X.shape[0], "d": X.shape[1], "sites": 10, "k": k,
          "R": R, "seconds_median": statistics.median(t_in), "seconds_all": t_in,
          "site_seconds_median": statistics.median(site_s), "aggregate_seconds": aggregate_s,
          "bytes_per_site": res.sites[0].bytes_sent,
          "machine": machine()})
    emit({"bench": "speed", "engine": "central DPPCA (Analyze Gauss, pooled)", "seconds_median":
          statistics.median(t_c), "seconds_all": t_c})
    emit({"bench": "speed", "engine": "sklearn PCA (non-private, covariance_eigh)", "seconds_median":
          statistics.median(t_sk), "seconds_all": t_sk})
    t0 = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2)
        startup = time.perf_counter() - t0
        at_cluster = DaskEngine(scheduler_address=cluster.scheduler_address)
        t_d, est = _fit_times(lambda r: DistributedDPPCA(k, intermediate_rank=R, engine=at_cluster,
                                                         random_state=r, **KW), sites, args.repeats)
        with threadpool_limits(1, user_api="blas"):  # the workers' BLAS is single-threaded too
            ref = DistributedDPPCA(k, intermediate_rank=R, engine="inprocess", random_state=args.repeats - 1,
                                   **KW).fit(sites)
        emit({"bench": "speed", "engine": "dask LocalCluster (2 x 1 thread), arrays scattered per fit",
              "cluster_startup_seconds": startup, "seconds_median": statistics.median(t_d),
              "seconds_all": t_d,
              "identical_to_inprocess": bool(np.array_equal(est.components_, ref.components_)),
              "max_abs_difference": float(np.abs(est.components_ - ref.components_).max()),
              "bytes_total": est.result_.diagnostics["bytes_total"], "data_bytes_scattered": int(X.nbytes)})
        workers = sorted(client.scheduler_info()["workers"])
        futures = [client.scatter(S, workers=[workers[s % len(workers)]], hash=False)
                   for s, S in enumerate(sites)]  # the sites' data already lives on the workers
        t_f, est_f = _fit_times(lambda r: DistributedDPPCA(k, intermediate_rank=R, engine=at_cluster,
                                                           random_state=r, **KW), futures, args.repeats)
        emit({"bench": "speed", "engine": "dask LocalCluster, data already on the workers (futures)",
              "seconds_median": statistics.median(t_f), "seconds_all": t_f,
              "identical_to_inprocess": bool(np.array_equal(est_f.components_, ref.components_))})
        del futures
        t0 = time.perf_counter()
        DistributedDPPCA(k, intermediate_rank=R, engine=DaskEngine(n_workers=2), random_state=0,
                         **KW).fit(sites[:2])
        emit({"bench": "speed", "engine": "dask, own LocalCluster per fit (2 sites)",
              "seconds": time.perf_counter() - t0})


def bench_scaling(args: argparse.Namespace) -> None:
    from distributed import Client, LocalCluster
    from threadpoolctl import threadpool_limits

    from dpspectral.distributed import DaskEngine, DistributedDPPCA

    X = load_mnist(Path(args.data))
    k, R = 50, 100
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2)
        for S in (2, 5, 10, 20, 50):
            sites = split(X, S)
            with threadpool_limits(1, user_api="blas"):
                t_in, est_in = _fit_times(lambda r: DistributedDPPCA(
                    k, intermediate_rank=R, engine="inprocess", random_state=r, **KW), sites, 1)
            t_d, est_d = _fit_times(lambda r: DistributedDPPCA(
                k, intermediate_rank=R, engine=DaskEngine(scheduler_address=cluster.scheduler_address),
                random_state=r, **KW),
                sites, 1)
            emit({"bench": "scaling", "sites": S, "rows_per_site": X.shape[0] // S,
                  "inprocess_seconds": t_in[0], "dask_seconds": t_d[0],
                  "bytes_per_site": est_d.result_.sites[0].bytes_sent,
                  "bytes_total": est_d.result_.diagnostics["bytes_total"],
                  "identical": bool(np.array_equal(est_in.components_, est_d.components_)),
                  "max_abs_difference": float(np.abs(est_in.components_ - est_d.components_).max())})
    d = X.shape[1]
    for R_ in (10, 50, 100, 200, 400):
        proxy, full = d * R_ * 8 + 8, d * (d + 1) // 2 * 8 + 8
        emit({"bench": "bytes", "d": d, "R": R_, "proxy_bytes": proxy, "full_bytes": full,
              "proxy_over_full": proxy / full})


def bench_utility(args: argparse.Namespace) -> None:
    from threadpoolctl import threadpool_limits

    from dpspectral.distributed import dpdispca, local_pca, pooled_pca

    X = load_mnist(Path(args.data))
    sites = split(X, 10)
    k = 50
    w, V = np.linalg.eigh(X.T @ X)
    A = X.T @ X
    q_o = float(w[-k:].sum())

    def q(res: Any) -> float:
        Vk = res.components
        return float(np.sum(Vk * (A @ Vk))) / q_o

    with threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        methods: tuple[tuple[str, Any, dict[str, Any]], ...] = (
            ("pooled", pooled_pca, {}),
            ("DPdisPCA (eigh proxy, default R = (D + 1) // 2)", dpdispca, {}),
            ("DPdisPCA (eigh proxy, paper's R = 2K)", dpdispca, {"intermediate_rank": 2 * k}),
            ("DPdisPCA (svd proxy, paper)", dpdispca, {"spectrum": "svd"}),
            ("DPdisPCA, size weights", dpdispca, {"weighting": "size"}),
            ("full", dpdispca, {"variant": "full"}),
            ("local (one site)", local_pca, {}),
        )
        for eps in (0.5, 1.0, 2.0):
            rows: dict[str, list[float]] = {}
            for r in range(args.repeats):
                for label, fn, extra in methods:
                    res = fn(sites, k, random_state=r, **{**KW, "epsilon": eps}, **extra)
                    rows.setdefault(label, []).append(q(res))
            for label, vals in rows.items():
                emit({"bench": "utility", "data": "MNIST, 10 sites x 6,000 rows", "k": k, "epsilon": eps,
                      "delta": KW["delta"], "method": label, "q_ratio_mean": float(np.mean(vals)),
                      "q_ratio_sd": float(np.std(vals, ddof=1)) if len(vals) > 1 else None})


def bench_sites(args: argparse.Namespace) -> None:
    """MNIST, k = 10, S in {2, 5, 10, 20} equal sites: captured share of the top-10 energy of the
    default proxy, the paper's R = 2K, the full matrices, Analyze Gauss on the pooled rows, and Analyze
    Gauss at a noise multiplier sqrt(S) larger (what S sites of N / S rows each amount to)."""
    from scipy.optimize import brentq
    from threadpoolctl import threadpool_limits

    from dpspectral import analyze_gauss
    from dpspectral.distributed import dpdispca
    from dpspectral.privacy._gaussian import analytic_noise_multiplier

    X = load_mnist(Path(args.data))
    k = 10
    w, U = np.linalg.eigh(X.T @ X)
    w, U = w[::-1], U[:, ::-1]

    def q(V: np.ndarray) -> float:
        return float((w[:, None] * (U.T @ V) ** 2).sum() / w[:k].sum())

    with threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for eps in (0.5, 1.0):
            for S in (2, 5, 10, 20):
                s_eq = analytic_noise_multiplier(eps, KW["delta"]) * math.sqrt(S)
                eps_eq = brentq(lambda e, t=s_eq: analytic_noise_multiplier(e, KW["delta"]) - t, 1e-4, eps)
                runs: tuple[tuple[str, Any, dict[str, Any]], ...] = (
                    ("default", dpdispca, {"n_sites": S}),
                    ("R = 2K (paper)", dpdispca, {"n_sites": S, "intermediate_rank": 2 * k}),
                    ("full", dpdispca, {"n_sites": S, "variant": "full"}),
                    ("Analyze Gauss, pooled", analyze_gauss, {}),
                    (f"Analyze Gauss at epsilon {eps_eq:.3f} (multiplier x sqrt(S))", analyze_gauss,
                     {"epsilon": eps_eq}),
                )
                for label, fn, extra in runs:
                    vals = [q(fn(X, k, random_state=r, **{**KW, "epsilon": eps, **extra}).components)
                            for r in range(args.repeats)]
                    emit({"bench": "sites", "data": "MNIST unit rows", "k": k, "epsilon": eps, "S": S,
                          "method": label, "captured_mean": float(np.mean(vals))})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("speed", "scaling", "utility", "sites"))
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    {"speed": bench_speed, "scaling": bench_scaling, "utility": bench_utility,
     "sites": bench_sites}[args.what](args)


if __name__ == "__main__":
    main()

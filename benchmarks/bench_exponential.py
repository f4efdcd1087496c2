"""Benchmark of the pure epsilon-DP exponential-mechanism PCA (``ppca``, ``exponential``).

Data: n x 100 rows with feature standard deviations j^(-1/2) in a random orthonormal basis (a decaying
spectrum), public row bound C = 3 (about 10% of the rows are clipped), k = 10, epsilon = 1,
replace-one neighbours. Captured energy: ``tr(V^T A V) / (sum of the top-k eigenvalues of A)`` with
``A = X^T X`` of the raw data.

Sections:

1. the sampler's acceptance rate against the concentration (spectrum ``s / j``), per envelope;
2. time and captured energy against n for ``exponential`` (tight and paper constants), ``ppca`` and
   scikit-learn's non-private PCA;
3. diffprivlib's and OpenDP's PCA (the same algorithm, Amin et al. 2019) where they can be run: each
   in its own virtual environment (``--diffprivlib-python``, ``--opendp-python``), as a subprocess
   with a timeout, on the same data, budget, row bound and relation; a stall is recorded as such;
4. a goodness-of-fit check of diffprivlib's Bingham sampler on the circle (where it finishes);
5. ``utility``: captured energy on real data (MNIST, a9a: unit rows, k = 10, training
   sets, ``$DPSPECTRAL_DATA`` or ``--data``), as given and after a fixed random rotation (a method
   good only in the data's own coordinates would lose there), for the defaults, the defaults
   without the coordinate step, and the papers' split (``epsilon / k`` per direction, step-by-step
   accounting, no coordinate step; no eigenvalues for ``ppca``), at several epsilon, with a random
   subspace for scale.

Usage::

    .venv/bin/python benchmarks/bench_exponential.py [--quick] [--out results.json]
        [--diffprivlib-python /tmp/peers-dpl/bin/python] [--opendp-python /tmp/peers/bin/python]
        [--peer-timeout 300] [--skip acceptance time peers sampler] [--data /work/shared/data]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from dpspectral.pca import BinghamSampler, BinghamSamplerError, EpsilonSplit, exponential_pca, ppca

D, K, EPSILON, ROW_NORM = 100, 10, 1.0, 3.0


def make_data(n: int, d: int = D, seed: int = 0) -> np.ndarray:
    basis, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    rows = np.random.default_rng(seed + 1).normal(size=(n, d))
    return (rows * np.arange(1, d + 1) ** -0.5) @ basis.T


def captured_energy(X: np.ndarray, V: np.ndarray) -> float:
    A = X.T @ X
    top = np.linalg.eigvalsh(A)[::-1][: V.shape[1]].sum()
    return float(np.trace(V.T @ A @ V) / top)


# -- 1. acceptance against concentration ------------------------------------------------------------
def acceptance_table(quick: bool) -> list[dict[str, Any]]:
    rows = []
    dims = (10, 100) if quick else (10, 100, 1000)
    scales = (1.0, 1e2, 1e4, 1e8) if quick else (1.0, 10.0, 1e2, 1e3, 1e4, 1e6, 1e8)
    for d in dims:
        lam = 1.0 / np.arange(1, d + 1)
        n_samples = 500 if d >= 1000 else 2000
        for s in scales:
            row: dict[str, Any] = {"d": d, "scale": s, "beta_2": s * (lam[0] - lam[1])}
            probe = BinghamSampler(np.diag(s * lam))
            best = min(probe.log_mass_acg, probe.log_mass_tangent)
            for env in ("acg", "tangent", "auto"):
                log_mass = {"acg": probe.log_mass_acg, "tangent": probe.log_mass_tangent}.get(env, best)
                if log_mass - best > math.log(1e3):
                    row[env] = None  # predicted over 1000 times slower than the other envelope: skipped
                    continue
                sampler = BinghamSampler(np.diag(s * lam), envelope=env)  # type: ignore[arg-type]
                t0 = time.perf_counter()
                try:
                    sampler.sample(n_samples, random_state=0, max_proposals=2000)
                    row[env] = sampler.acceptance_rate
                    row[f"{env}_ms_per_sample"] = 1e3 * (time.perf_counter() - t0) / n_samples
                except BinghamSamplerError:
                    row[env] = None  # below 1/2000
                if env == "auto":
                    row["auto_envelope"] = sampler.envelope
                    row["predicted_tangent_over_acg"] = math.exp(
                        min(sampler.log_mass_acg - sampler.log_mass_tangent, 700.0)
                    )
            row["sqrt(2/(e d))"] = math.sqrt(2.0 / (math.e * d))
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


# -- 2. time and energy against n -------------------------------------------------------------------
def ours(method: str, X: np.ndarray, seed: int) -> np.ndarray:
    if method == "exponential":
        return exponential_pca(X, K, epsilon=EPSILON, row_norm=ROW_NORM, random_state=seed).components
    if method == "exponential_paper":
        return exponential_pca(X, K, epsilon=EPSILON, row_norm=ROW_NORM, calibration="paper",
                               random_state=seed).components
    if method == "ppca":
        return ppca(X, K, epsilon=EPSILON, row_norm=ROW_NORM, random_state=seed).components
    from sklearn.decomposition import PCA

    return PCA(K, svd_solver="full").fit(X).components_.T


def time_vs_n(quick: bool, repeats: int) -> list[dict[str, Any]]:
    rows = []
    ns = (2_000, 20_000) if quick else (2_000, 5_000, 20_000, 100_000, 200_000)
    for n in ns:
        X = make_data(n)
        for method in ("exponential", "exponential_paper", "ppca", "sklearn"):
            times, energies = [], []
            for seed in range(repeats):
                t0 = time.perf_counter()
                V = ours(method, X, seed)
                times.append(time.perf_counter() - t0)
                energies.append(captured_energy(X, V))
            row = {"n": n, "method": method, "seconds_median": float(np.median(times)),
                   "seconds_max": float(np.max(times)), "energy_mean": float(np.mean(energies)),
                   "energy_sd": float(np.std(energies))}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


# -- 3. peers ---------------------------------------------------------------------------------------
_DIFFPRIVLIB = r"""
import sys, time, warnings, numpy as np
from diffprivlib.models import PCA
X = np.load(sys.argv[1]); k = int(sys.argv[2]); eps = float(sys.argv[3]); C = float(sys.argv[4])
t = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    # centered=True: the data are centred by construction, so all of epsilon goes to covariance_eig
    p = PCA(n_components=k, epsilon=eps, data_norm=C, centered=True, random_state=int(sys.argv[6])).fit(X)
print("seconds", time.perf_counter() - t, flush=True)
np.save(sys.argv[5], p.components_.T)
"""

_OPENDP = r"""
import sys, time, warnings, numpy as np
import opendp.prelude as dp
dp.enable_features("contrib", "idealized-numerics")
X = np.load(sys.argv[1]); k = int(sys.argv[2]); eps = float(sys.argv[3]); C = float(sys.argv[4])
n, d = X.shape
t = time.perf_counter()
# origin known (centred by construction): no budget on a mean; unit_epsilon is per changed record
dom = dp.numpy.array2_domain(norm=C, p=2, origin=np.zeros(d), size=n, num_columns=d, T=float)
m = dp.sklearn.decomposition.make_private_pca(dom, dp.symmetric_distance(), unit_epsilon=eps,
                                              num_components=k)
Xc = X * np.minimum(1, C / np.linalg.norm(X, axis=1))[:, None]
res = m(Xc)
print("seconds", time.perf_counter() - t, flush=True)
np.save(sys.argv[5], res.Vt.T[:, :k])
"""

_DIFFPRIVLIB_SAMPLER = r"""
import sys, numpy as np
from diffprivlib.mechanisms import Bingham
beta, n = float(sys.argv[1]), int(sys.argv[2])
# Bingham.randomise(M) targets exp(eps/(4 sens) v^T M v): with eps = 4, sens = 1 that is exp(v^T M v)
mech = Bingham(epsilon=4.0, sensitivity=1.0, random_state=0)
M = np.diag([0.0, -beta])
np.save(sys.argv[3], np.array([mech.randomise(M) for _ in range(n)]))
"""


def run_peer(python: str, script: str, X: np.ndarray, seed: int, timeout: float,
             workdir: Path) -> dict[str, Any]:
    xp, vp = workdir / "X.npy", workdir / "V.npy"
    np.save(xp, X)
    if vp.exists():
        vp.unlink()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [python, "-c", script, str(xp), str(K), str(EPSILON), str(ROW_NORM), str(vp), str(seed)],
            capture_output=True, text=True, timeout=timeout,
            env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
        )
    except subprocess.TimeoutExpired:
        return {"status": f"no result within {timeout:g} s (killed)", "wall_seconds": timeout}
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"status": "error", "stderr": proc.stderr[-600:], "wall_seconds": wall}
    inner = [float(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("seconds")]
    return {"status": "ok", "seconds": inner[-1] if inner else wall, "wall_seconds": wall,
            "energy": captured_energy(X, np.load(vp))}


def peers(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    ns = (2_000, 20_000) if args.quick else (1_000, 2_000, 5_000, 20_000)
    for name, python, script in (("diffprivlib", args.diffprivlib_python, _DIFFPRIVLIB),
                                 ("opendp", args.opendp_python, _OPENDP)):
        if not python or not Path(python).exists():
            rows.append({"peer": name, "status": f"not run: no interpreter at {python!r}"})
            continue
        stalled = False
        for n in ns:
            if stalled:
                rows.append({"peer": name, "n": n, "status": "skipped (stalled at a smaller n)"})
                continue
            row = {"peer": name, "n": n, **run_peer(python, script, make_data(n), 0,
                                                    args.peer_timeout, workdir)}
            stalled = row["status"] != "ok"
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _circle_cdf(beta: float):  # type: ignore[no-untyped-def]
    grid = np.linspace(0.0, math.pi, 200_001)
    f = np.exp(-beta * np.sin(grid) ** 2)
    cum = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2 * np.diff(grid))])
    return lambda x: np.interp(x, grid, cum / cum[-1])


def peer_sampler_check(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    """KS test of samples of exp(-beta sin^2 phi) on the circle: ours and diffprivlib's."""
    rows = []
    for beta in (0.5, 5.0, 20.0):
        cdf = _circle_cdf(beta)
        ours_v = BinghamSampler(np.diag([0.0, -beta])).sample(4000, random_state=1)
        phi = np.mod(np.arctan2(ours_v[:, 1], ours_v[:, 0]), math.pi)
        row: dict[str, Any] = {"beta": beta, "dpspectral_ks_p": float(stats.kstest(phi, cdf).pvalue)}
        python = args.diffprivlib_python
        if python and Path(python).exists():
            out = workdir / "bingham.npy"
            try:
                subprocess.run([python, "-c", _DIFFPRIVLIB_SAMPLER, str(beta), "4000", str(out)],
                               check=True, capture_output=True, timeout=args.peer_timeout)
                v = np.load(out)
                phi = np.mod(np.arctan2(v[:, 1], v[:, 0]), math.pi)
                row["diffprivlib_ks_p"] = float(stats.kstest(phi, cdf).pvalue)
                row["diffprivlib_mean_sin2"] = float(np.mean(np.sin(phi) ** 2))
            except subprocess.TimeoutExpired:
                row["diffprivlib_ks_p"] = "timeout"
        grid = np.linspace(0.0, math.pi, 200_001)
        w = np.exp(-beta * np.sin(grid) ** 2)
        row["exact_mean_sin2"] = float(np.sum(w * np.sin(grid) ** 2) / np.sum(w))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


UTILITY_SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    "no coordinates": {"coordinate_share": 0.0},
    "papers' split": {"allocation": "equal", "accounting": "per_direction", "coordinate_share": 0.0},
}  # fields of EpsilonSplit


def utility(data_dir: str, quick: bool, repeats: int) -> list[dict[str, Any]]:
    """Section 5: captured energy of ppca / exponential on real data, as given and rotated."""
    from dpspectral_reproduce.chen2025 import load_chen_dataset

    rows: list[dict[str, Any]] = []
    for name in ("mnist",) if quick else ("mnist", "a9a"):
        X0 = load_chen_dataset(name, data_dir).X_train.astype(float)
        d = X0.shape[1]
        R = np.linalg.qr(np.random.default_rng(123).normal(size=(d, d)))[0]
        for rotated in (False, True):
            X = X0 @ R.T if rotated else X0
            A = X.T @ X
            top = float(np.linalg.eigvalsh(A)[::-1][:K].sum())
            Qr = np.linalg.qr(np.random.default_rng(1).normal(size=(d, K)))[0]
            print(f"## {name}{' rotated' if rotated else ''}: random subspace "
                  f"{np.trace(Qr.T @ A @ Qr) / top:.3f}", flush=True)
            for eps in (1.0, 4.0) if quick else (0.25, 1.0, 4.0):
                for fn in (ppca, exponential_pca):
                    for label, kw in UTILITY_SETTINGS.items():
                        if label == "papers' split" and fn is ppca:
                            kw = {**kw, "eigenvalue_share": 0.0}
                        split = {"epsilon_split": EpsilonSplit(**kw)}
                        caps = []
                        for seed in range(repeats):
                            V = fn(X, K, epsilon=eps, row_norm=1.0, random_state=seed, **split).components
                            caps.append(float(np.trace(V.T @ A @ V)) / top)
                        row = {"data": name, "rotated": rotated, "epsilon": eps,
                               "method": fn.__name__, "setting": label,
                               "captured": float(np.mean(caps)), "sd": float(np.std(caps))}
                        rows.append(row)
                        print(f"{name:6s} rot={rotated!s:5s} eps={eps:<5} {fn.__name__:16s} "
                              f"{label:16s} {row['captured']:.3f} (sd {row['sd']:.3f})", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--diffprivlib-python", default="/tmp/peers-dpl/bin/python")
    parser.add_argument("--opendp-python", default="/tmp/peers/bin/python")
    parser.add_argument("--peer-timeout", type=float, default=300.0)
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["acceptance", "time", "peers", "sampler", "utility"])
    parser.add_argument("--data", default=os.environ.get("DPSPECTRAL_DATA", "/work/shared/data"))
    args = parser.parse_args()
    print(f"# load average at start: {os.getloadavg()}", flush=True)
    results: dict[str, Any] = {"load_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if "acceptance" not in args.skip:
            results["acceptance"] = acceptance_table(args.quick)
        if "time" not in args.skip:
            results["time_vs_n"] = time_vs_n(args.quick, args.repeats)
        if "peers" not in args.skip:
            results["peers"] = peers(args, workdir)
        if "sampler" not in args.skip:
            results["peer_sampler"] = peer_sampler_check(args, workdir)
        if "utility" not in args.skip:
            results["utility"] = utility(args.data, args.quick, args.repeats)
    results["load_end"] = os.getloadavg()
    print(f"# load average at end: {results['load_end']}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

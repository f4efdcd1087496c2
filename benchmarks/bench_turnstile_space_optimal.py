"""Turnstile Private-Space-Optimal-LRF (Priv1, Figure 5) against the Priv2 turnstile state and the one-shot
Priv1 factorization: state size in bytes for the paper's sizes, and the error.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_turnstile_space_optimal.py`` (about a minute).
"""

from __future__ import annotations

import time

import numpy as np

from dpspectral.lowrank import Sketch, TurnstileLRF, private_space_optimal_lrf, turnstile_lrf
from dpspectral.lowrank._turnstile_space_optimal import (
    TurnstileSpaceOptimalLRF,
    paper_space_bound,
    turnstile_space_optimal_lrf,
)

KW = dict(epsilon=1.0, delta=1e-6)


def space_table() -> None:
    print("| shape | k | alpha | t, v | Priv1 state (Y_c, Y_r, Z) | + Omega[:n], Psi, S, T in memory | "
          "Priv2 state (Y_c, Z) | + Phi, S in memory | (m + n) k / alpha |")
    print("|---|---|---|---|---|---|---|---|---|")
    for shape, k, alpha in (((535, 50), 10, 0.25), ((1050, 100), 10, 0.25), ((1800, 200), 10, 0.1),
                            ((2000, 2000), 10, 0.25), ((10000, 10000), 10, 0.25)):
        p1 = TurnstileSpaceOptimalLRF(shape, k, alpha=alpha, random_state=0, **KW)
        b = p1.state_bytes()
        p2 = TurnstileLRF(shape, k, alpha=alpha, random_state=0, **KW)
        s2 = p2._Y.nbytes + p2._ZT.nbytes
        c2 = p2._Phi.nbytes + p2._S.nbytes + p2._ST.nbytes
        print(f"| {shape[0]} x {shape[1]} | {k} | {alpha} | {p1.sizes.t}, {p1.sizes.v} | {b['state']:,} | "
              f"{b['state'] + b['secret_omega'] + b['public_sketches']:,} | {s2:,} | {s2 + c2:,} | "
              f"{paper_space_bound(shape, k, alpha):,} |")


def error_table(seeds=(0, 1, 2)) -> None:
    print("| input | method | ||A - M||_F / ||A - A_k||_F (mean of 3) | "
          "max |M_stream - M_one-shot| / max |A| | s |")
    print("|---|---|---|---|---|")
    shape, k = (535, 50), 10
    for name, scale in (("uniform [0, 4750] (Table 3)", 4750.0), ("uniform [0, 50]", 50.0)):
        A = np.random.default_rng(7).uniform(0.0, scale, size=shape)
        s = np.linalg.svd(A, compute_uv=False)
        opt = float(np.sqrt(np.sum(s[k:] ** 2)))
        rows = {"private_space_optimal_lrf (one-shot)": [], "turnstile_space_optimal_lrf": [],
                "turnstile_lrf (Priv2)": []}
        diff, secs = 0.0, {key: 0.0 for key in rows}
        for seed in seeds:
            kw = dict(random_state=seed, sketch=Sketch(seed=100 + seed), **KW)
            t0 = time.perf_counter()
            one = private_space_optimal_lrf(A, k, **kw)
            t1 = time.perf_counter()
            st = turnstile_space_optimal_lrf(A, k, **kw)
            t2 = time.perf_counter()
            p2 = turnstile_lrf(A, k, **kw)
            t3 = time.perf_counter()
            for key, res, dt in zip(rows, (one, st, p2), (t1 - t0, t2 - t1, t3 - t2), strict=True):
                rows[key].append(np.linalg.norm(A - res.reconstruct()) / opt)
                secs[key] += dt / len(seeds)
            diff = max(diff, float(np.abs(st.reconstruct() - one.reconstruct()).max() / np.abs(A).max()))
        for key, vals in rows.items():
            d = f"{diff:.1e}" if key.startswith("turnstile_space") else "—"
            print(f"| {name} | {key} | {np.mean(vals):.3f} | {d} | {secs[key]:.2f} |")


def tree_table(seeds=(0, 1, 2)) -> None:
    """Continual release, one row per step (T = m): the Priv1 tree (Theorem 51) against the Priv2 tree."""
    from dpspectral.lowrank import continual_lrf
    from dpspectral.lowrank._continual import tree_levels
    from dpspectral.lowrank._continual_space_optimal import (
        ContinualSpaceOptimalLRF,
        continual_space_optimal_lrf,
    )

    print("| shape (T = m) | L | Priv1 tree: 2L nodes + Omega_1 (bytes) | Priv2 tree: L nodes (bytes) | "
          "Priv1 tree sigma_min (per node) | ||A - M_T||_F / ||A - A_k||_F: Priv1 tree, Priv2 tree, one-shot "
          "Priv1 (uniform [0, 4750], mean of 3) |")
    print("|---|---|---|---|---|---|")
    for shape, k in (((535, 50), 10), ((1050, 100), 10)):
        m, n = shape
        L = tree_levels(m)
        st = ContinualSpaceOptimalLRF(shape, k, m, random_state=0, **KW)
        node = sum(a.nbytes for a in st._zeros())
        p2 = TurnstileLRF(shape, k, random_state=0, **KW)
        A = np.random.default_rng(7).uniform(0.0, 4750.0, size=shape)
        s = np.linalg.svd(A, compute_uv=False)
        opt = float(np.sqrt(np.sum(s[k:] ** 2)))
        errs = np.zeros(3)
        for seed in seeds:
            kw = dict(random_state=seed, sketch=Sketch(seed=100 + seed), **KW)
            for i, f in enumerate((continual_space_optimal_lrf, continual_lrf, private_space_optimal_lrf)):
                errs[i] += np.linalg.norm(A - f(A, k, **kw).reconstruct()) / opt / len(seeds)
        print(f"| {m} x {n} | {L} | {2 * L * node + st._Omega.nbytes:,} | "
              f"{L * (p2._Y.nbytes + p2._ZT.nbytes):,} | {st._so.sigma_min:.1f} | "
              f"{errs[0]:.3f}, {errs[1]:.3f}, {errs[2]:.3f} |")


if __name__ == "__main__":
    space_table()
    print()
    error_table()
    print()
    tree_table()

"""What the exact draws other than additive noise cost, against NumPy's floating-point draws.

Usage (from the project root, after `make install-dev`):

    .venv/bin/python benchmarks/bench_exact_draws.py [--rows 60000] [--permutation-rows 1000000] [--repeats 5]

* a Poisson sample of ``--rows`` rows at ``q = 0.01``: one exact ``Bernoulli(q)`` per row against
  NumPy's binomial count and ``choice`` of that many rows;
* a permutation of ``--rows`` rows and one of ``--permutation-rows`` rows (a million by default):
  Fisher-Yates on rejection-sampled integers (compiled) against NumPy's ``Generator.permutation``;
* the exponential mechanism over 3 and 1,000 candidates: the exact rejection sampler against
  report-noisy-max with NumPy's Gumbel draws.

Every variant draws from a seeded generator's words (the default source), one core; the variants run
interleaved, ``--repeats`` rounds, and the median seconds of each is reported (one JSON line);
docs/noise.md quotes the figures.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np

from dpspectral.privacy._draws import GeneratorRawWords, exponential_choice, permutation, poisson_sample


def _poisson_float(rng: np.random.Generator, n: int, q: float) -> np.ndarray:
    idx = rng.choice(n, size=int(rng.binomial(n, q)), replace=False)
    idx.sort()
    return idx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--permutation-rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, n_perm = args.rows, args.permutation_rows
    rng = np.random.default_rng(0)
    src = GeneratorRawWords(np.random.default_rng(1))
    few, many = np.array([0.0, 1.0, 2.5]), np.random.default_rng(2).standard_normal(1000)
    variants: dict[str, Callable[[], object]] = {
        "poisson_exact": lambda: poisson_sample(src, n, 0.01),
        "poisson_float": lambda: _poisson_float(rng, n, 0.01),
        "permutation_exact": lambda: permutation(src, n),
        "permutation_float": lambda: rng.permutation(n),
        "permutation_large_exact": lambda: permutation(src, n_perm),
        "permutation_large_float": lambda: rng.permutation(n_perm),
        "choice_3_exact": lambda: exponential_choice(src, few, 1.0),
        "choice_3_float": lambda: int(np.argmax(few + rng.gumbel(0.0, 1.0, 3))),
        "choice_1000_exact": lambda: exponential_choice(src, many, 1.0),
        "choice_1000_float": lambda: int(np.argmax(many + rng.gumbel(0.0, 1.0, 1000))),
    }
    permutation(src, 2)  # compile (or load) the kernels before timing
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    print(json.dumps({"rows": n, "permutation_rows": n_perm, "machine": platform.machine(),
                      "median_seconds": {k: statistics.median(v) for k, v in times.items()}}))


if __name__ == "__main__":
    main()

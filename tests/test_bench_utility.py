"""Smoke checks of benchmarks/bench_utility.py, so that the script cannot rot.

The benchmark is a script of the checkout, loaded here from its path. Everything runs on a tiny spiked
set (n = 3,000, d = 40) in a few seconds.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from dpspectral._registry import methods

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_utility.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_utility", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_utility"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def _tiny(bench: ModuleType) -> Any:
    e1 = np.zeros(bench.D_SPIKED)
    e1[0] = 1.0
    return bench._dataset("spiked n=3e+03", bench.spiked_rows(3000, 5), 1, e1, "tiny")


def test_eps90_is_the_smallest_epsilon_reaching_the_target(bench: ModuleType) -> None:
    eps = (0.1, 0.5, 1.0, 4.0)
    recs = [{"dataset": "d", "method": "m", "epsilon": e, "seed": s, "status": "ok", "captured": c + 0.01 * s}
            for e, c in zip(eps, (0.5, 0.89, 0.93, 0.99), strict=True) for s in (0, 1)]
    recs += [{"dataset": "d", "method": "slow", "epsilon": e, "seed": 0, "status": "ok", "captured": 0.3}
             for e in eps]
    summary = bench.summarize(recs)
    assert summary[("d", "m", 0.5)]["captured"] == pytest.approx(0.895)  # mean over seeds
    assert bench.eps90(summary, "d", "m", eps) == 1.0  # the mean at 0.5 (0.895) is below 0.9
    assert bench.eps90(summary, "d", "m", eps, target=0.95) == 4.0
    assert bench.eps90(summary, "d", "slow", eps) is None
    table = bench.eps90_table(summary, ["d"], ["m", "slow"], eps)
    assert "| `slow` | not reached |" in table
    # spiked sets: the smallest epsilon with sin theta <= 0.1
    spiked = [{"dataset": "spiked n=2e+04", "method": "m", "epsilon": e, "seed": 0, "status": "ok",
               "captured": 0.99, "sin_theta": s} for e, s in zip(eps, (0.5, 0.2, 0.09, 0.05), strict=True)]
    assert bench.eps90(bench.summarize(spiked), "spiked n=2e+04", "m", eps) == 1.0


def test_a_rerun_cell_replaces_the_old_one(bench: ModuleType) -> None:
    old = [{"dataset": "d", "method": "m", "epsilon": 1.0, "seed": s, "status": "ok", "captured": 0.2}
           for s in (0, 1, 2)]
    other = [{"dataset": "d", "method": "ag", "epsilon": 1.0, "seed": 0, "status": "ok", "captured": 0.9}]
    new = [{"dataset": "d", "method": "m", "epsilon": 1.0, "seed": 0, "status": "timeout", "seconds": 5.0}]
    summary = bench.summarize(old + other + new)
    assert summary[("d", "m", 1.0)]["captured"] is None  # the re-run (one killed seed) replaces all three
    assert summary[("d", "m", 1.0)]["status"].startswith("> 5 s")
    assert summary[("d", "ag", 1.0)]["captured"] == 0.9
    assert bench.summarize(new + old)[("d", "m", 1.0)]["captured"] == pytest.approx(0.2)


def test_every_pca_method_of_the_registry_is_benchmarked(bench: ModuleType) -> None:
    specs = {s.label: s for s in bench.method_specs()}
    assert {m.name for m in methods(task="pca")} | {"auto"} == set(specs)
    for m in methods(task="pca"):
        assert specs[m.name].delta == (bench.DELTA if m.needs_delta else 0.0)
    assert "local model" in specs["local_gaussian"].note
    assert bench.resolve(specs["auto"], 40)[0] == "analyze_gauss"  # a d x d matrix fits: Analyze Gauss


def test_a_small_run_writes_tables_and_plots(bench: ModuleType, tmp_path: Path) -> None:
    ds = _tiny(bench)
    specs = bench.method_specs(["analyze_gauss", "auto"])
    sink = io.StringIO()
    counter = [0, 4]
    records = bench.run_dataset(ds, specs, (0.5, 2.0), 1, 60.0, sink, counter)
    assert counter[0] == 4
    saved = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert len(saved) == len(records) and all("V" not in r for r in saved)
    summary = bench.summarize(saved)
    rand = summary[(ds.name, bench.RANDOM, None)]["sin_theta"]
    ag = summary[(ds.name, "analyze_gauss", 2.0)]["sin_theta"]
    # seeded; the random direction has sin ~ 0.99 in d = 40, Analyze Gauss at n = 3000, eps = 2 ~ 0.05
    assert ag < 0.3 < rand
    assert summary[(ds.name, "analyze_gauss", 2.0)]["seconds"] is not None
    text = bench.report(saved, "## header", tmp_path, (0.5, 2.0))
    assert "ε₉₀" in text and "random subspace" in text and "auto → analyze_gauss" in text
    assert (tmp_path / "report.md").is_file()
    assert (tmp_path / "utility_spiked_n_3e_03.png").read_bytes()[:4] == b"\x89PNG"


def test_a_fit_over_the_time_limit_is_killed_and_marked(bench: ModuleType,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ds = _tiny(bench)
    spec = bench.method_specs(["analyze_gauss"])[0]

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(30)

    monkeypatch.setattr(bench, "fit", slow)  # the forked child runs the module's fit
    t0 = time.perf_counter()
    out = bench.run_isolated(spec, ds, 1.0, 0, 0.5)
    assert out["status"] == "timeout" and time.perf_counter() - t0 < 10
    cell = bench._run_cell(ds, spec, "analyze_gauss", "", 1.0, 3, 0.5, "")
    assert len(cell) == 1 and cell[0]["status"] == "timeout"  # the other seeds are not tried
    assert bench._stop_reason(cell, 1.0).startswith("skipped (timed out")
    assert bench._status_text(cell[0]).startswith("> 0.5 s")

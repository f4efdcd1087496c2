"""Utility of every PCA method of the registry with its defaults.

Usage (from the project root; data from --data, else $DPSPECTRAL_DATA, else ../shared/data)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_utility.py [--datasets mnist a9a rt-iot2022 spiked]
        [--methods analyze_gauss dp_pca ...] [--eps 0.1 0.25 0.5 1 2 4] [--seeds 3] [--quick]
        [--max-rows N] [--max-seconds 120] [--out reports/bench_utility] [--report-only]

What it measures. Every entry of ``dpspectral._registry.methods(task="pca")`` (and ``auto``: the method
:func:`~dpspectral._registry.choose_method` picks from public facts) is called through the registry
with its DEFAULTS: ``function(X, k, epsilon=eps, delta=1e-6, row_norm=1, random_state=seed)``.
Methods that cannot take that call run with what they accept, and every table says so: the pure
epsilon-DP methods (``needs_delta=False``) run with ``delta = 0``; ``local_gaussian`` runs in the local
model (each user randomises their own row: a different relation, not comparable with the central
methods); ``dpdispca`` with its default sites; ``wishart`` is a labelled non-DP baseline.

Data sets. MNIST, a9a, RT-IoT2022 (training splits of
:func:`dpspectral_reproduce.chen2025.load_chen_dataset`: every row scaled to unit norm, a per-row map),
k = 10, metric the captured energy ``tr(V^T X^T X V) / (sum of the top-k eigenvalues of X^T X)``
(uncentred, as the methods). The spiked Gaussian family: d = 40, population covariance
diag(17, 1, ..., 1) scaled by 1 / (1.5 sqrt(56)), rows clipped to norm 1 (as
benchmarks/bench_minibatch_oja.py), k = 1, n = 2e4, 8e4, 3.2e5, 1.28e6; metric ``sin theta`` to the
population top eigenvector e_1 (the captured energy of the sample X^T X is recorded too). Every table has
Analyze Gauss and a random subspace (and the exact, non-private subspace).

eps90: per method and data set, the smallest epsilon of the grid at which the mean captured energy is
at least 0.9 ("not reached" otherwise).

Each fit runs in a forked child process, so a cell that exceeds ``--max-seconds`` is killed and marked
(and the method is skipped for the rest of that data set: larger epsilon or n are not faster); the
child reports its time and its peak extra resident memory (VmHWM after resetting it at the start,
minus the resident set at the start: the memory the fit itself allocated). One progress line per cell;
every fit is appended to ``OUT/results.jsonl`` as it finishes, and ``--report-only`` rebuilds the
tables and plots from that file (e.g. of an interrupted run). ``--append`` adds to that file instead of
starting it afresh (e.g. re-running only the methods that changed, with the same data options); a later
record of the same (data set, method, epsilon, seed) replaces an earlier one.
Outputs: ``OUT/report.md`` (markdown tables ready for docs/benchmarks.md), ``OUT/utility_<data>.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpspectral._registry import choose_method, get_method, methods

ROOT = Path(__file__).resolve().parents[1]
EPSILONS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
QUICK_EPSILONS = (0.5, 2.0)
REAL = ("mnist", "a9a", "rt-iot2022")
SPIKED_NS = (20_000, 80_000, 320_000, 1_280_000)
QUICK_SPIKED_NS = (20_000,)
QUICK_ROWS = 3000
DELTA = 1e-6
K_REAL, K_SPIKED, D_SPIKED = 10, 1, 40
TARGET = 0.9
SPIKED_SIN = 0.1  # the spiked sets' criterion instead of eps90 (the issue's target for dp_pca)
RANDOM, EXACT = "random subspace", "exact (non-private)"


@dataclass
class Dataset:
    """One data set of the benchmark and what its metrics need."""

    name: str
    X: np.ndarray
    k: int
    S: np.ndarray  # X^T X
    top: float  # sum of the top-k eigenvalues of S
    v1: np.ndarray | None  # population top eigenvector (spiked only)
    note: str = ""


@dataclass(frozen=True)
class Spec:
    """How the benchmark calls one method: registry name, the delta and relation it gets, a note."""

    label: str
    name: str
    delta: float
    relation: str | None
    note: str


# ---------------------------------------------------------------------------------------------
# data


def spiked_rows(n: int, seed: int) -> np.ndarray:
    """Spiked Gaussian rows: d = 40, covariance diag(17, 1, ...) / (2.25 * 56), clipped to norm 1."""
    rng = np.random.default_rng(seed)
    lam = np.ones(D_SPIKED)
    lam[0] = 17.0
    X = rng.standard_normal((n, D_SPIKED)) * (np.sqrt(lam) / (1.5 * np.sqrt(lam.sum())))
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


def _dataset(name: str, X: np.ndarray, k: int, v1: np.ndarray | None, note: str) -> Dataset:
    S = X.T @ X
    top = float(np.sort(np.linalg.eigvalsh(S))[::-1][:k].sum())
    return Dataset(name, X, k, S, top, v1, note)


def load_datasets(names: Sequence[str], data: Path, *, max_rows: int | None,
                  spiked_ns: Sequence[int], seed: int = 0) -> Iterable[Dataset]:
    """The data sets, one at a time (``"spiked"`` expands to one per n; ``"spiked-80000"`` is one n).

    A real set with more than ``max_rows`` rows is replaced by a seeded random subsample (noted).
    """
    from dpspectral_reproduce.chen2025 import load_chen_dataset

    for name in names:
        if name.startswith("spiked"):
            ns = [int(float(name.split("-", 1)[1]))] if "-" in name else list(spiked_ns)
            for n in ns:
                e1 = np.zeros(D_SPIKED)
                e1[0] = 1.0
                yield _dataset(f"spiked n={n:.2g}", spiked_rows(n, seed + n % 9973), K_SPIKED, e1, "")
            continue
        X = np.asarray(load_chen_dataset(name, data).X_train, dtype=np.float64)
        note = ""
        if max_rows is not None and X.shape[0] > max_rows:
            idx = np.sort(np.random.default_rng(seed).choice(X.shape[0], max_rows, replace=False))
            note = f"random subsample of {max_rows:,} of {X.shape[0]:,} training rows"
            X = X[idx]
        yield _dataset(name, X, K_REAL, None, note)


# ---------------------------------------------------------------------------------------------
# methods


def method_specs(names: Sequence[str] | None = None) -> list[Spec]:
    """Every PCA method of the registry (or ``names``), plus ``auto``, with the call it gets."""
    specs: list[Spec] = []
    for m in methods(task="pca"):
        if names is not None and m.name not in names:
            continue
        rel = m.relations[0].value if m.relations else None
        notes = []
        if not m.needs_delta:
            notes.append("pure ε (δ = 0)" if m.certified else "not DP (labelled baseline), δ = 0")
        if rel == "local":
            notes.append("local model (another relation: not comparable with the central methods)")
        if m.model == "distributed":
            notes.append("distributed, default sites")
        if m.model == "streaming":
            notes.append("one pass")
        specs.append(Spec(m.name, m.name, DELTA if m.needs_delta else 0.0, rel, "; ".join(notes)))
    if names is None or "auto" in names:
        specs.append(Spec("auto", "auto", DELTA, None, "DPPCA(method='auto')'s choice"))
    return specs


def resolve(spec: Spec, d: int) -> tuple[str, str]:
    """The registry name that runs ``spec`` on d features, and the note (auto: its choice and reason)."""
    if spec.name != "auto":
        return spec.name, spec.note
    choice = choose_method(relation=None, delta=spec.delta, n_features=d)
    return choice.method, f"auto → {choice.method}"


def fit(spec: Spec, ds: Dataset, epsilon: float, seed: int) -> tuple[np.ndarray, bool, float]:
    """One fit with the method's defaults: (components, certified, certified epsilon)."""
    name, _ = resolve(spec, ds.X.shape[1])
    m = get_method(name)
    kwargs: dict[str, Any] = {"epsilon": epsilon, "delta": spec.delta, "row_norm": 1.0,
                              "random_state": seed}
    if spec.relation is not None:
        kwargs["relation"] = spec.relation
    if "show_progress" in m.options:
        kwargs["show_progress"] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = m.function(ds.X, ds.k, **kwargs)
    return np.asarray(res.components), bool(res.privacy.certified), float(res.privacy.epsilon)


def _rss_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _child(conn: Any, spec: Spec, ds: Dataset, epsilon: float, seed: int) -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current resident set
    except OSError:
        pass
    rss0 = _rss_kib("VmRSS")
    t0 = time.perf_counter()
    try:
        V, certified, ceps = fit(spec, ds, epsilon, seed)
        secs = time.perf_counter() - t0
        hwm = _rss_kib("VmHWM")
        peak = None if hwm is None or rss0 is None else max(0, hwm - rss0) / 1024.0
        conn.send({"status": "ok", "V": V, "seconds": secs, "peak_mib": peak, "certified": certified,
                   "certified_epsilon": ceps})
    except Exception as exc:  # noqa: BLE001 - reported in the table
        conn.send({"status": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}",
                   "seconds": time.perf_counter() - t0})
    finally:
        conn.close()


def run_isolated(spec: Spec, ds: Dataset, epsilon: float, seed: int, timeout: float) -> dict[str, Any]:
    """:func:`fit` in a forked child killed after ``timeout`` seconds (status "timeout")."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, spec, ds, epsilon, seed), daemon=True)
    proc.start()
    child.close()
    try:
        out = parent.recv() if parent.poll(timeout) else {"status": "timeout", "seconds": timeout}
    except EOFError:
        out = {"status": "error", "error": f"child died (exit code {proc.exitcode})", "seconds": math.nan}
    if proc.is_alive():
        proc.kill()
    proc.join()
    return out


# ---------------------------------------------------------------------------------------------
# metrics


def captured(ds: Dataset, V: np.ndarray) -> float:
    """``tr(V^T S V) / top``: the share of the top-k energy of X^T X that span(V) captures."""
    Q = np.linalg.qr(V)[0] if V.shape[1] > 1 else V / np.linalg.norm(V)
    return float(np.trace(Q.T @ ds.S @ Q)) / ds.top


def sin_theta(ds: Dataset, V: np.ndarray) -> float | None:
    """Sine between the population top eigenvector and span(V) (spiked sets only)."""
    if ds.v1 is None:
        return None
    Q = np.linalg.qr(V)[0]
    r = ds.v1 - Q @ (Q.T @ ds.v1)
    return float(min(1.0, float(np.linalg.norm(r))))


def reference_rows(ds: Dataset, seeds: int) -> list[dict[str, Any]]:
    """The exact top-k subspace and a uniformly random k-frame (mean over seeds), as records."""
    _, U = np.linalg.eigh(ds.S)
    exact = U[:, ::-1][:, : ds.k]
    rows = [{"dataset": ds.name, "method": EXACT, "epsilon": None, "seed": 0, "status": "ok",
             "captured": captured(ds, exact), "sin_theta": sin_theta(ds, exact), "seconds": None}]
    for s in range(seeds):
        Q = np.linalg.qr(np.random.default_rng(10_000 + s).standard_normal((ds.X.shape[1], ds.k)))[0]
        rows.append({"dataset": ds.name, "method": RANDOM, "epsilon": None, "seed": s, "status": "ok",
                     "captured": captured(ds, Q), "sin_theta": sin_theta(ds, Q), "seconds": None})
    return rows


# ---------------------------------------------------------------------------------------------
# the run


def run_dataset(ds: Dataset, specs: Sequence[Spec], epsilons: Sequence[float], seeds: int,
                max_seconds: float, sink: Any, counter: list[int]) -> list[dict[str, Any]]:
    """Every (method, epsilon) cell of one data set; a progress line per cell; records to ``sink``."""
    records = reference_rows(ds, seeds)
    for r in records:
        r["dataset_note"] = ds.note
        sink.write(json.dumps(r) + "\n")
    for spec in specs:
        name, note = resolve(spec, ds.X.shape[1])
        stop = ""
        for eps in epsilons:
            counter[0] += 1
            cell = _run_cell(ds, spec, name, note, eps, seeds, max_seconds, stop)
            stop = stop or _stop_reason(cell, eps)
            records += cell
            for r in cell:
                sink.write(json.dumps({k: v for k, v in r.items() if k != "V"}) + "\n")
            sink.flush()
            print(_progress_line(counter, ds, spec, eps, cell), flush=True)
    return records


def _stop_reason(cell: list[dict[str, Any]], eps: float) -> str:
    if any(r["status"] == "timeout" for r in cell):
        return f"skipped (timed out at ε = {eps:g})"
    return ""


def _run_cell(ds: Dataset, spec: Spec, name: str, note: str, eps: float, seeds: int, max_seconds: float,
              stop: str) -> list[dict[str, Any]]:
    base = {"dataset": ds.name, "dataset_note": ds.note, "method": spec.label, "runs": name, "note": note,
            "epsilon": eps,
            "delta": spec.delta, "n": int(ds.X.shape[0]), "d": int(ds.X.shape[1]), "k": ds.k}
    if stop:
        return [{**base, "seed": 0, "status": stop}]
    cell = []
    for seed in range(seeds):
        out = run_isolated(spec, ds, eps, seed, max_seconds)
        rec = {**base, "seed": seed, **{k: v for k, v in out.items() if k != "V"}}
        if out["status"] == "ok":
            rec["captured"] = captured(ds, out["V"])
            rec["sin_theta"] = sin_theta(ds, out["V"])
        cell.append(rec)
        if out["status"] != "ok":
            break
    return cell


def _progress_line(counter: list[int], ds: Dataset, spec: Spec, eps: float,
                   cell: list[dict[str, Any]]) -> str:
    ok = [r for r in cell if r["status"] == "ok"]
    head = f"[{counter[0]}/{counter[1]}] {ds.name} ε={eps:g} {spec.label}:"
    if not ok:
        return f"{head} {cell[0]['status']} {cell[0].get('error', '')}".rstrip()
    metric = "sin_theta" if ds.v1 is not None else "captured"
    vals = [float(r[metric]) for r in ok]
    secs = statistics.median(float(r["seconds"]) for r in ok)
    peak = max((float(r["peak_mib"]) for r in ok if r.get("peak_mib") is not None), default=math.nan)
    return (f"{head} {metric} {statistics.mean(vals):.4f} ({len(ok)} seed(s)), {secs:.2f} s, "
            f"{peak:.0f} MiB")


# ---------------------------------------------------------------------------------------------
# tables and plots


def latest(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with a later one of the same (data set, method, epsilon, seed) dropped; when a cell
    was re-run, only its new seeds count (a shorter re-run, e.g. a timeout, replaces the whole cell)."""
    last_run: dict[tuple[Any, ...], int] = {}
    for i, r in enumerate(records):
        if r.get("seed", 0) == 0:
            last_run[(r["dataset"], r["method"], r["epsilon"])] = i
    out = {}
    for i, r in enumerate(records):
        if i >= last_run.get((r["dataset"], r["method"], r["epsilon"]), 0):
            out[(r["dataset"], r["method"], r["epsilon"], r.get("seed", 0))] = r
    return list(out.values())


def summarize(records: Sequence[dict[str, Any]]) -> dict[tuple[str, str, float | None], dict[str, Any]]:
    """(data set, method, epsilon) -> mean captured / sin theta, sd, median seconds, peak MiB, status."""
    groups: dict[tuple[str, str, float | None], list[dict[str, Any]]] = {}
    for r in latest(records):
        groups.setdefault((r["dataset"], r["method"], r["epsilon"]), []).append(r)
    out = {}
    for key, rows in groups.items():
        ok = [r for r in rows if r["status"] == "ok"]
        bad = [r for r in rows if r["status"] != "ok"]
        cell: dict[str, Any] = {"n_ok": len(ok), "note": rows[0].get("note", ""),
                                "status": "ok" if ok and not bad else _status_text(bad[0])}
        for metric in ("captured", "sin_theta"):
            vals = [float(r[metric]) for r in ok if r.get(metric) is not None]
            cell[metric] = statistics.mean(vals) if vals else None
            cell[metric + "_sd"] = statistics.pstdev(vals) if len(vals) > 1 else 0.0
        secs = [float(r["seconds"]) for r in ok if r.get("seconds") is not None]
        cell["seconds"] = statistics.median(secs) if secs else None
        peaks = [float(r["peak_mib"]) for r in ok if r.get("peak_mib") is not None]
        cell["peak_mib"] = max(peaks) if peaks else None
        out[key] = cell
    return out


def _status_text(rec: dict[str, Any]) -> str:
    if rec["status"] == "timeout":
        return f"> {rec['seconds']:g} s (killed)"
    if rec["status"] == "error":
        return "error: " + " ".join(str(rec.get("error", "")).split())
    return str(rec["status"])


def eps90(summary: dict[tuple[str, str, float | None], dict[str, Any]], dataset: str, method: str,
          epsilons: Sequence[float], target: float = TARGET) -> float | None:
    """The smallest epsilon of the grid whose mean captured energy is >= target (None: not reached).

    On the spiked sets (k = 1, lambda1 / lambda2 ~ 17) 90% of the top energy is reached at sin theta ~ 0.3,
    which says little: there it is the smallest epsilon with mean sin theta <= ``SPIKED_SIN`` instead.
    """
    spiked = dataset.startswith("spiked")
    for e in sorted(epsilons):
        cell = summary.get((dataset, method, e))
        if cell is None:
            continue
        if spiked and cell["sin_theta"] is not None and cell["sin_theta"] <= SPIKED_SIN:
            return e
        if not spiked and cell["captured"] is not None and cell["captured"] >= target:
            return e
    return None


def _fmt_cell(cell: dict[str, Any] | None, metric: str) -> str:
    if cell is None:
        return "—"
    if cell[metric] is None:
        return cell["status"]
    text = f"{cell[metric]:.3f}"
    if cell["status"] != "ok":
        text += f" ({cell['status']} on a later seed)"
    return text


def dataset_table(summary: dict[tuple[str, str, float | None], dict[str, Any]], dataset: str,
                  labels: Sequence[str], epsilons: Sequence[float]) -> str:
    """One markdown table: a row per method, a column per epsilon, then eps90, time, memory, note."""
    spiked = dataset.startswith("spiked")
    metric = "sin_theta" if spiked else "captured"
    head = ["method", *(f"ε = {e:g}" for e in epsilons), f"ε at sin θ ≤ {SPIKED_SIN:g}" if spiked else "ε₉₀",
            "time (s)", "peak MiB", "note"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    errors: list[str] = []  # footnotes: a cell shows "error [i]"
    for label in labels:
        cells = [summary.get((dataset, label, e)) for e in epsilons]
        if all(c is None for c in cells):
            continue
        texts = []
        for e, c in zip(epsilons, cells, strict=True):
            text = _fmt_cell(c, metric)
            if text.startswith("error: "):
                errors.append(f"[{len(errors) + 1}] `{label}`, ε = {e:g}: {text[len('error: '):]}")
                text = f"error [{len(errors)}]"
            texts.append(text)
        e90 = eps90(summary, dataset, label, epsilons)
        secs = [c["seconds"] for c in cells if c is not None and c["seconds"] is not None]
        peaks = [c["peak_mib"] for c in cells if c is not None and c["peak_mib"] is not None]
        note = next((c["note"] for c in cells if c is not None and c["note"]), "")
        lines.append("| " + " | ".join([f"`{label}`", *texts,
                                        "not reached" if e90 is None else f"{e90:g}",
                                        f"{statistics.median(secs):.2g}" if secs else "—",
                                        f"{max(peaks):.0f}" if peaks else "—", note]) + " |")
    for ref in (RANDOM, EXACT):
        cell = summary.get((dataset, ref, None))
        if cell is not None:
            lines.append("| " + " | ".join([ref, *([_fmt_cell(cell, metric)] * len(epsilons)),
                                            "—", "—", "—", "reference"]) + " |")
    if errors:
        lines += ["", *(f"{e}  " for e in errors)]
    return "\n".join(lines)


def eps90_table(summary: dict[tuple[str, str, float | None], dict[str, Any]], datasets: Sequence[str],
                labels: Sequence[str], epsilons: Sequence[float]) -> str:
    """Methods x data sets: eps90 (the smallest epsilon reaching 90% of the top-k energy)."""
    lines = ["| method | " + " | ".join(datasets) + " |", "|---" * (len(datasets) + 1) + "|"]
    for label in labels:
        vals = []
        for ds in datasets:
            if not any((ds, label, e) in summary for e in epsilons):
                vals.append("—")
                continue
            e90 = eps90(summary, ds, label, epsilons)
            vals.append("not reached" if e90 is None else f"{e90:g}")
        lines.append(f"| `{label}` | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def plot_dataset(summary: dict[tuple[str, str, float | None], dict[str, Any]], dataset: str,
                 labels: Sequence[str], epsilons: Sequence[float], path: Path) -> Path:
    """Utility against epsilon (log x), one line per method, the random subspace dashed."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = "sin_theta" if dataset.startswith("spiked") else "captured"
    fig, ax = plt.subplots(figsize=(9.0, 5.2), layout="constrained")
    colors = [plt.get_cmap("tab20")(i / 20) for i in range(20)]
    for i, label in enumerate(labels):
        pts = [(e, c[metric]) for e in epsilons
               if (c := summary.get((dataset, label, e))) is not None and c[metric] is not None]
        if pts:
            ag = label == "analyze_gauss"
            ax.plot(*zip(*pts, strict=True), color="k" if ag else colors[i % 20], marker="osv^D<>p*h"[i % 10],
                    ms=4, lw=2.4 if ag else 1.2, label=label)
    ref = summary.get((dataset, RANDOM, None))
    if ref is not None and ref[metric] is not None:
        ax.axhline(ref[metric], color="0.5", ls="--", label=RANDOM)
    ax.set_xscale("log")
    ax.set_xticks(list(epsilons), [f"{e:g}" for e in epsilons])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("ε")
    ax.set_ylabel("sin θ to the population top eigenvector (lower is better)" if metric == "sin_theta"
                  else "captured energy of the top-k (higher is better)")
    ax.set_title(f"{dataset}: utility with default parameters")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report(records: Sequence[dict[str, Any]], header: str, out: Path, epsilons: Sequence[float]) -> str:
    """``OUT/report.md`` and the plots from the records: the markdown text."""
    summary = summarize(records)
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    labels = list(dict.fromkeys(r["method"] for r in records if r["method"] not in (RANDOM, EXACT)))
    lines = [header, "", "### ε₉₀: the smallest ε reaching 90% of the top-k energy", "",
             f"On the spiked sets: the smallest ε with mean sin θ ≤ {SPIKED_SIN:g} (90% of the top "
             "energy is reached there at sin θ ≈ 0.3). \"not reached\": not within the grid.", "",
             eps90_table(summary, datasets, labels, epsilons), ""]
    for ds in datasets:
        notes = {str(r["dataset_note"]) for r in records if r["dataset"] == ds and r.get("dataset_note")}
        kind = ("sin θ to the population top eigenvector (lower is better)" if ds.startswith("spiked")
                else "captured energy, k = 10 (higher is better)")
        lines += [f"### {ds}: {kind}" + (f" — {', '.join(sorted(notes))}" if notes else ""), "",
                  dataset_table(summary, ds, labels, epsilons), "",
                  f"![{ds}](utility_{_slug(ds)}.png)", ""]
        plot_dataset(summary, ds, labels, epsilons, out / f"utility_{_slug(ds)}.png")
    text = "\n".join(lines)
    (out / "report.md").write_text(text, encoding="utf-8")
    return text


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")


def header(args: argparse.Namespace, seconds: float | None) -> str:
    """What was run, when, on which commit and machine."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        commit, dirty = "?", ""
    rows = "all training rows" if args.max_rows is None else f"at most {args.max_rows:,} rows per real set"
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return "\n".join([
        f"## Utility with default parameters: snapshot {stamp}",
        "",
        f"Command: `{' '.join(['benchmarks/bench_utility.py', *sys.argv[1:]])}`; commit {commit}"
        f"{' with uncommitted changes' if dirty else ''}; {platform.platform()}, "
        f"{os.cpu_count()} CPUs (shared)"
        f"{'; tables rebuilt from results.jsonl' if seconds is None else f'; {seconds / 60:.1f} min'}.",
        f"Real sets: {rows}, unit rows, k = 10; spiked: d = 40, k = 1, n = "
        f"{', '.join(f'{n:.2g}' for n in args.spiked_ns)}; δ = {DELTA:g} (0 for pure-ε methods); "
        f"{args.seeds} seed(s); each fit killed after {args.max_seconds:g} s. Time: median seconds per fit; "
        "peak MiB: largest extra resident memory of a fit.",
    ])


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=[*REAL, "spiked"],
                   help="mnist a9a rt-iot2022 spiked (all n) or spiked-N")
    p.add_argument("--methods", nargs="+", default=None, help="registry names (and auto); default all")
    p.add_argument("--eps", type=float, nargs="+", default=None)
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS} rows, n = 2e4, 2 ε, 1 seed")
    p.add_argument("--max-rows", type=int, default=None, help="subsample real sets to this many rows")
    p.add_argument("--max-seconds", type=float, default=120.0, help="per fit; the cell is then marked")
    p.add_argument("--out", type=Path, default=ROOT / "reports" / "bench_utility")
    p.add_argument("--data", type=Path, default=Path(os.environ.get(
        "DPSPECTRAL_DATA", ROOT.parent / "shared" / "data")))
    p.add_argument("--report-only", action="store_true", help="rebuild the report from OUT/results.jsonl")
    p.add_argument("--append", action="store_true", help="add to OUT/results.jsonl; report on all of it")
    args = p.parse_args()
    args.eps = tuple(args.eps or (QUICK_EPSILONS if args.quick else EPSILONS))
    args.seeds = args.seeds or (1 if args.quick else 3)
    if args.quick and args.max_rows is None:
        args.max_rows = QUICK_ROWS
    args.spiked_ns = QUICK_SPIKED_NS if args.quick else SPIKED_NS
    return args


def main() -> None:
    args = _parse()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "results.jsonl"
    if args.report_only:
        saved = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        print(report(saved, header(args, None), args.out, args.eps))
        return
    specs = method_specs(args.methods)
    n_sets = sum(len(args.spiked_ns) if d == "spiked" else 1 for d in args.datasets)
    counter = [0, n_sets * len(specs) * len(args.eps)]
    t0 = time.perf_counter()
    records: list[dict[str, Any]] = []
    if args.append and path.is_file():
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    with path.open("a" if args.append else "w") as sink:
        for ds in load_datasets(args.datasets, args.data, max_rows=args.max_rows, spiked_ns=args.spiked_ns):
            got = run_dataset(ds, specs, args.eps, args.seeds, args.max_seconds, sink, counter)
            records += [{k: v for k, v in r.items() if k != "V"} for r in got]
    print(report(records, header(args, time.perf_counter() - t0), args.out, args.eps))


if __name__ == "__main__":
    main()

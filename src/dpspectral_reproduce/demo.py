"""The demo (``dpspectral demo``, ``make run``): private PCA on scikit-learn's digits.

What it does
------------
1. Loads ``sklearn.datasets.load_digits()`` (1797 images of 8 x 8 pixels with values 0..16, ten
   classes; bundled with scikit-learn, nothing is downloaded).
2. Preprocesses with public constants only: pixels are divided by 16 (the documented pixel range,
   not read from the data) so that rows lie in [0, 1]^64, then every row is clipped to the public
   bound ``row_norm`` (default 6.0, see :data:`DEFAULT_ROW_NORM`): ``x -> x * min(1, C / ||x||)``.
3. Splits the rows into a stratified, seeded train/test split.
4. For every certified central method of the registry (``dpspectral.methods(model="central",
   certified=True)``), with its default neighbouring relation and calibration, for every epsilon and
   repeat, fits :class:`dpspectral.DPPCA` (uncentred, as in the papers) on the training rows and
   measures

   * captured energy ``tr(V^T A V) / tr(V*^T A V*)`` of the training second-moment matrix
     ``A = X_train^T X_train`` (1 is optimal),
   * projection distance ``||V V^T - V* V*^T||_F`` to the exact top-k eigenvectors ``V*`` of ``A``
     (0 is optimal, ``sqrt(2 k)`` is orthogonal),
   * test accuracy of a logistic regression trained on the projected training rows
     (:func:`dpspectral.metrics.downstream_accuracy`),
   * wall time of ``DPPCA.fit``.

   A non-private reference (the exact eigenvectors ``V*``) gives the ceilings.
5. Writes ``runs.csv`` (every run), ``summary.csv`` (mean, sd per method and epsilon),
   ``config.json``, ``report.md`` and ``utility_vs_epsilon.png``.

Privacy
-------
Every fit is certified ``(epsilon, delta)``-DP for the training rows under the method's relation; the
statement of each is in the report. The *evaluation* metrics read the non-private training and test
data (the exact eigenvectors, the test labels): they measure utility and are not releases. Each run
is a separate release of the same training data, so the demo as a whole is an evaluation over many
releases, not one private analysis.
"""

from __future__ import annotations

import math
import platform
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpspectral._estimators import DPPCA
from dpspectral._linalg import top_k_eigh
from dpspectral._progress import progress
from dpspectral._registry import Method, get_method, methods
from dpspectral.metrics import captured_energy, downstream_accuracy, projection_distance
from dpspectral.privacy._budget import PrivacyBudget, UncertifiedPrivacyWarning
from dpspectral.privacy._clipping import check_row_norm, clip_rows

from . import report
from ._registry import DEFAULT_EPSILONS, DEFAULT_ROW_NORM

__all__ = [
    "DEFAULT_EPSILONS",
    "DEFAULT_ROW_NORM",
    "NON_PRIVATE",
    "DemoConfig",
    "DemoResult",
    "load_demo_data",
    "run_demo",
]

#: Number of grey levels of the digits pixels (values 0..16): the public scale factor.
PIXEL_MAX: float = 16.0

#: Name of the non-private reference rows.
NON_PRIVATE = "non-private"

_METRICS = ("captured_energy", "projection_distance", "accuracy", "fit_seconds")


@dataclass(frozen=True)
class DemoConfig:
    """The demo's grid and public parameters.

    Attributes
    ----------
    epsilons : tuple of float
        Privacy parameters, each in (0, inf).
    delta : float
        In (0, 1).
    k : int
        Number of components, in [1, 64].
    row_norm : float
        Public row-norm bound after scaling pixels to [0, 1].
    repeats : int
        Independent fits per (method, epsilon).
    methods : tuple of str
        Registry names (central model).
    test_size : float
        Share of the rows held out for the downstream accuracy, in (0, 1).
    seed : int
        Seeds the split and every fit.
    """

    epsilons: tuple[float, ...] = DEFAULT_EPSILONS
    delta: float = 1e-6
    k: int = 10
    row_norm: float = DEFAULT_ROW_NORM
    repeats: int = 5
    methods: tuple[str, ...] = ()
    test_size: float = 0.25
    seed: int = 0


@dataclass
class DemoResult:
    """What :func:`run_demo` measured and wrote.

    Attributes
    ----------
    config : DemoConfig
    runs : list of dict
        One row per fit (and one non-private reference row), as in ``runs.csv``.
    summary : list of dict
        Mean, sd and count of each metric per (method, epsilon), as in ``summary.csv``.
    privacy : list of dict
        The privacy statement of each (method, epsilon): relation, calibration, requested and
        certified epsilon, delta, certified, and the statement text.
    seconds : float
        Wall time of the whole demo.
    files : dict of str -> Path
        The files written (empty when no output folder was given).
    classifier_warnings : int
        Number of classifier fits that emitted a convergence warning.
    reference_eigenvalues : ndarray of shape (k,)
        Top-k eigenvalues of the non-private training second-moment matrix (evaluation only, not
        released; used to explain the results in the report).
    """

    config: DemoConfig
    runs: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    privacy: list[dict[str, Any]]
    seconds: float
    files: dict[str, Path] = field(default_factory=dict)
    classifier_warnings: int = 0
    reference_eigenvalues: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def table(self) -> str:
        """The summary as an aligned plain-text table (for terminals)."""
        return report.text_table(self.summary, _TABLE_COLUMNS, headers=_TABLE_HEADERS,
                                 formatters=_table_formatters(markdown=False))

    def markdown(self) -> str:
        """The summary as a Markdown table."""
        return report.markdown_table(self.summary, _TABLE_COLUMNS, headers=_TABLE_HEADERS,
                                     formatters=_table_formatters(markdown=True))


_TABLE_COLUMNS = ("method", "epsilon", "captured_energy", "projection_distance", "accuracy", "fit_ms")
_TABLE_HEADERS = ("method", "epsilon", "captured energy", "projection distance", "test accuracy",
                  "fit time (ms)")


def _table_formatters(markdown: bool) -> dict[str, Any]:
    def metric(name: str) -> Any:
        return lambda r: report.format_mean_sd(r.get(f"{name}_mean"), r.get(f"{name}_sd"))

    def eps(r: dict[str, Any]) -> str:
        e = r.get("epsilon")
        if e is None or not math.isfinite(float(e)):
            return "∞ (exact)"
        return f"{float(e):g}"

    return {
        "epsilon": eps,
        "captured_energy": metric("captured_energy"),
        "projection_distance": metric("projection_distance"),
        "accuracy": metric("accuracy"),
        "fit_ms": lambda r: f"{1000.0 * float(r['fit_seconds_mean']):.1f}",
    }


# ----------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------


def load_demo_data(
    *, row_norm: float = DEFAULT_ROW_NORM, test_size: float = 0.25, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits, scaled by the public constant 1/16, rows clipped to ``row_norm``, split stratified.

    Parameters
    ----------
    row_norm : float, default=DEFAULT_ROW_NORM
        Public bound on each row's Euclidean norm.
    test_size : float, default=0.25
        Share of held-out rows, in (0, 1).
    seed : int, default=0
        Seed of the split.

    Returns
    -------
    X_train : ndarray of shape (n_train, 64)
    X_test : ndarray of shape (n_test, 64)
    y_train : ndarray of shape (n_train,)
    y_test : ndarray of shape (n_test,)
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    C = check_row_norm(row_norm, "load_demo_data")
    if isinstance(test_size, bool) or not isinstance(test_size, float | int) or not 0 < test_size < 1:
        raise ValueError(
            f"The 'test_size' parameter of load_demo_data must be a float in (0, 1). Got {test_size!r}."
        )
    X, y = load_digits(return_X_y=True)
    X = np.asarray(X, dtype=np.float64) / PIXEL_MAX
    X, _ = clip_rows(X, C)  # per-row clipping with a public bound; the count is not used
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=float(test_size), stratify=y, random_state=seed
    )
    return X_train, X_test, y_train, y_test


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------


def _check_int(value: Any, name: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low or (
        high is not None and value > high
    ):
        upper = "inf" if high is None else str(high)
        raise ValueError(f"The '{name}' parameter of run_demo must be an int in [{low}, {upper}]. "
                         f"Got {value!r} instead.")
    return int(value)


def _demo_methods(names: Sequence[str] | None) -> list[Method]:
    if names is None:
        chosen = methods(model="central", certified=True, task="pca")
    else:
        if isinstance(names, str):
            names = [names]
        chosen = [get_method(n, owner="run_demo") for n in names]
        for m in chosen:
            if m.model != "central":
                raise ValueError(
                    f"The 'methods' parameter of run_demo must name central-model methods (DPPCA). "
                    f"Got {m.name!r} (model={m.model!r}) instead."
                )
    if not chosen:
        raise ValueError("The 'methods' parameter of run_demo must name at least one method.")
    return chosen


def _config(
    *, repeats: int, epsilons: Sequence[float], delta: float, k: int, row_norm: float,
    methods_: list[Method], test_size: float, seed: int,
) -> DemoConfig:
    eps = tuple(float(PrivacyBudget(e, delta).epsilon) for e in epsilons)  # validates each
    if not eps:
        raise ValueError("The 'epsilons' parameter of run_demo must hold at least one epsilon.")
    PrivacyBudget(eps[0], delta).require_delta("run_demo")
    return DemoConfig(
        epsilons=eps,
        delta=float(delta),
        k=_check_int(k, "k", 1, 64),
        row_norm=check_row_norm(row_norm, "run_demo"),
        repeats=_check_int(repeats, "repeats", 1),
        methods=tuple(m.name for m in methods_),
        test_size=float(test_size),
        seed=_check_int(seed, "seed", 0),
    )


# ----------------------------------------------------------------------------------------------
# the run
# ----------------------------------------------------------------------------------------------


def _accuracy(Z_train: np.ndarray, y_train: np.ndarray, Z_test: np.ndarray, y_test: np.ndarray,
              seed: int) -> tuple[float, bool]:
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        acc = downstream_accuracy(Z_train, y_train, Z_test, y_test, random_state=seed)
    return acc, any(issubclass(w.category, ConvergenceWarning) for w in caught)


def run_demo(
    out_dir: str | Path | None = None,
    *,
    repeats: int = 5,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    delta: float = 1e-6,
    k: int = 10,
    row_norm: float = DEFAULT_ROW_NORM,
    methods: Sequence[str] | None = None,
    test_size: float = 0.25,
    seed: int = 0,
    show_progress: bool | None = True,
) -> DemoResult:
    """Run the digits demo and (optionally) write its files.

    Parameters
    ----------
    out_dir : str or Path or None, default=None
        Folder for ``runs.csv``, ``summary.csv``, ``config.json``, ``report.md`` and
        ``utility_vs_epsilon.png`` (created if needed). None writes nothing.
    repeats : int, default=5
        Independent fits per (method, epsilon).
    epsilons : sequence of float, default=(0.1, 0.5, 1, 2)
    delta : float, default=1e-6
    k : int, default=10
        Number of principal components.
    row_norm : float, default=DEFAULT_ROW_NORM
        Public row-norm bound (rows are in [0, 1]^64 after the public scaling).
    methods : sequence of str or None, default=None
        Registry names; None takes every certified central method. Each runs with its default
        relation and calibration.
    test_size : float, default=0.25
        Held-out share for the downstream accuracy.
    seed : int, default=0
        Seeds the split and, through ``SeedSequence([seed, method, epsilon, repeat])``, every fit
        (the integer seed of each fit is in ``runs.csv`` as ``run_seed``).
    show_progress : bool or None, default=True
        tqdm progress bar over the fits on stderr (None: only on a terminal).

    Returns
    -------
    DemoResult
    """
    from threadpoolctl import threadpool_limits

    # The matrices are tiny (64 x 64, 1347 x 10): multi-threaded BLAS only adds overhead here
    # (several times slower on a busy 2-core machine), so the demo runs single-threaded.
    with threadpool_limits(limits=1):
        return _run_demo(out_dir, repeats=repeats, epsilons=epsilons, delta=delta, k=k,
                         row_norm=row_norm, methods=methods, test_size=test_size, seed=seed,
                         show_progress=show_progress)


def _fit_one(method: Method, index: tuple[int, int, int], eps: float, cfg: DemoConfig,
             split: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], V_star: np.ndarray
             ) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """One private fit: (its run row, its privacy statement, whether the classifier warned).

    ``index`` = (method, epsilon, repeat) positions, which seed the fit.
    """
    X_train, X_test, y_train, y_test = split
    mi, ei, r = index
    run_seed = int(np.random.SeedSequence([cfg.seed, mi, ei, r]).generate_state(1)[0])
    est = DPPCA(
        cfg.k, epsilon=eps, delta=cfg.delta, row_norm=cfg.row_norm, method=method.name,
        relation=method.relations[0].value, calibration=method.default_calibration,
        centering=None, random_state=run_seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedPrivacyWarning)  # recorded in the report
        t0 = time.perf_counter()
        est.fit(X_train)
        fit_seconds = time.perf_counter() - t0
    V = est.components_.T
    acc, warned = _accuracy(est.transform(X_train), y_train, est.transform(X_test), y_test, cfg.seed)
    rep = est.privacy_
    row = {
        "method": method.name,
        "family": method.family,
        "relation": rep.relation.value,
        "calibration": rep.calibration,
        "epsilon": eps,
        "delta": cfg.delta,
        "certified_epsilon": rep.epsilon,
        "certified": rep.certified,
        "repeat": r,
        "run_seed": run_seed,
        "k": cfg.k,
        "row_norm": cfg.row_norm,
        "n_train": X_train.shape[0],
        "captured_energy": captured_energy(V, X=X_train),
        "projection_distance": projection_distance(V, V_star),
        "accuracy": acc,
        "fit_seconds": fit_seconds,
    }
    statement = {
        "method": method.name,
        "paper": method.paper,
        "relation": rep.relation.value,
        "calibration": rep.calibration,
        "requested_epsilon": rep.requested_epsilon,
        "epsilon": rep.epsilon,
        "delta": rep.delta,
        "certified": rep.certified,
        "noise_std": est.result_.diagnostics.get("noise_std"),
        "statement": str(rep),
    }
    return row, statement, warned


def _run_demo(
    out_dir: str | Path | None,
    *,
    repeats: int,
    epsilons: Sequence[float],
    delta: float,
    k: int,
    row_norm: float,
    methods: Sequence[str] | None,
    test_size: float,
    seed: int,
    show_progress: bool | None,
) -> DemoResult:
    t_start = time.perf_counter()
    chosen = _demo_methods(methods)
    cfg = _config(repeats=repeats, epsilons=epsilons, delta=delta, k=k, row_norm=row_norm,
                  methods_=chosen, test_size=test_size, seed=seed)
    X_train, X_test, y_train, y_test = load_demo_data(row_norm=cfg.row_norm, test_size=cfg.test_size,
                                                      seed=cfg.seed)
    n_train, d = X_train.shape

    # Non-private reference: exact top-k eigenvectors of the training second-moment matrix.
    t0 = time.perf_counter()
    top_values, V_star = top_k_eigh(X_train.T @ X_train, cfg.k)
    ref_seconds = time.perf_counter() - t0
    ref_acc, ref_warn = _accuracy(X_train @ V_star, y_train, X_test @ V_star, y_test, cfg.seed)
    n_warn = int(ref_warn)
    split = (X_train, X_test, y_train, y_test)

    tasks = [
        (mi, m, ei, eps, r)
        for mi, m in enumerate(chosen)
        for ei, eps in enumerate(cfg.epsilons)
        for r in range(cfg.repeats)
    ]
    runs: list[dict[str, Any]] = []
    privacy: dict[tuple[str, float], dict[str, Any]] = {}
    for mi, method, ei, eps, r in progress(tasks, total=len(tasks), desc="dpspectral demo",
                                           enabled=show_progress):
        row, statement, warned = _fit_one(method, (mi, ei, r), eps, cfg, split, V_star)
        n_warn += int(warned)
        runs.append(row)
        privacy.setdefault((method.name, eps), statement)
    runs.append({
        "method": NON_PRIVATE,
        "family": "exact",
        "relation": None,
        "calibration": None,
        "epsilon": math.inf,
        "delta": 0.0,
        "certified_epsilon": math.inf,
        "certified": None,
        "repeat": 0,
        "run_seed": None,
        "k": cfg.k,
        "row_norm": cfg.row_norm,
        "n_train": n_train,
        "captured_energy": captured_energy(V_star, X=X_train),
        "projection_distance": projection_distance(V_star, V_star),
        "accuracy": ref_acc,
        "fit_seconds": ref_seconds,
    })
    summary = report.summarize(runs, ("method", "epsilon"), _METRICS,
                               keep=("relation", "calibration", "certified"))
    result = DemoResult(config=cfg, runs=runs, summary=summary, privacy=list(privacy.values()),
                        seconds=0.0, classifier_warnings=n_warn,
                        reference_eigenvalues=np.asarray(top_values, dtype=float))
    if out_dir is not None:
        result.files = _write_outputs(result, Path(out_dir), n_train=n_train, n_test=X_test.shape[0], d=d)
    result.seconds = time.perf_counter() - t_start
    return result


# ----------------------------------------------------------------------------------------------
# outputs
# ----------------------------------------------------------------------------------------------


def _versions() -> dict[str, str]:
    import matplotlib
    import sklearn

    from dpspectral import __version__

    return {"dpspectral": __version__, "numpy": np.__version__, "scikit-learn": sklearn.__version__,
            "matplotlib": matplotlib.__version__, "python": platform.python_version()}


def _reference(result: DemoResult, metric: str) -> float:
    for row in result.runs:
        if row["method"] == NON_PRIVATE:
            return float(row[metric])
    return math.nan


def _write_outputs(result: DemoResult, out: Path, *, n_train: int, n_test: int, d: int) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "runs": report.write_runs(result.runs, out / "runs.csv"),
        "summary": report.write_runs(result.summary, out / "summary.csv"),
        "config": report.write_json({"config": asdict(result.config), "privacy": result.privacy,
                                     "versions": _versions()}, out / "config.json"),
    }
    private_runs = [r for r in result.runs if r["method"] != NON_PRIVATE]
    files["plot"] = report.plot_metrics_vs_epsilon(
        private_runs,
        ("captured_energy", "accuracy"),
        out / "utility_vs_epsilon.png",
        references={
            metric: {"non-private (exact top-k eigenvectors)": _reference(result, metric)}
            for metric in ("captured_energy", "accuracy")
        },
        ylabels={"captured_energy": "captured energy  tr(VᵀAV) / tr(V*ᵀAV*)",
                 "accuracy": "test accuracy (logistic regression)"},
        titles={"captured_energy": "Captured energy (train second moment)",
                "accuracy": "Downstream accuracy on projected data"},
        suptitle=(f"DP PCA on digits (k = {result.config.k}, δ = {result.config.delta:g}, "
                  f"row norm {result.config.row_norm:g}); mean ± 1 sd over {result.config.repeats} "
                  f"repeat{'s' if result.config.repeats > 1 else ''}"),
    )
    files["report"] = out / "report.md"
    files["report"].write_text(_report_markdown(result, n_train=n_train, n_test=n_test, d=d),
                               encoding="utf-8")
    return files


def _notes_markdown(result: DemoResult) -> str:
    """The report's notes (MOD-SULQ vs Analyze Gauss, classifier warnings, uncertified runs)."""
    cfg = result.config
    notes = []
    if "mod_sulq" in cfg.methods and "analyze_gauss" in cfg.methods:
        notes.append(
            "With `calibration='tight'`, MOD-SULQ releases the same matrix with the same noise scale "
            "as replace-one Analyze Gauss (the two papers differ only in their noise formula), so "
            "their rows differ only through independent noise draws."
        )
    if result.classifier_warnings:
        notes.append(
            f"{result.classifier_warnings} logistic-regression fit(s) stopped at max_iter=1000 "
            "without meeting the convergence tolerance (their accuracy is still reported)."
        )
    uncertified = [p for p in result.privacy if not p["certified"]]
    if uncertified:
        notes.append(
            "**Uncertified runs:** " + ", ".join(f"{p['method']} at ε={p['requested_epsilon']:g}"
                                                 for p in uncertified)
            + " — the accountant does not certify the requested budget (see the table above)."
        )
    return "".join(f"- {n}\n" for n in notes) or "- None.\n"


def _what_was_run(result: DemoResult, *, n_train: int, n_test: int, d: int) -> str:
    """The report's title and its "What was run" section (data, preprocessing, fits, reference)."""
    cfg = result.config
    eps_list = ", ".join(f"{e:g}" for e in cfg.epsilons)
    papers = "\n".join(
        f"- `{name}` — {get_method(name).paper}: {get_method(name).summary}." for name in cfg.methods
    )
    default_methods = tuple(m.name for m in methods(model="central", certified=True, task="pca"))
    method_source = (
        " (every certified central method of the registry)" if cfg.methods == default_methods else ""
    )
    return f"""# dpspectral demo: differentially private PCA on digits

Generated by `dpspectral demo` (dpspectral {_versions()['dpspectral']}).

## What was run

- **Data:** scikit-learn's bundled `load_digits()` — {n_train + n_test} images of 8 × 8 pixels
  (d = {d}), ten classes. Stratified train/test split ({n_train} / {n_test} rows, test share
  {cfg.test_size:g}, seed {cfg.seed}).
- **Preprocessing (public constants only):** pixels divided by 16 (the documented grey-level range,
  not read from the data), so each row lies in [0, 1]^{d}; then every row is clipped to the
  Euclidean norm **row_norm = {cfg.row_norm:g}**, `x ↦ x · min(1, C / ‖x‖)`. The bound is a
  **public choice made without looking at the data** (an 8 × 8 handwritten digit is assumed to
  light up at most about 36 cells at full intensity, √36 = 6; the largest possible norm of a
  [0, 1]^{d} vector, 8, would only add noise). Clipping acts on one row at a time, so it is
  DP-safe; how many rows it changed is data-dependent and is not reported.
- **Private fits:** `DPPCA(n_components={cfg.k}, epsilon=ε, delta={cfg.delta:g},
  row_norm={cfg.row_norm:g}, method=M, centering=None)` on the training rows, uncentred (the
  second-moment matrix `A = XᵀX`, as in the papers), each method with its default neighbouring
  relation and calibration, for ε ∈ {{{eps_list}}} and {cfg.repeats} independent repeat(s) each
  (seeds in `runs.csv`).
  Methods{method_source}:
{_indent(papers, 2)}
- **Non-private reference:** the exact top-{cfg.k} eigenvectors `V*` of the same matrix
  `A = X_trainᵀ X_train` (the utility ceiling).

"""


def _report_markdown(result: DemoResult, *, n_train: int, n_test: int, d: int) -> str:
    """``report.md`` of the demo: what was run, privacy, metrics, results, notes."""
    cfg = result.config
    privacy_table = report.markdown_table(
        result.privacy,
        ("method", "relation", "calibration", "requested_epsilon", "epsilon", "delta", "certified",
         "statement"),
        headers=("method", "neighbouring relation", "calibration", "requested ε", "certified ε", "δ",
                 "certified", "privacy statement"),
        formatters={"statement": lambda r: f"`{r['statement']}`"},
    )
    notes_md = _notes_markdown(result)
    return _what_was_run(result, n_train=n_train, n_test=n_test, d=d) + f"""## Privacy

Each private fit below is an (ε, δ)-DP release of the training rows under the stated neighbouring
relation, certified by the library's accountant (`certified` = the accountant confirms the
requested ε at the requested δ).

{privacy_table}
Every run is a separate release of the same training rows: the demo evaluates utility at each ε,
it is not one private analysis (a deployment would make one release).

**The evaluation metrics are not private.** Captured energy and projection distance compare the
released subspace with the exact eigenvectors of the non-private training matrix, and the accuracy
uses the held-out rows and their labels. They measure utility; they are not releases.

## Metrics

- **captured energy** `tr(Vᵀ A V) / tr(V*ᵀ A V*)` with `A = X_trainᵀ X_train`: 1 is optimal.
- **projection distance** `‖V Vᵀ − V* V*ᵀ‖_F`: 0 is optimal, √(2k) = {math.sqrt(2 * cfg.k):.3g} for
  orthogonal subspaces.
- **test accuracy**: `LogisticRegression(max_iter=1000)` trained on the projected training rows
  `X_train V`, scored on the projected test rows `X_test V`.
- **fit time**: wall time of `DPPCA.fit` (clipping, second-moment matrix, noise, eigensolver).

## Results

Mean ± sample standard deviation over {cfg.repeats} repeat(s) (a single repeat shows the mean only).

{result.markdown()}
![Captured energy and accuracy against epsilon](utility_vs_epsilon.png)

{_reading(result)}

Files: `runs.csv` (every run), `summary.csv` (this table with counts), `config.json` (grid, privacy
statements, software versions), `utility_vs_epsilon.png`.

## Notes

{notes_md}
Software: {", ".join(f"{k} {v}" for k, v in _versions().items())}.
"""


def _reading(result: DemoResult) -> str:
    """A short interpretation: public noise scales against the (non-private) reference spectrum."""
    cfg = result.config
    lam = result.reference_eigenvalues
    d = 64
    lines = ["### Reading the results", ""]
    noise = [p for p in result.privacy if p.get("noise_std") is not None]
    if noise:
        by_eps: dict[float, float] = {}
        for p in noise:
            by_eps.setdefault(float(p["requested_epsilon"]), float(p["noise_std"]))
        scales = ", ".join(
            f"ε = {e:g}: σ = {sd:.3g} (‖E‖₂ ≈ {2 * sd * math.sqrt(d):.3g})"
            for e, sd in sorted(by_eps.items())
        )
        lines.append(
            "Noise is added to the 64 × 64 matrix `A` with per-entry standard deviation σ (a public "
            "quantity: it depends only on ε, δ, the relation and row_norm); the spectral norm of the "
            f"symmetric noise is about 2σ√d. {scales}."
        )
    if lam.size >= 2 and lam.sum() > 0:
        lines.append("")
        lines.append(
            f"Evaluation-only facts about the non-private matrix (not released): its top eigenvalue is "
            f"{lam[0]:.4g} and carries {lam[0] / lam.sum():.0%} of the top-{cfg.k} energy (uncentred "
            "digits: its eigenvector is close to the direction of the mean image); eigenvalues 2 to "
            f"{cfg.k} range from {lam[1]:.4g} down to {lam[-1]:.4g}. Where the noise norm is above "
            "these but well below the top eigenvalue, the first direction is still recovered (hence a "
            "captured energy at or somewhat above that share) while the other directions are largely "
            "noise, which is why the projection distance stays close to "
            f"√(2k) = {math.sqrt(2 * cfg.k):.3g} and the accuracy is below the non-private ceiling. "
            "More rows, a tighter public row_norm, a larger ε or fewer components all narrow the gap."
        )
    return "\n".join(lines)


def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line for line in text.splitlines())

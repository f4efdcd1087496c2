"""The ``dpspectral`` command.

Subcommands
-----------
``methods``    list the registered algorithms (name, family, model, relations, certified, paper).
``fit``        fit differentially private PCA on a data file and save the released model.
``transform``  project a data file with a model saved by ``fit``.
``demo``       the main job: private PCA on scikit-learn's digits over a grid of epsilons, with a
               report, tables and a plot.
``reproduce``  re-run a paper's experiments (``shang2021``: Shang et al. 2021, Figure 1 and Table 3;
               ``liu2022``: Liu et al. 2022, DP-PCA: error rates, Example 4.1, Figure 1, real data;
               ``upadhyay2018``: Upadhyay 2018, low-rank factorization, Appendix J Tables 3-11;
               ``imtiaz2018``: Imtiaz and Sarwate 2018, distributed PCA; ``chen2025``: Chen et al. 2025,
               private generalized eigenproblems, FDA + classifiers, Tables 2-3; ``all``: every one of
               them and one HTML index).
``audit``      privacy audit of registry methods: a lower confidence bound on epsilon next to the claim.

Every subcommand is one :class:`Command` in :data:`COMMANDS`; a new subcommand is added by writing its
``configure`` / ``run`` pair and listing it there -- the parser, the help and the error handling pick
it up.

Layers: ``demo`` and ``reproduce`` live in the separate package :mod:`dpspectral_reproduce` (the
``reproduce`` extra: matplotlib, markdown-it-py), imported here only inside the functions that build and
run those two subcommands; ``import dpspectral`` (or ``dpspectral.cli``) loads none of it, and
:mod:`dpspectral_reproduce` never imports this module. The peer benchmark is the script
``benchmarks/bench_peers.py`` of the source checkout, not a subcommand.

Errors made by the user (a missing file, a bad epsilon, an unknown method, a budget that would be
exceeded) end the command with exit status 2 and a one-line message on stderr, never a traceback;
``dpspectral --debug ...`` re-raises them for developers. :func:`main` takes the argument list and
returns the exit status, so it can be called from Python and tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import scipy.sparse as sp

__all__ = ["COMMANDS", "REPRODUCE_PAPERS", "CLIError", "Command", "build_parser", "main"]

PROG = "dpspectral"
EXIT_USAGE = 2
_DATA_FORMATS = ("libsvm", "idx", "csv", "npy", "parquet")


class CLIError(ValueError):
    """A user error detected by the command line itself (reported in one line, exit status 2)."""


@dataclass(frozen=True)
class Command:
    """One subcommand.

    Attributes
    ----------
    name : str
        What the user types after ``dpspectral``.
    help : str
        One line for ``dpspectral --help``.
    description : str
        The paragraph at the top of ``dpspectral NAME --help``.
    configure : callable(argparse.ArgumentParser) -> None
        Adds the subcommand's arguments.
    run : callable(argparse.Namespace) -> int
        Does the work and returns the exit status. User errors are raised as ValueError, TypeError,
        OSError or ImportError; :func:`main` turns them into one-line messages.
    epilog : str
        Text after the options (examples).
    """

    name: str
    help: str
    description: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    epilog: str = ""


# ----------------------------------------------------------------------------------------------
# shared helpers
# ----------------------------------------------------------------------------------------------


def _out(text: str = "", stream: TextIO | None = None) -> None:
    print(text, file=stream or sys.stdout)


@contextlib.contextmanager
def _private_warnings(debug: bool) -> Iterator[None]:
    """Around code that reads private data: pass on only dpspectral's own warnings.

    Whether NumPy warns (an overflow, an invalid value) or a third-party library does depends on the
    private values, so such warnings are dropped: their occurrence alone would say something about
    the rows. dpspectral's own warnings (e.g. ``UncertifiedPrivacyWarning``) depend on public
    parameters only and are shown. ``--debug`` shows everything (not private).
    """
    if debug:
        yield
        return
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        yield
    for w in caught:
        if w.category.__module__.split(".")[0] == "dpspectral":
            warnings.warn(w.message, stacklevel=1)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return value


def _add_data_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data loading")
    g.add_argument("--format", choices=_DATA_FORMATS, default=None,
                   help="file format (default: from the name: .csv, .npy/.npz, .parquet/.pq, "
                        "*idx3-ubyte*, anything else LIBSVM; a trailing .gz is decompressed)")
    g.add_argument("--label-column", metavar="COL", default=None,
                   help="column holding labels, dropped from the features: a header name or a "
                        "position (negative counts from the end, e.g. -1) for CSV/Parquet, a "
                        "position for .npy arrays")
    g.add_argument("--n-features", metavar="N", type=_positive_int, default=None,
                   help="LIBSVM only: the public number of feature columns; required by fit (the largest "
                        "index in the file is private data); transform defaults to the model's width")
    g.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                   help="CSV only: whether the first record is a header of column names, which are "
                        "public and saved in model.json (default: a header is expected, and refused if a "
                        "field of it is a number or a declared category; --header accepts it anyway, "
                        "--no-header reads a file without one, whose columns are named by position)")
    g.add_argument("--categories", metavar="COL=A,B,...", action="append", default=None,
                   help="CSV/Parquet: declare a categorical column (header name or position) and its "
                        "public categories, chosen without looking at the data; repeat for each such "
                        "column. It becomes one 0/1 column per category (named COL=A, ...); a value "
                        "outside them gives an all-zero row. Any other non-numeric cell is an error "
                        "that names the column (never the value)")
    g.add_argument("--drop-column", metavar="COL", action="append", default=None,
                   help="CSV only: a column that is neither a feature nor the label (header name or "
                        "position, e.g. an index column); repeat for several")
    g.add_argument("--schema", metavar="FILE", default=None,
                   help='JSON file of public declarations: {"header": true|false, "categories": '
                        '{"COL": ["A", "B"]}} (for categories with commas; --header/--no-header and '
                        "--categories may add to it but not contradict it)")


_SCHEMA_KEYS = ("header", "categories")


def _parse_categories(items: Sequence[str] | None) -> dict[int | str, list[str]]:
    """``--categories COL=A,B,C`` (repeatable) as ``{column spec: [categories]}``."""
    out: dict[int | str, list[str]] = {}
    for item in items or ():
        col, sep, values = item.partition("=")
        if not sep or not col.strip() or not values.strip():
            raise CLIError(f"--categories takes COL=A,B,C (a column and its public categories). "
                           f"Got {item!r}.")
        spec = _column_spec(col.strip())
        if spec in out:
            raise CLIError(f"--categories declares the column {col.strip()!r} twice.")
        out[spec] = [v.strip() for v in values.split(",")]
    return out


def _read_schema(path: str | None) -> dict[str, Any]:
    """The public declarations of ``--schema FILE`` (checked; values are the user's, so quotable)."""
    if path is None:
        return {}
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--schema {path!r} is not a file.")
    try:
        schema = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise CLIError(f"--schema {path!r} is not valid JSON ({err.msg}, line {err.lineno}).") from None
    if not isinstance(schema, dict) or set(schema) - set(_SCHEMA_KEYS):
        raise CLIError(f"--schema {path!r} must be a JSON object with the keys {', '.join(_SCHEMA_KEYS)} "
                       "(each optional).")
    if schema.get("header") not in (None, True, False):
        raise CLIError(f"--schema {path!r}: \"header\" must be true or false.")
    cats = schema.get("categories") or {}
    if not isinstance(cats, dict) or not all(isinstance(v, list) for v in cats.values()):
        raise CLIError(f"--schema {path!r}: \"categories\" must map column names or positions to lists "
                       "of strings.")
    return {"header": schema.get("header"), "categories": {_column_spec(k): v for k, v in cats.items()}}


def _declarations(args: argparse.Namespace, model_data: dict[str, Any] | None = None
                  ) -> tuple[bool | None, dict[int | str, list[str]] | None]:
    """The public declarations (header, categories) from --schema, --header and --categories.

    ``transform`` passes the ``data`` section of the model: its categories are used when the command
    line declares none (the projection needs the fitted encoding).
    """
    schema = _read_schema(getattr(args, "schema", None))
    header = schema.get("header")
    if args.header is not None:
        if header is not None and header != args.header:
            raise CLIError("--header/--no-header contradicts the \"header\" of --schema.")
        header = args.header
    categories: dict[int | str, list[str]] = dict(schema.get("categories") or {})
    for spec, cats in _parse_categories(args.categories).items():
        if spec in categories and categories[spec] != cats:
            raise CLIError(f"--categories {spec}=... contradicts the categories of --schema for that column.")
        categories[spec] = cats
    if not categories and model_data and model_data.get("categories"):
        categories = {_column_spec(k): list(v) for k, v in model_data["categories"].items()}
    return header, (categories or None)


def _column_spec(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def _load_features(path: str, *, fmt: str | None, label_column: str | None,
                   n_features: int | None, header: bool | None = None,
                   categories: dict[int | str, list[str]] | None = None,
                   drop_columns: Sequence[str] | None = None) -> tuple[Any, Any, str]:
    """Load DATA with ``dpspectral.datasets.load``; returns (X, feature_names, format).

    CSV and Parquet are parsed strictly: text columns need declared public ``categories`` and a
    stray non-numeric cell is an error naming the column (never the value or the row).
    """
    from . import datasets

    resolved = datasets.resolve_path(path, name="DATA")
    fmt = fmt or datasets.guess_format(resolved)
    kwargs: dict[str, Any] = {}
    if header is not None:
        if fmt != "csv":
            raise CLIError(f"--header/--no-header applies to CSV data only. Got format {fmt!r}.")
        kwargs["header"] = header
    if categories:
        if fmt not in ("csv", "parquet"):
            raise CLIError(f"--categories applies to CSV and Parquet data only. Got format {fmt!r}.")
        kwargs["categories"] = categories
    if drop_columns:
        if fmt != "csv":
            raise CLIError(f"--drop-column applies to CSV data only. Got format {fmt!r}.")
        kwargs["drop_columns"] = [_column_spec(c) for c in drop_columns]
    drop: int | None = None
    if label_column is not None:
        spec = _column_spec(label_column)
        if fmt in ("csv", "parquet"):
            kwargs["label_column"] = spec
        elif fmt == "npy":
            if not isinstance(spec, int):
                raise CLIError(
                    f"--label-column must be a column position for .npy data. Got {label_column!r}."
                )
            drop = spec
        else:
            raise CLIError(f"--label-column applies to CSV, Parquet and .npy data; {fmt} files keep their "
                           "labels apart from the features already.")
    if n_features is not None:
        if fmt != "libsvm":
            raise CLIError(f"--n-features applies to LIBSVM data only. Got format {fmt!r}.")
        kwargs["n_features"] = n_features
    if fmt == "libsvm":
        if n_features is None:
            raise CLIError("LIBSVM data need --n-features N: the number of feature columns is a public "
                           "input (the largest index in the file is private data, and would decide the "
                           "model's width).")
        kwargs["dense"] = False  # keep sparse data sparse; the mechanisms only need products
    ds = datasets.load(resolved, format=fmt, **kwargs)  # type: ignore[arg-type]
    X = ds.X
    if drop is not None:
        d = X.shape[1]
        if not -d <= drop < d:
            raise CLIError(f"--label-column {drop} is out of range for data with {d} columns.")
        X = np.delete(np.asarray(X), drop % d, axis=1)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise CLIError(f"DATA {path!r} holds no data rows or no feature columns.")
    return X, ds.feature_names, fmt


# ----------------------------------------------------------------------------------------------
# methods
# ----------------------------------------------------------------------------------------------


def _privacy_label(private: bool, certified: bool) -> str:
    """The same words as the README's table (:func:`dpspectral.registry.methods_markdown`)."""
    if not private:
        return "non-private reference"
    return "certified" if certified else "UNCERTIFIED (not DP)"


def _method_rows() -> list[dict[str, Any]]:
    from .registry import methods

    return [
        {
            "name": m.name,
            "family": m.family,
            "model": m.model,
            "relations": [r.value for r in m.relations],
            "default_relation": m.relations[0].value if m.relations else None,
            "private": m.private,
            "privacy": _privacy_label(m.private, m.certified),
            "certified": m.certified,
            "calibrations": list(m.calibrations),
            "default_calibration": m.default_calibration,
            "needs_delta": m.needs_delta,
            "paper": m.paper,
            "summary": m.summary,
        }
        for m in methods()
    ]


def _configure_methods(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the table as JSON (one object per method)")


def _run_methods(args: argparse.Namespace) -> int:
    from dpspectral_reproduce.report import text_table  # stdlib + NumPy only

    rows = _method_rows()
    if args.json:
        _out(json.dumps(rows, indent=2))
        return 0
    _out(text_table(
        rows,
        ("name", "family", "model", "relations", "certified", "calibrations", "paper"),
        headers=("name", "family", "model", "relations (default first)", "privacy", "calibrations",
                 "paper"),
        formatters={
            "relations": lambda r: ", ".join(r["relations"]) or "—",
            "certified": lambda r: r["privacy"],
            "calibrations": lambda r: ", ".join(r["calibrations"]),
        },
    ).rstrip())
    if any(r["private"] and not r["certified"] for r in rows):
        _out("\nUNCERTIFIED (not DP): the paper claims privacy, but the method is known not to be "
             "differentially private; kept only as a labelled baseline for reproducing papers.")
    if any(not r["private"] for r in rows):
        _out("non-private reference: makes no privacy claim and takes no privacy parameters; the "
             "noiseless algorithm that the private methods are compared with.")
    return 0


# ----------------------------------------------------------------------------------------------
# fit
# ----------------------------------------------------------------------------------------------


def _configure_fit(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", metavar="DATA", help="the private data file (rows are records)")
    req = p.add_argument_group("privacy and model (required)")
    req.add_argument("--k", "--n-components", dest="k", type=_positive_int, required=True,
                     help="number of principal components")
    req.add_argument("--epsilon", type=float, required=True, help="privacy parameter epsilon > 0")
    req.add_argument("--delta", type=float, required=True,
                     help="privacy parameter delta in [0, 1) (> 0 for the Gaussian mechanisms; ignored, "
                          "and 0 reported, for the pure-epsilon methods ppca and exponential), e.g. 1e-6")
    req.add_argument("--row-norm", type=float, required=True,
                     help="public bound C on each row's Euclidean norm, chosen without looking at the data "
                          "(there is no data-derived default); rows above it are clipped to it")
    req.add_argument("--out", metavar="DIR", required=True,
                     help="folder for components.npy, model.json and privacy.json (created if needed)")
    opt = p.add_argument_group("algorithm")
    opt.add_argument("--method", default="auto",
                     help="central-model method from `dpspectral methods`, or auto: chosen from the "
                          "relation and delta (analyze_gauss, or ppca when --delta 0; docs/choosing-a-"
                          "method.md) (default: auto)")
    opt.add_argument("--relation", default=None,
                     help="neighbouring relation: replace_one or add_remove (default: the method's first)")
    opt.add_argument("--calibration", choices=("tight", "paper"), default=None,
                     help="tight: accountant-calibrated noise; paper: the paper's formula, flagged when "
                          "uncertified (default: the method's first)")
    opt.add_argument("--centering", choices=("none", "private"), default="none",
                     help="none: PCA of the second-moment matrix (as the papers do); private: subtract a "
                          "DP mean that spends --mean-share of the budget (default: none)")
    opt.add_argument("--mean-share", type=float, default=0.1,
                     help="share of the budget spent on the private mean (default: 0.1)")
    opt.add_argument("--on-norm-violation", choices=("clip", "raise"), default="clip",
                     help="rows above --row-norm: clip them per row (DP-safe) or refuse the data "
                          "(default: clip)")
    opt.add_argument("--seed", type=_nonneg_int, default=None,
                     help="seed of the noise, for reproducible research runs (default: fresh operating-"
                          "system entropy). It is a secret: whoever knows it can remove the noise; it is "
                          "not saved in model.json")
    _add_data_options(p)


def _check_fit_args(args: argparse.Namespace) -> tuple[Any, str, str]:
    """Validate the public parameters before any data are read; returns (method, relation, calibration)."""
    from .privacy.budget import PrivacyBudget, as_relation
    from .privacy.clipping import check_row_norm
    from .registry import choose_method, get_method, methods

    budget = PrivacyBudget(args.epsilon, args.delta)
    check_row_norm(args.row_norm, "dpspectral fit")
    if args.method == "auto":  # from public facts only: the relation and delta (the data are a file)
        choice = choose_method(relation=args.relation, delta=args.delta)
        args.method, args.auto_reason = choice.method, choice.reason
    method = get_method(args.method, owner="dpspectral fit")
    if method.model != "central" or method.task != "pca":
        names = ", ".join(m.name for m in methods(model="central", task="pca"))
        raise CLIError(f"--method {method.name!r} is a {method.model}-model algorithm; `dpspectral fit` runs "
                       f"the central-model PCA methods: {names}.")
    if method.needs_delta:
        budget.require_delta("dpspectral fit")
    relation = method.relations[0] if args.relation is None else as_relation(args.relation,
                                                                              owner="dpspectral fit")
    if relation not in method.relations:
        allowed = ", ".join(r.value for r in method.relations)
        raise CLIError(
            f"--relation {relation.value!r} is not supported by {method.name} (supported: {allowed})."
        )
    calibration = args.calibration or method.default_calibration
    if calibration not in method.calibrations:
        raise CLIError(f"--calibration {calibration!r} is not available for {method.name} "
                       f"(available: {', '.join(method.calibrations)}).")
    return method, relation.value, calibration


def _run_fit(args: argparse.Namespace) -> int:
    from dpspectral_reproduce.report import write_json  # stdlib + NumPy only

    from . import __version__
    from .estimators import DPPCA

    method, relation, calibration = _check_fit_args(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {str(out)!r} exists and is not a folder.")
    header, categories = _declarations(args)
    centering = None if args.centering == "none" else "private"
    est = DPPCA(
        args.k, epsilon=args.epsilon, delta=args.delta, row_norm=args.row_norm, method=method.name,
        relation=relation, calibration=calibration, centering=centering, mean_share=args.mean_share,
        random_state=args.seed, on_norm_violation=args.on_norm_violation,
        # No progress bar: its count of blocks follows n and its rate is a timing.
        method_params={"show_progress": False} if "show_progress" in method.options else None,
    )
    with _private_warnings(args.debug):
        X, feature_names, fmt = _load_features(args.data, fmt=args.format, label_column=args.label_column,
                                               n_features=args.n_features, header=header,
                                               categories=categories, drop_columns=args.drop_column)
        est.fit(X)
    privacy = est.privacy_

    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "components.npy", est.components_)
    model = {
        "format": "dpspectral-pca-model",
        "format_version": 1,
        "dpspectral_version": __version__,
        "method": method.name,
        "params": {
            # a pure-epsilon method ignores --delta: the delta saved is the one its report certifies
            "n_components": args.k, "epsilon": args.epsilon,
            "delta": args.delta if method.needs_delta else est.privacy_.delta, "row_norm": args.row_norm,
            "relation": relation, "calibration": calibration, "centering": args.centering,
            "mean_share": args.mean_share if centering else None,
            "on_norm_violation": args.on_norm_violation,
            # The noise seed is secret (whoever knows it can subtract the noise): never saved.
            "seed": None if args.seed is None else "given (secret, not saved)",
        },
        "n_components": int(est.n_components_),
        "n_features": int(est.n_features_in_),
        "components_file": "components.npy",
        "components_layout": "rows (n_components, n_features), as scikit-learn's components_",
        "explained_variance_ratio": est.explained_variance_ratio_,
        "explained_variance": est.explained_variance_,
        # n under replace_one (public: neighbours have the same n), the released noisy count under
        # add_remove when the method releases one, else null.
        "n_samples": getattr(est, "n_samples_", None),
        "centered": centering is not None,
        "mean": est.mean_ if centering is not None else None,
        "feature_names": list(feature_names) if feature_names is not None else None,
        # Public inputs only: the path, the format and the user's declarations.
        "data": {"source": str(args.data), "format": fmt, "label_column": args.label_column,
                 "drop_columns": args.drop_column,
                 "header": header, "categories": {str(k): v for k, v in (categories or {}).items()}},
        "privacy": str(privacy),
    }
    write_json(model, out / "model.json")
    write_json(privacy.to_dict(), out / "privacy.json")

    # Printed: public inputs and released values only (no row count, no timing).
    d = est.n_features_in_
    _out(f"fitted {method.name} on {d}-feature {fmt} data ({'sparse' if sp.issparse(X) else 'dense'}): "
         f"{est.n_components_} components")
    if getattr(args, "auto_reason", None):
        _out(f"--method auto chose {method.name}: {args.auto_reason}")
    _out(f"privacy: {privacy}")
    for note in privacy.notes:
        _out(f"  note: {note}")
    evr = ", ".join(f"{v:.3f}" for v in est.explained_variance_ratio_[: min(10, est.n_components_)])
    _out(f"explained variance ratio (released): {evr}{' ...' if est.n_components_ > 10 else ''}")
    _out(f"wrote {out / 'components.npy'}, {out / 'model.json'}, {out / 'privacy.json'}")
    return 0


# ----------------------------------------------------------------------------------------------
# transform
# ----------------------------------------------------------------------------------------------


def _configure_transform(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", metavar="DATA", help="data file to project (same columns as the fitted data)")
    p.add_argument("--model", metavar="DIR", required=True, help="a folder written by `dpspectral fit`")
    p.add_argument("--out", metavar="FILE", required=True,
                   help="output file: .npy (NumPy array) or .csv (header pc1..pcK)")
    _add_data_options(p)


def _read_model(folder: Path) -> tuple[np.ndarray, np.ndarray | None, dict[str, Any]]:
    if not folder.is_dir():
        raise FileNotFoundError(f"--model {str(folder)!r} is not a folder written by `dpspectral fit`.")
    meta_path, comp_path = folder / "model.json", folder / "components.npy"
    for f in (meta_path, comp_path):
        if not f.is_file():
            raise FileNotFoundError(
                f"--model {str(folder)!r} has no {f.name} (is it a `dpspectral fit` folder?)."
            )
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise CLIError(f"{str(meta_path)!r} is not valid JSON ({err.msg}, line {err.lineno}).") from None
    components = np.load(comp_path, allow_pickle=False)
    if components.ndim != 2 or not np.isfinite(components).all():
        raise CLIError(
            f"{str(comp_path)!r} must hold a finite 2-D (k, d) array. Got shape {components.shape}."
        )
    mean = meta.get("mean")
    center = None if mean is None else np.asarray(mean, dtype=float)
    if center is not None and center.shape != (components.shape[1],):
        raise CLIError(f"The mean in {str(meta_path)!r} has shape {center.shape}; expected "
                       f"({components.shape[1]},).")
    return components, center, meta


def _run_transform(args: argparse.Namespace) -> int:
    out = Path(args.out)
    suffix = out.suffix.lower()
    if suffix not in (".npy", ".csv"):
        raise CLIError(f"--out must end in .npy or .csv. Got {str(out)!r}.")
    components, center, meta = _read_model(Path(args.model))
    k, d = components.shape
    fmt = args.format
    n_features = args.n_features
    if n_features is None and (fmt == "libsvm" or (fmt is None and _guess_is_libsvm(args.data))):
        n_features = d  # LIBSVM width is the largest index present; use the model's width
    model_data = meta.get("data") if isinstance(meta.get("data"), dict) else None
    header, categories = _declarations(args, model_data)  # the fitted categories unless redeclared
    with _private_warnings(args.debug):
        X, _, _ = _load_features(args.data, fmt=fmt, label_column=args.label_column, n_features=n_features,
                                 header=header, categories=categories, drop_columns=args.drop_column)
    if X.shape[1] != d:
        raise CLIError(
            f"DATA {args.data!r} has {X.shape[1]} feature columns but the model was fitted on {d}."
        )
    Z = np.asarray(X @ components.T, dtype=float)
    if center is not None:
        Z = Z - center @ components.T
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".npy":
        np.save(out, Z)
    else:
        column_names = ",".join(f"pc{i + 1}" for i in range(k))
        np.savetxt(out, Z, delimiter=",", header=column_names, comments="", fmt="%.10g")
    # No row count on stdout (logs travel further than the output file).
    _out(f"projected {d}-feature data on {k} components of the {meta.get('method', '?')} model "
         f"({'centred' if center is not None else 'uncentred'}); wrote {out} ({k} columns)")
    return 0


def _guess_is_libsvm(path: str) -> bool:
    from . import datasets

    try:
        return datasets.guess_format(datasets.resolve_path(path, name="DATA")) == "libsvm"
    except (OSError, ValueError, TypeError):
        return False  # the loader reports the problem


# ----------------------------------------------------------------------------------------------
# demo
# ----------------------------------------------------------------------------------------------


def _configure_demo(p: argparse.ArgumentParser) -> None:
    from dpspectral_reproduce.commands import configure_demo  # argparse only: no matplotlib

    configure_demo(p)


def _run_demo(args: argparse.Namespace) -> int:
    from dpspectral_reproduce.commands import run_demo_command  # checks the 'reproduce' extra

    return run_demo_command(args)


# ----------------------------------------------------------------------------------------------
# reproduce (the papers; one sub-parser per paper, built by dpspectral_reproduce.papers)
# ----------------------------------------------------------------------------------------------

#: The papers of ``dpspectral reproduce`` (also named by the help texts; a test checks that they match
#: :data:`dpspectral_reproduce._registry.PAPERS`).
REPRODUCE_PAPERS = "shang2021, liu2022, upadhyay2018, imtiaz2018, chen2025"


def _configure_reproduce(p: argparse.ArgumentParser) -> None:
    from dpspectral_reproduce.commands import configure_reproduce  # argparse only: no matplotlib

    configure_reproduce(p)


def _run_reproduce(args: argparse.Namespace) -> int:
    from dpspectral_reproduce.commands import run_reproduce  # checks the 'reproduce' extra

    return run_reproduce(args)


# ----------------------------------------------------------------------------------------------
# audit
# ----------------------------------------------------------------------------------------------


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return value


def _configure_audit(p: argparse.ArgumentParser) -> None:
    p.add_argument("methods", nargs="*", metavar="METHOD",
                   help="registry names to audit (default: every registered method)")
    p.add_argument("--quick", action="store_true",
                   help="the CI run: 300 runs per data set (+100 pilot) instead of 5,000 (+1,000)")
    p.add_argument("--runs", type=_positive_int, default=None, metavar="N",
                   help="audit runs per data set (overrides --quick)")
    p.add_argument("--pilot", type=_positive_int, default=None, metavar="N",
                   help="pilot runs per data set, which choose the statistic and threshold")
    p.add_argument("--alpha", type=_probability, default=None, metavar="A",
                   help="family-wise false-positive rate, split evenly over the audited rows (default 0.01)")
    p.add_argument("--seed", type=_nonneg_int, default=0, help="base seed (default 0)")
    p.add_argument("--jobs", type=_positive_int, default=1, metavar="J",
                   help="processes per audited row (the result does not depend on it)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="also write DIR/audit.md (summary and table) and DIR/audit.json")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")


def _run_audit(args: argparse.Namespace) -> int:
    from . import audit_runner
    from .registry import get_method

    for name in args.methods:
        get_method(name, owner="dpspectral audit")  # an unknown name fails before any work
    base = audit_runner.QUICK if args.quick else audit_runner.FULL
    plan = audit_runner.AuditPlan(n_pilot=args.pilot or base.n_pilot, n_runs=args.runs or base.n_runs)
    alpha = audit_runner.FAMILY_ALPHA if args.alpha is None else args.alpha

    def on_row(row: Any) -> None:
        if not args.json:
            bound = "" if row.epsilon_lower_bound is None else f"epsilon >= {row.epsilon_lower_bound:.3f}  "
            _out(f"  {row.method}/{row.relation}: {bound}{row.cell()}  ({row.seconds:.1f} s)")

    if not args.json:
        _out(f"dpspectral audit: {plan.n_runs:,} runs per data set (+{plan.n_pilot:,} pilot), "
             f"family-wise alpha = {alpha:g}")
    report = audit_runner.audit_methods(args.methods or None, quick=args.quick, plan=plan, alpha=alpha,
                                        seed=args.seed, n_jobs=args.jobs, on_row=on_row)
    if args.json:
        _out(json.dumps(report.to_dict(), indent=2))
    else:
        _out()
        _out(report.markdown().rstrip())
        _out()
        _out(report.summary())
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "audit.md").write_text(f"{report.summary()}\n\n{report.markdown()}")
        (out / "audit.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        if not args.json:
            _out(f"wrote {out / 'audit.md'}")
            _out(f"wrote {out / 'audit.json'}")
    if report.violations:
        print(f"{PROG} audit: VIOLATION: " + ", ".join(f"{r.method}/{r.relation} ({r.note})"
                                                      for r in report.violations), file=sys.stderr)
        return 1
    return 0


# ----------------------------------------------------------------------------------------------
# the command table and the entry point
# ----------------------------------------------------------------------------------------------

#: Every subcommand, in the order of ``dpspectral --help``. Add new subcommands here (one entry).
COMMANDS: tuple[Command, ...] = (
    Command(
        name="methods",
        help="list the registered algorithms",
        description="List every registered algorithm: family, model, neighbouring relations (the default "
                    "first), whether its privacy is certified, its calibrations and its paper.",
        configure=_configure_methods,
        run=_run_methods,
    ),
    Command(
        name="fit",
        help="fit differentially private PCA on a data file",
        description="Fit differentially private PCA (dpspectral.DPPCA) on DATA and save the released model: "
                    "DIR/components.npy (k x d), DIR/model.json and DIR/privacy.json. Rows are clipped to "
                    "the public --row-norm (or refused with --on-norm-violation raise). Everything saved or "
                    "printed is a released quantity or a public input: the header's column names, the "
                    "declared --categories, the parameters (the --seed is secret and not saved); no row "
                    "count, no timing, no cell value. A CSV file is expected to have a header "
                    "(--no-header otherwise); a text column must be declared with --categories (or "
                    "--schema), and any other non-numeric cell is an error that names the column only.",
        configure=_configure_fit,
        run=_run_fit,
        epilog="examples:\n  dpspectral fit data.csv --label-column label --k 5 --epsilon 1 --delta 1e-6 "
               "--row-norm 1 --out model/\n"
               "  dpspectral fit flows.csv --label-column label --categories proto=tcp,udp,icmp --k 5 "
               "--epsilon 1 --delta 1e-6 --row-norm 1 --out model/",
    ),
    Command(
        name="transform",
        help="project a data file with a fitted model",
        description="Project DATA on the components saved by `dpspectral fit` ((X - mean) @ components.T; "
                    "the mean only when the model was centred). Post-processing: no privacy is spent.",
        configure=_configure_transform,
        run=_run_transform,
        epilog="example:\n  dpspectral transform data.csv --label-column label --model model/ "
               "--out projected.npy",
    ),
    Command(
        name="demo",
        help="run the demo: private PCA on scikit-learn's digits (the main job)",
        description="Private PCA on scikit-learn's bundled digits for every certified central method over "
                    "a grid of epsilons: captured energy, distance to the exact subspace, downstream "
                    "accuracy and fit time; prints a table and writes runs.csv, summary.csv, config.json, "
                    "report.md and utility_vs_epsilon.png. Needs no files and no network; needs the "
                    "'reproduce' extra (pip install 'dpspectral[reproduce]').",
        configure=_configure_demo,
        run=_run_demo,
    ),
    Command(
        name="reproduce",
        help=f"reproduce a paper's experiments ({REPRODUCE_PAPERS}, or all)",
        description=f"Re-run a paper's experiments on the local data sets and write a report: one of the "
                    f"papers {REPRODUCE_PAPERS}, or all of them and one HTML index (the full runs of all "
                    "take over half an hour, with --quick a few minutes). Data sets are read from --data "
                    "DIR, else $DPSPECTRAL_DATA, else ~/dpspectral_data. Run `dpspectral reproduce PAPER "
                    "--help` for that paper's options. Needs the 'reproduce' extra "
                    "(pip install 'dpspectral[reproduce]').",
        configure=_configure_reproduce,
        run=_run_reproduce,
        epilog="examples:\n  dpspectral reproduce shang2021 --quick --data ~/dpspectral_data --out q\n"
               "  dpspectral reproduce liu2022 --quick --out reports/liu-q\n"
               "  dpspectral reproduce upadhyay2018 --quick --out reports/upadhyay-q\n"
               "  dpspectral reproduce imtiaz2018 --quick --out reports/imtiaz-q\n"
               "  dpspectral reproduce chen2025 --quick --out reports/chen-q\n"
               "  dpspectral reproduce all --quick --out reports/all",
    ),
    Command(
        name="audit",
        help="audit the privacy of every registered method (lower bounds on epsilon)",
        description="Statistical privacy audit: for every registered method (or the METHODs named) and "
                    "every neighbouring relation it supports, run the mechanism many times on a worst-case "
                    "neighbouring pair, choose a statistic and threshold on pilot runs, and turn the audit "
                    "runs into a Clopper-Pearson lower confidence bound on epsilon, shown next to the "
                    "claimed (epsilon, delta). Certified methods must not exceed their claim (exit status 1 "
                    "if one does); uncertified baselines are shown with what the audit finds; methods the "
                    "audit cannot handle yet are listed as 'not audited' with the reason. See "
                    "docs/privacy-audit.md.",
        configure=_configure_audit,
        run=_run_audit,
        epilog="examples:\n  dpspectral audit --quick\n  dpspectral audit analyze_gauss wishart --runs 2000\n"
               "  dpspectral audit --out reports/audit --jobs 2",
    ),
)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions are pre-wrapped (so that examples keep their lines); subcommand names fit one line."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30, width=min(100, shutil.get_terminal_size().columns))

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        # argparse measures subcommand names without their extra indent, which wraps long names.
        get_subactions = getattr(action, "_get_subactions", None)
        if action.help is not argparse.SUPPRESS and get_subactions is not None:
            longest = max((len(a.dest or a.metavar or "") for a in get_subactions()), default=0)
            self._action_max_length = max(self._action_max_length, longest + self._current_indent + 4)


def _wrap(text: str) -> str:
    width = min(100, shutil.get_terminal_size().columns) - 2
    return "\n\n".join(textwrap.fill(par, width) for par in text.split("\n\n"))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dpspectral`` with one subparser per entry of :data:`COMMANDS`."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description=_wrap(
            "Differentially private spectral methods: PCA, low-rank factorization and generalized "
            "eigenproblems with explicit, certified privacy guarantees. `dpspectral reproduce PAPER` re-runs "
            f"the experiments of the papers {REPRODUCE_PAPERS}."
        ),
        epilog=f"Run `{PROG} COMMAND --help` for the options of a command.",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show full tracebacks instead of one-line errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for cmd in COMMANDS:
        p = sub.add_parser(cmd.name, help=cmd.help, description=_wrap(cmd.description),
                           epilog=cmd.epilog or None, formatter_class=_HelpFormatter)
        cmd.configure(p)
        p.set_defaults(_command=cmd)
    return parser


def _one_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    if isinstance(err, KeyError):
        text = f"missing key {text}"
    return " ".join(text.split())


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    print(f"{PROG}: warning: {' '.join(str(message).split())}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dpspectral`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 on success, 2 on a usage or input error (one line on stderr), 130 when
        interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exc:  # argparse: --help / --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    cmd: Command | None = getattr(args, "_command", None)
    if cmd is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: a command is required (one of: {', '.join(c.name for c in COMMANDS)})",
              file=sys.stderr)
        return EXIT_USAGE
    from .privacy.budget import BudgetExceededError

    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return int(cmd.run(args))
        except KeyboardInterrupt:
            print(f"{PROG} {cmd.name}: interrupted", file=sys.stderr)
            return 130
        except (BudgetExceededError, ValueError, TypeError, OSError, ImportError) as err:
            if args.debug:
                raise
            print(f"{PROG} {cmd.name}: error: {_one_line(err)}", file=sys.stderr)
            return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

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


def _int_at_least(text: str, low: int, kind: str) -> int:
    """``text`` as an int >= ``low``; ``kind`` names the range in the message ("positive")."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a {kind} integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be a {kind} integer, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    return _int_at_least(text, 1, "positive")


def _nonneg_int(text: str) -> int:
    return _int_at_least(text, 0, "non-negative")


def _seed(text: str) -> int | str:
    """``--seed``: a non-negative integer, or ``secure`` (OS entropy and exact samplers)."""
    if text == "secure":
        return text
    try:
        return _nonneg_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer or secure, got {text!r}") from None


def _budget(text: str) -> tuple[float, float]:
    """``--budget EPSILON[,DELTA]`` (delta 0 when omitted), checked as a privacy budget."""
    from .privacy._budget import PrivacyBudget

    eps_text, _, delta_text = text.partition(",")
    try:
        budget = PrivacyBudget(float(eps_text), float(delta_text) if delta_text.strip() else 0.0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be EPSILON or EPSILON,DELTA with epsilon in (0, inf) and delta in [0, 1), e.g. 3,1e-5; "
            f"got {text!r}") from None
    return budget.epsilon, budget.delta


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
    g.add_argument("--delimiter", metavar="CHAR", type=_delimiter, default=None,
                   help="CSV only: the field separator, one character, e.g. ';' or '\\t' (or tab) "
                        "(default: a comma; transform: the one the model was fitted with)")
    g.add_argument("--schema", metavar="FILE", default=None,
                   help='JSON file of public declarations: {"header": true|false, "delimiter": ";", '
                        '"categories": {"COL": ["A", "B"]}, "scaling": {"COL": {"lower": 0, "upper": '
                        '100}, "COL2": {"center": 50, "scale": 10}}}, each key optional. "scaling" is a '
                        "public per-column map applied before the fit (and by transform): lower/upper "
                        "clips the column to [lower, upper] and maps it to [-1, 1]; center/scale gives "
                        "(x - center) / scale. Columns are named as in model.json's feature_names (x0, "
                        "x1, ... for a CSV file without a header), or by position for unnamed (.npy) "
                        "data. --header/--no-header, --delimiter and --categories may add to it but not "
                        "contradict it")


_SCHEMA_KEYS = ("header", "delimiter", "categories", "scaling")

#: Characters refused as a CSV delimiter: they occur in numbers, quote fields or end records.
_BAD_DELIMITERS = set('".+-\r\n')


def _delimiter(text: str) -> str:
    """``--delimiter``: one character; ``\\t`` (backslash and t, as typed in a shell) or ``tab`` is a tab."""
    value = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(text, text)
    if len(value) != 1 or value in _BAD_DELIMITERS or value.isalnum():
        raise argparse.ArgumentTypeError(
            "must be one character that cannot occur in a number (not a letter, digit, '.', '+', '-', "
            f"a quote or a line break), or \\t (tab); got {text!r}")
    return value


@dataclass(frozen=True)
class _Declared:
    """The public declarations about a data file, from --schema, the options and (transform) the model.

    ``delimiter`` None: not declared (the loader's comma); ``scaling``: ``{column: rule}``, each rule
    ``{"lower": a, "upper": b}`` or ``{"center": m, "scale": s}``.
    """

    header: bool | None = None
    categories: dict[int | str, list[str]] | None = None
    delimiter: str | None = None
    scaling: dict[int | str, dict[str, float]] | None = None


def _check_scaling(raw: Any, where: str) -> dict[int | str, dict[str, float]]:
    """The "scaling" of a schema or a model, checked (its values are public declarations: quotable)."""
    shape = ('"scaling" must map columns to {"lower": a, "upper": b} (a < b) or {"center": m, '
             '"scale": s} (s > 0), with finite numbers')
    if not isinstance(raw, dict):
        raise CLIError(f"{where}: {shape}.")
    out: dict[int | str, dict[str, float]] = {}
    for key, rule in raw.items():
        if (not isinstance(rule, dict) or set(rule) not in ({"lower", "upper"}, {"center", "scale"})
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
                           for v in rule.values())):
            raise CLIError(f"{where}: {shape}; got {rule!r} for the column {key!r}.")
        values = {k: float(v) for k, v in rule.items()}
        if ("lower" in values and not values["lower"] < values["upper"]) or values.get("scale", 1.0) <= 0:
            raise CLIError(f"{where}: {shape}; got {rule!r} for the column {key!r}.")
        spec = _column_spec(str(key))
        if spec in out:
            raise CLIError(f"{where}: \"scaling\" names the column {key!r} twice.")
        out[spec] = values
    return out


def _apply_scaling(X: Any, feature_names: Sequence[str] | None,
                   scaling: dict[int | str, dict[str, float]] | None) -> Any:
    """The declared public per-column map: clip to [lower, upper] and map to [-1, 1], or
    (x - center) / scale. A fixed public map of each row, so it costs no privacy."""
    if not scaling:
        return X
    if sp.issparse(X):
        raise CLIError("\"scaling\" in --schema applies to dense data (CSV, Parquet, .npy), not to sparse "
                       "LIBSVM data (a shift would fill in the zeros).")
    names = list(feature_names) if feature_names is not None else None
    d = X.shape[1]
    X = np.array(X, dtype=np.float64, copy=True)
    for spec, rule in scaling.items():
        if names is not None:
            if not isinstance(spec, str) or names.count(spec) != 1:
                raise CLIError(
                    f"\"scaling\" in --schema names the column {spec!r}, which is not one feature "
                    "column of the data; name the columns as model.json's feature_names does (the header's "
                    "names, or x0, x1, ... by position in a CSV file without a header).")
            j = names.index(spec)
        else:
            if not isinstance(spec, int) or not -d <= spec < d:
                raise CLIError(f"\"scaling\" in --schema: the data have no column names, so columns are "
                               f"positions in [{-d}, {d - 1}]; got {spec!r}.")
            j = spec % d
        col = X[:, j]
        if "lower" in rule:
            a, b = rule["lower"], rule["upper"]
            np.clip(col, a, b, out=col)
            X[:, j] = (2.0 * col - (a + b)) / (b - a)
        else:
            X[:, j] = (col - rule["center"]) / rule["scale"]
    return X


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
    delimiter = schema.get("delimiter")
    if delimiter is not None:
        try:
            if not isinstance(delimiter, str):
                raise argparse.ArgumentTypeError(f"must be a one-character string; got {delimiter!r}")
            delimiter = _delimiter(delimiter)
        except argparse.ArgumentTypeError as err:
            raise CLIError(f"--schema {path!r}: \"delimiter\" {err}.") from None
    scaling = schema.get("scaling")
    return {"header": schema.get("header"), "categories": {_column_spec(k): v for k, v in cats.items()},
            "delimiter": delimiter,
            "scaling": None if scaling is None else _check_scaling(scaling, f"--schema {path!r}")}


def _declarations(args: argparse.Namespace, model_data: dict[str, Any] | None = None,
                  data_format: str | None = None) -> _Declared:
    """The public declarations from --schema, --header, --delimiter and --categories.

    ``transform`` passes the ``data`` section of the model and the format of its DATA: the model's
    header, delimiter (CSV data) and categories (CSV and Parquet data) are used where the command line
    declares none, and its scaling always (the projection needs the fitted encoding; a --schema
    "scaling" that differs from it is refused).
    """
    schema = _read_schema(getattr(args, "schema", None))
    header = schema.get("header")
    if args.header is not None:
        if header is not None and header != args.header:
            raise CLIError("--header/--no-header contradicts the \"header\" of --schema.")
        header = args.header
    delimiter = schema.get("delimiter")
    if args.delimiter is not None:
        if delimiter is not None and delimiter != args.delimiter:
            raise CLIError("--delimiter contradicts the \"delimiter\" of --schema.")
        delimiter = args.delimiter
    categories: dict[int | str, list[str]] = dict(schema.get("categories") or {})
    for spec, cats in _parse_categories(args.categories).items():
        if spec in categories and categories[spec] != cats:
            raise CLIError(f"--categories {spec}=... contradicts the categories of --schema for that column.")
        categories[spec] = cats
    scaling = schema.get("scaling")
    if model_data is not None:
        if data_format == "csv":
            header = model_data.get("header") if header is None else header
            delimiter = model_data.get("delimiter") if delimiter is None else delimiter
        if not categories and model_data.get("categories") and data_format in ("csv", "parquet"):
            categories = {_column_spec(k): list(v) for k, v in model_data["categories"].items()}
        fitted = _check_scaling(model_data.get("scaling") or {}, "model.json")
        if scaling is not None and scaling != fitted:
            raise CLIError("The \"scaling\" of --schema differs from the one the model was fitted with "
                           "(model.json); transform applies the model's.")
        scaling = fitted
    return _Declared(header=header, categories=categories or None, delimiter=delimiter,
                     scaling=scaling or None)


def _column_spec(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def _load_features(path: str, *, fmt: str | None, label_column: str | None,
                   n_features: int | None, header: bool | None = None,
                   categories: dict[int | str, list[str]] | None = None,
                   drop_columns: Sequence[str] | None = None,
                   delimiter: str | None = None) -> tuple[Any, Any, str]:
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
    if delimiter is not None:
        if fmt != "csv":
            raise CLIError(f"--delimiter applies to CSV data only. Got format {fmt!r}.")
        kwargs["delimiter"] = delimiter
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
    """The same words as the README's table (:func:`dpspectral._registry.methods_markdown`)."""
    if not private:
        return "non-private reference"
    return "certified" if certified else "UNCERTIFIED (not DP)"


def _method_rows() -> list[dict[str, Any]]:
    from ._registry import methods

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
                          "DP mean that spends --mean-share of the budget (analyze_gauss and mod_sulq with "
                          "the tight calibration; elsewhere the fit runs uncentred, with a warning) "
                          "(default: none)")
    opt.add_argument("--mean-share", type=float, default=0.1,
                     help="share of the budget spent on the private mean (default: 0.1)")
    opt.add_argument("--on-norm-violation", choices=("clip", "raise"), default="clip",
                     help="rows above --row-norm: clip them per row (DP-safe) or refuse the data "
                          "(default: clip)")
    opt.add_argument("--seed", type=_seed, default=None,
                     help="seed of the noise, for reproducible research runs (default: fresh operating-"
                          "system entropy). It is a secret: whoever knows it can remove the noise; it is "
                          "not saved in model.json. 'secure': noise from OS entropy by exact discrete "
                          "samplers (not reproducible; for deployment)")
    led = p.add_argument_group("privacy ledger (a budget shared by runs)")
    led.add_argument("--ledger", metavar="FILE", default=None,
                     help="charge this run to the ledger FILE (JSON), shared by runs; a run that could "
                          "exceed the ledger's budget is refused before DATA is read, and nothing is "
                          "charged. Runs are composed by the accountant (dp_accounting events); the check "
                          "before reading counts this run at its full (--epsilon, --delta)")
    led.add_argument("--budget", metavar="EPSILON[,DELTA]", type=_budget, default=None,
                     help="the ledger's total budget, given when the ledger is created (delta 0 when "
                          "omitted, which only pure-epsilon methods fit in), e.g. 3,1e-5")
    led.add_argument("--ledger-label", metavar="TEXT", default=None,
                     help="the run's label in the ledger (default: 'fit METHOD on FILE NAME')")
    _add_data_options(p)


def _check_fit_args(args: argparse.Namespace) -> tuple[Any, str, str]:
    """Validate the public parameters before any data are read; returns (method, relation, calibration)."""
    from ._registry import choose_method, get_method, methods
    from .privacy._budget import PrivacyBudget, as_relation
    from .privacy._clipping import check_row_norm

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

    from ._estimators import DPPCA
    from .privacy._accounting import RANDOM_STATE_NOTE

    method, relation, calibration = _check_fit_args(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {str(out)!r} exists and is not a folder.")
    decl = _declarations(args)
    _check_ledger_args(args, method, calibration)
    centering = None if args.centering == "none" else "private"
    # a pure-epsilon method ignores --delta: the delta it spends is 0
    delta_spent = args.delta if method.needs_delta else 0.0
    with _ledger_run(args, method.name, relation, delta_spent) as ledger_run:
        est = DPPCA(
            args.k, epsilon=args.epsilon, delta=args.delta, row_norm=args.row_norm, method=method.name,
            relation=relation, calibration=calibration, centering=centering, mean_share=args.mean_share,
            random_state=args.seed, on_norm_violation=args.on_norm_violation,
            accountant=None if ledger_run is None else ledger_run.accountant,
            # No progress bar: its count of blocks follows n and its rate is a timing.
            method_params={"show_progress": False} if "show_progress" in method.options else None,
        )
        with _private_warnings(args.debug):
            X, feature_names, fmt = _load_features(
                args.data, fmt=args.format, label_column=args.label_column, n_features=args.n_features,
                header=decl.header, categories=decl.categories, drop_columns=args.drop_column,
                delimiter=decl.delimiter)
            X = _apply_scaling(X, feature_names, decl.scaling)
            est.fit(X)
        if ledger_run is not None:
            ledger_run.report = est.privacy_
    privacy = est.privacy_
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "components.npy", est.components_)
    write_json(_model_json(args, est, method, relation, calibration, feature_names, fmt, decl),
               out / "model.json")
    write_json(privacy.to_dict(), out / "privacy.json")

    # Printed: public inputs and released values only (no row count, no timing).
    d = est.n_features_in_
    _out(f"fitted {method.name} on {d}-feature {fmt} data ({'sparse' if sp.issparse(X) else 'dense'}): "
         f"{est.n_components_} components")
    if getattr(args, "auto_reason", None):
        _out(f"--method auto chose {method.name}: {args.auto_reason}")
    _out(f"privacy: {privacy}")
    for note in privacy.notes:
        if note == RANDOM_STATE_NOTE and args.seed is None:
            continue  # about a seed; none was given (the noise came from OS entropy)
        _out(f"  note: {note}")
    ratios = getattr(est, "explained_variance_ratio_", None)  # absent: the method releases no eigenvalues
    if ratios is not None:
        evr = ", ".join(f"{v:.3f}" for v in ratios[: min(10, est.n_components_)])
        _out(f"explained variance ratio (released): {evr}{' ...' if est.n_components_ > 10 else ''}")
    if ledger_run is not None:
        _out(ledger_run.summary)
    _out(f"wrote {out / 'components.npy'}, {out / 'model.json'}, {out / 'privacy.json'}")
    return 0


def _model_json(args: argparse.Namespace, est: Any, method: Any, relation: str, calibration: str,
                feature_names: Sequence[str] | None, fmt: str, decl: _Declared) -> dict[str, Any]:
    """model.json: released values and public inputs only (no path but the data file's name)."""
    from . import __version__

    privacy = est.privacy_
    # centred when the fit released a mean (--centering private with a method that cannot centre runs
    # uncentred, with a warning and a note in the privacy report)
    centred = getattr(est.result_, "mean", None) is not None
    clip = (est.result_.diagnostics or {}).get("clip")
    return {
        "format": "dpspectral-pca-model",
        "format_version": 1,
        "dpspectral_version": __version__,
        "method": method.name,
        "params": {
            # a pure-epsilon method ignores --delta: the delta saved is the one its report certifies
            "n_components": args.k, "epsilon": args.epsilon,
            "delta": args.delta if method.needs_delta else est.privacy_.delta, "row_norm": args.row_norm,
            "relation": relation, "calibration": calibration, "centering": args.centering,
            "mean_share": args.mean_share if centred else None,
            "on_norm_violation": args.on_norm_violation,
            # The noise seed is secret (whoever knows it can subtract the noise): never saved.
            "seed": ("secure" if args.seed == "secure"
                     else None if args.seed is None else "given (secret, not saved)"),
        },
        "n_components": int(est.n_components_),
        "n_features": int(est.n_features_in_),
        "components_file": "components.npy",
        "components_layout": "rows (n_components, n_features), as scikit-learn's components_",
        "explained_variance_ratio": getattr(est, "explained_variance_ratio_", None),
        "explained_variance": getattr(est, "explained_variance_", None),
        # n under replace_one (public: neighbours have the same n), the released noisy count under
        # add_remove when the method releases one, else null.
        "n_samples": getattr(est, "n_samples_", None),
        "centered": centred,
        "mean": est.mean_ if centred else None,
        "feature_names": list(feature_names) if feature_names is not None else None,
        # The public bound at which the fit clipped each row (after the centring when centred), which
        # transform applies too; and the smaller clip the method released for its statistic, if any.
        "clip": {"norm": float(args.row_norm), "after_centering": centred,
                 "released_adaptive_clip": None if clip is None else float(clip)},
        # Public inputs only: the file's name (no folder), the format and the user's declarations.
        "data": {"source": Path(args.data).name, "format": fmt, "label_column": args.label_column,
                 "drop_columns": args.drop_column, "header": decl.header,
                 "delimiter": (decl.delimiter or ",") if fmt == "csv" else None,
                 "categories": {str(k): v for k, v in (decl.categories or {}).items()},
                 "scaling": {str(k): v for k, v in (decl.scaling or {}).items()}},
        "privacy": str(privacy),
    }


# ----------------------------------------------------------------------------------------------
# the privacy ledger of fit (--ledger FILE, --budget EPSILON[,DELTA])
# ----------------------------------------------------------------------------------------------


def _check_ledger_args(args: argparse.Namespace, method: Any, calibration: str) -> None:
    """The ledger options, checked before anything is charged or read."""
    if args.ledger is None:
        if args.budget is not None or args.ledger_label is not None:
            raise CLIError("--budget and --ledger-label apply with --ledger FILE only.")
        return
    path = Path(args.ledger)
    if path.exists() and not path.is_file():
        raise CLIError(f"--ledger {args.ledger!r} exists and is not a file.")
    if not path.exists() and args.budget is None:
        raise CLIError(f"--ledger {args.ledger!r} does not exist; give --budget EPSILON[,DELTA] to create "
                       "it.")
    if not path.parent.is_dir():
        raise CLIError(f"--ledger {args.ledger!r}: its folder does not exist.")
    if not method.certified or calibration != "tight":
        raise CLIError(f"--ledger charges certified, accountant-calibrated runs only (--calibration tight): "
                       f"the cost of {method.name} with calibration {calibration!r} is not known before "
                       "it runs.")


def _open_ledger(args: argparse.Namespace, path: Path) -> Any:
    """The ledger of --ledger (read, or new with --budget); a damaged file is refused, never reset."""
    from .privacy._accounting import Accountant
    from .privacy._ledger import LedgerFile, LedgerFileError, read_ledger

    if not path.exists():
        epsilon, delta = args.budget
        return LedgerFile(path, Accountant(epsilon, delta))
    try:
        ledger = read_ledger(path)
    except LedgerFileError as err:
        raise CLIError(f"--ledger: {err}") from None
    ceiling = ledger.accountant.ceiling
    assert ceiling is not None  # read_ledger refuses a ledger without one
    if args.budget is not None and args.budget != (ceiling.epsilon, ceiling.delta):
        raise CLIError(f"--budget is given when a ledger is created; {args.ledger!r} has the budget "
                       f"({ceiling.epsilon:g}, {ceiling.delta:g}), which does not change.")
    return ledger


def _ledger_precheck(args: argparse.Namespace, ledger: Any, cost: Any, relation: str) -> None:
    """Refuse, before DATA is read, a run whose full (epsilon, delta) could exceed the ledger's budget."""
    from .privacy._accounting import epsilon_of
    from .privacy._budget import BudgetExceededError

    acc, name, delta = ledger.accountant, args.ledger, cost.delta
    budget = acc.ceiling
    try:
        acc.check(cost, relation)
    except BudgetExceededError:
        after = epsilon_of([*acc.events, cost], budget.delta, relation=acc.relation or relation,
                           accounting=acc.accounting)
        why = (f" (its delta {delta:g} is above the ledger's delta {budget.delta:g})"
               if delta > budget.delta else "")
        raise CLIError(
            f"--ledger {name!r}: refused before reading DATA: this run at (epsilon={args.epsilon:g}, "
            f"delta={delta:g}){why} could bring the ledger to epsilon={after:.4g} at delta="
            f"{budget.delta:g}, above its budget epsilon={budget.epsilon:g} (spent so far: "
            f"{acc.epsilon_spent():.4g} in {len(ledger.runs)} runs). Nothing was read or charged.") from None
    except ValueError:  # another neighbouring relation
        if acc.relation is None:
            raise
        raise CLIError(
            f"--ledger {name!r} holds runs under {acc.relation.value} neighbours and this run is under "
            f"{relation}; guarantees under different relations do not compose (use --relation "
            f"{acc.relation.value}, or another ledger). Nothing was read or charged.") from None


@dataclass
class _LedgerRun:
    """What a run charged to ``--ledger`` shares with :func:`_run_fit`."""

    accountant: Any
    report: Any = None
    summary: str = ""


@contextlib.contextmanager
def _ledger_run(args: argparse.Namespace, method: str, relation: str, delta: float
                ) -> Iterator[_LedgerRun | None]:
    """Around the reading and the fit: check the ledger, reserve this run's cost, record what it spent.

    Under the ledger's lock: the ledger is read (or created with --budget; a corrupt file or one of
    another format version is refused, never reset); the run, counted at its full requested (epsilon,
    delta), must fit in the budget, or it is refused here, before DATA is read, and nothing is
    charged. That cost is then written to the file as a reservation (so that a run killed midway stays
    charged), the fit charges its actual events to the accountant (the library's check again, before
    any noise), and the file is rewritten with those events in place of the reservation.
    """
    if args.ledger is None:
        yield None
        return
    from datetime import UTC, datetime

    from .privacy._accounting import Accountant, EpsilonDeltaDpEvent, epsilon_of
    from .privacy._ledger import LedgerFile, locked, write_ledger

    name = args.ledger
    path = Path(name)
    with locked(path):
        ledger = _open_ledger(args, path)
        acc = ledger.accountant
        budget = acc.ceiling
        cost = EpsilonDeltaDpEvent(float(args.epsilon), float(delta))
        _ledger_precheck(args, ledger, cost, relation)
        started = datetime.now(UTC).isoformat(timespec="seconds")
        label = args.ledger_label or f"fit {method} on {Path(args.data).name}"
        record = {"label": label, "command": "fit", "time": started, "method": method,
                  "relation": relation, "requested_epsilon": float(args.epsilon),
                  "requested_delta": float(delta)}
        n0 = len(acc.entries)
        reserved = Accountant.from_dict(acc.to_dict())
        reserved.spend(cost, relation, label=f"reserved for: {label}")
        write_ledger(LedgerFile(path, reserved, [*ledger.runs, {
            **record, "epsilon": float(args.epsilon), "delta": float(delta),
            "status": "reserved: the run did not finish", "entries": [n0, n0 + 1]}]))
        run = _LedgerRun(acc)

        def finish(status: str) -> None:
            new = acc.entries[n0:]
            runs = list(ledger.runs)
            if new:  # charged: recorded whatever happened next (the data may have met the noise)
                report = run.report
                eps = report.epsilon if report is not None else epsilon_of(
                    [e.event for e in new], delta, relation=relation, accounting=acc.accounting)
                runs.append({**record, "epsilon": float(eps), "delta": float(delta), "status": status,
                             "entries": [n0, len(acc.entries)]})
            write_ledger(LedgerFile(path, acc, runs))  # nothing charged: the reservation is removed
            total, at = acc.spent()
            run.summary = (f"ledger {name}: spent epsilon={total:.4g} of {budget.epsilon:g} at delta="
                           f"{at:g} over {len(runs)} runs")

        try:
            yield run
        except BaseException as err:
            finish(f"failed: {type(err).__name__}")
            raise
        finish("released")


# ----------------------------------------------------------------------------------------------
# transform
# ----------------------------------------------------------------------------------------------


def _configure_transform(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", metavar="DATA", help="data file to project (same columns as the fitted data)")
    p.add_argument("--model", metavar="DIR", required=True, help="a folder written by `dpspectral fit`")
    p.add_argument("--out", metavar="FILE", required=True,
                   help="output file: .npy (NumPy array) or .csv (header pc1..pcK)")
    p.add_argument("--clip", action=argparse.BooleanOptionalAction, default=True,
                   help="clip each row (after the model's centring) at the bound the fit clipped at, "
                        "as saved in model.json, before projecting (default); --no-clip projects the "
                        "rows as they are")
    p.add_argument("--no-label-column", action="store_true",
                   help="DATA has no label column (by default the model's --label-column is dropped, "
                        "as in the fit)")
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
    from .privacy._clipping import check_row_norm, clip_rows

    components, center, meta = _read_model(Path(args.model))
    k, d = components.shape
    fmt = args.format
    guessed = fmt or _guess_format(args.data)
    n_features = args.n_features
    if n_features is None and guessed == "libsvm":
        n_features = d  # LIBSVM width is the largest index present; use the model's width
    model_data: dict[str, Any] = meta["data"] if isinstance(meta.get("data"), dict) else {}
    if args.no_label_column and args.label_column is not None:
        raise CLIError("--label-column and --no-label-column contradict each other.")
    # What the fit declared, unless the command line says otherwise: the label column, the dropped
    # columns, the header, the delimiter, the categories and the scaling.
    decl = _declarations(args, model_data, guessed)
    label = args.label_column
    if label is None and not args.no_label_column and guessed in ("csv", "parquet", "npy"):
        label = model_data.get("label_column")
    drop = args.drop_column
    if drop is None and guessed == "csv":
        drop = model_data.get("drop_columns")
    bound = None
    if args.clip:
        clip_info: dict[str, Any] = meta["clip"] if isinstance(meta.get("clip"), dict) else {}
        params: dict[str, Any] = meta["params"] if isinstance(meta.get("params"), dict) else {}
        try:
            bound = check_row_norm(clip_info.get("norm", params.get("row_norm")), "model.json")
        except (TypeError, ValueError):
            raise CLIError(f"The model {args.model!r} records no valid clipping bound (model.json "
                           "\"clip\" or params.row_norm); use --no-clip to project without "
                           "clipping.") from None
    with _private_warnings(args.debug):
        X, names, _ = _load_features(args.data, fmt=fmt, label_column=label, n_features=n_features,
                                     header=decl.header, categories=decl.categories, drop_columns=drop,
                                     delimiter=decl.delimiter)
        if X.shape[1] != d:
            raise CLIError(
                f"DATA {args.data!r} has {X.shape[1]} feature columns but the model was fitted on {d}."
            )
        fitted_names = meta.get("feature_names")
        if (names is not None and fitted_names is not None and decl.header is not False
                and list(names) != list(fitted_names)):
            raise CLIError(f"The columns of DATA {args.data!r} (by their header names) are not the "
                           "model's feature_names, in the same order.")
        X = _apply_scaling(X, names, decl.scaling)
        if center is not None:
            X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float) - center
        if bound is not None:
            X, _ = clip_rows(X, bound, on_norm_violation="clip")
        Z = np.asarray(X @ components.T, dtype=float)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".npy":
        np.save(out, Z)
    else:
        column_names = ",".join(f"pc{i + 1}" for i in range(k))
        np.savetxt(out, Z, delimiter=",", header=column_names, comments="", fmt="%.10g")
    # No row count on stdout (logs travel further than the output file).
    clipped = f", rows clipped at {bound:.4g}" if bound is not None else ""
    _out(f"projected {d}-feature data on {k} components of the {meta.get('method', '?')} model "
         f"({'centred' if center is not None else 'uncentred'}{clipped}); wrote {out} ({k} columns)")
    return 0


def _guess_format(path: str) -> str | None:
    """The format guessed from DATA's name, or None (the loader then reports the problem)."""
    from . import datasets

    try:
        return datasets.guess_format(datasets.resolve_path(path, name="DATA"))
    except (OSError, ValueError, TypeError):
        return None


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
    from . import _audit_runner as audit_runner
    from ._registry import get_method

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
               "--epsilon 1 --delta 1e-6 --row-norm 1 --out model/\n"
               "  dpspectral fit survey.csv --delimiter ';' --schema schema.json --label-column label --k 5 "
               "--epsilon 0.5 --delta 1e-6 --row-norm 2 --ledger budget.json --budget 3,1e-5 --out model/",
    ),
    Command(
        name="transform",
        help="project a data file with a fitted model",
        description="Project DATA on the components saved by `dpspectral fit`: clip((X - mean)) @ "
                    "components.T, the mean only when the model was centred, each row clipped at the "
                    "model's --row-norm as in the fit (--no-clip: not clipped). The declarations recorded "
                    "in model.json (label and dropped columns, header, delimiter, categories, scaling) "
                    "are reused unless the command line overrides them (the scaling cannot be). "
                    "Post-processing: no privacy is spent.",
        configure=_configure_transform,
        run=_run_transform,
        epilog="example:\n  dpspectral transform data.csv --model model/ --out projected.npy",
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
    from .privacy._budget import BudgetExceededError

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

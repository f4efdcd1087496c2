"""``dpspectral reproduce PAPER``: one argument parser per paper, and running one paper in this process.

Every paper has its own sub-parser, so ``dpspectral reproduce PAPER --help`` shows only the options
that paper reads; the options every paper takes (``--quick``, ``--out``, ``--repeats``, ``--seed``,
``--no-progress``) come from one parent parser. An option of another paper is refused with a line
saying which papers take it.

:func:`main` runs ``dpspectral reproduce PAPER ...`` in this process with the same one-line error
handling as the ``dpspectral`` command; :mod:`~dpspectral_reproduce.reproduce_all` runs every paper
through it. This module imports only the standard library and :mod:`._registry` at import time: the
paper's module is imported when the paper runs.

Privacy
-------
Nothing here touches data: the options are public inputs, passed on to the paper's runner.
"""

from __future__ import annotations

import argparse
import importlib
import math
import shutil
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from ._registry import PAPER_TITLES, PAPERS, CLIError

__all__ = ["PROG", "add_paper_parsers", "build_parser", "common_parent", "main", "one_line", "run_paper"]

PROG = "dpspectral reproduce"
EXIT_USAGE = 2
_DATA_FLAGS = ("--data", "--n-rows", "--k", "--datasets")
#: The option strings each sub-parser takes (filled as they are built), for the refusal of the others.
_FLAGS: dict[str, set[str]] = {}


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    return _int_at_least(text, 1, "a positive integer")


def nonneg_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    return _int_at_least(text, 0, "a non-negative integer")


def _int_at_least(text: str, low: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def _refusal(paper: str, flags: Sequence[str]) -> str:
    """Why ``flags`` are refused by ``paper``'s sub-parser (the messages of the former single parser)."""
    if paper == "all":
        return (f"{', '.join(flags)}: not used by `reproduce all`, which runs each paper with its own grid; "
                "run `dpspectral reproduce NAME` to change them.")
    if paper == "upadhyay2018" and all(f in _DATA_FLAGS for f in flags):
        return (f"{', '.join(flags)}: not used by upadhyay2018, whose inputs are the paper's simulated "
                "matrices (Appendix J), with the printed dimensions and k.")
    parts = []
    for flag in flags:
        takers = [name for name, taken in _FLAGS.items() if flag in taken]
        parts.append(f"{flag} applies to {', '.join(takers)} only, not to {paper}" if takers
                     else f"{flag} is not an option of {paper}")
    return "; ".join(parts) + "."


class PaperParser(argparse.ArgumentParser):
    """A paper's sub-parser: an option that another paper takes is refused with a line naming it."""

    paper: str = ""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        ns, extras = super().parse_known_args(args, namespace)
        flags = [a.split("=", 1)[0] for a in extras if a.startswith("--")]
        if flags and self.paper:
            self.error(_refusal(self.paper, flags))
        return ns, extras


def common_parent() -> argparse.ArgumentParser:
    """The options every paper (and ``all``) takes."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("every paper")
    g.add_argument("--quick", action="store_true",
                   help="a fast run: smaller grids and subsamples, 1 repeat unless --repeats; real data "
                        "are read as in a full run (see --data)")
    g.add_argument("--out", metavar="DIR", default=None, help="output folder (default: reports/EXPERIMENT)")
    g.add_argument("--repeats", type=positive_int, default=None,
                   help="repeats per setting (default: the paper's; fewer with --quick)")
    g.add_argument("--seed", type=nonneg_int, default=0, help="seed (default: 0)")
    g.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def add_data_option(p: argparse.ArgumentParser, without: str) -> None:
    """``--data DIR``; ``without`` says what the paper does when no data folder is found."""
    p.add_argument("--data", metavar="DIR", default=None,
                   help="folder with the data sets (a9a/, mnist/, ...). Default, with --quick too: "
                        "$DPSPECTRAL_DATA, else ~/dpspectral_data (scikit-learn's convention: "
                        "dpspectral.datasets.get_data_home); never the working directory. "
                        f"Without one, {without}")


def _n_rows(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n-rows", type=positive_int, default=None, metavar="N",
                   help="random subsample of N rows of every data set (default: all; 2000 with --quick)")


def _epsilons(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--epsilons", type=float, nargs="+", metavar="EPS", default=None, help=text)


def _datasets(p: argparse.ArgumentParser, choices: tuple[str, ...], default: str) -> None:
    p.add_argument("--datasets", nargs="+", choices=choices, default=None,
                   help=f"data sets (default: {default})")


def _configure_shang2021(p: argparse.ArgumentParser) -> None:
    add_data_option(p, "the command stops with a message saying where it looked")
    _n_rows(p)
    _epsilons(p, "override the epsilon grid (default: the paper's; a smaller one with --quick)")
    p.add_argument("--k", type=positive_int, nargs="+", default=None, help="override the list of k")
    _datasets(p, ("a9a", "mnist"), "a9a mnist")


def _configure_liu2022(p: argparse.ArgumentParser) -> None:
    add_data_option(p, "the real-data part is skipped (with a note)")
    _n_rows(p)
    _epsilons(p, "override the epsilon grid of the Gaussian and real-data parts")
    p.add_argument("--k", type=positive_int, nargs="+", default=None,
                   help="override the list of k of the real-data part")
    _datasets(p, ("a9a", "mnist"), "a9a mnist")


def _configure_upadhyay2018(p: argparse.ArgumentParser) -> None:
    _epsilons(p, "one epsilon for every private run (default: 1)")
    p.add_argument("--tables", type=int, nargs="+", metavar="N", default=None,
                   help="which Appendix J tables to run (3-11; default all)")
    p.add_argument("--real-data", action="store_true",
                   help="also run the real-data panel (MNIST, 20,000 unit rows, k = 10, several epsilons; a "
                        "few minutes) when MNIST is in the data home")


def _configure_imtiaz2018(p: argparse.ArgumentParser) -> None:
    add_data_option(p, "MNIST and a9a are skipped (with a note) and the synthetic data run")
    _epsilons(p, "override the epsilon grid of the epsilon sweep")
    _datasets(p, ("synthetic", "mnist", "a9a"), "synthetic mnist a9a")


def _configure_chen2025(p: argparse.ArgumentParser) -> None:
    add_data_option(p, "only the --data-file sets run")
    _n_rows(p)
    _epsilons(p, "override the epsilon grid (default: 1, 1/2, ..., 2^-10)")
    _datasets(p, ("mnist", "a9a", "rt-iot2022"), "mnist a9a rt-iot2022")
    p.add_argument("--data-file", action="append", metavar="PATH[:FORMAT]", default=None,
                   help="add a labelled data set by path (LIBSVM, IDX, CSV, NPY, Parquet; FORMAT overrides "
                        "the guess from the name); repeatable; split 80/20, stratified, seeded")
    p.add_argument("--label-column", metavar="COL", default=None,
                   help="the label column (name or position) of CSV / Parquet --data-file sets")
    p.add_argument("--clf-rows", type=positive_int, default=None, metavar="N",
                   help="classifier training rows, a seeded subsample of the fit rows (default: 5000; 600 "
                        "with --quick)")
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="worker processes for the grid (default: 1)")
    p.add_argument("--table-repeats", type=positive_int, default=None, metavar="R",
                   help="repeats at epsilon = 1 for Tables 2-3 (default: 10; 2 with --quick)")


#: Per paper: (module, its options, what it writes).
PAPER_PARSERS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], str]] = {
    "shang2021": ("shang2021", _configure_shang2021,
                  "Figure 1 (subspace error vs epsilon on a9a and MNIST) and Table 3 (linear-SVM accuracy at "
                  "epsilon = 0.1, k = 10). Writes runs.csv, summary.csv, table3.csv, one PNG per data set "
                  "and metric, and report.md."),
    "liu2022": ("liu2022", _configure_liu2022,
                "error against n on Gaussian data, Example 4.1 against the noise level, Figure 1 (gradient "
                "range vs mean) and top-1 / top-10 on MNIST and a9a. Writes runs.csv, summary.csv, "
                "figure1.csv, algorithm4.csv, PNGs and report.md."),
    "upadhyay2018": ("upadhyay2018", _configure_upadhyay2018,
                     "private and local LRF vs Hardt-Roth and the expected-error formulas, non-private "
                     "Optimal-Space-LRF, on simulated matrices at epsilon = 1, delta = 1/m. Writes runs.csv, "
                     "summary.csv, tables.csv, tableN.md, tableN.png and report.md."),
    "imtiaz2018": ("imtiaz2018", _configure_imtiaz2018,
                   "captured energy q / q_o of DPdisPCA against epsilon, N_s, S, R and delta on synthetic "
                   "data, MNIST and a9a. Writes runs.csv, summary.csv, PNGs and report.md."),
    "chen2025": ("chen2025", _configure_chen2025,
                 "DPSR vs DPRF vs SR+DP: FDA to 10 dimensions, then a linear SVM, an RBF SVM and a random "
                 "forest, against epsilon; Tables 2-3 (Wilcoxon); any labelled data set by path "
                 "(--data-file). Writes runs.csv, summary.csv, tables, PNGs and report.md."),
}


def add_paper_parser(sub: Any, name: str, help_text: str, description: str,
                     configure: Callable[[argparse.ArgumentParser], None],
                     formatter_class: Any, epilog: str | None = None
                     ) -> argparse.ArgumentParser:
    """One sub-parser of ``reproduce`` with the common options and its own; remembers its flags."""
    width = min(100, shutil.get_terminal_size().columns) - 2
    p = sub.add_parser(name, help=help_text, description=textwrap.fill(description, width), epilog=epilog,
                       parents=[common_parent()], formatter_class=formatter_class)
    p.paper = name
    configure(p)
    _FLAGS[name] = {opt for action in p._actions for opt in action.option_strings}
    return p


def add_paper_parsers(parser: argparse.ArgumentParser) -> Any:
    """Give ``parser`` one sub-parser per paper (``PAPER``); returns the sub-parsers action."""
    sub = parser.add_subparsers(dest="experiment", metavar="PAPER", title="papers", required=True,
                                parser_class=PaperParser)
    for name in PAPERS:
        _module, configure, writes = PAPER_PARSERS[name]
        title = PAPER_TITLES[name]
        add_paper_parser(sub, name, title, f"{title}: {writes}", configure, parser.formatter_class,
                         epilog=f"example:\n  {PROG} {name} --quick --out reports/{name}-quick")
    return sub


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser of ``dpspectral reproduce PAPER`` (the five papers; not ``all``)."""
    parser = argparse.ArgumentParser(prog=PROG, description="Re-run a paper's experiments.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_paper_parsers(parser)
    return parser


def check_epsilons(args: argparse.Namespace) -> None:
    """``--epsilons`` must be positive and finite (every paper that takes it)."""
    eps = getattr(args, "epsilons", None)
    if eps is not None and any(not (e > 0 and math.isfinite(e)) for e in eps):
        raise CLIError(f"--epsilons must be positive and finite. Got {eps}.")


def run_paper(args: argparse.Namespace) -> int:
    """Run the paper ``args.experiment`` with its parsed options; returns the exit status."""
    check_epsilons(args)
    out = args.out or f"reports/{args.experiment}"
    module = importlib.import_module(f"{__package__}.{PAPER_PARSERS[args.experiment][0]}")
    return int(module.cli_run(args, out))


def one_line(err: BaseException) -> str:
    """An exception as the one line the command prints."""
    text = str(err).strip() or type(err).__name__
    if isinstance(err, KeyError):
        text = f"missing key {text}"
    return " ".join(text.split())


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    print(f"dpspectral: warning: {' '.join(str(message).split())}", file=sys.stderr)


def main(argv: Sequence[str]) -> int:
    """Run ``dpspectral reproduce PAPER [options]`` (``argv`` starts with PAPER) in this process.

    User errors end the run with exit status 2 and one line on stderr, as with the ``dpspectral``
    command; other exceptions propagate.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return run_paper(args)
        except (ValueError, TypeError, OSError, ImportError) as err:
            print(f"{PROG}: error: {one_line(err)}", file=sys.stderr)
            return EXIT_USAGE

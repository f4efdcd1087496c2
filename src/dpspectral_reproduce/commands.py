"""The ``demo`` and ``reproduce`` subcommands of ``dpspectral``: their options and what they run.

:mod:`dpspectral.cli` imports this module only when it builds those two subcommands' parsers, and
calls :func:`run_demo_command` / :func:`run_reproduce` to run them; this module never imports
:mod:`dpspectral.cli`. At import time it loads only the standard library, :mod:`._registry` and
:mod:`.papers`: the demo and the papers' modules (and matplotlib) are imported when they run, after
:func:`require_extra` has checked that the ``reproduce`` extra is installed.

Privacy
-------
Nothing here touches data: the options are public inputs, passed on to the runners.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from typing import Any

from ._registry import DEFAULT_EPSILONS, DEFAULT_ROW_NORM, EXTRA_MODULES, INSTALL_HINT, PAPERS
from .papers import add_data_option, add_paper_parser, add_paper_parsers, nonneg_int, positive_int, run_paper

__all__ = ["configure_demo", "configure_reproduce", "require_extra", "run_demo_command", "run_reproduce"]

#: The help line of ``all`` (``dpspectral reproduce --help`` lists it with the papers).
ALL_HELP = (f"every paper ({', '.join(PAPERS)}), then one HTML index; the full runs take over half an "
            "hour (about 45 min on two cores), with --quick a few minutes")


def require_extra(command: str) -> None:
    """ImportError naming the install command when the ``reproduce`` extra is not installed."""
    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f"`dpspectral {command}` needs the optional dependencies of the 'reproduce' extra "
                          f"(missing: {', '.join(missing)}): {INSTALL_HINT}")


# ----------------------------------------------------------------------------------------------
# reproduce
# ----------------------------------------------------------------------------------------------


def _configure_all(p: argparse.ArgumentParser) -> None:
    add_data_option(p, "each paper does what it does without one")
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="worker processes for the papers that take them (chen2025; default: 1)")
    p.add_argument("--index-only", action="store_true",
                   help="write DIR/index.html over the experiment folders already in --out, running nothing "
                        "(e.g. --out docs/reproductions)")


def configure_reproduce(p: argparse.ArgumentParser) -> None:
    """Give ``dpspectral reproduce`` one sub-parser per paper, and ``all``."""
    sub = add_paper_parsers(p)
    add_paper_parser(sub, "all", ALL_HELP,
                     f"Run {ALL_HELP}: OUT/NAME/ per paper and OUT/index.html (reports, figures, CSVs and "
                     "whether every private run was certified) that opens from disk.",
                     _configure_all, p.formatter_class,
                     epilog="examples:\n  dpspectral reproduce all --quick --out reports/all\n"
                            "  dpspectral reproduce all --index-only --out docs/reproductions")


def run_reproduce(args: argparse.Namespace) -> int:
    """Run ``dpspectral reproduce PAPER|all`` with its parsed options; returns the exit status."""
    require_extra("reproduce")
    if args.experiment != "all":
        return run_paper(args)
    from . import reproduce_all

    return reproduce_all.cli_run(args, args.out or "reports/all")


# ----------------------------------------------------------------------------------------------
# demo
# ----------------------------------------------------------------------------------------------


def configure_demo(p: argparse.ArgumentParser) -> None:
    """The options of ``dpspectral demo``."""
    p.add_argument("--out", metavar="DIR", default="reports/demo",
                   help="output folder (default: reports/demo)")
    p.add_argument("--repeats", type=positive_int, default=None,
                   help="independent fits per method and epsilon (default: 5; 2 with --quick)")
    p.add_argument("--quick", action="store_true", help="a fast run for checks: 2 repeats unless --repeats")
    p.add_argument("--epsilons", type=float, nargs="+", metavar="EPS", default=list(DEFAULT_EPSILONS),
                   help="privacy parameters (default: %(default)s)")
    p.add_argument("--delta", type=float, default=1e-6, help="privacy parameter delta (default: 1e-6)")
    p.add_argument("--k", type=positive_int, default=10, help="number of components (default: 10)")
    p.add_argument("--row-norm", type=float, default=DEFAULT_ROW_NORM,
                   help="public row-norm bound for pixels scaled to [0, 1] (default: %(default)s, a public "
                        "choice, not derived from the data)")
    p.add_argument("--seed", type=nonneg_int, default=0, help="seed of the split and the noise (default: 0)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _print_demo(result: Any, seconds: float) -> None:
    cfg = result.config
    n_train = result.runs[0]["n_train"]
    print(f"dpspectral demo: DP PCA on scikit-learn digits ({n_train} training rows, d = 64), k = {cfg.k}, "
          f"delta = {cfg.delta:g}, public row_norm = {cfg.row_norm:g}, {cfg.repeats} repeat(s)")
    print("metrics: mean ± sd over repeats; energy and distance are against the exact (non-private) top-k "
          "eigenvectors of the training second-moment matrix (evaluation only, not released)")
    print()
    print(result.table().rstrip())
    print()
    print("privacy:")
    for name in cfg.methods:
        statements = [p for p in result.privacy if p["method"] == name]
        eps = ", ".join(f"{p['requested_epsilon']:g}" for p in statements)
        ok = all(p["certified"] for p in statements)
        first = statements[0]
        status = "certified for every epsilon" if ok else "NOT certified for some epsilon"
        print(f"  {name}: ({{{eps}}}, {first['delta']:g})-DP under {first['relation']} neighbours, "
              f"calibration={first['calibration']}, {status}")
    print()
    for key in ("report", "runs", "summary", "plot", "config"):
        if key in result.files:
            print(f"wrote {result.files[key]}")
    print(f"finished in {seconds:.1f} s")


def run_demo_command(args: argparse.Namespace) -> int:
    """Run ``dpspectral demo`` with its parsed options, print the table; returns the exit status."""
    require_extra("demo")
    from .demo import run_demo

    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 5)
    t0 = time.perf_counter()
    result = run_demo(args.out, repeats=repeats, epsilons=args.epsilons, delta=args.delta, k=args.k,
                      row_norm=args.row_norm, seed=args.seed, show_progress=not args.no_progress)
    _print_demo(result, time.perf_counter() - t0)
    return 0

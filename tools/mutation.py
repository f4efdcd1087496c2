#!/usr/bin/env python
"""Mutation testing of the privacy-critical code with mutmut (``make mutation``).

mutmut (https://github.com/boxed/mutmut, 3.x) copies the source into ``mutants/``, rewrites every
function of the files in scope into many one-change variants ("mutants": ``<`` for ``<=``, ``-`` for
``+``, ``None`` for an argument, a changed string, ...) and runs the tests that cover each function
against each mutant. A mutant that no test fails on "survives": either the tests miss a bug there,
or the change does not alter behaviour (an *equivalent* mutant).

This script runs mutmut in a scratch copy of the checkout (``--workdir``, default
``reports/mutation/``: nothing is written to ``src/`` or ``tests/``), with ``only_mutate`` set to the
files asked for and the tests restricted to the privacy core's own test files (``--tests``), then
prints (and with ``--report`` writes) the score and every surviving mutant with its diff. Survivors
listed in :data:`EQUIVALENT` (matched by file and by the changed line, not by mutmut's numbering) are
reported as equivalent with the reason; any other survivor makes the exit status 1, so a CI step fails
when a new line of privacy-critical code is not pinned by a test.

Usage::

    make mutation                                  # the whole privacy core (docs/privacy-audit.md)
    make mutation-ci                               # the subset that CI runs (.ci/run)
    .venv/bin/python tools/mutation.py src/dpspectral/privacy/_gaussian.py --report reports/mutation.md

Decorated functions (e.g. ``analytic_noise_multiplier``, under ``functools.lru_cache``) and
module-level constants are not mutated by mutmut; tests/test_privacy_core_mutants.py pins them
directly (and see the hand-made mutations in docs/privacy-audit.md).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The privacy core: accounting, Gaussian calibration, clipping, the validate/charge pipeline, budgets.
PRIVACY_CORE = [
    "src/dpspectral/privacy/_gaussian.py",
    "src/dpspectral/privacy/_clipping.py",
    "src/dpspectral/privacy/_budget.py",
    "src/dpspectral/privacy/_pipeline.py",
    "src/dpspectral/privacy/_accounting.py",
]
#: What CI runs on every build (.ci/run): about two minutes on two cores.
CI_SUBSET = ["src/dpspectral/privacy/_gaussian.py", "src/dpspectral/privacy/_clipping.py",
             "src/dpspectral/privacy/_budget.py"]
#: The tests that must kill the mutants: the privacy core's own tests (a mutant caught only by some
#: mechanism's end-to-end test is not counted as killed: the core should pin its own behaviour).
#: The audits of the covariance releases are included (the adaptive clip's audit tests privacy/_adaptive.py,
#: which is not mutated here); tests/privacy's tests of the exact samplers and draws (privacy/_discrete.py,
#: privacy/_draws.py: a million draws per check) and of the rounding bound test no line mutated here.
DEFAULT_TESTS = ["tests/test_privacy.py", "tests/test_pipeline.py", "tests/privacy/test_audit_analyze_gauss.py",
                 "tests/privacy/test_audit_moments.py", "tests/test_moments_pieces.py",
                 "tests/test_privacy_core_mutants.py"]

#: Equivalent mutants: (file name, removed line(s), added line(s)) -> why the change cannot alter behaviour.
#: Lines are compared with surrounding whitespace stripped; several lines are joined with newlines.
EQUIVALENT: dict[tuple[str, str, str], str] = {
    ("gaussian.py", "w = np.asarray(shares, dtype=float)", "w = np.asarray(shares, dtype=None)"):
        "numeric shares give identical values either way (float(x) and the comparisons convert); only "
        "string shares differ (converted, or a TypeError), not an input that changes a calibration",
    ("gaussian.py", "w = np.asarray(shares, dtype=float)", "w = np.asarray(shares, )"):
        "as above: dtype=None is the default",
    ("gaussian.py",
     "if w.ndim != 1 or np.any(w <= 0) or not math.isclose(float(w.sum()), 1.0, rel_tol=1e-9):",
     "if w.ndim != 1 or np.any(w <= 0) or not math.isclose(float(w.sum()), 1.0, ):"):
        "math.isclose's default rel_tol is 1e-9: the same call",
    ("gaussian.py", "if noise_multiplier <= 0 or delta <= 0:", "if noise_multiplier < 0 or delta <= 0:"):
        "at noise_multiplier = 0 dp_accounting.get_epsilon_gaussian returns inf too: the same result",
    ("gaussian.py", "if noise_multiplier <= 0 or delta <= 0:", "if noise_multiplier <= 0 or delta < 0:"):
        "at delta = 0 dp_accounting.get_epsilon_gaussian returns inf too: the same result",
    ("gaussian.py", "return noise.astype(dtype, copy=False)", "return noise.astype(dtype, copy=None)"):
        "the noise matrix is a fresh local array: copying it or not returns equal values",
    ("gaussian.py", "return noise.astype(dtype, copy=False)", "return noise.astype(dtype, )"):
        "the noise matrix is a fresh local array: copying it or not returns equal values",
    ("gaussian.py", "return noise.astype(dtype, copy=False)", "return noise.astype(dtype, copy=True)"):
        "the noise matrix is a fresh local array: copying it or not returns equal values",
    ("clipping.py", 'return np.sqrt(np.einsum("ij,ij->i", X, X))',
     'return np.sqrt(np.einsum("IJ,IJ->I", X, X))'):
        "einsum subscripts are case-sensitive labels: 'IJ,IJ->I' is the same contraction",
    ("clipping.py", 'dense: np.ndarray = np.sqrt(np.einsum("ij,ij->i", X, X))',
     'dense: np.ndarray = np.sqrt(np.einsum("IJ,IJ->I", X, X))'):
        "einsum subscripts are case-sensitive labels: 'IJ,IJ->I' is the same contraction",
    ("clipping.py", 'on_norm_violation: NormViolation = "clip",',
     'on_norm_violation: NormViolation = "XXclipXX",'):
        "clip_rows tests only for 'raise'; every other value clips, so the default's spelling is moot",
    ("clipping.py", 'on_norm_violation: NormViolation = "clip",',
     'on_norm_violation: NormViolation = "CLIP",'):
        "clip_rows tests only for 'raise'; every other value clips, so the default's spelling is moot",
    ("clipping.py", "first_row: int = 0,", "first_row: int = 1,"):
        "first_row is accepted from callers and not used (error messages name no row: that is private)",
}
_KINDS = "a dtype kind is one character; 'b', 'i', 'u', 'f' are in 'XXbiufXX' exactly as in 'biuf'"
_CHUNK = "the chunk size only sets memory use: every row is checked whatever the chunk (>= 1 row)"
_NDIM = "lists and tuples have no 'ndim' attribute: the test is True for them either way"
_CENTER = "a float64 center is subtracted, which promotes the rows to float64 whatever the first dtype"
EQUIVALENT.update({
    ("pipeline.py", 'if values.dtype.kind not in "biuf":', 'if values.dtype.kind not in "XXbiufXX":'): _KINDS,
    ("pipeline.py", 'if arr.dtype.kind not in "biuf":', 'if arr.dtype.kind not in "XXbiufXX":'): _KINDS,
    **{("pipeline.py", "step = max(1, (1 << 22) // max(arr.shape[1], 1))  # ~32 MB of float64 at a time",
        new.strip() + "  # ~32 MB of float64 at a time"): _CHUNK
       for new in ("step = max(2, (1 << 22) // max(arr.shape[1], 1))",
                   "step = max(1, (1 >> 22) // max(arr.shape[1], 1))",
                   "step = max(1, (2 << 22) // max(arr.shape[1], 1))",
                   "step = max(1, (1 << 23) // max(arr.shape[1], 1))",
                   "step = max(1, (1 << 22) // max(arr.shape[1], 2))")},
    ("pipeline.py", "for a in range(0, arr.shape[0], step):", "for a in range(0, arr.shape[0], ):"): _CHUNK,
    **{("pipeline.py", 'isinstance(first, (list, tuple)) and not hasattr(first, "ndim")', new): _NDIM
       for new in ('isinstance(first, (list, tuple)) or not hasattr(first, "ndim")',
                   'isinstance(first, (list, tuple)) and not hasattr(None, "ndim")',
                   'isinstance(first, (list, tuple)) and not hasattr(first, "XXndimXX")',
                   'isinstance(first, (list, tuple)) and not hasattr(first, "NDIM")')},
    ("pipeline.py", "dense_center = center is not None and np.any(center)",
     "dense_center = center is not None or np.any(center)"):
        "with a zero center the dense path computes the same norms as the sparse one",
    **{("pipeline.py",
        "norms = (row_norms(np.asarray(block.toarray(), dtype=float) - center) if dense_center", new): _CENTER
       for new in ("norms = (row_norms(np.asarray(block.toarray(), dtype=None) - center) if dense_center",
                   "norms = (row_norms(np.asarray(block.toarray(), ) - center) if dense_center")},
    ("pipeline.py",
     'with np.errstate(over="ignore"):  # a finite row whose square overflows is over any bound',
     'with np.errstate(over=None):  # a finite row whose square overflows is over any bound'):
        "np.einsum does not report overflow through NumPy's error state (it returns inf silently even "
        "under np.seterr(all='raise')), so the guard has no effect today; kept in case that changes",
    ("pipeline.py", 'norms = np.sqrt(np.einsum("ij,ij->i", part, part))',
     'norms = np.sqrt(np.einsum("IJ,IJ->I", part, part))'):
        "einsum subscripts are case-sensitive labels: 'IJ,IJ->I' is the same contraction",
})

# accounting.py (triaged 2026-11-26; the reasons are also in docs/privacy-audit.md)
_GUESS = ("the initial guess only seeds dp_accounting's bracket search: the bisection then returns a "
          "multiplier within tol of the same optimum (the tests check soundness and tightness, not the "
          "search path)")
_DEFAULT_BRACKET = ("dp_accounting.calibrate_dp_mechanism's default bracket (None) is a non-negative "
                    "search starting from [0, 1], i.e. LowerEndpointAndGuess(0, 1): the same search")
_LOW_BRANCH = ("the low-event branch cannot change the answer: with the multiplier 0.04995 the PLD is "
               "skipped, so epsilon_of is the no-amplification bound, which exceeds epsilon below s_b "
               "(>= 0.05 here), and "
               "the condition is False; when a mutant makes it True, the bracket (0, s_b) has the same root, "
               "since every multiplier below 0.05 fails the target (the bound)")
_CACHE = "the cache only saves time: every answer is recomputed identically without it"
EQUIVALENT.update({
    ("accounting.py", "probe = make_event(1.0)", "probe = make_event(2.0)"):
        "the probe only selects the accountant and detects a non-private event; the structure of the event "
        "(its types) does not depend on the parameter for a calibratable make_event",
    ("accounting.py", "dp_accounting.LowerEndpointAndGuess(0.0, 1.0)",
     "dp_accounting.LowerEndpointAndGuess(0.0, 2.0)"): _GUESS,
    ("accounting.py", "bracket_interval=dp_accounting.LowerEndpointAndGuess(0.0, 1.0), tol=tol,",
     "bracket_interval=dp_accounting.LowerEndpointAndGuess(0.0, 2.0), tol=tol,"): _GUESS,
    ("accounting.py", "bracket_interval=dp_accounting.LowerEndpointAndGuess(0.0, 1.0), tol=tol,",
     "bracket_interval=None, tol=tol,"): _DEFAULT_BRACKET,
    ("accounting.py", "bracket_interval=dp_accounting.LowerEndpointAndGuess(0.0, 1.0), tol=tol,",
     "tol=tol,"): _DEFAULT_BRACKET,
    ("accounting.py", "bracket_interval=bracket,", "bracket_interval=None,"):
        "the default bracket is the search from [0, 1], as for unsampled events; for sampled ones it finds "
        "the same root as the explicit bracket (every multiplier below 0.05 fails the target: the bound)",
    ("accounting.py", "if s_b < SampledGaussianAccountant.MIN_PLD_MULTIPLIER:",
     "if s_b <= SampledGaussianAccountant.MIN_PLD_MULTIPLIER:"):
        "differs only when the no-amplification multiplier is exactly 0.05 (then the PLD search in "
        "[0.04995, 0.05] returns at most the same value, also sound)",
    ("accounting.py", "SampledGaussianAccountant.MIN_PLD_MULTIPLIER * 0.999, s_b",
     "SampledGaussianAccountant.MIN_PLD_MULTIPLIER / 0.999, s_b"):
        "moves the bracket's failing end from 0.04995 to 0.05005: differs only when the PLD optimum lies in "
        "[0.05, 0.05005], and then returns at most 5e-5 above it (sound, 0.1 % loose)",
    **{("accounting.py", "low_event = make_event(SampledGaussianAccountant.MIN_PLD_MULTIPLIER * 0.999)",
        new): _LOW_BRANCH
       for new in ("low_event = make_event(SampledGaussianAccountant.MIN_PLD_MULTIPLIER / 0.999)",
                   "low_event = make_event(SampledGaussianAccountant.MIN_PLD_MULTIPLIER * 1.999)")},
    **{("accounting.py", "if epsilon_of(low_event, delta, relation=rel) <= epsilon:", new): _LOW_BRANCH
       for new in ("if epsilon_of(low_event, delta, ) <= epsilon:",
                   "if epsilon_of(low_event, delta, relation=None) <= epsilon:",
                   "if epsilon_of(low_event, delta, relation=rel) < epsilon:")},
    **{("accounting.py", "bracket = dp_accounting.ExplicitBracketInterval(0.0, s_b)", new): _LOW_BRANCH
       for new in ("bracket = None", "bracket = dp_accounting.ExplicitBracketInterval(None, s_b)",
                   "bracket = dp_accounting.ExplicitBracketInterval(0.0, None)",
                   "bracket = dp_accounting.ExplicitBracketInterval(s_b)",
                   "bracket = dp_accounting.ExplicitBracketInterval(0.0, )",
                   "bracket = dp_accounting.ExplicitBracketInterval(1.0, s_b)")},
    ("accounting.py",
     "lambda: SampledGaussianAccountant(rel_acc, use_pld=False), make_event, epsilon, delta,",
     "lambda: SampledGaussianAccountant(rel_acc, use_pld=None), make_event, epsilon, delta,"):
        "use_pld is only read for its truth value: None is False",
    ("accounting.py", "if _has(event, dpe.NonPrivateDpEvent):", "if _has(None, dpe.NonPrivateDpEvent):"):
        "a shortcut: every accountant reached below returns inf for a NonPrivateDpEvent itself",
    ("accounting.py",
     'if accounting == "auto" and _has(event, dpe.LaplaceDpEvent) and not _has_only_laplace(event):',
     'if accounting == "auto" and _has(event, dpe.LaplaceDpEvent) and not _has_only_laplace(None):'):
        "Laplace-only events then take the reroute too, which is basic composition, as the "
        "PureDpAccountant that they otherwise reach: the same epsilon",
    ("accounting.py", "return _has_only_laplace(event.event)", "return _has_only_laplace(None)"):
        "a Laplace-only self-composition is then taken as mixed: basic composition either way (reroute or "
        "PureDpAccountant), the same epsilon",
    ("accounting.py", "if isinstance(acc, RdpAccountant) and delta == 0:",
     "if isinstance(acc, RdpAccountant) and delta == 1:"):
        "a shortcut: dp_accounting's RdpAccountant returns inf at delta = 0 itself",
    ("accounting.py",
     "return [event if times == 1 else dpe.SelfComposedDpEvent(event, times)], 0.0, 0.0",
     "return [event if (times == 1) and False else dpe.SelfComposedDpEvent(event, times)], 0.0, 0.0"):
        "SelfComposedDpEvent(event, 1) has the epsilon of event",
    ("accounting.py", "self._non_private = False", "self._non_private = None"):
        "_non_private is only read for its truth value: None is False",
    ("accounting.py", "cached = _SAMPLED_CACHE.get(key)", "cached = None"): _CACHE,
    ("accounting.py", "if len(_SAMPLED_CACHE) > 4096:", "if len(_SAMPLED_CACHE) > 4097:"): _CACHE,
    ("accounting.py", "if len(_SAMPLED_CACHE) > 4096:", "if len(_SAMPLED_CACHE) >= 4096:"): _CACHE,
    ("accounting.py", "cached = _SAMPLED_CACHE.get(key)", "cached = _SAMPLED_CACHE.get(None)"): _CACHE,
    ("accounting.py", "_SAMPLED_CACHE[key] = cached", "_SAMPLED_CACHE[key] = None"): _CACHE,
    ("accounting.py", "self._report_delta = 1e-6 if delta is None else PrivacyBudget(1.0, delta).delta",
     "self._report_delta = 1e-6 if delta is None else PrivacyBudget(2.0, delta).delta"):
        "PrivacyBudget(1.0, delta) only validates delta; any valid epsilon gives the same .delta",
    **{("accounting.py", '"parameter", "rho", "xi", "noise_probability", "num_buckets"):', new):
       "no dp_accounting event has a field 'parameter' or 'noise_probability' (they are named "
       "noise_parameter), so those names are never read and the summary is the same"
       for new in ('"XXparameterXX", "rho", "xi", "noise_probability", "num_buckets"):',
                   '"PARAMETER", "rho", "xi", "noise_probability", "num_buckets"):',
                   '"parameter", "rho", "xi", "XXnoise_probabilityXX", "num_buckets"):',
                   '"parameter", "rho", "xi", "NOISE_PROBABILITY", "num_buckets"):')},
})
# accounting.py: equivalent mutants that change several lines (calibrate's search bracket)
EQUIVALENT.update({
    ("accounting.py",
     "bracket: dp_accounting.mechanism_calibration.BracketInterval = (\ndp_accounting.LowerEndpointAndGuess(0.0, 1.0)\n)",
     "bracket: dp_accounting.mechanism_calibration.BracketInterval = None"):
        "dp_accounting.calibrate_dp_mechanism's default bracket (None) is a non-negative search starting from [0, 1], i.e. LowerEndpointAndGuess(0, 1): the same search",
    ("accounting.py",
     "bracket = dp_accounting.ExplicitBracketInterval(\nSampledGaussianAccountant.MIN_PLD_MULTIPLIER * 0.999, s_b\n)",
     "bracket = None"):
        'the default bracket is the search from [0, 1]; for sampled events it finds the same root as the explicit bracket (every multiplier below 0.05 fails the target: the unsampled bound)',
    ("accounting.py", "bracket_interval=bracket,", ""):
        "dp_accounting.calibrate_dp_mechanism's default bracket (None) is a non-negative search starting from [0, 1], i.e. LowerEndpointAndGuess(0, 1): the same search" + " (without the argument, dp_accounting uses that default; the explicit sampled bracket: " + 'the default bracket is the search from [0, 1]; for sampled events it finds the same root as the explicit bracket (every multiplier below 0.05 fails the target: the unsampled bound)' + ")",
})

# accounting.py, second mutmut run (2026-11-26): equivalent survivors
EQUIVALENT.update({
    ("accounting.py", 'self._non_private = False',
     'self._non_private = None'):
        'only read for its truth value: None is falsy like False',
    ("accounting.py", 'cached = _SAMPLED_CACHE.get(key)',
     'cached = None'):
        'the cache only saves recomputing the same answer (the key holds the events, delta, relation and use_pld); a miss recomputes the identical value',
    ("accounting.py", 'cached = _SAMPLED_CACHE.get(key)',
     'cached = _SAMPLED_CACHE.get(None)'):
        'the cache only saves recomputing the same answer (the key holds the events, delta, relation and use_pld); a miss recomputes the identical value',
    ("accounting.py", 'if len(_SAMPLED_CACHE) > 4096:',
     'if len(_SAMPLED_CACHE) >= 4096:'):
        'the cache only saves recomputing the same answer (the key holds the events, delta, relation and use_pld); a miss recomputes the identical value (the size at which it is cleared)',
    ("accounting.py", 'if len(_SAMPLED_CACHE) > 4096:',
     'if len(_SAMPLED_CACHE) > 4097:'):
        'the cache only saves recomputing the same answer (the key holds the events, delta, relation and use_pld); a miss recomputes the identical value (the size at which it is cleared)',
    ("accounting.py", '_SAMPLED_CACHE[key] = cached',
     '_SAMPLED_CACHE[key] = None'):
        'the cache only saves recomputing the same answer (the key holds the events, delta, relation and use_pld); a miss recomputes the identical value (a stored None reads as a miss)',
    ("accounting.py", 'stacklevel: int = 3,',
     'stacklevel: int = 4,'):
        'which source line the UncertifiedPrivacyWarning points at (the warning, its text and the report are unchanged); not checkable under mutmut, whose wrapper adds a frame',
    ("accounting.py", 'warnings.warn(message, UncertifiedPrivacyWarning, stacklevel=stacklevel)',
     'warnings.warn(message, UncertifiedPrivacyWarning, )'):
        'as above: only the source line the warning points at',
    ("accounting.py", 'self._report_delta = 1e-6 if delta is None else PrivacyBudget(1.0, delta).delta',
     'self._report_delta = 1e-6 if delta is None else PrivacyBudget(2.0, delta).delta'):
        'the epsilon is a placeholder: PrivacyBudget only validates delta here, and .delta is the same',
    ("accounting.py", 'return all(_has_only_laplace(e) for e in event.events)',
     'return all(_has_only_laplace(None) for e in event.events)'):
        'a Laplace-only composition is then taken as mixed: it is rerouted to basic composition, which is what the PureDpAccountant computes for it: the same epsilon',
})


# clipping.py: the power-of-two scaled norms (scaled_row_norms, norm_scale)
_EINSUM = "einsum subscripts are case-sensitive labels: 'IJ,IJ->I' is the same contraction"
_PIECE = ("the piece size only sets memory use and speed: each row's norm is computed from that row alone, "
          "the same value whatever the piece (>= 1 row)")
EQUIVALENT.update({
    ("clipping.py", 'norms = np.sqrt(np.einsum("ij,ij->i", X, X))',
     'norms = np.sqrt(np.einsum("IJ,IJ->I", X, X))'): _EINSUM,
    ("clipping.py", 'np.einsum("ij,ij->i", piece, piece, out=norms[a:a + rows])',
     'np.einsum("IJ,IJ->I", piece, piece, out=norms[a:a + rows])'): _EINSUM,
    **{("clipping.py", "rows = max(1024, _PIECE_ELEMENTS // max(d, 1))", new): _PIECE
       for new in ("rows = max(1025, _PIECE_ELEMENTS // max(d, 1))",
                   "rows = max(1024, _PIECE_ELEMENTS // max(d, 2))")},
    ("clipping.py", "for a in range(0, m, rows):", "for a in range(0, m, ):"):
        "a step of 1 row computes overlapping pieces: every row's norm is still computed from that row "
        "alone (several times), the same values, only slower",
})

_STATUS_RE = re.compile(r"^\s*(\S+):\s*(.+?)\s*$")


def _mutmut() -> list[str]:
    exe = Path(sys.executable).with_name("mutmut")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mutmut"]


def _prepare(workdir: Path, files: list[str], tests: list[str], pytest_args: list[str]) -> None:
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    shutil.copytree(ROOT / "src", workdir / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "tests", workdir / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    text = (ROOT / "pyproject.toml").read_text()
    # drop the checked-in [tool.mutmut] table; write the one for this run
    text = re.sub(r"\n\[tool\.mutmut\]\n(?:(?!\n\[).)*", "\n", text, flags=re.S)

    def arr(xs: list[str]) -> str:
        return "[" + ", ".join(f'"{x}"' for x in xs) + "]"

    text += (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {arr(files)}\n"
        f"pytest_add_cli_args = {arr(pytest_args)}\n"
        f"pytest_add_cli_args_test_selection = {arr(tests)}\n"
    )
    (workdir / "pyproject.toml").write_text(text)


def _diff(workdir: Path, name: str) -> tuple[str, list[str], list[str]]:
    out = subprocess.run([*_mutmut(), "show", name], cwd=workdir, capture_output=True, text=True).stdout
    removed = [ln[1:] for ln in out.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:] for ln in out.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return out, removed, added


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", help="source files to mutate (default: the privacy core: "
                   + ", ".join(Path(f).name for f in PRIVACY_CORE) + ")")
    p.add_argument("--ci", action="store_true", help="the CI subset: " + ", ".join(CI_SUBSET))
    p.add_argument("--tests", nargs="+", default=DEFAULT_TESTS, help="test files run against the mutants")
    p.add_argument("--workdir", type=Path, default=ROOT / "reports" / "mutation")
    p.add_argument("--max-children", type=int, default=2, help="parallel mutant runs (default 2)")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="wall-clock limit of the whole mutmut run in seconds (default 1800)")
    p.add_argument("--report", type=Path, help="also write the summary as Markdown here")
    p.add_argument("--report-only", action="store_true",
                   help="summarize the results already in --workdir (after an interrupted run), run nothing")
    args = p.parse_args(argv)

    files = CI_SUBSET if args.ci else (args.files or PRIVACY_CORE)
    pytest_args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0", "-q", "-x"]
    t0 = time.perf_counter()
    if not args.report_only:
        _prepare(args.workdir, files, args.tests, pytest_args)
        # DASK_SCHEDULER: mutmut forks each mutant's test run from a process that has run the tests
        # once; Dask's threaded scheduler keeps its thread pool in a module global, and a forked child
        # inherits the pool without its threads, so a Dask test there (test_validate_rows_dask reaches
        # norm_scale) waits forever. The synchronous scheduler runs the same graph in the calling thread.
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "NUMBA_NUM_THREADS": "1", "DASK_SCHEDULER": "synchronous"}
        try:
            run = subprocess.run([*_mutmut(), "run", "--max-children", str(args.max_children)],
                                 cwd=args.workdir, env=env, capture_output=True, text=True,
                                 timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"mutation: mutmut did not finish within {args.timeout:g} s", file=sys.stderr)
            return 2
        if run.returncode != 0:
            print(run.stdout[-4000:], run.stderr[-4000:], sep="\n", file=sys.stderr)
            print(f"mutation: mutmut run failed (exit status {run.returncode})", file=sys.stderr)
            return 2
    seconds = time.perf_counter() - t0

    res = subprocess.run([*_mutmut(), "results", "--all", "true"], cwd=args.workdir,
                         capture_output=True, text=True, check=True).stdout
    statuses: dict[str, str] = {}
    for line in res.splitlines():
        m = _STATUS_RE.match(line)
        if m and "__mutmut_" in m.group(1):
            statuses[m.group(1)] = m.group(2)
    counts: dict[str, int] = {}
    for s in statuses.values():
        counts[s] = counts.get(s, 0) + 1

    equivalent: list[tuple[str, str, str]] = []
    unexplained: list[tuple[str, str, str]] = []
    for name, status in statuses.items():
        if status in ("killed", "timeout"):
            continue
        diff, removed, added = _diff(args.workdir, name)
        # mutmut names functions "<module>.x_<name>__mutmut_N" and methods "<module>.xǁ<Class>ǁ<name>__mutmut_N"
        # the key names the file without the leading underscore of a private module (_gaussian.py)
        module_file = re.split(r"\.x[_ǁ]", name, maxsplit=1)[0].rsplit(".", 1)[-1].lstrip("_") + ".py"
        # a mutant that changes several lines is keyed by its lines joined with newlines
        key = (module_file, "\n".join(r.strip() for r in removed), "\n".join(a.strip() for a in added))
        reason = EQUIVALENT.get(key) if status == "survived" else None
        (equivalent if reason else unexplained).append((name, status, reason or diff.strip()))

    total = len(statuses)
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    score = killed / max(1, total - len(equivalent))
    lines = [
        f"mutmut on {', '.join(Path(f).name for f in files)} with {' '.join(args.tests)}: "
        f"{total} mutants, {killed} killed, {len(equivalent)} equivalent, {len(unexplained)} not killed "
        f"and not explained; score {100 * score:.1f} % of the non-equivalent mutants ({seconds:.0f} s).",
        "",
        "| status | count |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in sorted(counts.items())],
        "",
    ]
    if equivalent:
        lines += ["Equivalent survivors:", ""]
        lines += [f"* `{n}`: {r}" for n, _, r in equivalent]
        lines.append("")
    if unexplained:
        lines += ["NOT killed and not explained (add a test to tests/test_privacy_core_mutants.py, or an "
                  "entry to EQUIVALENT in tools/mutation.py with the reason):", ""]
        for n, s, d in unexplained:
            lines += [f"* `{n}` ({s}):", "", "```diff", d, "```", ""]
    text = "\n".join(lines)
    print(text)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(text + "\n")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())

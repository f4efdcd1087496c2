#!/usr/bin/env python
"""Power of ``dpspectral audit``: which noise errors would it flag? (docs/privacy-audit.md, "Power").

A bug that shrinks a mechanism's noise makes it really (epsilon_true, delta)-DP while it claims
(1, delta). Running a method at ``epsilon = e`` draws exactly the noise of such a bug with
epsilon_true = e, so the audit's lower bound for that run says whether the audit, with its run counts
and its family-wise alpha, would have flagged the bug: it does when the bound exceeds the claim 1.

    .venv/bin/python tools/audit_power.py --epsilons 2 4 10 100 --quick --out reports/audit-power.json

prints one line per (method, relation): the lower bound at each e, and the smallest e whose bound
exceeds 1 ("detects"). For a Gaussian release, e = 2, 4, 10 and 100 correspond to noise 0.53, 0.29,
0.13 and 0.025 times the calibrated noise at (1, 1e-5).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from dpspectral._audit_runner import FULL, QUICK, AuditPlan, audit_methods
    from dpspectral.privacy._gaussian import analytic_noise_multiplier

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="methods (default: every registered one)")
    p.add_argument("--epsilons", type=float, nargs="+", default=[2.0, 4.0, 10.0, 100.0])
    p.add_argument("--quick", action="store_true", help="the CI run counts (300 + 100 pilot)")
    p.add_argument("--runs", type=int, default=None)
    p.add_argument("--pilot", type=int, default=None)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.runs or args.pilot:
        plan = AuditPlan(n_pilot=args.pilot or plan.n_pilot, n_runs=args.runs or plan.n_runs)
    table: dict[str, dict[str, object]] = {}
    t0 = time.perf_counter()
    for e in args.epsilons:
        rep = audit_methods(args.names or None, plan=plan, epsilon=e, n_jobs=args.jobs)
        for row in rep.rows:
            if not row.audited:
                continue
            key = f"{row.method}/{row.relation}"
            entry = table.setdefault(key, {"certified": row.certified, "bounds": {},
                                           "max_bound": row.max_bound})
            entry["bounds"][str(e)] = row.epsilon_lower_bound  # type: ignore[index]
        print(f"epsilon {e:g} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    ratio = {str(e): analytic_noise_multiplier(e, 1e-5) / analytic_noise_multiplier(1.0, 1e-5)
             for e in args.epsilons}
    for key, entry in table.items():
        bounds: dict[str, float] = entry["bounds"]  # type: ignore[assignment]
        hit = [float(e) for e in bounds if bounds[e] is not None and bounds[e] > 1.0]
        entry["detects_from_epsilon"] = min(hit) if hit else None
        print(f"{key:40s} " + "  ".join(f"e={e}: {b:.2f}" for e, b in bounds.items())
              + "  detects: " + (f"epsilon >= {min(hit):g}" if hit else "none of these"))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"plan": [plan.n_pilot, plan.n_runs], "noise_ratio": ratio,
                                        "rows": table, "seconds": time.perf_counter() - t0}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The six calibration mutations of issue 25 that once passed the whole suite: each must now fail a test.

Each is applied to a scratch copy of src/ (the checkout is never touched) and the relevant test files run
against it (PYTHONPATH); the script prints one line per mutation and exits 1 if any survives.
Run: .venv/bin/python tools/mechanism_mutations.py [TEST FILES...]
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTS = [
    ("mean sensitivity 2C -> C", "pca/covariance.py", None, "mean"),
    (
        "count noise x0.01",
        "pca/covariance.py",
        (
            '            plan.count_std = multipliers["count"]\n',
            '            plan.count_std = multipliers["count"] * 0.01\n',
        ),
        None,
    ),
    (
        "DP-SPCA rows not clipped",
        "pca/stochastic.py",
        (
            "        out, _ = clip_rows(block, self.C, on_norm_violation=self.mode, copy=False, owner=self.owner)\n",
            "        out = block\n",
        ),
        None,
    ),
    (
        "DP-VRPCA full gradient not clipped",
        "pca/stochastic.py",
        (
            "        block, _ = clip_rows(block, C, on_norm_violation=mode, copy=True, first_row=a, owner=owner)\n",
            "",
        ),
        None,
    ),
    (
        "Private Oja noise halved",
        "pca/oja.py",
        ("        noise_std = 2.0 * beta * alpha\n", "        noise_std = beta * alpha\n"),
        None,
    ),
    (
        "space-optimal c_tt dropped",
        "lowrank/factorization.py",
        (
            "d2 = b * math.sqrt(c_psi), b * math.sqrt(c_s * c_tt)",
            "d2 = b * math.sqrt(c_psi), b * math.sqrt(c_s)",
        ),
        None,
    ),
]
TESTS = sys.argv[1:] or [
    "tests/test_covariance.py",
    "tests/test_pinned_releases.py",
    "tests/test_stochastic.py",
    "tests/test_pinned_stochastic.py",
    "tests/test_oja.py",
    "tests/test_lowrank.py",
    "tests/test_lowrank_privacy_boundaries.py",
    "tests/test_registry_contract.py",
]
survivors = 0
for name, rel, repl, special in MUTS:
    tmp = Path(tempfile.mkdtemp())
    shutil.copytree(ROOT / "src", tmp / "src")
    f = tmp / "src" / "dpspectral" / rel
    s = f.read_text()
    if special == "mean":
        old = "    return (2.0 if relation is Relation.REPLACE_ONE else 1.0) * row_norm"
        assert old in s, name
        s = s.replace(old, "    return (1.0 if relation is Relation.REPLACE_ONE else 1.0) * row_norm", 1)
    else:
        assert repl[0] in s, name
        s = s.replace(repl[0], repl[1], 1)
    f.write_text(s)
    env = dict(os.environ, PYTHONPATH=str(tmp / "src"), OMP_NUM_THREADS="1", NUMBA_CACHE_DIR=str(tmp / "nb"))
    r = subprocess.run(
        [
            str(ROOT / ".venv/bin/python"),
            "-m",
            "pytest",
            "-q",
            "-x",
            "-n",
            "2",
            "-p",
            "no:cacheprovider",
            *TESTS,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-300:]
    caught = r.returncode == 1 and " failed" in last
    survivors += not caught
    print(f"{name:40s} {'caught' if caught else 'SURVIVED'}  {last}", flush=True)
    shutil.rmtree(tmp)
sys.exit(1 if survivors else 0)
